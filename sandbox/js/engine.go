// Package js is the JavaScript and TypeScript sandbox engine, built on goja. A module
// is transformed once with esbuild (TypeScript stripped, syntax goja lacks lowered, an
// inline source map so errors point at the original lines, and the module made a
// function that returns its default export; see transform), compiled once, and then
// evaluated in a fresh goja runtime for every definition read and every invocation:
// nothing a script does survives its invocation.
//
// goja has no memory limit and its built-ins ignore interrupts, so the engine (a goja
// patched for it, in third_party/goja) refuses the built-in calls that would allocate
// or loop past the memory budget in one step (Array.prototype.fill and the other
// length-driven array methods, String.prototype.repeat, typed arrays, spread,
// JSON.stringify, ...; see goja.Limits and setLimits) and the sandbox watches the
// process heap while invocations run (see memwatch.go). goja's parsers and JSON.parse
// recurse natively per nesting level, and a Go stack overflow kills the process, so
// module source and JSON.parse input nested too deeply are refused, and dynamic code
// (eval, new Function) is disabled: a workflow is the file that was loaded.
// Backtracking regular expressions run on regexp2, whose match timeout is a
// process-wide setting: importing this package sets regexp2.DefaultMatchTimeout to
// sandbox.DefaultLimits.RegexTimeout, and the engine turns a match regexp2 gave up into
// a "regex" limit error (exec and test are also timed against the invocation's
// RegexTimeout; see goja.Limits).
package js

import (
	"context"
	"crypto/sha256"
	"fmt"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/dlclark/regexp2/v2"
	"github.com/dop251/goja"
	"github.com/dop251/goja/parser"

	"github.com/scripthost/scripthost"
	"github.com/scripthost/scripthost/sandbox"
)

// regexHardTimeout is regexp2's process-wide match timeout. An invocation's RegexTimeout
// above it is capped to it.
var regexHardTimeout = sandbox.DefaultLimits.RegexTimeout

func init() {
	// regexp2 reads its default timeout when a pattern is compiled, and goja offers no
	// per-pattern setting. Setting it here, before any goroutine can compile a
	// pattern, avoids a data race; per-invocation RegexTimeout values below it are
	// enforced on exec and test by timing them (goja.Limits.RegexTimeout).
	regexp2.DefaultMatchTimeout = regexHardTimeout
}

// Options configure an Engine. The zero value is ready to use.
type Options struct {
	// Limits fill the zero fields of an invocation's limits before
	// sandbox.DefaultLimits fill the rest.
	Limits sandbox.Limits
	// CacheEntries bounds the number of transformed modules kept, keyed by a hash of
	// their name and content; 0 means 256.
	CacheEntries int
	// Clock is the wall clock scripts see outside deterministic mode; nil means
	// time.Now.
	Clock func() time.Time
}

// Engine loads JavaScript (.js, .mjs, .cjs) and TypeScript (.ts, .mts, .cts) modules.
// It is safe for concurrent use.
type Engine struct {
	opts  Options
	mu    sync.Mutex
	cache map[[32]byte]*compiled
	order [][32]byte // insertion order, for eviction
	// globals are the lazy globals by set of tool namespaces (see toolGlobals).
	globals map[string]*goja.LazyGlobals
}

var _ sandbox.Engine = (*Engine)(nil)

// New returns an engine with opts.
func New(opts Options) *Engine {
	if opts.CacheEntries <= 0 {
		opts.CacheEntries = 256
	}
	if opts.Clock == nil {
		opts.Clock = time.Now
	}
	return &Engine{opts: opts, cache: map[[32]byte]*compiled{}, globals: map[string]*goja.LazyGlobals{}}
}

// compiled is a transformed and compiled module, shared by every program loaded from
// the same source. goja programs are not tied to a runtime and may run concurrently.
type compiled struct {
	name string
	prg  *goja.Program
	// returns says the module's function returns its default export (see transform).
	returns bool
	// commonJS and require say whether the module's function may read its module and
	// exports arguments, or its require argument: a name that appears nowhere in the
	// code (dynamic code is disabled) cannot be read, and is passed undefined. The code
	// is esbuild's output, whose identifiers carry no escapes: require is read only
	// where the word stands alone, not in a bundle's require_lib or __require.
	commonJS, require bool

	// sources are the file names of the module's frames: its name and, for a bundle,
	// the files it was built from (see sourceNames).
	sources map[string]bool
	reOnce  sync.Once
	re      *regexp.Regexp // matches the frames of sources in stack traces
}

// Load transforms and compiles src and reads its definition. Syntax errors,
// unsupported syntax, imports and a missing default export are logic errors carrying
// the file, line and column when known.
func (e *Engine) Load(ctx context.Context, src sandbox.Source) (sandbox.Program, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("sandbox/js: load %s: %w", src.Name, err)
	}
	c, err := e.compile(src)
	if err != nil {
		return nil, err
	}
	// Reading the definition once evaluates the module: a module that imports others,
	// has no default export object or throws at the top level fails here, not at its
	// first invocation.
	p := &program{eng: e, mod: c}
	if _, err := p.Definition(ctx); err != nil {
		return nil, err
	}
	return p, nil
}

func (e *Engine) compile(src sandbox.Source) (*compiled, error) {
	h := sha256.New()
	h.Write([]byte(src.Name))
	h.Write([]byte{0})
	h.Write(src.Code)
	var key [32]byte
	h.Sum(key[:0])

	e.mu.Lock()
	c, ok := e.cache[key]
	e.mu.Unlock()
	if ok {
		return c, nil
	}
	// esbuild and goja parse recursively: refuse source nested deep enough to
	// threaten the Go stack before either sees it.
	if d := goja.Nesting(string(src.Code), maxSourceNesting, false); d > maxSourceNesting {
		return nil, &scripthost.Error{Class: scripthost.ClassLogic, Code: scripthost.CodeInvalidWorkflow, File: src.Name,
			Message: fmt.Sprintf("sandbox/js: brackets nested deeper than %d levels", maxSourceNesting)}
	}
	t, err := transform(src)
	if err != nil {
		return nil, err
	}
	ast, err := goja.Parse(src.Name, t.code, parser.WithSourceMapLoader(refuseSourceMap))
	if err != nil {
		return nil, syntaxError(src.Name, err)
	}
	prg, err := goja.CompileAST(ast, false)
	if err != nil {
		return nil, syntaxError(src.Name, err)
	}
	body := strings.TrimPrefix(t.code, wrapHead)
	c = &compiled{name: src.Name, prg: prg, returns: t.returns,
		commonJS: !t.returns || strings.Contains(body, "module") || strings.Contains(body, "exports"),
		require:  requireWord.MatchString(body),
		sources:  sourceNames(src.Name, t.code)}

	e.mu.Lock()
	defer e.mu.Unlock()
	if _, ok := e.cache[key]; !ok {
		e.cache[key] = c
		e.order = append(e.order, key)
		for len(e.order) > e.opts.CacheEntries {
			delete(e.cache, e.order[0])
			e.order = e.order[1:]
		}
	}
	return c, nil
}

// requireWord matches the name require not run into a longer ASCII identifier (a
// character outside ASCII next to it counts as a boundary: a false match only passes
// the argument).
var requireWord = regexp.MustCompile(`(^|[^\w$])require($|[^\w$])`)

// maxSourceNesting bounds how deeply brackets may nest in a module's source.
const maxSourceNesting = 2000

// refuseSourceMap is goja's source map loader: only inline data: maps (which goja
// decodes itself) are honoured; a script never makes the host read a file or URL.
func refuseSourceMap(url string) ([]byte, error) {
	return nil, fmt.Errorf("sandbox/js: source map %q refused: only inline maps are read", url)
}

// syntaxError classifies a goja compile error; esbuild catches nearly all of them
// first, so this is a fallback.
func syntaxError(name string, err error) error {
	return &scripthost.Error{Class: scripthost.ClassLogic, Code: scripthost.CodeInvalidWorkflow, File: name,
		Message: "sandbox/js: " + err.Error(), Err: err}
}

// limits merges an invocation's limits with the engine's and the defaults.
func (e *Engine) limits(l sandbox.Limits) sandbox.Limits {
	o := e.opts.Limits
	if l.Timeout == 0 {
		l.Timeout = o.Timeout
	}
	if l.MaxStackDepth == 0 {
		l.MaxStackDepth = o.MaxStackDepth
	}
	if l.MemoryBytes == 0 {
		l.MemoryBytes = o.MemoryBytes
	}
	if l.MaxOutputBytes == 0 {
		l.MaxOutputBytes = o.MaxOutputBytes
	}
	if l.MaxConsoleBytes == 0 {
		l.MaxConsoleBytes = o.MaxConsoleBytes
	}
	if l.MaxToolCalls == 0 {
		l.MaxToolCalls = o.MaxToolCalls
	}
	if l.RegexTimeout == 0 {
		l.RegexTimeout = o.RegexTimeout
	}
	return l.WithDefaults()
}
