package goja

import "github.com/dop251/goja/unistring"

// Helpers for embedders (scripthost patch): values handed to a script and taken back
// from it without a round trip through JavaScript.

// IsError reports whether v is an object that inherits from the runtime's own
// Error.prototype, as v instanceof Error does before a script replaces Error.
func (r *Runtime) IsError(v Value) bool {
	o, ok := v.(*Object)
	if !ok {
		return false
	}
	proto := r.getErrorPrototype()
	// A proxy's getPrototypeOf trap may make the chain endless.
	for p, n := o.self.proto(), 0; p != nil && n < 10000; p, n = p.self.proto(), n+1 {
		if p == proto {
			return true
		}
	}
	return false
}

// HasOwn reports whether o has an own property name, as Object.hasOwn does (a proxy's
// trap runs; what it throws panics, see Runtime.Try).
func (o *Object) HasOwn(name string) bool {
	return o.self.hasOwnPropertyStr(unistring.NewFromString(name))
}

// Freeze does what Object.freeze(o) does. A plain object or a native function with no
// symbol-keyed properties is frozen in place (see baseObject.freeze), without the
// generic walk's iterators and descriptors.
func (r *Runtime) Freeze(o *Object) error {
	var b *baseObject
	switch self := o.self.(type) {
	case *baseObject:
		b = self
	case *nativeFuncObject:
		b = &self.baseObject
	}
	if b == nil || b.symValues != nil && b.symValues.size > 0 {
		return r.try(func() { r.object_freeze(FunctionCall{Arguments: []Value{o}}) })
	}
	b.freeze()
	return nil
}

// freeze makes o non-extensible and every own string-keyed property non-configurable
// and, unless an accessor, non-writable: its records are marked so, and its plain
// values are by the frozen mark, with no record made for them.
func (o *baseObject) freeze() {
	o.extensible = false
	o.frozen = true
	for _, name := range o.propNames {
		if p, ok := o.values[name].(*valueProperty); ok {
			p.configurable = false
			if !p.accessor {
				p.writable = false
			}
		}
	}
}

// ParseJSON parses text as JSON.parse does (without a reviver), refusing text nested
// deeper than the runtime's Limits.MaxJSONNesting. With frozen set, every object and
// array of the result is frozen, as a deep Object.freeze would leave it.
func (r *Runtime) ParseJSON(text string, frozen bool) (v Value, err error) {
	err = r.try(func() {
		r.limitJSONNesting(text)
		v = r.parseJSON(text)
		if frozen {
			freezeParsed(v)
		}
	})
	return
}

// freezeParsed freezes v, a value parseJSON just built: plain objects and dense
// arrays of plain data values, nothing shared, no cycles. Each object and array is
// marked frozen (see baseObject.frozen) rather than given a record per property: a
// script that only reads the value never pays for the records.
func freezeParsed(v Value) {
	o, ok := v.(*Object)
	if !ok {
		return
	}
	switch self := o.self.(type) {
	case *arrayObject:
		for _, x := range self.values {
			freezeParsed(x)
		}
		self.freeze()
	case *baseObject:
		for _, name := range self.propNames {
			freezeParsed(self.values[name])
		}
		self.freeze()
	}
}

// StringifyJSON returns JSON.stringify(v) as a Go string, "null" where
// JSON.stringify returns undefined. ok is false, and s empty, when the text would be
// longer than max characters (max 0: no bound); the work stops there.
func (r *Runtime) StringifyJSON(v Value, max int) (s string, ok bool, err error) {
	err = r.try(func() {
		res, overflow := r.stringifyJSON(FunctionCall{Arguments: []Value{v}}, max)
		switch {
		case overflow:
		case res == _undefined:
			s, ok = "null", true
		default:
			s, ok = res.String(), true
		}
	})
	return
}

// SetLocaleMethods makes Number.prototype.toLocaleString and Date.prototype's
// toLocaleString, toLocaleDateString and toLocaleTimeString call f with their full
// name ("Date.prototype.toLocaleString") instead of goja's locale-less versions, for
// an embedder that implements locales, without building the methods in every runtime.
func (r *Runtime) SetLocaleMethods(f func(method string, call FunctionCall) Value) {
	r.localeMethods = f
}

func (r *Runtime) numberproto_toLocaleString(call FunctionCall) Value {
	if f := r.localeMethods; f != nil {
		return f("Number.prototype.toLocaleString", call)
	}
	return r.numberproto_toString(call)
}

// NewError returns a new Error with message msg, made by the runtime's own Error
// constructor whatever a script did to the global.
func (r *Runtime) NewError(msg string) *Object {
	return r.newError(r.getError(), msg).(*Object)
}

// NewSettledPromise returns a new promise resolved with v, or rejected with it, as
// the resolving functions of NewPromise would leave it (a thenable v is followed),
// without making those functions: for a host call that has its result at once.
func (r *Runtime) NewSettledPromise(v Value, rejected bool) *Promise {
	p := r.newPromise(r.getPromisePrototype())
	if rejected {
		p.reject(v)
		return p
	}
	if obj, ok := v.(*Object); ok {
		var thenAction Value
		if ex := r.vm.try(func() { thenAction = obj.self.getStr("then", nil) }); ex != nil {
			p.reject(ex.val)
			return p
		}
		if call, ok := assertCallable(thenAction); ok {
			r.enqueuePromiseJob(r.newPromiseResolveThenableJob(p, v, &jobCallback{callback: call}))
			return p
		}
	}
	p.fulfill(v)
	return p
}
