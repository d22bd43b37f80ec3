package js

import (
	"encoding/json"
	"fmt"
	"path"
	"strings"

	"github.com/evanw/esbuild/pkg/api"

	"github.com/scripthost/scripthost"
	"github.com/scripthost/scripthost/sandbox"
)

// wrapHead and wrapTail turn esbuild's output into one function expression, called
// with (exports, require, module). The head stays on the first line so line numbers
// match the source map; goja looks for the sourceMappingURL comment on the last line,
// skipping a final "})".
const (
	wrapHead = "(function (exports, require, module) {"
	wrapTail = "\n})"
)

// transformed is a module as esbuild left it, wrapped.
type transformed struct {
	code string
	// returns says the wrapper returns the default export (an ES module); otherwise
	// the module is CommonJS and the default export is read from module.exports.
	returns bool
}

// transform runs esbuild: TypeScript or JavaScript in, lowered to what goja supports,
// with an inline source map.
//
// An ES module (nearly every workflow) becomes a function that returns its default
// export, so that evaluating the module hands it straight back: esbuild's CommonJS
// output would instead define a getter per export and copy them through helper
// functions on every evaluation. The module is transformed as before but without the
// format change (TypeScript stripped, syntax lowered, a script's own source map
// comments honoured only when inline: the transform API reads no files), then
// bundled on its own into ES module output, which gathers the exports into one final
// `export { local as name, ... }` statement and says in its metafile what the module
// exports and imports. The statement is replaced by `return local` for the default
// export; it is found from the metafile's list of exports, not by reading the
// script's text. Static imports are refused here; require calls and dynamic imports
// reach the wrapper's require, which refuses them when they run, as CommonJS output
// did. ES modules are strict, so the bundle drops a "use strict" directive: the
// CommonJS transform's directives say whether the module had one, and the wrapper
// gets it back, so that a module runs strict exactly when it did before.
//
// A CommonJS module keeps esbuild's CommonJS transform and is read through
// module.exports.default.
func transform(src sandbox.Source) (transformed, error) {
	loader := api.LoaderJS
	switch strings.ToLower(path.Ext(src.Name)) {
	case ".ts", ".mts", ".cts":
		loader = api.LoaderTS
	}
	// The CommonJS transform comes first: it reports errors with the script's
	// positions, it is what a CommonJS module runs, and its directives are the
	// module's (esbuild prints them first and everything else after its helpers).
	commonJS, err := lower(src, loader, api.FormatCommonJS)
	if err != nil {
		return transformed{}, err
	}
	lowered, err := lower(src, loader, api.FormatDefault)
	if err != nil {
		return transformed{}, err
	}
	res := api.Build(api.BuildOptions{
		Stdin:          &api.StdinOptions{Contents: lowered, Sourcefile: src.Name, Loader: api.LoaderJS},
		Bundle:         true,
		Plugins:        []api.Plugin{externalImports},
		TreeShaking:    api.TreeShakingFalse,
		Platform:       api.PlatformNeutral,
		Format:         api.FormatESModule,
		Target:         api.ES2017,
		Supported:      map[string]bool{"dynamic-import": false},
		TsconfigRaw:    "{}",
		Sourcemap:      api.SourceMapInline,
		SourcesContent: api.SourcesContentExclude,
		LegalComments:  api.LegalCommentsNone,
		Metafile:       true,
		Outfile:        "module.js",
		Write:          false,
		LogLevel:       api.LogLevelSilent,
	})
	if len(res.Errors) > 0 {
		// Positions in the first pass's output are not the script's.
		return transformed{}, &scripthost.Error{Class: scripthost.ClassLogic, Code: scripthost.CodeInvalidWorkflow, File: src.Name,
			Message: "sandbox/js: " + res.Errors[0].Text}
	}
	var meta metafile
	if err := json.Unmarshal([]byte(res.Metafile), &meta); err != nil || len(res.OutputFiles) != 1 {
		return transformed{}, fmt.Errorf("sandbox/js: %s: esbuild gave %d outputs and metafile %q: %v", src.Name, len(res.OutputFiles), res.Metafile, err)
	}
	for _, in := range meta.Inputs {
		if in.Format == "cjs" {
			return transformed{code: wrapHead + commonJS + wrapTail}, nil
		}
	}
	out := meta.Outputs["module.js"]
	for _, imp := range out.Imports {
		if imp.Kind == "import-statement" {
			return transformed{}, &scripthost.Error{Class: scripthost.ClassLogic, Code: scripthost.CodeInvalidWorkflow, File: src.Name,
				Message: fmt.Sprintf("sandbox/js: imports are not supported (%q): a workflow is one self-contained file", imp.Path)}
		}
	}
	code, err := returnDefault(string(res.OutputFiles[0].Contents), out.Exports)
	if err != nil {
		return transformed{}, fmt.Errorf("sandbox/js: %s: %w", src.Name, err)
	}
	head := wrapHead
	if strict(commonJS) {
		head += `"use strict";`
	}
	return transformed{code: head + code + wrapTail, returns: true}, nil
}

// lower is esbuild's transform of src into format.
func lower(src sandbox.Source, loader api.Loader, format api.Format) (string, error) {
	res := api.Transform(string(src.Code), api.TransformOptions{
		Loader:         loader,
		Format:         format,
		Target:         api.ES2017,
		Supported:      map[string]bool{"dynamic-import": false},
		Sourcemap:      api.SourceMapInline,
		SourcesContent: api.SourcesContentExclude,
		Sourcefile:     src.Name,
		LegalComments:  api.LegalCommentsNone,
	})
	if len(res.Errors) > 0 {
		m := res.Errors[0]
		e := &scripthost.Error{Class: scripthost.ClassLogic, Code: scripthost.CodeInvalidWorkflow, File: src.Name,
			Message: "sandbox/js: " + m.Text}
		if m.Location != nil {
			e.Line, e.Column = m.Location.Line, m.Location.Column+1
		}
		return "", e
	}
	return string(res.Code), nil
}

// strict reports whether esbuild's output code starts with a "use strict" directive.
// esbuild prints a program's directives first, one a line, each a string literal and a
// semicolon.
func strict(code string) bool {
	for line := range strings.Lines(code) {
		line = strings.TrimSuffix(line, "\n")
		if line == `"use strict";` {
			return true
		}
		if !directive(line) {
			return false
		}
	}
	return false
}

// directive reports whether line is one double-quoted string literal and a semicolon.
func directive(line string) bool {
	s, ok := strings.CutSuffix(line, `";`)
	if !ok || !strings.HasPrefix(s, `"`) {
		return false
	}
	s = s[1:]
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '\\':
			i++
		case '"':
			return false
		}
	}
	return true
}

// metafile is the part of esbuild's metafile transform reads.
type metafile struct {
	Inputs map[string]struct {
		Format string `json:"format"`
	} `json:"inputs"`
	Outputs map[string]struct {
		Imports []struct {
			Path string `json:"path"`
			Kind string `json:"kind"`
		} `json:"imports"`
		Exports []string `json:"exports"`
	} `json:"outputs"`
}

// externalImports leaves every import to the output, where transform refuses it: no
// file is read and nothing is resolved.
var externalImports = api.Plugin{Name: "external-imports", Setup: func(b api.PluginBuild) {
	b.OnResolve(api.OnResolveOptions{Filter: ".*"}, func(a api.OnResolveArgs) (api.OnResolveResult, error) {
		return api.OnResolveResult{Path: a.Path, External: true}, nil
	})
}}

// exportClause opens the statement esbuild's ES module output ends with when the
// module exports anything.
const exportClause = "export {\n"

// returnDefault replaces the export statement at the end of bundled ES module output
// with a return of the default export's local binding (or of nothing). exports are the
// names the metafile says the module exports; the statement must name exactly those,
// so that text of the script's cannot pass for it: esbuild writes the statement after
// all of the module's code, and only the source map comment follows it.
func returnDefault(code string, exports []string) (string, error) {
	if len(exports) == 0 {
		return code, nil
	}
	// The statement starts a line; the first line is one too.
	start := strings.LastIndex("\n"+code, "\n"+exportClause)
	if start < 0 {
		return "", fmt.Errorf("esbuild's output has no export statement for %v", exports)
	}
	body := code[start+len(exportClause):]
	end := strings.Index(body, "\n};\n")
	if end < 0 {
		return "", fmt.Errorf("esbuild's export statement does not end")
	}
	rest := body[end+len("\n};\n"):]
	if rest != "" && !strings.HasPrefix(rest, "//# sourceMappingURL=") {
		return "", fmt.Errorf("esbuild's export statement is followed by %.40q", rest)
	}
	want := make(map[string]bool, len(exports))
	for _, name := range exports {
		want[name] = true
	}
	local := ""
	for _, line := range strings.Split(body[:end], "\n") {
		item := strings.TrimSuffix(strings.TrimSpace(line), ",")
		name, as := item, item
		if l, n, ok := strings.Cut(item, " as "); ok {
			as, name = l, n
		}
		if !want[name] || !identifier(as) {
			return "", fmt.Errorf("esbuild's export statement names %q, want one of %v", item, exports)
		}
		delete(want, name)
		if name == "default" {
			local = as
		}
	}
	if len(want) > 0 {
		return "", fmt.Errorf("esbuild's export statement misses %v", want)
	}
	ret := "return;\n"
	if local != "" {
		ret = "return " + local + ";\n"
	}
	return code[:start] + ret + rest, nil
}

// identifier reports whether s can be an identifier as esbuild writes one (ASCII, with
// other characters escaped).
func identifier(s string) bool {
	if s == "" {
		return false
	}
	for i, r := range s {
		switch {
		case r == '_' || r == '$' || r == '\\' || 'a' <= r && r <= 'z' || 'A' <= r && r <= 'Z':
		case '0' <= r && r <= '9' && i > 0:
		default:
			return false
		}
	}
	return true
}
