package js

import (
	"context"
	"encoding/json"
	"fmt"
	"runtime/debug"
	"strings"
	"sync"

	"github.com/dop251/goja"

	"github.com/scripthost/scripthost"
	"github.com/scripthost/scripthost/sandbox"
)

// program is a loaded module. Every Definition and Invoke call evaluates it in a new
// runtime.
type program struct {
	eng *Engine
	mod *compiled

	mu  sync.Mutex
	def json.RawMessage
}

var _ sandbox.Program = (*program)(nil)

// Definition evaluates the module and returns its default export as JSON, with every
// function replaced by its path ("consumers.process.prepare"). The result is cached.
func (p *program) Definition(ctx context.Context) (json.RawMessage, error) {
	p.mu.Lock()
	def := p.def
	p.mu.Unlock()
	if def != nil {
		return append(json.RawMessage(nil), def...), nil
	}
	res, err := p.run(ctx, sandbox.Invocation{}, func(in *instance, def *goja.Object) (goja.Value, error) {
		return in.definition(def)
	})
	if err != nil {
		return nil, err
	}
	p.mu.Lock()
	p.def = res.Value
	p.mu.Unlock()
	return append(json.RawMessage(nil), res.Value...), nil
}

// Invoke runs inv.Function in a fresh runtime.
func (p *program) Invoke(ctx context.Context, inv sandbox.Invocation) (sandbox.Result, error) {
	return p.run(ctx, inv, func(in *instance, def *goja.Object) (goja.Value, error) {
		self, fn, err := in.resolve(def, inv.Function)
		if err != nil {
			return nil, err
		}
		if fn == nil {
			return nil, &scripthost.Error{Class: scripthost.ClassLogic, Code: scripthost.CodeInvalidWorkflow, File: p.mod.name,
				Message: fmt.Sprintf("sandbox/js: the definition has no function %q", inv.Function)}
		}
		args := make([]goja.Value, len(inv.Args))
		for i, raw := range inv.Args {
			if args[i], err = in.parse(raw); err != nil {
				return nil, fmt.Errorf("sandbox/js: argument %d: %w", i, err)
			}
		}
		v, err := fn(self, args...)
		if err != nil {
			return nil, err
		}
		promise, ok := v.Export().(*goja.Promise)
		if err := in.eventLoop(promise); err != nil {
			return nil, err
		}
		if !ok {
			return v, nil
		}
		// The job queue has been drained when the call returned, and tool calls
		// settle their promises synchronously: a promise still pending now waits on
		// something that can never happen.
		switch promise.State() {
		case goja.PromiseStateFulfilled:
			return promise.Result(), nil
		case goja.PromiseStateRejected:
			return nil, in.scriptError(promise.Result(), nil)
		}
		return nil, &scripthost.Error{Class: scripthost.ClassLogic, Code: scripthost.CodeScript, File: p.mod.name,
			Message: fmt.Sprintf("sandbox/js: %s returned a promise that never settles: nothing it waits on can complete", inv.Function)}
	})
}

// resolve finds the function at path ("consumers.process.prepare") in def through own
// properties only, returning it with the object it is a method of; fn is nil when
// there is none.
func (in *instance) resolve(def *goja.Object, path string) (self goja.Value, fn goja.Callable, err error) {
	ex := in.vm.Try(func() {
		var v goja.Value = def
		for part := range strings.SplitSeq(path, ".") {
			obj, ok := v.(*goja.Object)
			if !ok || !obj.HasOwn(part) {
				return
			}
			self, v = obj, obj.Get(part)
		}
		fn, _ = goja.AssertFunction(v)
	})
	if ex != nil {
		return nil, nil, ex
	}
	return self, fn, nil
}

// Close releases nothing: compiled modules stay in the engine's cache.
func (p *program) Close(context.Context) error { return nil }

// run evaluates the module in a fresh instance under the invocation's limits and
// calls body with its default export. The result value is serialized under
// MaxOutputBytes.
func (p *program) run(ctx context.Context, inv sandbox.Invocation, body func(*instance, *goja.Object) (goja.Value, error)) (res sandbox.Result, err error) {
	lim := p.eng.limits(inv.Limits)
	ctx, cancel := context.WithTimeoutCause(ctx, lim.Timeout,
		&sandbox.LimitError{Limit: "timeout", Detail: fmt.Sprintf("still running after %v", lim.Timeout)})
	defer cancel()
	defer func() {
		if r := recover(); r != nil {
			err = &scripthost.Error{Class: scripthost.ClassInternal, Code: scripthost.CodeSandboxViolation, File: p.mod.name,
				Message: fmt.Sprintf("sandbox/js: engine panic: %v", r), Stack: string(debug.Stack())}
		}
	}()
	in, err := p.eng.newInstance(ctx, p.mod, inv)
	if err != nil {
		return res, err
	}
	stop := context.AfterFunc(ctx, func() { in.abort(context.Cause(ctx)) })
	defer stop()
	in.mem = watch(lim.MemoryBytes, in.abort)
	defer in.mem.done()

	value, err := func() (goja.Value, error) {
		def, err := in.evaluate()
		if err != nil {
			return nil, err
		}
		return body(in, def)
	}()
	var out json.RawMessage
	if err == nil && in.interruptReason() == nil {
		out, err = in.serialize(value, lim.MaxOutputBytes, "output", "the result")
	}
	if reason := in.interruptReason(); reason != nil {
		err = in.reasonError(reason, stackOf(err))
	} else if err != nil {
		err = in.classify(err)
	}
	if err != nil {
		return sandbox.Result{Console: in.console, ToolCalls: in.toolCalls}, err
	}
	return sandbox.Result{Value: out, Console: in.console, ToolCalls: in.toolCalls}, nil
}
