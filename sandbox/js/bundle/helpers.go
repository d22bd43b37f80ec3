package bundle

import (
	"bytes"
	"regexp"
	"strings"
)

// esbuild joins CommonJS modules to ES modules with small helper functions it prints
// at the top of the bundle (its runtime). Every phase evaluates the bundle in a fresh
// goja runtime, so the helpers run in every phase, and a fresh runtime builds each
// built-in a script touches the first time it is touched. esbuild's __copyProps loops
// with for-of, which builds the array iterator and its prototypes (about 70
// allocations per phase); its __toESM copies through __copyProps, reaching
// Object.create and Object.prototype.hasOwnProperty.call, which it needs only for
// what __copyProps does for its other callers; its __commonJS lists the properties
// of the object it is given (an array per CommonJS file) to find the one function the
// object holds. lighten replaces the three with equivalents that do the same things
// in the same order without those costs:
//
//   - __copyProps walks the names getOwnPropertyNames returned by index, not with an
//     iterator (the only difference: a script that replaced Array.prototype's
//     iterator before a CommonJS module was imported would not see it called).
//   - __toESM builds the namespace itself: an object whose prototype is the module's
//     ({__proto__: p} makes the same object as Object.create(p)), with "default" the
//     module when the importer is in Node mode or the module has no __esModule mark,
//     then a getter for each other own name of the module, enumerable as the
//     module's property is. The target has no own name but "default" while names
//     are copied, so the hasOwnProperty test esbuild makes is "default" alone.
//   - __commonJS is given the function's name, which esbuild prints as the object's
//     one key on the line after the call (keyCommonJS).
//
// The replacements take exactly as many lines as esbuild's text: the helpers carry
// no source map mappings, and every line after them keeps its number. A helper
// whose text is not esbuild's as printed by the version this package was written
// against is left as it is, as are all of them when the bundle already uses the
// replacement's helper name for something else. Declarations of helpers that
// nothing reads after the replacement (the aliases of Object.create,
// hasOwnProperty and getOwnPropertyNames, __copyProps when only __toESM used it) are
// blanked, so that the runtime does not build the built-ins they read.
func lighten(code []byte) []byte {
	// The helpers come before the first module's "// path" comment.
	end := bytes.Index(code, []byte("\n// "))
	if end < 0 || bytes.Contains(code, []byte(getterName)) {
		return code
	}
	head := string(code[:end])
	if i := helperAt(head, commonJS.old); i >= 0 {
		if keyed, ok := keyCommonJS(code); ok {
			code, head = keyed, head[:i]+commonJS.new+head[i+len(commonJS.old):]
		}
	}
	if helperAt(head, replacements[0].old) >= 0 {
		// The others read the helper the first one adds.
		for _, r := range replacements {
			if i := helperAt(head, r.old); i >= 0 {
				head = head[:i] + pad(r.new, strings.Count(r.old, "\n")) + head[i+len(r.old):]
			}
		}
	}
	out, end := append([]byte(head), code[end:]...), len(head)
	for _, d := range droppable {
		out, end = dropUnused(out, end, d)
	}
	return out
}

// helperAt is where the declaration decl starts a line of head, or -1.
func helperAt(head, decl string) int {
	i := strings.Index(head, decl)
	if i < 0 || (i > 0 && head[i-1] != '\n') {
		return -1
	}
	return i
}

// commonJS is esbuild's __commonJS, which finds the module's function as the one
// property of the object it is given, through Object.getOwnPropertyNames (an array
// per module, in every phase), and its replacement, which is given the property's
// name. keyCommonJS passes the name at every call.
var commonJS = replacement{
	old: `var __commonJS = (cb, mod) => function __require() {
  try {
    return mod || (0, cb[__getOwnPropNames(cb)[0]])((mod = { exports: {} }).exports, mod), mod.exports;
  } catch (e) {
    throw mod = 0, e;
  }
};
`,
	new: `var __commonJS = (key, cb, mod) => function __require() {
  try {
    return mod || (0, cb[key])((mod = { exports: {} }).exports, mod), mod.exports;
  } catch (e) {
    throw mod = 0, e;
  }
};
`,
}

// commonJSCall is a call of __commonJS as esbuild prints one: after the module's
// "// path" comment, a variable set to __commonJS of an object literal whose one
// property, the module's function, is named by the path.
var commonJSCall = regexp.MustCompile(`(?m)^// ([^\n]*)\nvar [\w$]+ = __commonJS\(\{\n  "([^"\\\n]*)"\(`)

// keyCommonJS passes every __commonJS call the name of its object's property, written
// before the object on the call's line (the line's one source map mapping is at its
// start). It changes nothing, and says so, unless every call is as esbuild prints one.
func keyCommonJS(code []byte) ([]byte, bool) {
	calls := commonJSCall.FindAllSubmatchIndex(code, -1)
	if len(calls) == 0 || len(calls) != bytes.Count(code, []byte("__commonJS(")) {
		return code, false
	}
	out := make([]byte, 0, len(code)+len(calls)*64)
	last := 0
	for _, m := range calls {
		path, key := code[m[2]:m[3]], code[m[4]:m[5]]
		if !bytes.Equal(path, key) {
			return code, false
		}
		at := m[0] + bytes.Index(code[m[0]:m[1]], []byte("__commonJS(")) + len("__commonJS(")
		out = append(out, code[last:at]...)
		out = append(out, '"')
		out = append(out, key...)
		out = append(out, `", `...)
		last = at
	}
	return append(out, code[last:]...), true
}

// getterName is the helper the replacements add: it makes d the descriptor esbuild
// writes as a literal, a getter named "get" reading from[key], enumerable as from's own
// property key is. The getter is made in a function of its own, so that it closes over
// one key without a scope per iteration; the descriptor object is reused across keys
// (defineProperty reads it and keeps nothing of it), made as a literal with both
// properties so that assigning them never reaches a setter on Object.prototype.
const getterName = "__getterDesc"

type replacement struct{ old, new string }

// replacements are esbuild's helpers (v0.28, ES module output, not minified) and
// what replaces each.
var replacements = []replacement{{
	old: `var __copyProps = (to, from, except, desc) => {
  if (from && typeof from === "object" || typeof from === "function") {
    for (let key of __getOwnPropNames(from))
      if (!__hasOwnProp.call(to, key) && key !== except)
        __defProp(to, key, { get: () => from[key], enumerable: !(desc = __getOwnPropDesc(from, key)) || desc.enumerable });
  }
  return to;
};
`,
	new: copyProps + getterDecl,
}, {
	old: `var __toESM = (mod, isNodeMode, target) => (target = mod != null ? __create(__getProtoOf(mod)) : {}, __copyProps(
  // If the importer is in node compatibility mode or this is not an ESM
  // file that has been converted to a CommonJS file using a Babel-
  // compatible transform (i.e. "__esModule" has not been set), then set
  // "default" to the CommonJS "module.exports" for node compatibility.
  isNodeMode || !mod || !mod.__esModule ? __defProp(target, "default", { value: mod, enumerable: true }) : target,
  mod
));
`,
	new: `var __toESM = (mod, isNodeMode, target, dflt) => {
  target = mod != null ? { __proto__: __getProtoOf(mod) } : {};
  if (dflt = isNodeMode || !mod || !mod.__esModule) __defProp(target, "default", { value: mod, enumerable: true });
  if (mod && typeof mod === "object" || typeof mod === "function")
    for (var keys = __getOwnPropNames(mod), i = 0, key, d = { get: void 0, enumerable: false }; i < keys.length; i++)
      if ((key = keys[i]) !== "default" || !dflt) __defProp(target, key, ` + getterName + `(mod, key, d));
  return target;
};
`,
}}

const (
	copyProps = `var __copyProps = (to, from, except) => {
  if (from && typeof from === "object" || typeof from === "function")
    for (var keys = __getOwnPropNames(from), i = 0, key, d = { get: void 0, enumerable: false }; i < keys.length; i++)
      if (!__hasOwnProp.call(to, key = keys[i]) && key !== except)
        __defProp(to, key, ` + getterName + `(from, key, d));
  return to;
};
`
	getterDecl = "var " + getterName + ` = (from, key, d, desc) => { var get = () => from[key]; d.get = get; d.enumerable = !(desc = __getOwnPropDesc(from, key)) || desc.enumerable; return d; };
`
)

// droppable are helper declarations (each one whole line or more, as esbuild prints
// them) that lighten blanks when nothing else names the helper.
var droppable = []struct{ name, decl string }{
	{"__copyProps", copyProps},
	{getterName, getterDecl},
	{"__create", "var __create = Object.create;\n"},
	{"__hasOwnProp", "var __hasOwnProp = Object.prototype.hasOwnProperty;\n"},
	{"__getOwnPropNames", "var __getOwnPropNames = Object.getOwnPropertyNames;\n"},
}

// dropUnused blanks the declaration d in the helpers, code[:end] (keeping its line
// breaks), when its name appears nowhere else in code. It returns the code and where
// its helpers end.
func dropUnused(code []byte, end int, d struct{ name, decl string }) ([]byte, int) {
	i := bytes.Index(code[:end], []byte(d.decl))
	if i < 0 || (i > 0 && code[i-1] != '\n') {
		return code, end
	}
	re := regexp.MustCompile(`\b` + regexp.QuoteMeta(d.name) + `\b`)
	if len(re.FindAllIndex(code, 2)) != 1 {
		return code, end
	}
	blank := strings.Repeat("\n", strings.Count(d.decl, "\n"))
	out := append(code[:i:i], blank...)
	return append(out, code[i+len(d.decl):]...), end - len(d.decl) + len(blank)
}

// pad ends s with line breaks up to lines of them.
func pad(s string, lines int) string {
	if n := strings.Count(s, "\n"); n < lines {
		s += strings.Repeat("\n", lines-n)
	}
	return s
}
