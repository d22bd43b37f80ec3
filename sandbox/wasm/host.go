package wasm

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"

	"github.com/scripthost/scripthost"
	"github.com/scripthost/scripthost/sandbox"
)

// hostModule is the import module name of the guest ABI.
const hostModule = "scripthost"

// Input kinds for input_len / input_read (ABI.md).
const (
	inputState          = 0
	inputPrepared       = 1
	inputMutationResult = 2
	inputPhase          = 3
	inputFunction       = 4
	inputArgs           = 5
	inputArg0           = 16
)

// Log levels for log.
var logLevels = []string{"log", "warn", "error"}

// Tool call statuses.
const (
	toolOK    = 0
	toolError = 1
)

// maxFailBytes bounds the error a guest reports through fail.
const maxFailBytes = 64 << 10

// errAbort is what a host function panics with to end the invocation; the reason is in
// call.abort. wazero unwinds the guest and returns an error wrapping it.
var errAbort = errors.New("wasm: invocation aborted by host")

type hostFunc struct {
	name    string
	fn      func(c *call, ctx context.Context, m api.Module, stack []uint64)
	params  int
	results int
}

var hostFuncs = []hostFunc{
	{"input_len", (*call).inputLen, 1, 1},
	{"input_read", (*call).inputRead, 3, 1},
	{"tool_call", (*call).toolCall, 4, 1},
	{"result_len", (*call).resultLen, 0, 1},
	{"result_read", (*call).resultRead, 2, 1},
	{"log", (*call).log, 3, 0},
	{"return_value", (*call).returnValue, 2, 0},
	{"fail", (*call).fail, 2, 0},
}

// hostSignatures maps each host function name to its parameter and result counts (all
// i32), for checking a module's imports at Load.
var hostSignatures = func() map[string][2]int {
	m := map[string][2]int{}
	for _, h := range hostFuncs {
		m[h.name] = [2]int{h.params, h.results}
	}
	return m
}()

// instantiateHost adds the "scripthost" module to r. Its functions find the
// invocation they serve in the context the guest was called with.
func instantiateHost(ctx context.Context, r wazero.Runtime) error {
	b := r.NewHostModuleBuilder(hostModule)
	for _, h := range hostFuncs {
		h := h
		params := make([]api.ValueType, h.params)
		for i := range params {
			params[i] = api.ValueTypeI32
		}
		results := make([]api.ValueType, h.results)
		for i := range results {
			results[i] = api.ValueTypeI32
		}
		fn := api.GoModuleFunc(func(ctx context.Context, m api.Module, stack []uint64) {
			c, _ := ctx.Value(callKey{}).(*call)
			if c == nil {
				// Only reachable if a module imports the host functions outside an
				// invocation, which the engine never does; fail closed.
				panic(errors.New("wasm: host function called outside an invocation"))
			}
			c.touch()
			h.fn(c, ctx, m, stack)
		})
		b = b.NewFunctionBuilder().WithGoModuleFunction(fn, params, results).Export(h.name)
	}
	_, err := b.Instantiate(ctx)
	return err
}

type callKey struct{}

// call is the host side of one invocation (or of the describe call at Load). It is
// used by one goroutine: the one running the guest.
type call struct {
	prog   *Program
	fn     string
	inv    sandbox.Invocation
	limits sandbox.Limits
	tools  map[string]bool

	toolCalls int
	toolErrs  map[int]error // tool errors handed to the guest, by call number
	result    []byte        // the last tool result (output or error JSON)

	value   json.RawMessage
	console *console
	stdout  *stream
	stderr  *stream
	mem     *linearMemory
	clock   clock
	parent  context.Context // the caller's context, without the invocation timeout

	// initializing: _initialize is running. initHost: it called a host function or
	// wrote output, so its instance is not reused. initRandom: what it read from
	// random_get.
	initializing bool
	initHost     bool
	initRandom   []byte

	// refusedPages is the largest memory size (pages) a refused memory.grow asked
	// for, read from the instance when a guest call fails.
	refusedPages uint64
	// guestFailed: abort is the guest's own error, reported through fail.
	guestFailed bool
	// stopped: the guest was told to stop (its context ended) while it ran, and a
	// trap it then hit is the stop.
	stopped bool
	abort   error
}

// touch records that the guest called a host function or wrote output.
func (c *call) touch() {
	if c.initializing {
		c.initHost = true
	}
}

// stop ends the invocation with err: the host function unwinds the guest.
func (c *call) stop(err error) {
	c.abort = err
	panic(errAbort)
}

// violation ends the invocation with a logic error for a misuse of the ABI.
func (c *call) violation(format string, args ...any) {
	c.stop(&scripthost.Error{
		Class:   scripthost.ClassLogic,
		Code:    scripthost.CodeSandboxViolation,
		File:    c.prog.name,
		Message: fmt.Sprintf("%s: ", c.fn) + fmt.Sprintf(format, args...),
	})
}

// guestBytes returns the guest memory [ptr, ptr+n) after checking that the range
// neither wraps around 4 GiB nor leaves the memory. The slice aliases guest memory: it
// is valid until the guest runs again.
func (c *call) guestBytes(m api.Module, fn, what string, ptr, n uint32) []byte {
	mem := m.Memory()
	if mem == nil {
		c.violation("%s: the module has no memory", fn)
	}
	if ptr+n < ptr {
		c.violation("%s: %s range [%#x, +%d) wraps around the 32-bit address space", fn, what, ptr, n)
	}
	if size := mem.Size(); uint64(ptr)+uint64(n) > uint64(size) {
		c.violation("%s: %s range [%#x, +%d) is outside the guest memory of %d bytes", fn, what, ptr, n, size)
	}
	b, ok := mem.Read(ptr, n)
	if !ok {
		c.violation("%s: %s range [%#x, +%d) is not readable", fn, what, ptr, n)
	}
	return b
}

func (c *call) input(kind uint32) (json.RawMessage, bool) {
	g := c.inv.Globals
	switch {
	case kind == inputState:
		return g.State, g.State != nil
	case kind == inputPrepared:
		return g.Prepared, g.Prepared != nil
	case kind == inputMutationResult:
		return g.MutationResult, g.MutationResult != nil
	case kind == inputPhase:
		b, _ := json.Marshal(string(c.inv.Phase))
		return b, true
	case kind == inputFunction:
		b, _ := json.Marshal(c.fn)
		return b, true
	case kind == inputArgs:
		args := make([]json.RawMessage, len(c.inv.Args))
		for i, a := range c.inv.Args {
			args[i] = a
			if a == nil {
				args[i] = json.RawMessage("null")
			}
		}
		b, err := json.Marshal(args)
		if err != nil {
			c.violation("input_read: arguments are not valid JSON: %v", err)
		}
		return b, true
	case kind >= inputArg0 && kind-inputArg0 < uint32(len(c.inv.Args)):
		a := c.inv.Args[kind-inputArg0]
		if a == nil {
			a = json.RawMessage("null")
		}
		return a, true
	}
	return nil, false
}

// input_len(kind) -> len, or -1 when the input is not defined.
func (c *call) inputLen(_ context.Context, _ api.Module, stack []uint64) {
	b, ok := c.input(api.DecodeU32(stack[0]))
	if !ok {
		stack[0] = api.EncodeI32(-1)
		return
	}
	stack[0] = api.EncodeI32(int32(len(b)))
}

// input_read(kind, ptr, len) -> total length (copies min(len, total) bytes), or -1.
func (c *call) inputRead(_ context.Context, m api.Module, stack []uint64) {
	kind, ptr, n := api.DecodeU32(stack[0]), api.DecodeU32(stack[1]), api.DecodeU32(stack[2])
	dst := c.guestBytes(m, "input_read", "buffer", ptr, n)
	b, ok := c.input(kind)
	if !ok {
		stack[0] = api.EncodeI32(-1)
		return
	}
	copy(dst, b)
	stack[0] = api.EncodeI32(int32(len(b)))
}

// result_len() -> length of the last tool result.
func (c *call) resultLen(_ context.Context, _ api.Module, stack []uint64) {
	stack[0] = api.EncodeI32(int32(len(c.result)))
}

// result_read(ptr, len) -> total length (copies min(len, total) bytes).
func (c *call) resultRead(_ context.Context, m api.Module, stack []uint64) {
	ptr, n := api.DecodeU32(stack[0]), api.DecodeU32(stack[1])
	dst := c.guestBytes(m, "result_read", "buffer", ptr, n)
	copy(dst, c.result)
	stack[0] = api.EncodeI32(int32(len(c.result)))
}

// log(level, ptr, len)
func (c *call) log(_ context.Context, m api.Module, stack []uint64) {
	level, ptr, n := api.DecodeU32(stack[0]), api.DecodeU32(stack[1]), api.DecodeU32(stack[2])
	if level >= uint32(len(logLevels)) {
		c.violation("log: unknown level %d (0 log, 1 warn, 2 error)", level)
	}
	text := c.guestBytes(m, "log", "text", ptr, n)
	c.console.add(logLevels[level], string(text))
}

// return_value(ptr, len): the handler's result, JSON. The last call wins.
func (c *call) returnValue(_ context.Context, m api.Module, stack []uint64) {
	ptr, n := api.DecodeU32(stack[0]), api.DecodeU32(stack[1])
	if int64(n) > int64(c.limits.MaxOutputBytes) {
		c.stop((&sandbox.LimitError{Limit: "output",
			Detail: fmt.Sprintf("%s returned %d bytes, limit %d", c.fn, n, c.limits.MaxOutputBytes)}).AsError())
	}
	b := c.guestBytes(m, "return_value", "value", ptr, n)
	if !json.Valid(b) {
		c.violation("return_value: value is not valid JSON")
	}
	c.value = append(json.RawMessage(nil), b...)
}

// failure is the JSON a guest passes to fail. Every field is optional; a payload that
// is not a JSON object is taken as the message text.
type failure struct {
	Message string `json:"message"`
	Class   string `json:"class"`
	Code    string `json:"code"`
	Call    int    `json:"call"`
	File    string `json:"file"`
	Line    int    `json:"line"`
	Column  int    `json:"column"`
	Stack   string `json:"stack"`
}

// fail(ptr, len): ends the invocation with the guest's error. Does not return.
func (c *call) fail(_ context.Context, m api.Module, stack []uint64) {
	ptr, n := api.DecodeU32(stack[0]), api.DecodeU32(stack[1])
	b := c.guestBytes(m, "fail", "error", ptr, n)
	if n > maxFailBytes {
		c.stop((&sandbox.LimitError{Limit: "output",
			Detail: fmt.Sprintf("%s: fail: error of %d bytes, limit %d", c.fn, n, maxFailBytes)}).AsError())
	}
	var f failure
	if err := json.Unmarshal(b, &f); err != nil || f.Message == "" && f.Call == 0 {
		f = failure{Message: string(b)}
	}
	// Re-raising a tool error keeps its class and cause, as a rethrown exception does
	// in JS; any other error the guest reports is a script error.
	if orig, ok := c.toolErrs[f.Call]; ok && f.Call > 0 {
		c.stop(orig)
	}
	if f.Message == "" {
		f.Message = "handler failed"
	}
	c.guestFailed = true
	file := f.File
	if file == "" {
		file = c.prog.name
	}
	c.stop(&scripthost.Error{
		Class:   scripthost.ClassLogic,
		Code:    scripthost.CodeScript,
		Op:      c.fn,
		Message: f.Message,
		File:    file,
		Line:    f.Line,
		Column:  f.Column,
		Stack:   f.Stack,
	})
}

// toolErrorJSON is what the guest reads after a failed tool call.
type toolErrorJSON struct {
	Class   scripthost.ErrorClass `json:"class"`
	Code    string                `json:"code"`
	Message string                `json:"message"`
	Call    int                   `json:"call"`
}

// tool_call(name_ptr, name_len, in_ptr, in_len) -> status. The output (status 0) or
// the error (status 1) is then read with result_len / result_read.
func (c *call) toolCall(ctx context.Context, m api.Module, stack []uint64) {
	namePtr, nameLen := api.DecodeU32(stack[0]), api.DecodeU32(stack[1])
	inPtr, inLen := api.DecodeU32(stack[2]), api.DecodeU32(stack[3])
	name := string(c.guestBytes(m, "tool_call", "name", namePtr, nameLen))
	input := json.RawMessage(append([]byte(nil), c.guestBytes(m, "tool_call", "input", inPtr, inLen)...))
	if c.toolCalls >= c.limits.MaxToolCalls {
		c.stop((&sandbox.LimitError{Limit: "tool_calls",
			Detail: fmt.Sprintf("%s made more than %d tool calls", c.fn, c.limits.MaxToolCalls)}).AsError())
	}
	c.toolCalls++
	n := c.toolCalls
	ns, method, _ := strings.Cut(name, ".")
	switch {
	case c.inv.Tools == nil || !c.toolAllowed(name):
		c.toolFailed(n, scripthost.Errorf(scripthost.ClassLogic, scripthost.CodeUnknownTool, "unknown tool %q", name))
	case !json.Valid(input):
		c.toolFailed(n, &scripthost.Error{Class: scripthost.ClassLogic, Code: scripthost.CodeInvalidInput,
			Op: name, Message: "input is not valid JSON"})
	default:
		out, err := c.callTool(ctx, ns, method, input)
		if err != nil {
			c.toolFailed(n, err)
		} else {
			if out == nil {
				out = json.RawMessage("null")
			}
			c.result = out
			stack[0] = api.EncodeI32(toolOK)
			return
		}
	}
	stack[0] = api.EncodeI32(toolError)
}

func (c *call) toolAllowed(name string) bool {
	if c.tools == nil {
		c.tools = map[string]bool{}
		for _, t := range c.inv.Tools.List() {
			c.tools[t.Namespace+"."+t.Method] = true
		}
	}
	return c.tools[name]
}

// callTool runs one tool. A panic becomes an internal tool_panic error and an error
// wrapping sandbox.ErrTerminate ends the invocation; neither reaches the guest.
func (c *call) callTool(ctx context.Context, ns, method string, input json.RawMessage) (out json.RawMessage, err error) {
	func() {
		defer func() {
			if r := recover(); r != nil {
				err = &scripthost.Error{
					Class:   scripthost.ClassInternal,
					Code:    scripthost.CodeToolPanic,
					Op:      ns + "." + method,
					Message: fmt.Sprintf("tool panicked: %v", r),
				}
			}
		}()
		out, err = c.inv.Tools.Call(ctx, ns, method, input)
	}()
	var se *scripthost.Error
	if errors.Is(err, sandbox.ErrTerminate) ||
		errors.As(err, &se) && se.Code == scripthost.CodeToolPanic && se.Class == scripthost.ClassInternal {
		c.stop(err)
	}
	return out, err
}

// toolFailed hands err to the guest as the result of tool call n.
func (c *call) toolFailed(n int, err error) {
	e := toolErrorJSON{Class: scripthost.ClassOf(err), Message: err.Error(), Call: n}
	var se *scripthost.Error
	if errors.As(err, &se) {
		e.Code = se.Code
		if se.Message != "" {
			e.Message = se.Message
		}
	}
	if c.toolErrs == nil {
		c.toolErrs = map[int]error{}
	}
	c.toolErrs[n] = err
	c.result, _ = json.Marshal(e)
}
