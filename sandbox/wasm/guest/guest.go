// Package guest is the Go SDK for scripthost Wasm handlers. A workflow is a Go main
// package built with
//
//	GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared -o workflow.wasm .
//
// that declares its definition with Define in an init function and exports one
// function per handler with //go:wasmexport:
//
//	func init() {
//		guest.Define(guest.Workflow{Topics: []string{"files"}, Producers: map[string]guest.Producer{
//			"scan": {Schedule: &guest.Schedule{Every: "5m"}, Publishes: []string{"files"}, Handler: "scan"},
//		}})
//	}
//
//	//go:wasmexport scan
//	func scan() { guest.Handle(func() (any, error) { ... }) }
//
// Importing the package exports scripthost_abi_version and scripthost_describe, and
// links the host imports of the guest ABI (sandbox/wasm/ABI.md). Outside a wasip1
// build the package compiles, but every call panics with ErrNoHost.
//
// The web-platform globals JavaScript handlers get (URL, TextEncoder, crypto, timers,
// Intl) have no Wasm counterpart: a Go guest uses the standard library instead
// (net/url, unicode/utf8, encoding/base64, crypto/sha256, crypto/hmac, time,
// golang.org/x/text), compiled into the module. WASI's clock and random source are the
// host's, fixed in deterministic mode like the JavaScript ones.
package guest

import (
	"encoding/json"
	"errors"
	"fmt"
	"runtime"
	"strings"
)

// ABIVersion is the guest ABI version this SDK speaks.
const ABIVersion = 1

// ErrNoHost is the panic value of every call made outside a scripthost Wasm host.
var ErrNoHost = errors.New("guest: not running in a scripthost wasm host")

// ErrUndefined is returned when the input asked for is not defined in this phase.
var ErrUndefined = errors.New("guest: input not defined in this phase")

// abi is the host function set; the wasip1 build binds it to the imports.
type abi interface {
	inputLen(kind uint32) int32
	inputRead(kind uint32, b []byte) int32
	toolCall(name, in []byte) int32
	resultLen() int32
	resultRead(b []byte) int32
	log(level uint32, b []byte)
	returnValue(b []byte)
	fail(b []byte)
}

// Input kinds of ABI v1.
const (
	kindState          = 0
	kindPrepared       = 1
	kindMutationResult = 2
	kindPhase          = 3
	kindFunction       = 4
	kindArgs           = 5
	kindArg0           = 16
)

// Error is a classified error from a tool: Class is one of logic, auth, permission,
// network, internal; Code names the condition (e.g. "phase_violation").
type Error struct {
	Class   string `json:"class"`
	Code    string `json:"code"`
	Message string `json:"message"`
	// Call numbers the tool call that failed in this invocation; Fail with this error
	// re-raises the host's original error, class and cause included.
	Call int `json:"call"`
}

func (e *Error) Error() string {
	if e.Code != "" {
		return fmt.Sprintf("%s error (%s): %s", e.Class, e.Code, e.Message)
	}
	return fmt.Sprintf("%s error: %s", e.Class, e.Message)
}

// input returns the raw JSON of an input, or nil when it is not defined.
func input(kind uint32) []byte {
	n := host.inputLen(kind)
	if n < 0 {
		return nil
	}
	b := make([]byte, n)
	host.inputRead(kind, b)
	return b
}

func decodeInput(kind uint32, v any) error {
	b := input(kind)
	if b == nil {
		return ErrUndefined
	}
	if err := json.Unmarshal(b, v); err != nil {
		return fmt.Errorf("guest: decode input: %w", err)
	}
	return nil
}

// State decodes __state__ (the handler's state before the run, in every phase) into v.
func State(v any) error { return decodeInput(kindState, v) }

// Prepared decodes __prepared__ (mutate, next) into v.
func Prepared(v any) error { return decodeInput(kindPrepared, v) }

// MutationResult decodes __mutationResult__ (next) into v.
func MutationResult(v any) error { return decodeInput(kindMutationResult, v) }

// Arg decodes the i-th argument into v.
func Arg(i int, v any) error {
	if i < 0 {
		return ErrUndefined
	}
	return decodeInput(kindArg0+uint32(i), v)
}

// Args returns every argument as raw JSON.
func Args() []json.RawMessage {
	var args []json.RawMessage
	_ = decodeInput(kindArgs, &args)
	return args
}

// Raw returns the raw JSON of __state__, __prepared__ and __mutationResult__ (nil when
// not defined).
func Raw() (state, prepared, mutationResult json.RawMessage) {
	return input(kindState), input(kindPrepared), input(kindMutationResult)
}

// Phase returns the phase the handler runs in ("producer", "prepare", "mutate",
// "next"; "hook" in a guard or a before or after hook, which may call read tools; ""
// outside a phase, as in onRetry).
func Phase() string {
	var p string
	_ = decodeInput(kindPhase, &p)
	return p
}

// CallRaw calls tool ns.method with raw JSON input and returns its raw JSON output.
// A tool failure is an *Error.
func CallRaw(ns, method string, in []byte) (json.RawMessage, error) {
	status := host.toolCall([]byte(ns+"."+method), in)
	out := make([]byte, host.resultLen())
	host.resultRead(out)
	if status == 0 {
		return out, nil
	}
	e := &Error{}
	if err := json.Unmarshal(out, e); err != nil {
		return nil, fmt.Errorf("guest: %s.%s: undecodable error %q", ns, method, out)
	}
	return nil, e
}

// Call calls tool ns.method with in encoded as JSON and decodes its output into out
// (out may be nil). A tool failure is an *Error.
func Call(ns, method string, in, out any) error {
	b, err := json.Marshal(in)
	if err != nil {
		return fmt.Errorf("guest: %s.%s: encode input: %w", ns, method, err)
	}
	res, err := CallRaw(ns, method, b)
	if err != nil {
		return err
	}
	if out == nil {
		return nil
	}
	if err := json.Unmarshal(res, out); err != nil {
		return fmt.Errorf("guest: %s.%s: decode output: %w", ns, method, err)
	}
	return nil
}

// Event is one event Peek returns.
type Event struct {
	ID      string          `json:"id"`
	Topic   string          `json:"topic"`
	Payload json.RawMessage `json:"payload"`
	Attempt int             `json:"attempt"`
}

// Publish publishes one event (Topics.publish): allowed in producers and in next.
func Publish(topic, id string, payload any) error {
	return Call("Topics", "publish", map[string]any{"topic": topic, "id": id, "payload": payload}, nil)
}

// Peek returns up to limit pending events of topic (Topics.peek): allowed in prepare.
func Peek(topic string, limit int) ([]Event, error) {
	var evs []Event
	err := Call("Topics", "peek", map[string]any{"topic": topic, "limit": limit}, &evs)
	return evs, err
}

// Log writes a console line at level log; arguments are formatted as by fmt.Sprint.
func Log(args ...any) { host.log(0, []byte(fmt.Sprint(args...))) }

// Warn writes a console line at level warn.
func Warn(args ...any) { host.log(1, []byte(fmt.Sprint(args...))) }

// LogError writes a console line at level error.
func LogError(args ...any) { host.log(2, []byte(fmt.Sprint(args...))) }

// Return sets the handler's result to v encoded as JSON. The last call wins.
func Return(v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("guest: encode result: %w", err)
	}
	host.returnValue(b)
	return nil
}

type failure struct {
	Message string `json:"message"`
	Call    int    `json:"call,omitempty"`
	File    string `json:"file,omitempty"`
	Line    int    `json:"line,omitempty"`
	Stack   string `json:"stack,omitempty"`
}

// Fail ends the handler with err and does not return. A tool *Error is re-raised with
// the host's original class; anything else is a script error located at Fail's caller.
func Fail(err error) {
	file, line := caller(2)
	fail(err, file, line, "")
}

func fail(err error, file string, line int, stack string) {
	f := failure{Message: "handler failed", File: file, Line: line, Stack: stack}
	if err != nil {
		f.Message = err.Error()
	}
	var te *Error
	if errors.As(err, &te) {
		f.Call = te.Call
	}
	b, _ := json.Marshal(f)
	host.fail(b)
}

// Handle runs a handler body: its value becomes the result, its error (or panic) ends
// the handler through Fail.
func Handle(fn func() (any, error)) {
	defer func() {
		if r := recover(); r != nil {
			if r == ErrNoHost {
				panic(r)
			}
			file, line := panicSite()
			buf := make([]byte, 8<<10)
			buf = buf[:runtime.Stack(buf, false)]
			err, ok := r.(error)
			if !ok {
				err = fmt.Errorf("%v", r)
			}
			fail(fmt.Errorf("panic: %w", err), file, line, string(buf))
		}
	}()
	v, err := fn()
	if err != nil {
		file, line := caller(2)
		fail(err, file, line, "")
		return
	}
	if err := Return(v); err != nil {
		fail(err, "", 0, "")
	}
}

const pkgPrefix = "github.com/scripthost/scripthost/sandbox/wasm/guest."

// caller returns the location skip frames up, stepping over this package.
func caller(skip int) (string, int) {
	pcs := make([]uintptr, 32)
	n := runtime.Callers(skip+1, pcs)
	return firstOutside(pcs[:n])
}

// panicSite returns the location of the panic being recovered: the first frame below
// the runtime's panic machinery that is not in this package.
func panicSite() (string, int) {
	pcs := make([]uintptr, 64)
	n := runtime.Callers(1, pcs)
	frames := runtime.CallersFrames(pcs[:n])
	seenPanic := false
	for {
		f, more := frames.Next()
		if f.Function == "runtime.gopanic" {
			seenPanic = true
		} else if seenPanic && outside(f.Function) {
			return f.File, f.Line
		}
		if !more {
			return "", 0
		}
	}
}

func outside(function string) bool {
	return function != "" && !strings.HasPrefix(function, "runtime.") && !strings.HasPrefix(function, pkgPrefix)
}

func firstOutside(pcs []uintptr) (string, int) {
	frames := runtime.CallersFrames(pcs)
	for {
		f, more := frames.Next()
		if outside(f.Function) {
			return f.File, f.Line
		}
		if !more {
			return "", 0
		}
	}
}
