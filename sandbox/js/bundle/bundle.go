// Package bundle turns a JavaScript or TypeScript workflow that imports other modules
// into one program, as the host stores and runs it. Build bundles the entry file with
// esbuild: local modules (.js, .mjs, .cjs, .ts, .mts, .cts, .json) and packages under
// node_modules are resolved as Node and TypeScript resolve them (package.json
// exports, module and main; tsconfig.json paths and baseUrl) and joined into one ES
// module with an inline source map that carries every file's text, so that every
// location in it maps back to the file, line and column it came from.
//
// A workflow reaches the world only through host tools, so Build refuses what would
// need more at run time: Node built-in modules (fs, node:fs, net, child_process, ...),
// require and import() with a computed module name, and import cycles among the
// workflow's own files. Every refusal and every bad input (a missing module, a
// malformed package.json or tsconfig.json, a syntax error) is a
// *scripthost.Error naming the file, line and column it is about.
//
// The Manifest lists every file that went into the program, with its path relative
// to the entry's directory and its SHA-256: the stored version says what it was built
// from without the files being read again.
package bundle

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/evanw/esbuild/pkg/api"

	"github.com/scripthost/scripthost"
)

// File is one input of a bundle.
type File struct {
	// Path is relative to the entry's directory, with forward slashes; a file outside
	// it (an absolute import, a symbolic link leading elsewhere) starts with "../".
	Path   string `json:"path"`
	SHA256 string `json:"sha256"`
	Size   int64  `json:"size"`
}

// Manifest lists a bundle's inputs, sorted by path.
type Manifest []File

// Result is a bundled workflow.
type Result struct {
	// Code is one ES module whose default export is the workflow definition, ending
	// with an inline source map that includes every input's text.
	Code []byte
	// Manifest lists the inputs; the entry is one of them.
	Manifest Manifest
}

// Single reports whether the entry imports nothing: the bundle has one input.
func (r Result) Single() bool { return len(r.Manifest) == 1 }

// Build bundles the workflow whose entry file is entry (an absolute path, or relative
// to the working directory). source, when not nil, is the entry's text, used instead
// of reading the file (the file need not exist then, as long as the entry imports
// nothing relative to a missing directory). esbuild's CommonJS interop helpers are
// replaced by equivalents that cost a fresh runtime less (see lighten).
func Build(entry string, source []byte) (Result, error) {
	r, err := esbuildBundle(entry, source)
	r.Code = lighten(r.Code)
	return r, err
}

// esbuildBundle is Build with esbuild's own interop helpers.
func esbuildBundle(entry string, source []byte) (Result, error) {
	abs, err := filepath.Abs(entry)
	if err != nil {
		return Result{}, fmt.Errorf("bundle: %s: %w", entry, err)
	}
	dir := filepath.Dir(abs)
	if source == nil {
		if source, err = os.ReadFile(abs); err != nil {
			return Result{}, &scripthost.Error{Class: scripthost.ClassLogic, Code: scripthost.CodeInvalidWorkflow,
				File: filepath.Base(abs), Message: fmt.Sprintf("bundle: %v", err), Err: err}
		}
	}
	res, meta, err := build(abs, source, nil)
	if err != nil {
		return Result{}, err
	}
	// A CommonJS entry's default export is its module.exports.default, as the engine
	// reads a CommonJS module; esbuild's ES module output would export module.exports.
	if meta.Inputs[filepath.ToSlash(filepath.Base(abs))].Format == "cjs" {
		stdin := &api.StdinOptions{Contents: "export default require(" + strconv.Quote(abs) + ").default;\n",
			Sourcefile: "<entry>", ResolveDir: dir, Loader: api.LoaderJS}
		if res, meta, err = build(abs, source, stdin); err != nil {
			return Result{}, err
		}
	}
	if err := refuseCycles(meta, res.in.text); err != nil {
		return Result{}, err
	}
	return Result{Code: res.code, Manifest: res.in.manifest()}, nil
}

// built is one esbuild run's output and the inputs it read.
type built struct {
	code []byte
	in   *inputs
}

// build runs esbuild on the entry at abs (whose text is source), or on stdin when not
// nil, which imports the entry.
func build(abs string, source []byte, stdin *api.StdinOptions) (built, metafile, error) {
	dir := filepath.Dir(abs)
	in := &inputs{dir: dir, entry: abs, source: source, files: map[string]File{}, texts: map[string][]byte{}}
	opts := api.BuildOptions{
		EntryPoints:    []string{abs},
		AbsWorkingDir:  dir,
		Bundle:         true,
		Platform:       api.PlatformNeutral,
		MainFields:     []string{"module", "main"},
		Conditions:     []string{"module"},
		Format:         api.FormatESModule,
		Target:         api.ESNext,
		Sourcemap:      api.SourceMapInline,
		SourcesContent: api.SourcesContentInclude,
		LegalComments:  api.LegalCommentsNone,
		Metafile:       true,
		Outfile:        filepath.Join(dir, "workflow.bundle.js"),
		Write:          false,
		LogLevel:       api.LogLevelSilent,
		LogOverride: map[string]api.LogLevel{
			"unsupported-require-call":   api.LogLevelError,
			"unsupported-dynamic-import": api.LogLevelError,
			"indirect-require":           api.LogLevelError,
			"package.json":               api.LogLevelError,
			"tsconfig.json":              api.LogLevelError,
		},
		// Packages written for bundlers read process.env.NODE_ENV to choose their
		// production code; there is no process in the sandbox.
		Define:  map[string]string{"process.env.NODE_ENV": `"production"`},
		Plugins: []api.Plugin{in.plugin()},
	}
	if stdin != nil {
		opts.EntryPoints, opts.Stdin = nil, stdin
	}
	res := api.Build(opts)
	if len(res.Errors) > 0 {
		return built{}, metafile{}, buildError(abs, res.Errors[0])
	}
	if len(res.OutputFiles) != 1 {
		return built{}, metafile{}, fmt.Errorf("bundle: %s: esbuild gave %d outputs, want 1", abs, len(res.OutputFiles))
	}
	var meta metafile
	if err := json.Unmarshal([]byte(res.Metafile), &meta); err != nil {
		return built{}, metafile{}, fmt.Errorf("bundle: %s: esbuild's metafile: %w", abs, err)
	}
	return built{code: res.OutputFiles[0].Contents, in: in}, meta, nil
}

// inputs reads the files esbuild loads and records what it read. esbuild loads files
// in parallel.
type inputs struct {
	dir, entry string
	source     []byte

	mu    sync.Mutex
	files map[string]File
	texts map[string][]byte // the own files' text (outside node_modules), for locating a cycle
}

// plugin refuses Node built-ins where they are imported and loads every file itself,
// so that the manifest hashes exactly the text that was bundled.
func (in *inputs) plugin() api.Plugin {
	return api.Plugin{Name: "scripthost", Setup: func(b api.PluginBuild) {
		// An entry whose text was given need not be a file. When it is one, esbuild
		// resolves it, and reads the tsconfig.json that applies to it on the way.
		b.OnResolve(api.OnResolveOptions{Filter: ".*"}, func(a api.OnResolveArgs) (api.OnResolveResult, error) {
			if a.Kind != api.ResolveEntryPoint && a.Path != in.entry {
				return api.OnResolveResult{}, nil
			}
			if _, err := os.Stat(in.entry); err == nil {
				return api.OnResolveResult{}, nil
			}
			return api.OnResolveResult{Path: in.entry, Namespace: "file"}, nil
		})
		b.OnResolve(api.OnResolveOptions{Filter: builtinFilter}, func(a api.OnResolveArgs) (api.OnResolveResult, error) {
			if !builtin(a.Path) {
				return api.OnResolveResult{}, nil
			}
			return api.OnResolveResult{}, fmt.Errorf("%q is a Node built-in module, and workflows have none: a workflow reaches the world only through host tools", a.Path)
		})
		b.OnLoad(api.OnLoadOptions{Filter: ".*", Namespace: "file"}, func(a api.OnLoadArgs) (api.OnLoadResult, error) {
			return in.load(a.Path)
		})
	}}
}

// load reads one input.
func (in *inputs) load(path string) (api.OnLoadResult, error) {
	loader, ok := loaders[strings.ToLower(filepath.Ext(path))]
	if !ok {
		return api.OnLoadResult{}, fmt.Errorf("%s: a workflow imports only .js, .mjs, .cjs, .ts, .mts, .cts and .json files", in.rel(path))
	}
	var text []byte
	if path == in.entry {
		text = in.source
	} else {
		b, err := os.ReadFile(path)
		if err != nil {
			return api.OnLoadResult{}, err
		}
		text = b
	}
	sum := sha256.Sum256(text)
	rel := in.rel(path)
	in.mu.Lock()
	in.files[rel] = File{Path: rel, SHA256: hex.EncodeToString(sum[:]), Size: int64(len(text))}
	if !inPackage(rel) {
		in.texts[rel] = text
	}
	in.mu.Unlock()
	contents := string(text)
	return api.OnLoadResult{Contents: &contents, Loader: loader, ResolveDir: filepath.Dir(path)}, nil
}

// rel is path relative to the entry's directory, with forward slashes.
func (in *inputs) rel(path string) string {
	r, err := filepath.Rel(in.dir, path)
	if err != nil {
		return filepath.ToSlash(path)
	}
	return filepath.ToSlash(r)
}

func (in *inputs) manifest() Manifest {
	in.mu.Lock()
	defer in.mu.Unlock()
	m := make(Manifest, 0, len(in.files))
	for _, f := range in.files {
		m = append(m, f)
	}
	sort.Slice(m, func(i, j int) bool { return m[i].Path < m[j].Path })
	return m
}

var loaders = map[string]api.Loader{
	".js": api.LoaderJS, ".mjs": api.LoaderJS, ".cjs": api.LoaderJS,
	".ts": api.LoaderTS, ".mts": api.LoaderTS, ".cts": api.LoaderTS,
	".json": api.LoaderJSON,
}

// buildError is a *scripthost.Error for esbuild's message m, located at the file, line
// and column it names (relative to the entry's directory).
func buildError(entry string, m api.Message) error {
	text := m.Text
	if m.PluginName != "" {
		text = strings.TrimPrefix(text, "["+m.PluginName+"] ")
	}
	switch {
	case m.ID == "unsupported-require-call" || m.ID == "unsupported-dynamic-import" || m.ID == "indirect-require":
		text += ": a workflow's modules are bundled when it loads, so require and import() take a string literal"
	default:
		noted := false
		for _, n := range m.Notes {
			// esbuild suggests marking an unresolved path external: a workflow has
			// nothing outside its bundle.
			if n.Text != "" && !strings.Contains(n.Text, "external") {
				text += " (" + n.Text + ")"
				noted = true
			}
		}
		if !noted && strings.HasPrefix(text, "Could not resolve ") {
			text += ": no such file, and no such package in node_modules"
		}
	}
	e := &scripthost.Error{Class: scripthost.ClassLogic, Code: scripthost.CodeInvalidWorkflow,
		File: filepath.Base(entry), Message: "bundle: " + text}
	if l := m.Location; l != nil {
		e.File = filepath.ToSlash(l.File)
		if l.Line > 0 {
			e.Line, e.Column = l.Line, l.Column+1
		}
	}
	return e
}

// metafile is the part of esbuild's metafile Build reads.
type metafile struct {
	Inputs map[string]struct {
		Format  string `json:"format"`
		Imports []struct {
			Path     string `json:"path"`
			Kind     string `json:"kind"`
			External bool   `json:"external"`
			Original string `json:"original"`
		} `json:"imports"`
	} `json:"inputs"`
}

// inPackage reports whether the input named p (relative to the entry's directory) lies
// in a package under node_modules.
func inPackage(p string) bool { return strings.Contains("/"+p, "/node_modules/") }

// text returns an own input's text, by its name relative to the entry's directory.
func (in *inputs) text(rel string) []byte {
	in.mu.Lock()
	defer in.mu.Unlock()
	return in.texts[rel]
}

// refuseCycles refuses an import cycle among the workflow's own files (outside
// node_modules): esbuild would bundle it, and a module would then read another's
// bindings before they are initialized. Cycles inside packages are the packages'. The
// error is located at the import that closes the cycle, found in its file's text.
func refuseCycles(meta metafile, text func(string) []byte) error {
	own := func(p string) bool { return !inPackage(p) }
	names := make([]string, 0, len(meta.Inputs))
	for name := range meta.Inputs {
		if own(name) {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	const (
		unseen = iota
		open
		done
	)
	state := map[string]int{}
	var stack []string
	var visit func(string) []string
	visit = func(n string) []string {
		state[n] = open
		stack = append(stack, n)
		for _, imp := range meta.Inputs[n].Imports {
			if imp.External || !own(imp.Path) {
				continue
			}
			switch state[imp.Path] {
			case open:
				i := slices.Index(stack, imp.Path)
				return append(slices.Clone(stack[i:]), imp.Path)
			case unseen:
				if c := visit(imp.Path); c != nil {
					return c
				}
			}
		}
		stack = stack[:len(stack)-1]
		state[n] = done
		return nil
	}
	for _, n := range names {
		if state[n] != unseen {
			continue
		}
		if c := visit(n); c != nil {
			from, to := c[len(c)-2], c[len(c)-1]
			e := &scripthost.Error{Class: scripthost.ClassLogic, Code: scripthost.CodeInvalidWorkflow, File: from,
				Message: "bundle: import cycle: " + strings.Join(c, " -> ") + ": a module of the cycle would run before the ones it imports are initialized; move what they share into a module of its own"}
			for _, imp := range meta.Inputs[from].Imports {
				if imp.Path == to && imp.Original != "" {
					e.Line, e.Column = specifierAt(text(from), imp.Original)
					break
				}
			}
			return e
		}
	}
	return nil
}

// specifierAt returns the 1-based line and column of the first quoted occurrence of
// the module specifier spec in text, or zeros.
func specifierAt(text []byte, spec string) (line, col int) {
	i := -1
	for _, q := range []string{"'", `"`, "`"} {
		if j := bytes.Index(text, []byte(q+spec+q)); j >= 0 && (i < 0 || j < i) {
			i = j
		}
	}
	if i < 0 {
		return 0, 0
	}
	before := text[:i]
	line = bytes.Count(before, []byte("\n")) + 1
	col = utf8.RuneCount(before[bytes.LastIndexByte(before, '\n')+1:]) + 1
	return line, col
}

// builtinFilter preselects import paths that may name a Node built-in (Go regular
// expression syntax, as esbuild's plugin filters use).
var builtinFilter = `^(node:|[a-z_]+(/[a-z_/]+)?$)`

var builtinRE = regexp.MustCompile(builtinFilter)

// builtin reports whether path names a Node built-in module.
func builtin(path string) bool {
	if !builtinRE.MatchString(path) {
		return false
	}
	if strings.HasPrefix(path, "node:") {
		return true
	}
	return nodeBuiltins[path]
}

// nodeBuiltins are Node's built-in modules (require('module').builtinModules), with
// their subpaths.
var nodeBuiltins = func() map[string]bool {
	m := map[string]bool{}
	for _, name := range strings.Fields(`
		_http_agent _http_client _http_common _http_incoming _http_outgoing _http_server
		_stream_duplex _stream_passthrough _stream_readable _stream_transform _stream_wrap
		_stream_writable _tls_common _tls_wrap assert assert/strict async_hooks buffer
		child_process cluster console constants crypto dgram diagnostics_channel dns
		dns/promises domain events fs fs/promises http http2 https inspector
		inspector/promises module net os path path/posix path/win32 perf_hooks process
		punycode querystring readline readline/promises repl stream stream/consumers
		stream/promises stream/web string_decoder sys timers timers/promises tls
		trace_events tty url util util/types v8 vm wasi worker_threads zlib`) {
		m[name] = true
	}
	return m
}()
