package js

import (
	"math/big"
	"reflect"
	"strconv"
	"strings"

	"github.com/dop251/goja"
)

// The host's helpers are Go: they read the script's values through the engine's own
// operations, so a script that replaced a built-in cannot change what they do, and a
// fresh runtime runs no JavaScript of the host's before the module.

// consoleLevels are the console methods and the level each records.
var consoleLevels = [...]struct{ method, level string }{
	{"log", "log"}, {"info", "log"}, {"debug", "log"}, {"warn", "warn"}, {"error", "error"},
}

// makeConsole builds the console global (a lazy global): frozen, its methods
// recording lines through emit.
func (in *instance) makeConsole() goja.Value {
	vm := in.vm
	c := vm.NewObject()
	for _, l := range consoleLevels {
		level := l.level
		_ = c.Set(l.method, func(call goja.FunctionCall) goja.Value {
			var b strings.Builder
			for i, a := range call.Arguments {
				if i > 0 {
					b.WriteByte(' ')
				}
				b.WriteString(in.format(a, in.lim.MaxConsoleBytes))
			}
			in.emit(level, b.String())
			return goja.Undefined()
		})
	}
	if err := in.freezeNamespace(c); err != nil {
		panic(err)
	}
	return c
}

// format prints one console argument: strings as they are, errors by their stack,
// functions by name, other values as JSON of at most room bytes.
func (in *instance) format(v goja.Value, room int) (out string) {
	vm := in.vm
	switch {
	case v == nil || goja.IsUndefined(v):
		return "undefined"
	case isString(v):
		return v.String()
	}
	if ex := vm.Try(func() { out = in.formatObject(v, room) }); ex != nil {
		msg := "undefined"
		if obj, ok := ex.Value().(*goja.Object); ok {
			if m := obj.Get("message"); m != nil {
				msg = m.String()
			}
		}
		return "[unprintable: " + msg + "]"
	}
	return out
}

func (in *instance) formatObject(v goja.Value, room int) string {
	vm := in.vm
	if _, ok := goja.AssertFunction(v); ok {
		if name := v.ToObject(vm).Get("name"); name != nil && name.ToBoolean() {
			return "[Function: " + name.String() + "]"
		}
		return "[Function]"
	}
	if _, ok := v.(*goja.Symbol); ok || v.ExportType() == bigIntType {
		return v.String()
	}
	if vm.IsError(v) {
		if stack := v.ToObject(vm).Get("stack"); stack != nil && stack.ToBoolean() {
			return stack.String()
		}
		return v.String()
	}
	s, ok, err := vm.StringifyJSON(v, room)
	switch {
	case err != nil:
		panic(err)
	case !ok:
		return "[too large to print]"
	}
	return s
}

// describeThrown returns the message and the stack text of a thrown value without
// letting a hostile value escape: any failure gives a fixed message.
func (in *instance) describeThrown(v goja.Value) (msg, stack string) {
	vm := in.vm
	ex := vm.Try(func() {
		switch {
		case vm.IsError(v):
			obj := v.ToObject(vm)
			msg = obj.Get("name").String() + ": " + obj.Get("message").String()
			if s := obj.Get("stack"); s != nil && isString(s) {
				stack = s.String()
			}
		case isObject(v):
			s, ok, err := vm.StringifyJSON(v, 1000)
			if err != nil {
				panic(err)
			}
			if !ok {
				s = "[object]"
			}
			msg = "uncaught exception: " + s
		case isString(v):
			q, _, err := vm.StringifyJSON(v, 0)
			if err != nil {
				panic(err)
			}
			msg = "uncaught exception: " + q
		default:
			msg = "uncaught exception: " + v.String()
		}
	})
	if ex != nil {
		return "uncaught exception (unprintable)", ""
	}
	return msg, stack
}

// definition converts the default export to a plain value, every function replaced by
// its path from the root ("consumers.process.prepare"); the caller serializes it.
func (in *instance) definition(def *goja.Object) (out goja.Value, err error) {
	vm := in.vm
	var seen []*goja.Object
	var walk func(v goja.Value, path string) goja.Value
	join := func(path, key string) string {
		if path == "" {
			return key
		}
		return path + "." + key
	}
	walk = func(v goja.Value, path string) goja.Value {
		if _, ok := goja.AssertFunction(v); ok {
			return vm.ToValue(path)
		}
		obj, ok := v.(*goja.Object)
		if !ok {
			return v
		}
		for _, s := range seen {
			if s == obj {
				panic(vm.NewTypeError("the definition refers to itself at " + path))
			}
		}
		seen = append(seen, obj)
		defer func() { seen = seen[:len(seen)-1] }()
		if obj.ClassName() == "Array" {
			n := int(obj.Get("length").ToInteger())
			items := make([]any, n)
			for i := range n {
				k := strconv.Itoa(i)
				items[i] = walk(obj.Get(k), join(path, k))
			}
			return vm.NewArray(items...)
		}
		o := vm.NewObject()
		for _, k := range obj.Keys() {
			_ = o.Set(k, walk(obj.Get(k), join(path, k)))
		}
		return o
	}
	if ex := vm.Try(func() { out = walk(def, "") }); ex != nil {
		return nil, ex
	}
	return out, nil
}

var bigIntType = reflect.TypeFor[*big.Int]()

// isString reports whether v is a primitive string.
func isString(v goja.Value) bool {
	if isObject(v) {
		return false
	}
	t := v.ExportType()
	return t != nil && t.Kind() == reflect.String
}

func isObject(v goja.Value) bool {
	_, ok := v.(*goja.Object)
	return ok
}
