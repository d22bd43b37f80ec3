// Package wasm is the WebAssembly sandbox engine: it runs handler modules on wazero
// under the guest ABI described in ABI.md. Modules are compiled once per Program (and
// cached on disk across processes), every Invoke runs in a module instance in the state
// of a fresh one (a new instance, or a reused one reset to its snapshot after
// initialization: warm.go) with a wall-clock timeout, a memory cap and no ambient
// authority (no files, network, environment or real clock), and every guest pointer is
// checked before the host touches memory.
//
// The Go guest SDK lives in the guest subpackage.
package wasm

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	goruntime "runtime"
	"sync"
	"time"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/experimental"

	"github.com/scripthost/scripthost"
	"github.com/scripthost/scripthost/sandbox"
)

// ABIVersion is the guest ABI version this engine implements. A module declares the
// version it was built for through its scripthost_abi_version export.
const ABIVersion = 1

// defaultMaxIdleBytes is Options.MaxIdleBytes when zero: room for about 35 idle Go
// guest instances, or thousands of small ones.
const defaultMaxIdleBytes = 256 << 20

// Options configure an Engine. The zero value is usable.
type Options struct {
	// CacheDir is where compiled modules are cached across processes. Empty means
	// os.UserCacheDir()/scripthost/wazero (os.TempDir() when there is no user cache
	// directory); NoDiskCache disables the disk cache.
	CacheDir    string
	NoDiskCache bool
	// Limits are the defaults for the zero fields of each invocation's Limits (the
	// fields left zero here take sandbox.DefaultLimits). Limits.MaxMemoryPages is
	// also the engine-wide ceiling: an invocation may lower it, never raise it, and a
	// module declaring a larger maximum memory is refused at Load.
	Limits sandbox.Limits
	// MaxTableElements caps every table of a module; 0 means 65,536. A module
	// declaring a table larger (initially or at most) or an element segment longer is
	// refused at Load; a table declared without a maximum gets this one, so that a
	// table.grow past it returns -1. A module's tables count against the memory cap,
	// 16 bytes an element (at their maximum when the module has a table.grow), and
	// leave that much less for its linear memory.
	MaxTableElements uint32
	// Compile bounds what Load compiles and how long it waits for it.
	Compile CompileLimits
	// WASI configures what the WASI imports expose outside deterministic mode.
	WASI WASIConfig
	// CompileWorkers is how many goroutines compile one module; 0 means GOMAXPROCS.
	// It is at least 2: wazero stops a compilation whose context ended between two
	// functions only when it has more than one worker.
	CompileWorkers int
	// FreshInstances runs every invocation in a new instance. By default an
	// invocation of a module that allows it reuses an instance a previous one left
	// reset to its state after initialization (see ABI.md, "The instance").
	FreshInstances bool
	// MaxIdleBytes bounds the memory that instances kept for reuse hold, across all
	// modules (each holds its memory and a snapshot of it); 0 means 256 MiB. Past
	// it, instances are closed after use.
	MaxIdleBytes int64
}

// WASIConfig says what a guest can observe through WASI. Files, sockets, arguments and
// environment variables are never exposed.
type WASIConfig struct {
	// RealClock exposes the host's wall clock, monotonic clock and sleep. Without it
	// the clocks are wazero's fake ones (they start at 2022-01-01T00:00:00Z and
	// advance 1ms per reading) and sleep returns at once.
	RealClock bool
	// Rand is the source of random_get outside deterministic mode; nil means
	// crypto/rand.
	Rand io.Reader
}

// Engine loads Wasm handler modules. It is safe for concurrent use; Close releases
// the runtime and every Program loaded from it.
type Engine struct {
	opts    Options
	limits  sandbox.Limits // opts.Limits with defaults
	budgets budgets        // opts.Compile and opts.MaxTableElements with defaults
	cache   wazero.CompilationCache
	runtime wazero.Runtime

	mu      sync.Mutex
	modules map[[32]byte]*module // loaded modules by the SHA-256 of their bytes
	idle    idleBudget           // memory held by instances kept for reuse
	// trackMin is the smallest memory whose written pages are tracked for its
	// resets (trackMinBytes; tests lower it, and a negative value maps no memory).
	trackMin int
	// compiles are the compilations running (a timed-out one runs on to the end of
	// the function it compiles), which Close cancels and waits for: wazero's runtime
	// crashes a compilation it was closed under. closed, guarded by mu, refuses new
	// ones.
	compiles      sync.WaitGroup
	stopCompiles  context.Context
	closeCompiles context.CancelFunc
	closed        bool

	closeOnce sync.Once
	closeErr  error
}

var _ sandbox.Engine = (*Engine)(nil)

// New returns an Engine with one wazero runtime whose memory limit is the default
// MaxMemoryPages, with the host module "scripthost" and WASI preview 1 instantiated.
func New(ctx context.Context, opts Options) (*Engine, error) {
	e := &Engine{opts: opts, limits: mergeLimits(sandbox.Limits{}, opts.Limits), modules: map[[32]byte]*module{},
		budgets: newBudgets(opts.Compile, opts.MaxTableElements)}
	e.trackMin = trackMinBytes
	e.stopCompiles, e.closeCompiles = context.WithCancel(context.Background())
	e.idle.max = opts.MaxIdleBytes
	if e.idle.max <= 0 {
		e.idle.max = defaultMaxIdleBytes
	}
	if e.limits.MaxMemoryPages > 65536 {
		return nil, fmt.Errorf("wasm: MaxMemoryPages %d above the 65536 pages of a 32-bit memory", e.limits.MaxMemoryPages)
	}
	if opts.NoDiskCache {
		e.cache = wazero.NewCompilationCache()
	} else {
		dir := opts.CacheDir
		if dir == "" {
			// Without a user cache directory (no $HOME, as under some service
			// managers) the cache goes to the temporary directory: a missing cache
			// location must not stop the host, it only costs compile time.
			base, err := os.UserCacheDir()
			if err != nil {
				base = os.TempDir()
			}
			dir = filepath.Join(base, "scripthost", "wazero")
		}
		c, err := wazero.NewCompilationCacheWithDir(dir)
		if err != nil {
			return nil, fmt.Errorf("wasm: cache dir %s: %w", dir, err)
		}
		e.cache = c
	}
	cfg := wazero.NewRuntimeConfig().
		// Guests are stopped by the rewrite's checks and the stop global (see
		// instrument and instance.arm), not by wazero's check at every loop iteration.
		WithCloseOnContextDone(false).
		// The invocation's page cap is enforced by linearMemory; wazero enforces
		// a declared maximum and the 4 GiB of a 32-bit memory.
		WithMemoryLimitPages(maxPages).
		WithCompilationCache(e.cache)
	e.runtime = wazero.NewRuntimeWithConfig(ctx, cfg)
	if err := instantiateWASI(ctx, e.runtime); err != nil {
		_ = e.Close(ctx)
		return nil, fmt.Errorf("wasm: instantiate WASI: %w", err)
	}
	if err := instantiateHost(ctx, e.runtime); err != nil {
		_ = e.Close(ctx)
		return nil, fmt.Errorf("wasm: instantiate host module: %w", err)
	}
	return e, nil
}

// Limits returns the engine's default limits.
func (e *Engine) Limits() sandbox.Limits { return e.limits }

// Close releases the runtime, every module compiled by it and the in-memory cache. The
// disk cache stays.
func (e *Engine) Close(ctx context.Context) error {
	e.closeOnce.Do(func() {
		e.mu.Lock()
		e.closed = true
		e.mu.Unlock()
		e.closeCompiles()
		e.compiles.Wait()
		var errs []error
		if e.runtime != nil {
			errs = append(errs, e.runtime.Close(ctx))
		}
		if e.cache != nil {
			errs = append(errs, e.cache.Close(ctx))
		}
		if err := errors.Join(errs...); err != nil {
			e.closeErr = fmt.Errorf("wasm: close: %w", err)
		}
	})
	return e.closeErr
}

// Load validates and compiles a module, checks its ABI version and reads its
// definition. Every failure is a logic error naming the module.
func (e *Engine) Load(ctx context.Context, src sandbox.Source) (sandbox.Program, error) {
	return e.load(ctx, src)
}

func (e *Engine) load(ctx context.Context, src sandbox.Source) (*Program, error) {
	name := src.Name
	if name == "" {
		name = "module.wasm"
	}
	if len(src.Code) > e.budgets.moduleBytes {
		// Refused before it is hashed, let alone read.
		return nil, loadError(name, "module of %d bytes, above the limit of %d bytes", len(src.Code), e.budgets.moduleBytes)
	}
	key := sha256.Sum256(src.Code)
	e.mu.Lock()
	if m, ok := e.modules[key]; ok {
		m.refs++
		e.mu.Unlock()
		return &Program{eng: e, name: name, module: m}, nil
	}
	e.mu.Unlock()

	info, err := inspect(src.Code, e.budgets)
	if err != nil {
		return nil, loadError(name, "%v", err)
	}
	code, rw, err := instrument(src.Code, e.budgets)
	if err != nil {
		return nil, loadError(name, "%v", err)
	}
	tablePages := info.tablePages(rw.growsTables)
	if err := info.checkMemory(e.limits.MaxMemoryPages, tablePages); err != nil {
		return nil, loadError(name, "%v", err)
	}
	compiled, err := e.compile(ctx, code, e.budgets.compileTimeout(len(src.Code)))
	if err != nil {
		if ctx.Err() != nil {
			return nil, fmt.Errorf("wasm: load %s: %w", name, err)
		}
		return nil, loadError(name, "compile: %v", err)
	}
	p := &Program{eng: e, name: name, module: &module{key: key, compiled: compiled, info: info, rewrite: rw,
		tablePages: tablePages, pool: pool{budget: &e.idle}}}
	if err := p.checkImports(); err != nil {
		_ = compiled.Close(ctx)
		return nil, loadError(name, "%v", err)
	}
	if err := p.checkExports(); err != nil {
		_ = compiled.Close(ctx)
		return nil, loadError(name, "%v", err)
	}
	p.checkReusable()
	if err := p.describe(ctx); err != nil {
		_ = compiled.Close(ctx)
		return nil, err
	}

	e.mu.Lock()
	defer e.mu.Unlock()
	if m, ok := e.modules[key]; ok {
		// Another Load of the same bytes finished first: share its module.
		_ = compiled.Close(ctx)
		p.module = m
	} else {
		e.modules[key] = p.module
	}
	p.refs++
	return p, nil
}

// errCompileTimeout is a compilation that took longer than the compile timeout.
var errCompileTimeout = errors.New("compile timeout")

// compile compiles code, for at most timeout. wazero's compiler stops at a cancelled
// context between two functions only, and only with more than one worker, so it
// always gets two at least, and it runs in a goroutine of its own: past the timeout
// compile returns at once, the compilation ends after the function it is compiling,
// and its module, should it finish, is closed. No lock of the engine is held, so
// other modules load and run meanwhile.
func (e *Engine) compile(ctx context.Context, code []byte, timeout time.Duration) (wazero.CompiledModule, error) {
	workers := e.opts.CompileWorkers
	if workers <= 0 {
		workers = goruntime.GOMAXPROCS(0)
	}
	ctx, cancel := context.WithTimeoutCause(ctx, timeout, errCompileTimeout)
	defer cancel()
	e.mu.Lock()
	if e.closed {
		e.mu.Unlock()
		return nil, errors.New("engine closed")
	}
	e.compiles.Add(1)
	e.mu.Unlock()
	stop := context.AfterFunc(e.stopCompiles, cancel)
	type result struct {
		m   wazero.CompiledModule
		err error
	}
	done := make(chan result, 1)
	go func() {
		defer e.compiles.Done()
		defer stop()
		m, err := e.runtime.CompileModule(experimental.WithCompilationWorkers(ctx, max(workers, 2)), code)
		done <- result{m, err}
	}()
	select {
	case r := <-done:
		if r.err != nil && context.Cause(ctx) == errCompileTimeout {
			return nil, fmt.Errorf("took longer than %s, the limit", timeout)
		}
		return r.m, r.err
	case <-ctx.Done():
		go func() {
			if r := <-done; r.m != nil {
				_ = r.m.Close(context.Background())
			}
		}()
		if context.Cause(ctx) == errCompileTimeout {
			return nil, fmt.Errorf("took longer than %s, the limit", timeout)
		}
		return nil, context.Cause(ctx)
	}
}

// release drops one reference to m and closes it with the last one.
func (e *Engine) release(ctx context.Context, m *module) error {
	e.mu.Lock()
	m.refs--
	last := m.refs == 0
	if last && e.modules[m.key] == m {
		delete(e.modules, m.key)
	}
	e.mu.Unlock()
	if !last {
		return nil
	}
	m.pool.close()
	return m.compiled.Close(ctx)
}

func loadError(name, format string, args ...any) error {
	return &scripthost.Error{
		Class:   scripthost.ClassLogic,
		Code:    scripthost.CodeInvalidWorkflow,
		File:    name,
		Message: fmt.Sprintf("wasm: load %s: ", name) + fmt.Sprintf(format, args...),
	}
}

// mergeLimits fills the zero fields of l from defaults, then from sandbox defaults.
func mergeLimits(l, defaults sandbox.Limits) sandbox.Limits {
	if l.Timeout == 0 {
		l.Timeout = defaults.Timeout
	}
	if l.MaxStackDepth == 0 {
		l.MaxStackDepth = defaults.MaxStackDepth
	}
	if l.MemoryBytes == 0 {
		l.MemoryBytes = defaults.MemoryBytes
	}
	if l.MaxOutputBytes == 0 {
		l.MaxOutputBytes = defaults.MaxOutputBytes
	}
	if l.MaxConsoleBytes == 0 {
		l.MaxConsoleBytes = defaults.MaxConsoleBytes
	}
	if l.MaxToolCalls == 0 {
		l.MaxToolCalls = defaults.MaxToolCalls
	}
	if l.RegexTimeout == 0 {
		l.RegexTimeout = defaults.RegexTimeout
	}
	if l.MaxMemoryPages == 0 {
		l.MaxMemoryPages = defaults.MaxMemoryPages
	}
	return l.WithDefaults()
}

// randSource returns the configured random source outside deterministic mode.
func (e *Engine) randSource() io.Reader {
	if e.opts.WASI.Rand != nil {
		return e.opts.WASI.Rand
	}
	return rand.Reader
}
