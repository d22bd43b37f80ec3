// Package sandbox owns the contract every script engine implements: load a handler
// module once, read the workflow definition it declares, and invoke one handler
// function at a time in a fresh, limited instance with read-only globals and host tools.
// Engines live in subpackages (js, wasm) and all pass the suite in sandboxtest.
//
// A sandbox never touches the ledger: tools reach it through the Tools interface, which
// the host implements with a phase-checking ToolWrapper.
package sandbox

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/scripthost/scripthost"
)

// Engine loads handler modules of one kind.
type Engine interface {
	// Load compiles a module. The name is used in error messages and locations.
	// Compilation errors (syntax errors, invalid modules) are logic errors with the
	// file, line and column when known.
	Load(ctx context.Context, src Source) (Program, error)
}

// Source is a handler module to load.
type Source struct {
	// Name is the file name shown in errors ("workflow.ts").
	Name string
	Code []byte
}

// Program is a loaded module. It is safe for concurrent use: every Invoke runs in its
// own instance.
type Program interface {
	// Definition returns the workflow definition the module declares, as JSON, with
	// every function reference replaced by a string that Invoke accepts as Function.
	Definition(ctx context.Context) (json.RawMessage, error)
	// Invoke runs one handler function in a fresh instance.
	Invoke(ctx context.Context, inv Invocation) (Result, error)
	Close(ctx context.Context) error
}

// Globals are the inputs a phase sees as read-only globals. A nil field is not
// defined in the script.
type Globals struct {
	State          json.RawMessage // __state__ (producer, prepare)
	Prepared       json.RawMessage // __prepared__ (mutate, next)
	MutationResult json.RawMessage // __mutationResult__ (next)
}

// Invocation is one call of a handler function.
type Invocation struct {
	// Function is a function reference from the definition.
	Function string
	Phase    scripthost.Phase
	Globals  Globals
	// Args are passed to the function as arguments, in order.
	Args   []json.RawMessage
	Tools  Tools
	Limits Limits
	// Deterministic, when set, fixes the clock, the random seed and the time zone.
	Deterministic *Determinism
	// Seed, when Deterministic is nil and Seed is not 0, seeds the script's randomness
	// as Determinism.Seed would (the clock stays real), so that a replay with that
	// seed sees the same numbers.
	Seed int64
}

// Determinism fixes what a script could otherwise observe from the outside world.
type Determinism struct {
	Now  time.Time
	Seed int64
	// TimeZone is an IANA name; empty means UTC.
	TimeZone string
}

// ToolName names a tool the script may call.
type ToolName struct {
	Namespace string
	Method    string
}

// Tools is what a script can reach. The host's ToolWrapper implements it.
type Tools interface {
	// List names the tools to expose; a script sees them as Namespace.method. The
	// slice may be shared with other invocations: callers read it and never change it.
	List() []ToolName
	// Call runs one tool with JSON input. An error that wraps ErrTerminate ends the
	// invocation without the script being able to catch it.
	Call(ctx context.Context, namespace, method string, input json.RawMessage) (json.RawMessage, error)
}

// ErrTerminate marks a tool error that ends the whole invocation: engines must not let
// the script catch it, and return it (still wrapping the cause) from Invoke.
var ErrTerminate = errors.New("sandbox: invocation terminated by host")

// Terminate wraps err so that it ends the invocation.
func Terminate(err error) error { return &terminated{err: err} }

type terminated struct{ err error }

func (t *terminated) Error() string { return t.err.Error() }
func (t *terminated) Unwrap() []error {
	return []error{t.err, ErrTerminate}
}

// ConsoleLine is one line of captured console output.
type ConsoleLine struct {
	Level string `json:"level"` // log, warn, error
	Text  string `json:"text"`
}

// Result is what a handler returned.
type Result struct {
	// Value is the function's return value as JSON ("null" for undefined).
	Value     json.RawMessage
	Console   []ConsoleLine
	ToolCalls int
}

// Limits bound one invocation. Zero fields take the defaults.
//
// An engine enforces each limit as closely as its runtime allows and documents where
// it approximates: the JavaScript engine (sandbox/js) has no per-instance heap, so it
// refuses oversized one-shot allocations up front and charges process heap growth to
// the scripts running at the time; its RegexTimeout is capped by the process-wide
// regexp2 timeout. MaxMemoryPages applies to Wasm guests only.
type Limits struct {
	Timeout         time.Duration
	MaxStackDepth   int
	MemoryBytes     int64
	MaxOutputBytes  int
	MaxConsoleBytes int
	MaxToolCalls    int
	RegexTimeout    time.Duration
	// MaxMemoryPages caps a Wasm guest's linear memory (64 KiB pages).
	MaxMemoryPages uint32
}

// DefaultLimits are the limits a zero Limits takes.
var DefaultLimits = Limits{
	Timeout:         5 * time.Second,
	MaxStackDepth:   1000,
	MemoryBytes:     64 << 20,
	MaxOutputBytes:  1 << 20,
	MaxConsoleBytes: 64 << 10,
	MaxToolCalls:    1000,
	RegexTimeout:    100 * time.Millisecond,
	MaxMemoryPages:  1024, // 64 MiB
}

// WithDefaults returns l with every zero field set to its default.
func (l Limits) WithDefaults() Limits {
	d := DefaultLimits
	if l.Timeout == 0 {
		l.Timeout = d.Timeout
	}
	if l.MaxStackDepth == 0 {
		l.MaxStackDepth = d.MaxStackDepth
	}
	if l.MemoryBytes == 0 {
		l.MemoryBytes = d.MemoryBytes
	}
	if l.MaxOutputBytes == 0 {
		l.MaxOutputBytes = d.MaxOutputBytes
	}
	if l.MaxConsoleBytes == 0 {
		l.MaxConsoleBytes = d.MaxConsoleBytes
	}
	if l.MaxToolCalls == 0 {
		l.MaxToolCalls = d.MaxToolCalls
	}
	if l.RegexTimeout == 0 {
		l.RegexTimeout = d.RegexTimeout
	}
	if l.MaxMemoryPages == 0 {
		l.MaxMemoryPages = d.MaxMemoryPages
	}
	return l
}

// LimitError reports an invocation that hit a limit. It is a logic error: the script
// did something the host does not allow.
type LimitError struct {
	// Limit names the limit: "timeout", "stack", "memory", "output", "console",
	// "tool_calls", "regex", "timers".
	Limit  string
	Detail string
}

func (e *LimitError) Error() string {
	return fmt.Sprintf("sandbox: %s limit exceeded: %s", e.Limit, e.Detail)
}

// AsError classifies a limit error.
func (e *LimitError) AsError() *scripthost.Error {
	code := scripthost.CodeLimit
	if e.Limit == "timeout" {
		code = scripthost.CodeTimeout
	}
	return &scripthost.Error{Class: scripthost.ClassLogic, Code: code, Message: e.Error(), Err: e}
}

// Builder is an Engine whose modules may be made of several files. Build gathers the
// entry file (its text is code) and everything it imports into the one program Load
// accepts, reading the other files from disk. The program is what a host stores, so
// that a stored version runs without the files.
type Builder interface {
	Build(ctx context.Context, entry string, code []byte) (Built, error)
}

// Built is a module gathered from files.
type Built struct {
	// Code is the program to store and load.
	Code []byte
	// Files are the files it was built from, the entry among them; none for an engine
	// that is not a Builder.
	Files []SourceFile
}

// SourceFile is one file a module was built from.
type SourceFile struct {
	// Path is relative to the entry's directory, with forward slashes.
	Path   string
	SHA256 string // hex SHA-256 of the content read
	Size   int64
}

// Build gathers a module with eng when it is a Builder; otherwise the module is code
// itself.
func Build(ctx context.Context, eng Engine, entry string, code []byte) (Built, error) {
	if b, ok := eng.(Builder); ok {
		return b.Build(ctx, entry, code)
	}
	return Built{Code: code}, nil
}
