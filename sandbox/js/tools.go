package js

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/dop251/goja"

	"github.com/scripthost/scripthost"
	"github.com/scripthost/scripthost/sandbox"
)

// toolGlobals returns the lazy globals of a runtime offering tools: the engine's
// (console, web platform) and one read-only global per tool namespace, built on first
// use (see namespace). They are made once per set of namespaces and kept; a namespace
// that would hide a global is refused.
func (e *Engine) toolGlobals(tools []sandbox.ToolName) (*goja.LazyGlobals, error) {
	var names []string
	for _, t := range tools {
		if !slices.Contains(names, t.Namespace) {
			names = append(names, t.Namespace)
		}
	}
	if len(names) == 0 {
		return lazyGlobals, nil
	}
	key := strings.Join(names, "\x00")
	e.mu.Lock()
	g, ok := e.globals[key]
	e.mu.Unlock()
	if ok {
		return g, nil
	}
	for _, name := range names {
		if lazyGlobals.Has(name) {
			return nil, &scripthost.Error{Class: scripthost.ClassInternal, Code: scripthost.CodeInvalidWorkflow,
				Message: fmt.Sprintf("sandbox/js: tool namespace %s would hide the global of that name", name)}
		}
	}
	g = lazyGlobals.WithFixed(names...)
	e.mu.Lock()
	if len(e.globals) < maxToolGlobals {
		e.globals[key] = g
	}
	e.mu.Unlock()
	return g, nil
}

// maxToolGlobals bounds the sets of tool namespaces an engine keeps globals for; a
// set past it gets its globals made for each invocation.
const maxToolGlobals = 64

// namespace builds the global of a tool namespace: a frozen object with a frozen
// method per tool. A method returns a Promise; the call itself runs synchronously on
// the runtime's goroutine and the Promise is settled when it returns.
func (in *instance) namespace(name string) goja.Value {
	vm := in.vm
	ns := vm.NewObject()
	for _, t := range in.toolList {
		if t.Namespace == name {
			m := vm.ToValue(in.toolMethod(t)).(*goja.Object)
			if err := vm.Freeze(m); err != nil {
				panic(err)
			}
			_ = ns.Set(t.Method, m)
		}
	}
	if err := vm.Freeze(ns); err != nil {
		panic(err)
	}
	return ns
}

// freezeNamespace freezes a namespace object (a tool namespace, the console) and its
// methods.
func (in *instance) freezeNamespace(ns *goja.Object) error {
	for _, k := range ns.Keys() {
		if m, ok := ns.Get(k).(*goja.Object); ok {
			if err := in.vm.Freeze(m); err != nil {
				return err
			}
		}
	}
	return in.vm.Freeze(ns)
}

func (in *instance) toolMethod(t sandbox.ToolName) func(goja.FunctionCall) goja.Value {
	name := t.Namespace + "." + t.Method
	vm := in.vm
	return func(call goja.FunctionCall) goja.Value {
		if in.toolCalls >= in.lim.MaxToolCalls {
			in.abort(&sandbox.LimitError{Limit: "tool_calls", Detail: fmt.Sprintf("more than %d tool calls (%s)", in.lim.MaxToolCalls, name)})
			panic(vm.NewTypeError("tool call limit"))
		}
		input, err := in.serialize(call.Argument(0), in.lim.MaxOutputBytes, "output", "the input of "+name)
		if err != nil {
			panic(in.inputError(name, err))
		}
		in.toolCalls++
		out, err := in.callTool(t, input)
		if errors.Is(err, sandbox.ErrTerminate) {
			in.abort(err)
			panic(vm.NewTypeError("invocation terminated"))
		}
		if err == nil {
			if len(out) == 0 {
				out = json.RawMessage("null")
			}
			v, perr := vm.ParseJSON(string(out), false)
			if perr == nil {
				return vm.ToValue(vm.NewSettledPromise(v, false))
			}
			err = scripthost.Errorf(scripthost.ClassInternal, scripthost.CodeInvalidInput, "sandbox/js: %s returned invalid JSON", name)
		}
		obj := in.toolError(name, err)
		in.toolErrors[obj] = err
		return vm.ToValue(vm.NewSettledPromise(obj, true))
	}
}

// inputError is what a tool method throws when its input cannot be serialized. A
// limit ends the invocation (the throw only unwinds the script); anything else is a
// JavaScript exception. A Go error must never be thrown as is: goja would let it
// escape as a Go panic.
func (in *instance) inputError(name string, err error) *goja.Object {
	if le, ok := errLimit(err); ok {
		in.abort(le)
		return in.vm.NewTypeError(le.Error())
	}
	var ex *goja.Exception
	if errors.As(err, &ex) {
		if obj, ok := ex.Value().(*goja.Object); ok {
			return obj
		}
	}
	return in.vm.NewTypeError(fmt.Sprintf("the input of %s: %v", name, err))
}

// callTool runs one tool call, turning a panic into an internal error. While it runs
// the invocation is not charged for heap growth: it is not running script code.
func (in *instance) callTool(t sandbox.ToolName, input json.RawMessage) (out json.RawMessage, err error) {
	if in.mem != nil {
		in.mem.inJS.Store(false)
		defer in.mem.inJS.Store(true)
	}
	defer func() {
		if r := recover(); r != nil {
			err = &scripthost.Error{Class: scripthost.ClassInternal, Code: scripthost.CodeToolPanic,
				Op:      t.Namespace + "." + t.Method,
				Message: fmt.Sprintf("sandbox/js: tool panicked: %v", r)}
		}
	}()
	return in.tools.Call(sandbox.WithCallSite(in.ctx, in.callSite()), t.Namespace, t.Method, input)
}

// toolError builds the Error object a tool call rejects with: name "ToolError", the
// message, and the class and code of the Go error.
func (in *instance) toolError(name string, err error) *goja.Object {
	class, code, msg := describe(err)
	obj := in.vm.NewError(msg)
	_ = obj.Set("name", "ToolError")
	_ = obj.Set("class", string(class))
	_ = obj.Set("code", code)
	_ = obj.Set("tool", name)
	return obj
}

// describe returns the class, code and message of err.
func describe(err error) (scripthost.ErrorClass, string, string) {
	var se *scripthost.Error
	if errors.As(err, &se) {
		msg := se.Message
		if msg == "" && se.Err != nil {
			msg = se.Err.Error()
		}
		return se.Class, se.Code, msg
	}
	return scripthost.ClassInternal, "", err.Error()
}
