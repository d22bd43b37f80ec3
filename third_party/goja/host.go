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
// symbol-keyed properties is frozen in place, its plain values turned into property
// records allocated together, without the generic walk's iterators.
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
	b.extensible = false
	plain := 0
	for _, name := range b.propNames {
		if _, ok := b.values[name].(*valueProperty); !ok {
			plain++
		}
	}
	props := make([]valueProperty, plain)
	for _, name := range b.propNames {
		switch p := b.values[name].(type) {
		case *valueProperty:
			p.configurable = false
			if !p.accessor {
				p.writable = false
			}
		default:
			props[0] = valueProperty{value: p, enumerable: true}
			b.values[name] = &props[0]
			props = props[1:]
		}
	}
	return nil
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
// arrays of data properties, nothing shared, no cycles. The property records of the
// whole value are allocated together, in one slab: its objects came in together and
// are frozen, so none of them outlives the rest by much.
func freezeParsed(v Value) {
	if n := countParsed(v); n > 0 {
		slab := make([]valueProperty, n)
		freezeInto(v, &slab)
	}
}

// countParsed is the number of properties of v and of the values it holds.
func countParsed(v Value) int {
	o, ok := v.(*Object)
	if !ok {
		return 0
	}
	n := 0
	switch self := o.self.(type) {
	case *arrayObject:
		n += len(self.values)
		for _, x := range self.values {
			n += countParsed(x)
		}
	case *baseObject:
		n += len(self.propNames)
		for _, name := range self.propNames {
			n += countParsed(self.values[name])
		}
	}
	return n
}

// freezeInto freezes v, taking its property records from the front of *slab.
func freezeInto(v Value, slab *[]valueProperty) {
	o, ok := v.(*Object)
	if !ok {
		return
	}
	switch self := o.self.(type) {
	case *arrayObject:
		props := (*slab)[:len(self.values):len(self.values)]
		*slab = (*slab)[len(self.values):]
		for i, x := range self.values {
			freezeInto(x, slab)
			props[i] = valueProperty{value: x, enumerable: true}
			self.values[i] = &props[i]
		}
		self.propValueCount = len(self.values)
		self.lengthProp.writable = false
		self.extensible = false
	case *baseObject:
		props := (*slab)[:len(self.propNames):len(self.propNames)]
		*slab = (*slab)[len(self.propNames):]
		for i, name := range self.propNames {
			x := self.values[name]
			freezeInto(x, slab)
			props[i] = valueProperty{value: x, enumerable: true}
			self.values[name] = &props[i]
		}
		self.extensible = false
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
