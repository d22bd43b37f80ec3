package js_test

import (
	"context"
	"strings"
	"testing"

	"github.com/scripthost/scripthost"
	"github.com/scripthost/scripthost/sandbox"
	"github.com/scripthost/scripthost/sandbox/js"
)

// TestModuleForms: the ways a module can define its default export all reach the
// engine, with ES module semantics (the value the binding holds once the module has
// run), named exports beside it, and CommonJS modules read through
// module.exports.default.
func TestModuleForms(t *testing.T) {
	tests := []struct{ name, file, code, want string }{
		{"default object", "wf.js", "export default { f: { h() { return 1 } } }\n", "1"},
		{"named exports beside", "wf.js", "export const a = 2\nexport function b() { return a }\nexport default { f: { h() { return b() + a } } }\n", "4"},
		{"local as default", "wf.js", "const d = { f: { h() { return 'local' } } }\nexport { d as default }\n", `"local"`},
		{"live binding", "wf.js", "let d = { f: { h() { return 'first' } } }\nexport { d as default }\nd = { f: { h() { return 'last' } } }\n", `"last"`},
		{"class instance", "wf.ts", "class W { f = { h: (): string => 'class' } }\nexport default new W()\n", `"class"`},
		{"typescript", "wf.ts", "type T = { n: number }\nconst t: T = { n: 5 }\nexport default { f: { h(): number { return t.n } } } satisfies object\n", "5"},
		{"export clause text in a string", "wf.js", "export default { f: { h() { return s.length > 0 } } }\nconst s = `\nexport {\n  s as default\n};\n`\n", "true"},
		{"commonjs exports.default", "wf.cjs", "exports.default = { f: { h() { return 'cjs' } } }\n", `"cjs"`},
	}
	eng := js.New(js.Options{})
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := load(t, eng, tt.file, tt.code)
			res, err := invoke(t, p, "f.h")
			if err != nil || string(res.Value) != tt.want {
				t.Errorf("got %s, %v, want %s", res.Value, err, tt.want)
			}
		})
	}
}

// TestModuleExportTextNotTaken: text in a module that looks like esbuild's export
// statement does not make a default export.
func TestModuleExportTextNotTaken(t *testing.T) {
	for _, code := range []string{
		"export const x = { f: {} }\nexport const s = `\nexport {\n  x as default\n};\n`\n",
		"const x = { f: {} }\nconst s = `\nexport {\n  x as default\n};\n`\n",
	} {
		_, err := js.New(js.Options{}).Load(context.Background(), sandbox.Source{Name: "wf.js", Code: []byte(code)})
		if !scripthost.IsLogic(err) || !strings.Contains(err.Error(), "no default export") {
			t.Errorf("%q: got %v, want a missing default export", code, err)
		}
	}
}

// TestModuleStrictness: a module runs in strict mode exactly when it says so, in
// JavaScript and TypeScript alike.
func TestModuleStrictness(t *testing.T) {
	const body = "export default { f: { h() { try { undeclared = 1; return 'sloppy' } catch (e) { return e.name } } } }\n"
	tests := []struct{ name, file, code, want string }{
		{"sloppy js", "wf.js", body, `"sloppy"`},
		{"strict js", "wf.js", "'use strict'\n" + body, `"ReferenceError"`},
		{"strict after a directive", "wf.js", "'use client'\n\"use strict\"\n" + body, `"ReferenceError"`},
		{"not a directive", "wf.js", "'a' + 'b';\n'use strict'\n" + body, `"sloppy"`},
		{"after a statement", "wf.js", "1;\n'use strict'\n" + body, `"sloppy"`},
		{"sloppy ts", "wf.ts", body, `"sloppy"`},
		{"strict ts", "wf.ts", "// comment\n'use strict'\n" + body, `"ReferenceError"`},
	}
	eng := js.New(js.Options{})
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, err := invoke(t, load(t, eng, tt.file, tt.code), "f.h")
			if err != nil || string(res.Value) != tt.want {
				t.Errorf("got %s, %v, want %s", res.Value, err, tt.want)
			}
		})
	}
}

// TestModuleRuntimeImports: require calls and dynamic imports load, and are refused
// when they run, with the line they are on.
func TestModuleRuntimeImports(t *testing.T) {
	p := load(t, js.New(js.Options{}), "wf.ts", `export default { f: {
  req() { return require('fs') },
  dyn(name: string) { return import(name) },
  lit() { return import('./other') },
} }
`)
	for fn, line := range map[string]int{"f.req": 2, "f.dyn": 3, "f.lit": 4} {
		_, err := invoke(t, p, fn, `"x"`)
		if !scripthost.IsLogic(err) || !strings.Contains(err.Error(), "imports are not supported") {
			t.Errorf("%s: got %v, want imports refused", fn, err)
			continue
		}
		if se := scriptErr(t, err); se.Line != line || se.File != "wf.ts" {
			t.Errorf("%s: location: got %s:%d, want wf.ts:%d", fn, se.File, se.Line, line)
		}
	}
}

// TestToolNamespacesReadOnly: a tool namespace is a read-only, non-enumerable global
// holding a frozen object of frozen methods, whether the script first reads it,
// assigns it, deletes it, redefines it or lists the globals; and a script that never
// names a namespace still sees it.
func TestToolNamespacesReadOnly(t *testing.T) {
	p := load(t, js.New(js.Options{}), "wf.js", `'use strict'
const attempt = (f) => { try { f(); return 'done' } catch (e) { return e.name } }
const describe = () => {
  const d = Object.getOwnPropertyDescriptor(globalThis, 'Echo')
  return [d.writable, d.enumerable, d.configurable, Object.isFrozen(Echo), Object.isFrozen(Echo.say), typeof Echo.say]
}
export default { f: {
  assign() { return [attempt(() => { Echo = {} }), ...describe()] },
  remove() { return [attempt(() => { delete globalThis.Echo }), ...describe()] },
  redefine() { return [attempt(() => Object.defineProperty(globalThis, 'Echo', { value: 1 })), ...describe()] },
  list() { return [Object.getOwnPropertyNames(globalThis).includes('Echo'), Object.keys(globalThis).includes('Echo'), ...describe()] },
  read() { return ['Echo' in globalThis, ...describe()] },
} }
`)
	for fn, want := range map[string]string{
		"f.assign":   `["TypeError",false,false,false,true,true,"function"]`,
		"f.remove":   `["TypeError",false,false,false,true,true,"function"]`,
		"f.redefine": `["TypeError",false,false,false,true,true,"function"]`,
		"f.list":     `[true,false,false,false,false,true,true,"function"]`,
		"f.read":     `[true,false,false,false,true,true,"function"]`,
	} {
		res, err := invoke(t, p, fn)
		if err != nil || string(res.Value) != want {
			t.Errorf("%s: got %s, %v, want %s", fn, res.Value, err, want)
		}
	}
}
