package goja

import (
	"fmt"

	"github.com/dop251/goja/unistring"
)

// LazyGlobals is the global object's built-ins extended with properties an embedder
// builds on first use (scripthost patch): a runtime that never touches them pays
// nothing for them, as it pays nothing for the built-ins it does not touch. Make one
// per set of names, once, and share it between runtimes.
type LazyGlobals struct {
	tmpl *objectTemplate
}

// NewLazyGlobals returns the global object's template extended with names. A name
// that is already a global panics.
func NewLazyGlobals(names ...string) *LazyGlobals {
	return getGlobalObjectTemplate().extend(names, true)
}

// Has reports whether name is a global of g's.
func (g *LazyGlobals) Has(name string) bool {
	_, ok := g.tmpl.props[unistring.NewFromString(name)]
	return ok
}

// WithFixed returns g extended with names whose properties, once built, are
// read-only: neither writable nor configurable (nor enumerable), like bindings the
// embedder fixed with DefineDataProperty, but built on first use. A name that is
// already a global of g's panics (check with Has).
func (g *LazyGlobals) WithFixed(names ...string) *LazyGlobals {
	return g.tmpl.extend(names, false)
}

func (base *objectTemplate) extend(names []string, mutable bool) *LazyGlobals {
	t := &objectTemplate{
		props:        make(map[unistring.String]templatePropFactory, len(base.props)+len(names)),
		propNames:    append(make([]unistring.String, 0, len(base.propNames)+len(names)), base.propNames...),
		symProps:     base.symProps,
		symPropNames: base.symPropNames,
		protoFactory: base.protoFactory,
	}
	for k, f := range base.props {
		t.props[k] = f
	}
	for _, n := range names {
		name := unistring.NewFromString(n)
		if _, dup := t.props[name]; dup {
			panic(fmt.Sprintf("goja: lazy global %q is already a global", n))
		}
		t.putStr(name, func(r *Runtime) Value { return r.lazyGlobal(name, mutable) })
	}
	return &LazyGlobals{tmpl: t}
}

// SetLazyGlobals gives the global object g's properties. Each is built by build(name)
// the first time it is read, written, defined, deleted or listed, and is then a
// writable, configurable, non-enumerable data property like the other built-ins
// (read-only for the names of WithFixed). It
// must be called before any code runs. build must not read the global it builds.
func (r *Runtime) SetLazyGlobals(g *LazyGlobals, build func(name string) Value) {
	o, ok := r.globalObject.self.(*templatedObject)
	if !ok || o.propNames != nil {
		panic("goja: SetLazyGlobals after the global object was changed")
	}
	o.tmpl = g.tmpl
	r.buildGlobal = build
}

func (r *Runtime) lazyGlobal(name unistring.String, mutable bool) Value {
	if r.building[name] {
		panic(r.NewTypeError("%s is read while it is being built", name))
	}
	if r.building == nil {
		r.building = map[unistring.String]bool{}
	}
	r.building[name] = true
	defer delete(r.building, name)
	return valueProp(r.buildGlobal(name.String()), mutable, false, mutable)
}
