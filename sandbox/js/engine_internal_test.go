package js

import (
	"fmt"
	"strings"
	"testing"

	"github.com/dop251/goja"

	"github.com/scripthost/scripthost/sandbox"
)

// TestBuiltinPropertiesNotEnumerable: no string-keyed property of a built-in object
// reachable from the global object (the engine's lazy globals included) is
// enumerable. goja's for-in relies on it to skip building the properties of built-in
// prototypes it walks through.
func TestBuiltinPropertiesNotEnumerable(t *testing.T) {
	vm := goja.New()
	vm.SetLazyGlobals(lazyGlobals, func(name string) goja.Value { return vm.NewObject() })
	v, err := vm.RunString(`(() => {
  const seen = new Set(), bad = [];
  const walk = (o, path) => {
    if (o === null || (typeof o !== 'object' && typeof o !== 'function') || seen.has(o)) return;
    seen.add(o);
    for (const k of Object.getOwnPropertyNames(o)) {
      const d = Object.getOwnPropertyDescriptor(o, k);
      if (d.enumerable) bad.push(path + '.' + k);
      if ('value' in d) walk(d.value, path + '.' + k);
    }
    walk(Object.getPrototypeOf(o), path + '.__proto__');
  };
  walk(globalThis, 'globalThis');
  for (const f of [function () {}, async function () {}, function* () {}, [][Symbol.iterator](), new Map().entries(), new Set().values(), ''[Symbol.iterator](), /x/g[Symbol.matchAll]('')]) walk(f, String(f));
  return [seen.size, bad];
})()`)
	if err != nil {
		t.Fatal(err)
	}
	res := v.Export().([]any)
	if n := res[0].(int64); n < 300 {
		t.Fatalf("walked %d objects, want the realm's few hundred", n)
	}
	if bad := res[1].([]any); len(bad) > 0 {
		t.Errorf("enumerable built-in properties: %v", bad)
	}
}

// TestForInSeesAddedPrototypeProperties: for-in through built-in prototypes, which
// does not build their properties, still lists what a script added to them or made
// enumerable, as goja did when it built them all first.
func TestForInSeesAddedPrototypeProperties(t *testing.T) {
	vm := goja.New()
	v, err := vm.RunString(`(() => {
  Object.prototype.extra = 1;
  Array.prototype.more = 2;
  Object.defineProperty(Array.prototype, 'hidden', { value: 3, enumerable: false });
  Object.defineProperty(Object.prototype, 'hidden', { value: 4, enumerable: true });
  Object.defineProperty(Object.prototype, 'toString', { value: () => 'x', enumerable: true });
  const ks = [];
  for (const k in [5]) ks.push(k);
  delete Object.prototype.extra;
  for (const k in {}) ks.push(k);
  return ks.join(',');
})()`)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := v.String(), "0,more,extra,toString,hidden"; got != want {
		t.Errorf("for-in listed %s, want %s", got, want)
	}
}

// TestPromiseBuiltOnDemand: the Promise constructor and prototype, built property by
// property on first use, behave as the eagerly built ones did.
func TestPromiseBuiltOnDemand(t *testing.T) {
	vm := goja.New()
	v, err := vm.RunString(`(() => {
  const out = [];
  try { Promise(() => {}) } catch (e) { out.push(e instanceof TypeError) }
  class P extends Promise {}
  const p = P.resolve(1);
  out.push(p instanceof P, p instanceof Promise, P[Symbol.species] === P, Promise.prototype.constructor === Promise);
  out.push(Object.prototype.toString.call(Promise.resolve()), Promise.name, Promise.length, typeof Promise.allSettled);
  out.push(Object.getOwnPropertyNames(Promise.prototype).sort().join('|'));
  out.push(Object.getPrototypeOf(Promise.prototype) === Object.prototype, Object.getPrototypeOf(Promise) === Function.prototype);
  let r; new Promise((res) => res(7)).then((x) => { r = x });
  return [out, () => r];
})()`)
	if err != nil {
		t.Fatal(err)
	}
	got := v.Export().([]any)
	want := []any{true, true, true, true, true, "[object Promise]", "Promise", int64(1), "function", "catch|constructor|finally|then", true, true}
	if fmt.Sprint(got[0]) != fmt.Sprint(want) {
		t.Errorf("got %v, want %v", got[0], want)
	}
	f, _ := goja.AssertFunction(vm.ToValue(got[1]))
	if r, _ := f(goja.Undefined()); r.ToInteger() != 7 {
		t.Errorf("then got %v, want 7", r)
	}
}

// TestJSONParse: JSON.parse (the engine's fast parser, with encoding/json behind it for
// escapes, non-ASCII text and errors) reads values as JSON defines them.
func TestJSONParse(t *testing.T) {
	vm := goja.New()
	for text, want := range map[string]string{
		` {"a": [1, -0.5e2, true, false, null, "x"], "b": {}, "c": [] } `: `{"a":[1,-50,true,false,null,"x"],"b":{},"c":[]}`,
		`"caf\u00e9 \"q\" \\ \n"`: `"café \"q\" \\ \n"`,
		`"café 中"`:                `"café 中"`,
		`{"a":1,"a":2}`:           `{"a":2}`,
		`{"__proto__":{"x":1}}`:   `{"__proto__":{"x":1}}`,
		`-0`:                      `0`,
		`1e400`:                   `SyntaxError`,
		`01`:                      `SyntaxError`,
		`[1,]`:                    `SyntaxError`,
		`{"a" 1}`:                 `SyntaxError`,
		`"\x01"`:                  `SyntaxError`,
		`"abc`:                    `SyntaxError`,
		`1 2`:                     `SyntaxError`,
		``:                        `SyntaxError`,
		`nul`:                     `SyntaxError`,
	} {
		got := "SyntaxError"
		v, err := vm.ParseJSON(text, false)
		if err == nil {
			s, _, err := vm.StringifyJSON(v, 0)
			if err != nil {
				t.Fatal(err)
			}
			got = s
		} else if ex, ok := err.(*goja.Exception); !ok || !strings.HasPrefix(ex.Value().String(), "SyntaxError") {
			got = err.Error()
		}
		if got != want {
			t.Errorf("JSON.parse(%q) = %s, want %s", text, got, want)
		}
	}
}

// TestFreezeLikeObjectFreeze: the engine's Freeze leaves objects and native functions
// as Object.freeze does: the same descriptors, frozen, no longer extensible.
func TestFreezeLikeObjectFreeze(t *testing.T) {
	vm := goja.New()
	mk, err := vm.RunString(`(() => {
  const o = { a: 1, b: { c: 2 }, [Symbol.iterator]: 0 }
  Object.defineProperty(o, 'g', { get() { return 3 }, enumerable: true, configurable: true })
  Object.defineProperty(o, 'h', { value: 4, writable: true, enumerable: false, configurable: true })
  delete o[Symbol.iterator]
  return o
})`)
	if err != nil {
		t.Fatal(err)
	}
	describe, err := vm.RunString(`(o) => JSON.stringify([Object.isFrozen(o), Object.isExtensible(o),
  Reflect.ownKeys(o).map((k) => [String(k), Object.getOwnPropertyDescriptor(o, k)])])`)
	if err != nil {
		t.Fatal(err)
	}
	mkFn, _ := goja.AssertFunction(mk)
	describeFn, _ := goja.AssertFunction(describe)
	freezeFn, _ := goja.AssertFunction(vm.Get("Object").ToObject(vm).Get("freeze"))
	objects := map[string]func() *goja.Object{
		"object": func() *goja.Object { v, _ := mkFn(goja.Undefined()); return v.(*goja.Object) },
		"native function": func() *goja.Object {
			f := vm.ToValue(func(goja.FunctionCall) goja.Value { return nil }).(*goja.Object)
			_ = f.Set("extra", 5)
			return f
		},
		"with a symbol": func() *goja.Object {
			v, _ := mkFn(goja.Undefined())
			o := v.(*goja.Object)
			_ = o.SetSymbol(goja.SymIterator, 1)
			return o
		},
	}
	for name, make := range objects {
		t.Run(name, func(t *testing.T) {
			a, b := make(), make()
			if _, err := freezeFn(goja.Undefined(), a); err != nil {
				t.Fatal(err)
			}
			if err := vm.Freeze(b); err != nil {
				t.Fatal(err)
			}
			want, _ := describeFn(goja.Undefined(), a)
			got, _ := describeFn(goja.Undefined(), b)
			if got.String() != want.String() || !strings.HasPrefix(got.String(), "[true,false,") {
				t.Errorf("got  %s\nwant %s", got, want)
			}
		})
	}
}

// TestJSONStringifyHolder: JSON.stringify still hands a replacer the wrapper object
// holding the value, and stringifies the same without one.
func TestJSONStringifyHolder(t *testing.T) {
	vm := goja.New()
	v, err := vm.RunString(`JSON.stringify([
  JSON.stringify({ a: [1, 'x', null, undefined], b: { toJSON() { return 'tj' } } }),
  JSON.stringify(5, function (k, v) { return k === '' ? [Object.keys(this), this[''], v] : v }),
  JSON.stringify(undefined), JSON.stringify(() => 1), JSON.stringify(Object('s')),
])`)
	if err != nil {
		t.Fatal(err)
	}
	want := `["{\"a\":[1,\"x\",null,null],\"b\":\"tj\"}","[[\"\"],5,5]",null,null,"\"s\""]`
	if v.String() != want {
		t.Errorf("got  %s\nwant %s", v, want)
	}
	s, ok, err := vm.StringifyJSON(vm.ToValue(map[string]any{"k": 1}), 0)
	if err != nil || !ok || s != `{"k":1}` {
		t.Errorf("StringifyJSON: got %q, %v, %v", s, ok, err)
	}
}

// TestPromiseOrdering: promise jobs run in the order the specification gives, through
// then chains, async functions, thenables, the combinators and the resolving functions
// a script sees (which the engine makes only when a script can see them).
func TestPromiseOrdering(t *testing.T) {
	vm := goja.New()
	_, err := vm.RunString(`
var log = [];
const p = (name, v) => Promise.resolve(v).then((x) => { log.push(name + ':' + x); return x });
async function af(n) { log.push('af' + n); await null; log.push('af' + n + ' resumed'); return n }
const thenable = { then(res) { log.push('thenable'); res('t') } };
(async () => { log.push('await thenable ' + await thenable) })();
af(1).then((v) => log.push('af then ' + v));
p('a', 1); p('b', 2).then((x) => log.push('b2:' + x));
Promise.all([p('c', 3), 4, af(2)]).then((v) => log.push('all ' + v));
Promise.allSettled([Promise.reject(new Error('no')), 5]).then((v) => log.push('settled ' + v.map((x) => x.status)));
Promise.any([Promise.reject(1), Promise.resolve(6)]).then((v) => log.push('any ' + v));
Promise.race([new Promise((r) => setTimeoutLike(r)), Promise.resolve(7)]).then((v) => log.push('race ' + v));
function setTimeoutLike() {}
let captured;
new Promise((res, rej) => { captured = [res, rej]; res('first'); res('second'); rej('third') }).then((v) => log.push('executor ' + v));
const self = new Promise((res) => Promise.resolve().then(() => res(self)));
self.catch((e) => log.push('self ' + e.name));
(async () => { throw new Error('thrown') })().catch((e) => log.push('async rejected ' + e.message));
Promise.reject(8).then(null, (e) => log.push('rejected ' + e));
`)
	if err != nil {
		t.Fatal(err)
	}
	got := vm.Get("log").String()
	// The order goja gave before its resolving functions were made on demand.
	want := "af1,af2,thenable,af1 resumed,a:1,b:2,c:3,af2 resumed,executor first,async rejected thrown,rejected 8," +
		"await thenable t,af then 1,b2:2,settled rejected,fulfilled,any 6,race 7,self TypeError,all 3,4,2"
	if got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
}

// TestParseJSONFrozen: every object and array of a value parsed frozen is frozen, with
// the descriptors Object.freeze would leave, however the records are allocated.
func TestParseJSONFrozen(t *testing.T) {
	vm := goja.New()
	text := `{"a":[1,{"b":[[],{}],"c":"x"},[2,[3]]],"d":{"e":{"f":null}},"g":[]}`
	frozen, err := vm.ParseJSON(text, true)
	if err != nil {
		t.Fatal(err)
	}
	check, err := vm.RunString(`(v, text) => {
  const ref = JSON.parse(text), bad = []
  const walk = (x, y, path) => {
    if (x === null || typeof x !== 'object') return
    const same = JSON.stringify(Reflect.ownKeys(x).map((k) => [k, Object.getOwnPropertyDescriptor(x, k)]))
    const want = JSON.stringify(Reflect.ownKeys(Object.freeze(y)).map((k) => [k, Object.getOwnPropertyDescriptor(y, k)]))
    if (!Object.isFrozen(x) || same !== want) bad.push(path)
    for (const k of Object.keys(x)) walk(x[k], y[k], path + '.' + k)
  }
  walk(v, ref, '$')
  return JSON.stringify(v) === text ? bad.join(' ') : 'text changed: ' + JSON.stringify(v)
}`)
	if err != nil {
		t.Fatal(err)
	}
	fn, _ := goja.AssertFunction(check)
	res, err := fn(goja.Undefined(), frozen, vm.ToValue(text))
	if err != nil || res.String() != "" {
		t.Errorf("got %v, %v, want every object frozen like Object.freeze leaves it", res, err)
	}
}

// frozenOps are scripts that read or try to change v, a deeply frozen value of
// frozenText, for TestParseJSONFrozenBehaves.
var frozenOps = []string{
	// objects
	`v.o.x = 5`, `v.o.z = 5`, `v.o.x++`, `v.o.x += 1`, `v.o.x &&= 2`, `v.o.y ??= 2`,
	`[v.o.x] = [7]`, `({k: v.o.x} = {k: 7})`, `with (v.o) { x = 8 }`,
	`delete v.o.x`, `delete v.o.nope`, `delete v[2]`,
	`v[2] = 'z'`, `v['2'] = 'z'`, `v.o.__proto__ = {}`,
	`Object.defineProperty(v.o, 'x', {value: 1})`,
	`Object.defineProperty(v.o, 'x', {value: 2})`,
	`Object.defineProperty(v.o, 'x', {writable: true})`,
	`Object.defineProperty(v.o, 'x', {get() { return 1 }})`,
	`Object.defineProperty(v.o, 'x', {enumerable: false})`,
	`Object.defineProperty(v.o, 'x', {value: 1, writable: false, enumerable: true, configurable: false}); return Object.getOwnPropertyDescriptor(v.o, 'x')`,
	`Object.defineProperties(v.o, {x: {value: 3}})`,
	`Object.defineProperty(v.o, 'n', {value: 1})`,
	`Object.setPrototypeOf(v.o, null)`, `Object.setPrototypeOf(v.o, Object.prototype)`,
	`Object.assign(v.o, {x: 9})`, `Object.assign({}, v.o)`,
	`return [Reflect.set(v.o, 'x', 9), Reflect.set(v.o, 'x', 1), Reflect.set(v.o, 'x', 9, {}), Reflect.defineProperty(v.o, 'x', {value: 9}), Reflect.deleteProperty(v.o, 'x'), Reflect.deleteProperty(v.o, 'q')]`,
	`const c = Object.create(v.o); c.x = 9; return [c.x, Object.hasOwn(c, 'x')]`,
	`const c = Object.create(v.o); c.q = 9; return [c.q, Object.hasOwn(c, 'q')]`,
	`const c = Object.create(v.o); Object.defineProperty(c, 'x', {value: 9}); return c.x`,
	`class A { constructor() { return v.o } }; class B extends A { f = 1 }; return new B()`,
	`return [Object.getOwnPropertyDescriptor(v.o, 'x'), Object.getOwnPropertyDescriptors(v.o), Object.getOwnPropertyDescriptors(v.a)]`,
	`return [Object.isFrozen(v), Object.isFrozen(v.o), Object.isSealed(v.o), Object.isExtensible(v.o), Object.isFrozen(v.a), Object.isSealed(v.a), Object.isFrozen(v.e)]`,
	`Object.freeze(v.o); Object.seal(v.a); Object.preventExtensions(v); return [Object.isFrozen(v.o), Object.getOwnPropertyDescriptor(v.o, 'x')]`,
	`return new Proxy(v.o, {get: () => 5}).x`,
	`return new Proxy(v.o, {get: () => 1}).x`,
	`return Object.getOwnPropertyDescriptor(new Proxy(v.o, {getOwnPropertyDescriptor: () => ({value: 5, writable: true, enumerable: true, configurable: true})}), 'x')`,
	`return Object.keys(new Proxy(v.o, {ownKeys: () => ['x']}))`,
	`return new Proxy(v.o, {set: () => true}).x = 4`,
	`return Reflect.set(new Proxy(v.o, {set: () => true}), 'x', 4)`,
	`return delete new Proxy(v.o, {deleteProperty: () => true}).x`,
	`const c = {...v.o}; c.x = 3; return [c, Object.isFrozen(c), Object.getOwnPropertyDescriptor(c, 'y')]`,
	`const r = []; for (const k in v) r.push(k); return [r, Object.keys(v), Reflect.ownKeys(v), Object.entries(v.o), Object.values(v.o), Object.fromEntries(Object.entries(v.o))]`,
	`return [JSON.stringify(v), JSON.stringify(v, null, 1), JSON.stringify(v, ['o', 'x'])]`,
	`return JSON.parse(JSON.stringify(v), function (k, x) { if (k === 'x') this.x = 2; return x })`,
	`return [v.o.hasOwnProperty('x'), 'x' in v.o, v.o.propertyIsEnumerable('x'), Object.hasOwn(v.a, 0)]`,
	// arrays
	`v.a[0] = 9`, `v.a[5] = 9`, `v.a[0]++`, `v.a.length = 0`, `v.a.length = 3`, `v.a.x = 1`,
	`v.a[1].b = 3`, `v.o.y[0] = 0`, `delete v.a[0]`, `delete v.a[9]`,
	`v.a.push(1)`, `v.a.pop()`, `v.a.shift()`, `v.a.unshift(0)`, `v.a.splice(0, 1)`, `v.a.splice(0, 0)`,
	`v.a.sort()`, `v.a.reverse()`, `v.a.fill(0)`, `v.a.copyWithin(0, 1)`, `v.e.push()`, `v.e.pop()`,
	`v.e.shift()`, `v.e.sort()`, `v.e.reverse()`, `v.e.length = 0`, `v.o.y.sort((p, q) => q - p)`,
	`Array.prototype.sort.call(v.o.y)`, `Array.prototype.push.apply(v.o.y, [1])`,
	`Object.defineProperty(v.a, 0, {value: 1})`, `Object.defineProperty(v.a, 0, {value: 2})`,
	`Object.defineProperty(v.a, 'length', {value: 2})`, `Object.defineProperty(v.a, 'length', {value: 0})`,
	`Object.defineProperty(v.a, 'length', {writable: true})`, `Object.setPrototypeOf(v.a, Object.prototype)`,
	`return [Object.getOwnPropertyDescriptor(v.a, 0), Object.getOwnPropertyDescriptor(v.a, '1'), Object.getOwnPropertyDescriptor(v.a, 'length')]`,
	`const c = Object.create(v.a); c[0] = 5; return [c[0], Object.hasOwn(c, 0)]`,
	`return [Reflect.set(v.a, 0, 9), Reflect.set(v.a, 0, 1), Reflect.set(v.a, 3, 9), Reflect.deleteProperty(v.a, 0)]`,
	`return [v.a.slice(), v.a.indexOf(1), v.a.includes(1), v.a.lastIndexOf(1), [...v.a], Array.from(v.o.y), v.o.y.map((x) => x * 2), v.o.y.filter((x) => x > 3)]`,
	`return [v.o.y.toSorted((p, q) => q - p), v.a.with(0, 5), v.o.y.toReversed(), v.a.toSpliced(0, 1), v.a.concat([1]), v.a.flat(), v.a.at(-1), [...v.a.keys()], [...v.a.entries()]]`,
	`const r = v.a.slice(); r.push(2); r[0] = 7; return [r, Object.isFrozen(r), Object.isFrozen(v.o.y.map((x) => x))]`,
	`const r = Array.from(v.o.y); r.push(5); const w = v.o.y.toSorted(); w[0] = 9; return [r, w, v.a.toLocaleString(), [...new Set(v.o.y)], new WeakSet([v.o]).has(v.o), v.o.y.slice(1), v.o.y.toSpliced(0, 1, 8)]`,
	`const r = []; for (const x of v.a) r.push(x); v.o.y.forEach((x, i) => r.push(i)); return [r, v.o.y.reduce((p, q) => p + q), v.o.y.join('-')]`,
}

const frozenText = `{"a":[1,{"b":2}],"o":{"x":1,"y":[3,4]},"s":"str","n":null,"e":[],"2":"idx"}`

// TestParseJSONFrozenBehaves: a value parsed frozen, and one frozen object by object
// with Runtime.Freeze, behave as a deep Object.freeze of JSON.parse's result does, in
// strict and sloppy code, to every script of frozenOps: the same result or error, and
// the value unchanged afterwards. Both are marked frozen rather than given a record
// per property, so every path that reads or writes a property must see the marks.
func TestParseJSONFrozenBehaves(t *testing.T) {
	vm := goja.New()
	_ = vm.Set("parseFrozen", func(text string) goja.Value {
		v, err := vm.ParseJSON(text, true)
		if err != nil {
			panic(vm.NewGoError(err))
		}
		return v
	})
	_ = vm.Set("hostFreeze", func(o *goja.Object) {
		if err := vm.Freeze(o); err != nil {
			panic(vm.NewGoError(err))
		}
	})
	run, err := vm.RunString(`(text, body, strict) => {
  const deepFreeze = (x, freeze) => {
    if (x !== null && typeof x === 'object') { for (const k of Object.keys(x)) deepFreeze(x[k], freeze); freeze(x) }
    return x
  }
  const show = (x) => {
    const seen = new Set()
    const walk = (y) => {
      if (y === null || typeof y !== 'object') return y === undefined ? 'undefined' : y
      if (seen.has(y)) return 'cycle'
      seen.add(y)
      const out = {proto: Object.getPrototypeOf(y) === Array.prototype ? 'Array' : Object.getPrototypeOf(y) === Object.prototype ? 'Object' : String(Object.getPrototypeOf(y)),
        ext: Object.isExtensible(y), props: []}
      for (const k of Reflect.ownKeys(y)) {
        const d = Object.getOwnPropertyDescriptor(y, k)
        out.props.push([String(k), d.writable, d.enumerable, d.configurable, 'value' in d ? walk(d.value) : 'accessor'])
      }
      return out
    }
    return JSON.stringify(walk(x))
  }
  const outcome = (v) => {
    let res
    try {
      const f = new Function('v', (strict ? '"use strict";\n' : '') + body)
      res = 'returned ' + show(f(v))
    } catch (e) {
      res = 'threw ' + (e && e.name) + ': ' + (e && e.message)
    }
    return res + '\nafter: ' + show(v)
  }
  return [outcome(parseFrozen(text)), outcome(deepFreeze(JSON.parse(text), Object.freeze)),
    outcome(deepFreeze(JSON.parse(text), hostFreeze))]
}`)
	if err != nil {
		t.Fatal(err)
	}
	fn, _ := goja.AssertFunction(run)
	for _, body := range frozenOps {
		for _, strict := range []bool{true, false} {
			res, err := fn(goja.Undefined(), vm.ToValue(frozenText), vm.ToValue(body), vm.ToValue(strict))
			if err != nil {
				t.Fatalf("%s (strict %v): %v", body, strict, err)
			}
			got := res.Export().([]any)
			if got[0] != got[1] {
				t.Errorf("%s (strict %v):\nparsed frozen: %s\nObject.freeze: %s", body, strict, got[0], got[1])
			}
			if got[2] != got[1] {
				t.Errorf("%s (strict %v):\nRuntime.Freeze: %s\nObject.freeze: %s", body, strict, got[2], got[1])
			}
		}
	}
}

// TestRequireArgumentWhenNamed: a module's function gets the require argument when
// its code names require, not when require is only part of longer names (a bundle's
// require_lib and __require), where building the function was wasted.
func TestRequireArgumentWhenNamed(t *testing.T) {
	tests := []struct {
		code string
		want bool
	}{
		{"var require_lib = () => 1;\nvar __require = 2;\nexport default { f() { return require_lib() + __require } };\n", false},
		{"export default { f() { return require('x') } };\n", true},
		{"export default { f() { return typeof require } };\n", true},
		{"const r = require;\nexport default { f() { return r } };\n", true},
	}
	for _, tt := range tests {
		c, err := New(Options{}).compile(sandbox.Source{Name: "m.js", Code: []byte(tt.code)})
		if err != nil {
			t.Fatalf("%q: %v", tt.code, err)
		}
		if c.require != tt.want {
			t.Errorf("%q: require argument %v, want %v", tt.code, c.require, tt.want)
		}
	}
}

// TestFunctionNameAndLength: a function's length and name are own properties, length
// before name (an ordinary function lists its prototype first), non-writable,
// non-enumerable and configurable, for script functions and built-ins alike, and can
// be redefined and deleted (the engine holds both records in the function object).
func TestFunctionNameAndLength(t *testing.T) {
	vm := goja.New()
	v, err := vm.RunString(`
	  const out = [];
	  for (const f of [function named(a, b) {}, (x) => x, { m(a) {} }.m, Object.defineProperty, class K { constructor(a) {} }]) {
	    const n = Object.getOwnPropertyDescriptor(f, 'name'), l = Object.getOwnPropertyDescriptor(f, 'length');
	    out.push([Object.getOwnPropertyNames(f).slice(0, 2).join(' '), n.value, n.writable, n.enumerable, n.configurable,
	      l.value, l.writable, l.enumerable, l.configurable].join(' '));
	  }
	  const g = function g() {};
	  Object.defineProperty(g, 'name', { value: 'h' });
	  const renamed = g.name;
	  delete g.name;
	  out.push(renamed + ' ' + JSON.stringify(g.name) + ' ' + Object.getOwnPropertyNames(g).join(' '));
	  out.join('; ');
	`)
	if err != nil {
		t.Fatal(err)
	}
	want := "prototype length named false false true 2 false false true; " +
		"length name  false false true 1 false false true; " +
		"length name m false false true 1 false false true; " +
		"length name defineProperty false false true 3 false false true; " +
		"length name K false false true 1 false false true; " +
		`h "" prototype length`
	if got := v.String(); got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
}
