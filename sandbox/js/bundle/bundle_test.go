package bundle_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/scripthost/scripthost"
	"github.com/scripthost/scripthost/sandbox"
	"github.com/scripthost/scripthost/sandbox/js"
	"github.com/scripthost/scripthost/sandbox/js/bundle"
	"github.com/scripthost/scripthost/sandbox/sandboxtest"
)

// project writes files (path → text) under a fresh directory and returns the path of
// its workflow.ts.
func project(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, text := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return filepath.Join(dir, "workflow.ts")
}

// run bundles entry, loads the bundle in the JavaScript engine and invokes fn.
func run(t *testing.T, entry, fn string) (sandbox.Result, error) {
	t.Helper()
	r, err := bundle.Build(entry, nil)
	if err != nil {
		t.Fatalf("Build: %v", err)
	}
	p, err := js.New(js.Options{}).Load(context.Background(), sandbox.Source{Name: filepath.Base(entry), Code: r.Code})
	if err != nil {
		return sandbox.Result{}, err
	}
	return p.Invoke(context.Background(), sandbox.Invocation{Function: fn, Tools: sandboxtest.NewTools()})
}

// TestProjectRuns: a TypeScript entry importing a .ts module that imports a .js
// module that imports JSON, a tsconfig paths alias, an ES module package chosen
// through its package.json exports, and a CommonJS package using a literal require
// all end up in one program that runs; the manifest lists every file with its hash.
func TestProjectRuns(t *testing.T) {
	entry := "testdata/project/workflow.ts"
	res, err := run(t, entry, "consumers.price.prepare")
	if err != nil {
		t.Fatal(err)
	}
	want := `{"data":{"total":12,"rate":2,"hello":"hello ada","legacy":"HI!","n":0}}`
	if string(res.Value) != want {
		t.Errorf("got %s, want %s", res.Value, want)
	}
	r, err := bundle.Build(entry, nil)
	if err != nil {
		t.Fatal(err)
	}
	var paths []string
	for _, f := range r.Manifest {
		paths = append(paths, f.Path)
		text, err := os.ReadFile(filepath.Join("testdata/project", f.Path))
		if err != nil || f.Size != int64(len(text)) || len(f.SHA256) != 64 {
			t.Errorf("%s: size %d, sha256 %q; file has %d bytes (%v)", f.Path, f.Size, f.SHA256, len(text), err)
		}
	}
	wantPaths := "lib/money.ts lib/rates.js lib/rates.json node_modules/greet/esm/index.js node_modules/legacy/lib.js node_modules/legacy/upper.js workflow.ts"
	if got := strings.Join(paths, " "); got != wantPaths {
		t.Errorf("manifest: got %s, want %s", got, wantPaths)
	}
	if r.Single() {
		t.Error("Single() is true for a bundle of several files")
	}
	if !strings.Contains(string(r.Code), `"sourcesContent"`) && !strings.Contains(string(r.Code), "sourceMappingURL=data:") {
		t.Error("the bundle has no inline source map")
	}
}

// TestErrorInImportedModule: an error thrown in an imported module names that
// module's file, line and column, through the bundle's source map.
func TestErrorInImportedModule(t *testing.T) {
	_, err := run(t, "testdata/project/workflow.ts", "fail.money")
	var se *scripthost.Error
	if !errors.As(err, &se) {
		t.Fatalf("got %v, want a *scripthost.Error", err)
	}
	if se.File != "lib/money.ts" || se.Line != 8 || se.Column != 9 || !strings.Contains(se.Message, "no money") {
		t.Errorf("got %s:%d:%d %q, want lib/money.ts:8:9 no money", se.File, se.Line, se.Column, se.Message)
	}
}

// TestSingleFile: a workflow that imports nothing is a bundle of one input.
func TestSingleFile(t *testing.T) {
	entry := project(t, map[string]string{"workflow.ts": "export default { f: { h(): number { return 1 } } }\n"})
	r, err := bundle.Build(entry, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !r.Single() || r.Manifest[0].Path != "workflow.ts" {
		t.Errorf("manifest %v, want workflow.ts alone", r.Manifest)
	}
}

// TestSourceGiven: the entry's text, when given, is used instead of the file's.
func TestSourceGiven(t *testing.T) {
	entry := project(t, map[string]string{"workflow.ts": "syntax error here(\n", "lib.ts": "export const n = 7\n"})
	r, err := bundle.Build(entry, []byte("import { n } from './lib'\nexport default { f: { h() { return n } } }\n"))
	if err != nil || len(r.Manifest) != 2 {
		t.Fatalf("got %v, %v, want a bundle of 2 files", r.Manifest, err)
	}
	// Neither the file nor its directory need exist when the entry imports nothing.
	missing := filepath.Join(t.TempDir(), "gone", "wf.js")
	r, err = bundle.Build(missing, []byte("export default { f: { h() { return 1 } } }\n"))
	if err != nil || !r.Single() || r.Manifest[0].Path != "wf.js" {
		t.Fatalf("missing file: got %v, %v, want a bundle of wf.js", r.Manifest, err)
	}
}

// TestRefused: what a workflow may not import, and bad input, are refused at build
// time with an error naming the file, line and column where there is one.
func TestRefused(t *testing.T) {
	pkg := func(name, pj, main, text string) map[string]string {
		return map[string]string{"node_modules/" + name + "/package.json": pj, "node_modules/" + name + "/" + main: text}
	}
	merge := func(ms ...map[string]string) map[string]string {
		out := map[string]string{}
		for _, m := range ms {
			for k, v := range m {
				out[k] = v
			}
		}
		return out
	}
	tests := []struct {
		name  string
		files map[string]string
		file  string
		line  int
		col   int
		msg   string
	}{
		{"fs", map[string]string{"workflow.ts": "import { readFileSync } from 'fs'\nexport default { f: readFileSync }\n"},
			"workflow.ts", 1, 30, `"fs" is a Node built-in module`},
		{"node:fs", map[string]string{"workflow.ts": "export default { f: fs }\nimport * as fs from 'node:fs'\n"},
			"workflow.ts", 2, 21, `"node:fs" is a Node built-in module`},
		{"fs/promises", map[string]string{"workflow.ts": "import 'fs/promises'\nexport default {}\n"},
			"workflow.ts", 1, 8, `"fs/promises" is a Node built-in module`},
		{"child_process in a package", merge(
			map[string]string{"workflow.ts": "import run from 'runner'\nexport default { run }\n"},
			pkg("runner", `{"name":"runner","main":"index.js"}`, "index.js", "const cp = require('child_process')\nmodule.exports = cp.exec\n")),
			"node_modules/runner/index.js", 1, 20, `"child_process" is a Node built-in module`},
		{"require net", map[string]string{"workflow.ts": "const net = require('net')\nexport default { net }\n"},
			"workflow.ts", 1, 21, `"net" is a Node built-in module`},
		{"computed require", map[string]string{"workflow.ts": "const name = 'x'\nexport default { f: { h() { return require(name) } } }\n"},
			"workflow.ts", 2, 36, "require"},
		{"computed import()", map[string]string{"workflow.ts": "const m = './lib'\nexport default { f: { async h() { return import(m) } } }\n"},
			"workflow.ts", 2, 42, "import"},
		{"missing module", map[string]string{"workflow.ts": "import { x } from './nope'\nexport default { x }\n"},
			"workflow.ts", 1, 19, `Could not resolve "./nope"`},
		{"missing package", map[string]string{"workflow.ts": "\nimport { z } from 'zod'\nexport default { z }\n"},
			"workflow.ts", 2, 19, `Could not resolve "zod"`},
		{"syntax error in an import", map[string]string{"workflow.ts": "import { a } from './lib/a'\nexport default { a }\n", "lib/a.ts": "export const a = 1\nexport const b = (\n"},
			"lib/a.ts", 3, 1, "Unexpected end of file"},
		{"malformed package.json", merge(
			map[string]string{"workflow.ts": "import x from 'broken'\nexport default { x }\n"},
			pkg("broken", `{"name": "broken", "main": }`, "index.js", "module.exports = 1\n")),
			"node_modules/broken/package.json", 1, 28, "Unexpected"},
		{"malformed tsconfig.json", map[string]string{"workflow.ts": "export default {}\n", "tsconfig.json": "{ \"compilerOptions\": { \"paths\": [ }\n"},
			"tsconfig.json", 1, 35, "Unexpected"},
		{"cycle", map[string]string{"workflow.ts": "import { a } from './a'\nexport default { a }\n", "a.ts": "import { b } from './b'\nexport const a = () => b\n", "b.ts": "import { a } from './a'\nexport const b = () => a\n"},
			"b.ts", 1, 19, "import cycle: a.ts -> b.ts -> a.ts"},
		{"cycle through a directory's index", map[string]string{"workflow.ts": "import { a } from './lib/a'\nexport default { a }\n",
			"lib/a.ts": "import { b } from './b'\nexport const a = () => b\n", "lib/b.ts": "// b needs a\nconst x = 1; import { a } from \"./index.js\"\nexport const b = () => a + x\n",
			"lib/index.js": "export * from './a'\n"},
			"lib/index.js", 1, 15, "import cycle: lib/a.ts -> lib/b.ts -> lib/index.js -> lib/a.ts"},
		{"unsupported file type", map[string]string{"workflow.ts": "import css from './x.css'\nexport default { css }\n", "x.css": "a {}\n"},
			"workflow.ts", 1, 17, "x.css: a workflow imports only"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := bundle.Build(project(t, tt.files), nil)
			var se *scripthost.Error
			if !errors.As(err, &se) || !scripthost.IsLogic(err) {
				t.Fatalf("got %v, want a logic *scripthost.Error", err)
			}
			if se.File != tt.file || se.Line != tt.line || se.Column != tt.col || !strings.Contains(se.Message, tt.msg) {
				t.Errorf("got %s:%d:%d %q, want %s:%d:%d containing %q", se.File, se.Line, se.Column, se.Message, tt.file, tt.line, tt.col, tt.msg)
			}
		})
	}
}

// TestLocationsInImportedModules: errors at load (a throw at a module's top level),
// limit errors (a loop past the timeout, a recursion past the stack limit) and a
// TypeError raised by the engine are all located in the imported module's file, line
// and column, not in the bundle.
func TestLocationsInImportedModules(t *testing.T) {
	lib := `export function spin(): number {
  let i = 0;
  while (true) { i++; }
}
export function deep(n: number): number {
  return deep(n + 1) + 1;
}
export function nothing(): number {
  const o: any = undefined;
  return o.field;
}
`
	entry := project(t, map[string]string{
		"workflow.ts":  "import { spin, deep, nothing } from './lib/loops';\nexport default { f: { spin, deep: () => deep(0), nothing } };\n",
		"lib/loops.ts": lib,
	})
	r, err := bundle.Build(entry, nil)
	if err != nil {
		t.Fatal(err)
	}
	p, err := js.New(js.Options{}).Load(context.Background(), sandbox.Source{Name: "workflow.ts", Code: r.Code})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		fn, file string
		line     int
		msg      string
	}{
		{"f.spin", "lib/loops.ts", 3, "timeout"},
		{"f.deep", "lib/loops.ts", 6, "stack"},
		{"f.nothing", "lib/loops.ts", 10, "TypeError"},
	}
	for _, tt := range tests {
		_, err := p.Invoke(context.Background(), sandbox.Invocation{Function: tt.fn, Tools: sandboxtest.NewTools(),
			Limits: sandbox.Limits{Timeout: 200 * time.Millisecond}})
		var se *scripthost.Error
		if !errors.As(err, &se) || se.File != tt.file || se.Line != tt.line || se.Column == 0 || !strings.Contains(err.Error(), tt.msg) {
			t.Errorf("%s: got %v (%s:%d:%d), want %s at %s:%d", tt.fn, err, fileOf(se), lineOf(se), 0, tt.msg, tt.file, tt.line)
		}
	}

	entry = project(t, map[string]string{
		"workflow.ts": "import { x } from './lib/init';\nexport default { f: { h() { return x } } };\n",
		"lib/init.ts": "export const x = 1;\nthrow new RangeError('not configured');\n",
	})
	r, err = bundle.Build(entry, nil)
	if err != nil {
		t.Fatal(err)
	}
	_, err = js.New(js.Options{}).Load(context.Background(), sandbox.Source{Name: "workflow.ts", Code: r.Code})
	var se *scripthost.Error
	if !errors.As(err, &se) || se.File != "lib/init.ts" || se.Line != 2 || se.Column != 7 {
		t.Errorf("top-level throw: got %v, want lib/init.ts:2:7", err)
	}

	// A file name the source map holds as a URL with escapes is reported as it is.
	entry = project(t, map[string]string{
		"workflow.ts":     "import { x } from './lib/odd name';\nexport default { f: { h() { return x } } };\n",
		"lib/odd name.ts": "export const x = 1;\nthrow new RangeError('odd');\n",
	})
	if r, err = bundle.Build(entry, nil); err != nil {
		t.Fatal(err)
	}
	_, err = js.New(js.Options{}).Load(context.Background(), sandbox.Source{Name: "workflow.ts", Code: r.Code})
	if !errors.As(err, &se) || se.File != "lib/odd name.ts" || se.Line != 2 {
		t.Errorf("odd name: got %v (%s), want lib/odd name.ts:2", err, fileOf(se))
	}
}

func fileOf(e *scripthost.Error) string {
	if e == nil {
		return ""
	}
	return e.File
}

func lineOf(e *scripthost.Error) int {
	if e == nil {
		return 0
	}
	return e.Line
}

// TestPatternImport: an import() whose argument starts with a literal directory
// bundles every file matching the pattern, and the manifest lists them.
func TestPatternImport(t *testing.T) {
	entry := project(t, map[string]string{
		"workflow.ts":     "export default { f: { async h(lang: string) { return (await import(`./locales/${lang}.json`)).default.hi } } };\n",
		"locales/en.json": `{"hi": "hello"}`,
		"locales/fr.json": `{"hi": "bonjour"}`,
	})
	r, err := bundle.Build(entry, nil)
	if err != nil {
		t.Fatal(err)
	}
	var paths []string
	for _, f := range r.Manifest {
		paths = append(paths, f.Path)
	}
	if got := strings.Join(paths, " "); got != "locales/en.json locales/fr.json workflow.ts" {
		t.Errorf("manifest: got %s", got)
	}
	p, err := js.New(js.Options{}).Load(context.Background(), sandbox.Source{Name: "workflow.ts", Code: r.Code})
	if err != nil {
		t.Fatal(err)
	}
	res, err := p.Invoke(context.Background(), sandbox.Invocation{Function: "f.h", Args: []json.RawMessage{json.RawMessage(`"fr"`)}, Tools: sandboxtest.NewTools()})
	if err != nil || string(res.Value) != `"bonjour"` {
		t.Errorf("got %s, %v, want \"bonjour\"", res.Value, err)
	}
}

// TestOutsideFiles: an absolute import of a file outside the entry's directory and a
// module reached through a symbolic link to another directory are bundled, and the
// manifest lists each file where it really is, relative to the entry's directory.
func TestOutsideFiles(t *testing.T) {
	root := t.TempDir()
	shared := filepath.Join(root, "shared")
	if err := os.MkdirAll(shared, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(shared, "abs.js"), []byte("export const a = 'abs';\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(shared, "linked.js"), []byte("export const l = 'linked';\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	proj := filepath.Join(root, "proj")
	if err := os.MkdirAll(proj, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(shared, filepath.Join(proj, "link")); err != nil {
		t.Skipf("symlink: %v", err)
	}
	entry := filepath.Join(proj, "workflow.ts")
	text := "import { a } from " + strconv.Quote(filepath.Join(shared, "abs.js")) + ";\nimport { l } from './link/linked.js';\nexport default { f: { h() { return a + ' ' + l } } };\n"
	if err := os.WriteFile(entry, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	res, err := run(t, entry, "f.h")
	if err != nil || string(res.Value) != `"abs linked"` {
		t.Fatalf("got %s, %v", res.Value, err)
	}
	r, err := bundle.Build(entry, nil)
	if err != nil {
		t.Fatal(err)
	}
	var paths []string
	for _, f := range r.Manifest {
		paths = append(paths, f.Path)
	}
	if got := strings.Join(paths, " "); got != "../shared/abs.js ../shared/linked.js workflow.ts" {
		t.Errorf("manifest: got %s, want ../shared/abs.js ../shared/linked.js workflow.ts", got)
	}
}

// TestCommonJSEntry: a CommonJS entry that requires a module defines the workflow with
// exports.default, as a single CommonJS file does.
func TestCommonJSEntry(t *testing.T) {
	dir := filepath.Dir(project(t, map[string]string{
		"wf.cjs":  "const { n } = require('./lib.cjs');\nexports.default = { f: { h() { return n } } };\n",
		"lib.cjs": "exports.n = 5;\n",
	}))
	entry := filepath.Join(dir, "wf.cjs")
	res, err := run(t, entry, "f.h")
	if err != nil || string(res.Value) != "5" {
		t.Fatalf("got %s, %v, want 5", res.Value, err)
	}
	r, err := bundle.Build(entry, nil)
	if err != nil || len(r.Manifest) != 2 || r.Manifest[0].Path != "lib.cjs" || r.Manifest[1].Path != "wf.cjs" {
		t.Errorf("manifest: got %+v, %v, want lib.cjs and wf.cjs", r.Manifest, err)
	}
}

// TestNodeEnv: a package that reads process.env.NODE_ENV, as packages written for
// bundlers do, gets "production"; the sandbox has no process.
func TestNodeEnv(t *testing.T) {
	entry := project(t, map[string]string{
		"workflow.ts":                     "import mode from 'modal';\nexport default { f: { h() { return mode } } };\n",
		"node_modules/modal/package.json": `{"name": "modal", "main": "index.js"}`,
		"node_modules/modal/index.js":     "module.exports = process.env.NODE_ENV === 'production' ? 'prod' : 'dev';\n",
	})
	res, err := run(t, entry, "f.h")
	if err != nil || string(res.Value) != `"prod"` {
		t.Errorf("got %s, %v, want \"prod\"", res.Value, err)
	}
}
