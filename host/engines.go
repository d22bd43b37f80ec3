package host

import (
	"context"
	"fmt"
	"sync"

	"github.com/scripthost/scripthost/sandbox"
	"github.com/scripthost/scripthost/sandbox/js"
	"github.com/scripthost/scripthost/sandbox/wasm"
)

// EngineOptions configure NewEngines. The zero value gives the engines a Host runs
// workflows with.
type EngineOptions struct {
	// WasmCacheDir holds compiled Wasm modules; empty uses the user cache directory.
	WasmCacheDir string
	// FakeClock gives Wasm guests wazero's fake clocks and a sleep that returns at
	// once instead of the host's clocks, for callers that never wait on real time
	// (fixtures, validation). Deterministic invocations fix the clocks either way.
	FakeClock bool
}

// Engines are the script engines, one per language: the JavaScript engine runs "js"
// and "ts" workflows, the WebAssembly engine "wasm" ones. This is the one place the
// concrete engines are chosen; everything that loads a workflow (a Host, the
// fixture runner, validation, benchmarks) takes them from here. The Wasm engine is
// built on its first request and kept. Engines are safe for concurrent use.
type Engines struct {
	opts EngineOptions
	js   *js.Engine

	mu   sync.Mutex
	wasm *wasm.Engine
}

// NewEngines returns the engines; call Close to release them.
func NewEngines(opts EngineOptions) *Engines {
	return &Engines{opts: opts, js: js.New(js.Options{})}
}

// For returns the engines of the languages named ("js", "ts", "wasm", as
// runtime.Language names them), keyed by language as runtime.Config.Engines takes
// them.
func (e *Engines) For(ctx context.Context, langs ...string) (map[string]sandbox.Engine, error) {
	m := make(map[string]sandbox.Engine, len(langs))
	for _, lang := range langs {
		switch lang {
		case "js", "ts":
			m[lang] = e.js
		case "wasm":
			we, err := e.wasmEngine(ctx)
			if err != nil {
				return nil, err
			}
			m[lang] = we
		default:
			return nil, fmt.Errorf("host: no engine for language %q", lang)
		}
	}
	return m, nil
}

// wasmEngine is the Wasm engine, built at the first call.
func (e *Engines) wasmEngine(ctx context.Context) (*wasm.Engine, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.wasm == nil {
		we, err := wasm.New(ctx, wasm.Options{CacheDir: e.opts.WasmCacheDir,
			WASI: wasm.WASIConfig{RealClock: !e.opts.FakeClock}})
		if err != nil {
			return nil, fmt.Errorf("host: wasm engine: %w", err)
		}
		e.wasm = we
	}
	return e.wasm, nil
}

// Close releases the Wasm engine and every program loaded from it. A later For
// builds a new one.
func (e *Engines) Close(ctx context.Context) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.wasm == nil {
		return nil
	}
	err := e.wasm.Close(ctx)
	e.wasm = nil
	return err
}
