package bundle_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/scripthost/scripthost"
	"github.com/scripthost/scripthost/sandbox"
	"github.com/scripthost/scripthost/sandbox/js"
	"github.com/scripthost/scripthost/sandbox/js/bundle"
	"github.com/scripthost/scripthost/sandbox/sandboxtest"
)

const interopEntry = "testdata/interop/workflow.js"

// invoke loads code in a fresh engine and invokes fn.
func invoke(t *testing.T, code []byte, fn string) (sandbox.Result, error) {
	t.Helper()
	p, err := js.New(js.Options{}).Load(context.Background(), sandbox.Source{Name: "workflow.js", Code: code})
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	return p.Invoke(context.Background(), sandbox.Invocation{Function: fn, Tools: sandboxtest.NewTools()})
}

// TestInteropAsEsbuild: every way an ES module reaches a CommonJS module (a default,
// named and namespace import of module.exports as an object, as a function, as a
// primitive and as null; a module marked __esModule; a module whose exports object
// has a prototype of its own; one requiring another; an importer in Node mode, which
// takes module.exports as the default; `export * from` a CommonJS module) and a
// CommonJS module requiring an ES module gives, with the helpers Build puts in the
// bundle, exactly what it gives with esbuild's: the same names, order, descriptors,
// prototypes and live values. The expected values below hold either helpers to what
// Node does.
func TestInteropAsEsbuild(t *testing.T) {
	light, err := bundle.Build(interopEntry, nil)
	if err != nil {
		t.Fatal(err)
	}
	orig, err := bundle.EsbuildBundle(interopEntry, nil)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Equal(light.Code, orig.Code) {
		t.Fatal("Build left esbuild's helpers in the bundle")
	}
	got, err := invoke(t, light.Code, "f.report")
	if err != nil {
		t.Fatal(err)
	}
	want, err := invoke(t, orig.Code, "f.report")
	if err != nil {
		t.Fatal(err)
	}
	if string(got.Value) != string(want.Value) {
		t.Errorf("with Build's helpers:\n%s\nwith esbuild's:\n%s", got.Value, want.Value)
	}

	var r struct {
		A, CounterBefore, Bumped, CounterAfter, NsCounter, NsA, Fn, ProtoInherited, ReA int
		NsDefaultIsDef, FnnsDefaultIsFn, WriteRefused                                   bool
		Esm, EsmNamed, Prim, NodeDefault, NodeNamed, ChainUpper, JSON, ReOwn            string
		Nullish                                                                         any
		Ns, Fnns, Esmns, Protons, Re                                                    struct {
			Names, Keys []string
			Proto       string
			Props       map[string]struct {
				Get          string
				Enumerable   bool
				Configurable bool
			}
		}
		Cjsuser struct {
			Default struct {
				Value, Def string
				Keys       []string
				EsModule   bool
			}
		}
	}
	if err := json.Unmarshal(got.Value, &r); err != nil {
		t.Fatal(err)
	}
	check := func(what string, got, want any) {
		t.Helper()
		if g, w := jsonText(got), jsonText(want); g != w {
			t.Errorf("%s: got %s, want %s", what, g, w)
		}
	}
	check("named import", r.A, 1)
	check("live binding", []int{r.CounterBefore, r.Bumped, r.CounterAfter, r.NsCounter}, []int{0, 1, 1, 1})
	check("namespace names", r.Ns.Names, []string{"default", "a", "counter", "bump", "hidden", "own"})
	check("namespace keys", r.Ns.Keys, []string{"default", "a", "counter", "bump", "own"})
	check("namespace a is a getter", r.Ns.Props["a"].Get, "function")
	check("non-enumerable stays so", r.Ns.Props["hidden"].Enumerable, false)
	check("default is module.exports", r.NsDefaultIsDef, true)
	check("namespace is read-only", []any{r.WriteRefused, r.NsA}, []any{true, 1})
	check("namespace JSON", r.JSON, `{"default":{"a":1,"counter":1,"own":"plain"},"a":1,"counter":1,"own":"plain"}`)
	check("function module", []any{r.Fn, r.FnnsDefaultIsFn, r.Fnns.Proto}, []any{4, true, "Function"})
	check("function module names", r.Fnns.Names, []string{"default", "length", "name", "extra", "prototype"})
	check("__esModule default", []string{r.Esm, r.EsmNamed}, []string{"D", "N"})
	check("__esModule namespace", r.Esmns.Names, []string{"__esModule", "default", "named"})
	check("Node mode default", []string{r.NodeDefault, r.NodeNamed}, []string{"module.exports", "N"})
	check("require chain", r.ChainUpper, "X")
	check("primitive and null", []any{r.Prim, r.Nullish}, []any{"str", nil})
	check("prototype kept", []any{r.Protons.Proto, r.Protons.Names, r.ProtoInherited}, []any{"other:Thing", []string{"default", "own"}, 2})
	check("export * from CommonJS", []any{r.Re.Names, r.ReA, r.ReOwn}, []any{[]string{"own", "a", "counter", "bump", "hidden"}, 1, "o"})
	d := r.Cjsuser.Default
	check("require of an ES module", []any{d.Value, d.Def, d.Keys, d.EsModule}, []any{"v", "dd", []string{"default", "value"}, true})
}

func jsonText(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// TestLightenKeepsLines: the helpers Build puts in the bundle take the lines
// esbuild's took, so every module's code keeps its line and the source map stays
// right; esbuild's for-of copy and the built-ins only it read are gone.
func TestLightenKeepsLines(t *testing.T) {
	light, err := bundle.Build(interopEntry, nil)
	if err != nil {
		t.Fatal(err)
	}
	orig, err := bundle.EsbuildBundle(interopEntry, nil)
	if err != nil {
		t.Fatal(err)
	}
	l, o := strings.Split(string(light.Code), "\n"), strings.Split(string(orig.Code), "\n")
	if len(l) != len(o) {
		t.Fatalf("%d lines, esbuild's bundle has %d", len(l), len(o))
	}
	first := -1
	for i := range o {
		if strings.HasPrefix(o[i], "// ") {
			first = i
			break
		}
	}
	if first < 0 {
		t.Fatal("no module comment in esbuild's bundle")
	}
	calls := 0
	for i := first; i < len(o); i++ {
		want := o[i]
		// A __commonJS call is given its module's name before the object.
		if strings.HasSuffix(want, " = __commonJS({") && i+1 < len(o) {
			key, _, _ := strings.Cut(strings.TrimSpace(o[i+1]), "(")
			want = strings.TrimSuffix(want, "{") + key + ", {"
			calls++
		}
		if l[i] != want {
			t.Fatalf("line %d: got %q, want %q", i+1, l[i], want)
		}
	}
	if calls == 0 {
		t.Error("no __commonJS call in the bundle")
	}
	head := strings.Join(l[:first], "\n")
	for _, gone := range []string{"for (let key of", "__create", "cb[__getOwnPropNames(cb)[0]]"} {
		if strings.Contains(head, gone) {
			t.Errorf("the helpers still have %q", gone)
		}
	}
}

// TestErrorInCommonJSPackage: an error thrown in a CommonJS package imported through
// the interop helpers names the package's file, line and column.
func TestErrorInCommonJSPackage(t *testing.T) {
	r, err := bundle.Build(interopEntry, nil)
	if err != nil {
		t.Fatal(err)
	}
	_, err = invoke(t, r.Code, "f.boom")
	var se *scripthost.Error
	if !errors.As(err, &se) || se.File != "node_modules/thrower/index.js" || se.Line != 2 || se.Column != 9 ||
		!strings.Contains(se.Message, "boom in a CommonJS package") {
		t.Errorf("got %v (%s:%d:%d), want node_modules/thrower/index.js:2:9", err, fileOf(se), lineOf(se), columnOf(se))
	}
}

// TestErrorAtCommonJSTopLevel: an error thrown while a CommonJS package's module is
// evaluated names the module's file and line.
func TestErrorAtCommonJSTopLevel(t *testing.T) {
	entry := project(t, map[string]string{
		"workflow.ts":                   "import bad from 'bad';\nexport default { f: { h() { return bad } } };\n",
		"node_modules/bad/package.json": `{ "name": "bad", "main": "index.js" }`,
		"node_modules/bad/index.js":     "var ok = require('./ok');\nif (ok.ready) throw new TypeError('bad package');\nmodule.exports = ok;\n",
		"node_modules/bad/ok.js":        "exports.ready = true;\n",
	})
	for _, build := range []func(string, []byte) (bundle.Result, error){bundle.Build, bundle.EsbuildBundle} {
		r, err := build(entry, nil)
		if err != nil {
			t.Fatal(err)
		}
		_, err = js.New(js.Options{}).Load(context.Background(), sandbox.Source{Name: "workflow.ts", Code: r.Code})
		var se *scripthost.Error
		if !errors.As(err, &se) || se.File != "node_modules/bad/index.js" || se.Line != 2 || se.Column != 21 {
			t.Errorf("got %v (%s:%d:%d), want node_modules/bad/index.js:2:21", err, fileOf(se), lineOf(se), columnOf(se))
		}
	}
}

func columnOf(e *scripthost.Error) int {
	if e == nil {
		return 0
	}
	return e.Column
}

// TestLightenAllocatesLess: a phase of a bundle with a CommonJS package allocates
// less with Build's helpers than with esbuild's (a fresh runtime per phase runs
// them every time).
func TestLightenAllocatesLess(t *testing.T) {
	const entry = "testdata/project/workflow.ts"
	allocs := func(build func(string, []byte) (bundle.Result, error)) float64 {
		t.Helper()
		r, err := build(entry, nil)
		if err != nil {
			t.Fatal(err)
		}
		p, err := js.New(js.Options{}).Load(context.Background(), sandbox.Source{Name: "workflow.ts", Code: r.Code})
		if err != nil {
			t.Fatal(err)
		}
		inv := sandbox.Invocation{Function: "consumers.price.prepare", Phase: scripthost.PhasePrepare, Tools: sandboxtest.NewTools()}
		return testing.AllocsPerRun(50, func() {
			if _, err := p.Invoke(context.Background(), inv); err != nil {
				t.Fatal(err)
			}
		})
	}
	light, orig := allocs(bundle.Build), allocs(bundle.EsbuildBundle)
	// esbuild's for-of alone builds the array iterator and its prototypes: about 70.
	if light > orig-70 {
		t.Errorf("a phase allocates %.0f times with Build's helpers, %.0f with esbuild's", light, orig)
	}
}
