package js

import (
	"bytes"
	"context"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"
	_ "time/tzdata" // deterministic time zones must not depend on the host's zoneinfo

	"github.com/dop251/goja"
	"github.com/dop251/goja/parser"

	"github.com/scripthost/scripthost"
	"github.com/scripthost/scripthost/sandbox"
)

//go:embed zone.js
var zoneSource string

// zoneProgram fixes Date's local time to a zone in deterministic mode.
var zoneProgram = goja.MustCompile("<sandbox>", zoneSource, true)

// instance is one fresh goja runtime running one module for one invocation (or one
// definition read). It is owned by the goroutine that created it; only abort may be
// called from other goroutines.
type instance struct {
	vm    *goja.Runtime
	mod   *compiled
	lim   sandbox.Limits
	ctx   context.Context
	tools sandbox.Tools
	// toolCtx is ctx as tool calls get it (see callCtx).
	toolCtx context.Context
	// toolList is what tools offers, listed once.
	toolList []sandbox.ToolName
	start    time.Time

	toolCalls   int
	console     []sandbox.ConsoleLine
	consoleUsed int
	consoleFull bool
	// toolErrors maps the error objects tool calls rejected with to the Go errors
	// behind them, so that an uncaught tool error keeps its class.
	toolErrors map[*goja.Object]error
	mem        *memEntry
	platform   *platform
	parsed     []parsedInput // the first maxParsedInputs frozen values parsed, with their text

	mu     sync.Mutex
	reason error // why the runtime was interrupted; the first reason wins
}

// newInstance creates a runtime with the limits, the lazy globals (console, web
// platform, tool namespaces) and the globals of inv installed, but without the module
// evaluated. No JavaScript of the host's runs, except zone.js in deterministic mode.
func (e *Engine) newInstance(ctx context.Context, mod *compiled, inv sandbox.Invocation) (*instance, error) {
	in := &instance{
		vm:         goja.New(),
		mod:        mod,
		lim:        e.limits(inv.Limits),
		ctx:        ctx,
		tools:      inv.Tools,
		toolErrors: map[*goja.Object]error{},
		start:      time.Now(),
	}
	vm := in.vm
	// eval and new Function parse code at run time: they must not read source maps
	// from the file system either.
	vm.SetParserOptions(parser.WithSourceMapLoader(refuseSourceMap))
	vm.SetMaxCallStackSize(in.lim.MaxStackDepth)
	globals := lazyGlobals
	if in.tools != nil {
		in.toolList = in.tools.List()
		g, err := e.toolGlobals(in.toolList)
		if err != nil {
			return nil, err
		}
		globals = g
	}
	vm.SetLazyGlobals(globals, in.global)
	in.setLimits()
	if d := inv.Deterministic; d != nil {
		now := d.Now
		vm.SetTimeSource(func() time.Time { return now })
		rng := rand.New(rand.NewPCG(uint64(d.Seed), 0x5eed))
		vm.SetRandSource(rng.Float64)
	} else {
		vm.SetTimeSource(e.opts.Clock)
		if inv.Seed != 0 {
			rng := rand.New(rand.NewPCG(uint64(inv.Seed), 0x5eed))
			vm.SetRandSource(rng.Float64)
		}
	}
	var zone *time.Location
	if d := inv.Deterministic; d != nil {
		name := d.TimeZone
		if name == "" {
			name = "UTC"
		}
		loc, err := time.LoadLocation(name)
		if err != nil {
			return nil, &scripthost.Error{Class: scripthost.ClassLogic, Code: scripthost.CodeInvalidInput,
				Message: fmt.Sprintf("sandbox/js: deterministic time zone %q: %v", d.TimeZone, err), Err: err}
		}
		zone = loc
	}
	if zone != nil {
		if err := in.installZone(zone); err != nil {
			return nil, err
		}
	}
	if err := in.installPlatform(inv.Deterministic, zone); err != nil {
		return nil, err
	}
	if err := in.installGlobals(inv.Globals); err != nil {
		return nil, err
	}
	return in, nil
}

// installZone makes Date's local-time methods use zone (deterministic mode).
func (in *instance) installZone(zone *time.Location) error {
	vm := in.vm
	host := vm.NewObject()
	at := func(ms float64) time.Time { return time.UnixMilli(int64(ms)).In(zone) }
	_ = host.Set("zoneOffset", func(ms float64) int {
		_, off := at(ms).Zone()
		return -off / 60
	})
	_ = host.Set("zoneName", func(ms float64) string {
		name, _ := at(ms).Zone()
		return name
	})
	fv, err := vm.RunProgram(zoneProgram)
	if err != nil {
		return fmt.Errorf("sandbox/js: zone: %w", err)
	}
	f, _ := goja.AssertFunction(fv)
	if _, err := f(goja.Undefined(), host); err != nil {
		return fmt.Errorf("sandbox/js: zone: %w", err)
	}
	return nil
}

// global builds the lazy global name: the console, a web-platform global or a tool
// namespace.
func (in *instance) global(name string) goja.Value {
	if name == consoleGlobal {
		return in.makeConsole()
	}
	if !lazyGlobals.Has(name) {
		return in.namespace(name)
	}
	return in.platform.global(name)
}

// Bounds on what one built-in call may allocate, derived from the memory budget: a
// Value is about 16 bytes, a string character one or two. JSON text is quoted
// character by character into a builder that doubles as it grows, without checking
// for interrupts: it is kept to an eighth of the string budget (4 M characters for the
// default 64 MiB). JSON.parse recurses natively once per nesting level.
const (
	bytesPerElement = 16
	bytesPerChar    = 2
	jsonShare       = 8
	maxJSONNesting  = 10000
)

// setLimits makes the engine refuse, before they allocate, the built-in calls that
// would take more than the memory budget in one step, and disables dynamic code.
func (in *instance) setLimits() {
	mem := in.lim.MemoryBytes
	in.vm.SetLimits(goja.Limits{
		MemoryBytes:        mem,
		MaxElements:        mem / bytesPerElement,
		MaxChars:           mem / bytesPerChar,
		MaxJSON:            mem / bytesPerChar / jsonShare,
		MaxJSONNesting:     maxJSONNesting,
		RegexTimeout:       min(in.lim.RegexTimeout, regexHardTimeout),
		DisableDynamicCode: "dynamic code evaluation (eval, new Function) is disabled in workflows",
		Allocate: func(n int64) string {
			if in.mem == nil { // the host's own values, parsed before the script runs
				return ""
			}
			return in.mem.reserve(n)
		},
		AllocStep: max(mem/allocStep, minAllocStep),
		Exceeded: func(kind, detail string) {
			in.stop(&sandbox.LimitError{Limit: kind, Detail: detail})
		},
	})
	limitStrings(in.vm, mem, in.stop)
}

// stop interrupts the runtime for a limit one of its own checks found (the engine's
// limits, the string limit), on the runtime's goroutine. A memory limit also tells the
// watcher, which then treats the invocation as one it stopped itself: when it
// finishes it stays charged with the growth seen until a collection has seen its last
// allocations, so that the scripts running next to it are not charged with them.
func (in *instance) stop(reason error) {
	if le, ok := reason.(*sandbox.LimitError); ok && le.Limit == "memory" && in.mem != nil {
		in.mem.exceeded()
	}
	in.abort(reason)
}

// emit records one console line, dropping lines past MaxConsoleBytes and saying so
// once.
func (in *instance) emit(level, text string) {
	if in.consoleFull {
		return
	}
	if in.consoleUsed+len(text) > in.lim.MaxConsoleBytes {
		in.consoleFull = true
		in.console = append(in.console, sandbox.ConsoleLine{Level: "warn",
			Text: fmt.Sprintf("[console output truncated: more than %d bytes]", in.lim.MaxConsoleBytes)})
		return
	}
	in.consoleUsed += len(text)
	in.console = append(in.console, sandbox.ConsoleLine{Level: level, Text: text})
}

// abort interrupts the runtime with reason. It may be called from any goroutine.
func (in *instance) abort(reason error) {
	in.mu.Lock()
	if in.reason == nil {
		in.reason = reason
	}
	in.mu.Unlock()
	in.vm.Interrupt(reason)
}

func (in *instance) interruptReason() error {
	in.mu.Lock()
	defer in.mu.Unlock()
	return in.reason
}

// installGlobals defines __state__, __prepared__ and __mutationResult__ as frozen plain
// values parsed inside the runtime, on non-writable, non-configurable properties.
func (in *instance) installGlobals(g sandbox.Globals) error {
	global := in.vm.GlobalObject()
	for _, kv := range []struct {
		name string
		raw  json.RawMessage
	}{{"__state__", g.State}, {"__prepared__", g.Prepared}, {"__mutationResult__", g.MutationResult}} {
		if kv.raw == nil {
			continue
		}
		v, err := in.parse(kv.raw)
		if err != nil {
			return fmt.Errorf("sandbox/js: global %s: %w", kv.name, err)
		}
		if err := global.DefineDataProperty(kv.name, v, goja.FLAG_FALSE, goja.FLAG_FALSE, goja.FLAG_TRUE); err != nil {
			return fmt.Errorf("sandbox/js: global %s: %w", kv.name, err)
		}
	}
	return nil
}

// parsedInput is a frozen value and the JSON text it was parsed from.
type parsedInput struct {
	raw json.RawMessage
	v   goja.Value
}

// maxParsedInputs bounds the values parse keeps to share: the three globals and the
// first argument, so that a phase with many arguments is not compared quadratically.
const maxParsedInputs = 4

// parse turns host JSON into a frozen plain JS value. The same text (a phase's input
// is both a global and an argument) is parsed once: the value is frozen, so sharing it
// is safe. Texts are compared rather than hashed into a map, which would copy each.
func (in *instance) parse(raw json.RawMessage) (goja.Value, error) {
	for _, p := range in.parsed {
		if bytes.Equal(p.raw, raw) {
			return p.v, nil
		}
	}
	v, err := in.vm.ParseJSON(string(raw), true)
	if err != nil {
		return nil, scripthost.Wrap(scripthost.ClassInternal, scripthost.CodeInvalidInput, err)
	}
	if len(in.parsed) < maxParsedInputs {
		in.parsed = append(in.parsed, parsedInput{raw: raw, v: v})
	}
	return v, nil
}

// serialize returns v as JSON, or a LimitError named limit when it would be larger
// than max bytes.
func (in *instance) serialize(v goja.Value, max int, limit, what string) (json.RawMessage, error) {
	out, ok, err := in.vm.StringifyJSON(v, max)
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, &sandbox.LimitError{Limit: limit, Detail: fmt.Sprintf("%s is larger than %d bytes", what, max)}
	}
	if len(out) > max {
		return nil, &sandbox.LimitError{Limit: limit, Detail: fmt.Sprintf("%s is %d bytes, more than %d", what, len(out), max)}
	}
	return json.RawMessage(out), nil
}

// evaluate runs the module and returns its default export.
func (in *instance) evaluate() (*goja.Object, error) {
	vm := in.vm
	fv, err := vm.RunProgram(in.mod.prg)
	if err != nil {
		return nil, err
	}
	f, ok := goja.AssertFunction(fv)
	if !ok {
		return nil, fmt.Errorf("sandbox/js: %s: module wrapper is not a function", in.mod.name)
	}
	module, exports, require := goja.Undefined(), goja.Undefined(), goja.Undefined()
	if in.mod.commonJS {
		exports = vm.NewObject()
		m := vm.NewObject()
		_ = m.Set("exports", exports)
		module = m
	}
	if in.mod.require {
		require = vm.ToValue(func(call goja.FunctionCall) goja.Value {
			panic(vm.NewTypeError(fmt.Sprintf("imports are not supported (%q): a workflow is one self-contained file",
				call.Argument(0).String())))
		})
	}
	def, err := f(goja.Undefined(), exports, require, module)
	if err != nil {
		return nil, err
	}
	if !in.mod.returns {
		def = nil
		if obj, ok := module.(*goja.Object).Get("exports").(*goja.Object); ok {
			def = obj.Get("default")
		}
	}
	defObj, ok := def.(*goja.Object)
	if !ok || def == nil || goja.IsUndefined(def) || goja.IsNull(def) {
		return nil, &scripthost.Error{Class: scripthost.ClassLogic, Code: scripthost.CodeInvalidWorkflow, File: in.mod.name,
			Message: "sandbox/js: the module has no default export object (write `export default { ... }`)"}
	}
	if _, isFn := goja.AssertFunction(defObj); isFn {
		return nil, &scripthost.Error{Class: scripthost.ClassLogic, Code: scripthost.CodeInvalidWorkflow, File: in.mod.name,
			Message: "sandbox/js: the default export is a function, want the workflow definition object"}
	}
	return defObj, nil
}

// errLimit reports whether err is a LimitError, returning it.
func errLimit(err error) (*sandbox.LimitError, bool) {
	var le *sandbox.LimitError
	ok := errors.As(err, &le)
	return le, ok
}
