package wasm

import (
	"context"
	"encoding/json"
	"os"
	"testing"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/imports/wasi_snapshot_preview1"

	"github.com/scripthost/scripthost/internal/benchcmp"
	"github.com/scripthost/scripthost/sandbox"
)

const benchWasm = "testdata/wat/bench.wasm"

func benchProgram(b *testing.B) *Program {
	b.Helper()
	code, err := os.ReadFile(benchWasm)
	if err != nil {
		b.Fatal(err)
	}
	e := newEngine(b, Options{})
	p, err := e.load(context.Background(), sandbox.Source{Name: "bench.wasm", Code: code})
	if err != nil {
		b.Fatal(err)
	}
	return p
}

// bare is the same module on a plain wazero runtime whose "scripthost" functions do
// nothing but touch the guest memory they are given: the floor the engine is compared
// with.
type bare struct {
	r        wazero.Runtime
	compiled wazero.CompiledModule
}

func newBare(b testing.TB) *bare {
	ctx := context.Background()
	code, err := os.ReadFile(benchWasm)
	if err != nil {
		b.Fatal(err)
	}
	r := wazero.NewRuntimeWithConfig(ctx, wazero.NewRuntimeConfig().WithCloseOnContextDone(true))
	b.Cleanup(func() { r.Close(ctx) })
	wasi_snapshot_preview1.MustInstantiate(ctx, r)
	out := []byte("{}")
	state := []byte(`{"k":"v"}`)
	i32 := api.ValueTypeI32
	_, err = r.NewHostModuleBuilder("scripthost").
		NewFunctionBuilder().WithGoModuleFunction(api.GoModuleFunc(func(_ context.Context, m api.Module, s []uint64) {
		m.Memory().Read(api.DecodeU32(s[0]), api.DecodeU32(s[1]))
	}), []api.ValueType{i32, i32}, nil).Export("return_value").
		NewFunctionBuilder().WithGoModuleFunction(api.GoModuleFunc(func(_ context.Context, _ api.Module, s []uint64) {
		s[0] = uint64(len(state))
	}), []api.ValueType{i32}, []api.ValueType{i32}).Export("input_len").
		NewFunctionBuilder().WithGoModuleFunction(api.GoModuleFunc(func(_ context.Context, m api.Module, s []uint64) {
		m.Memory().Write(api.DecodeU32(s[1]), state)
		s[0] = uint64(len(state))
	}), []api.ValueType{i32, i32, i32}, []api.ValueType{i32}).Export("input_read").
		NewFunctionBuilder().WithGoModuleFunction(api.GoModuleFunc(func(_ context.Context, m api.Module, s []uint64) {
		m.Memory().Read(api.DecodeU32(s[0]), api.DecodeU32(s[1]))
		m.Memory().Read(api.DecodeU32(s[2]), api.DecodeU32(s[3]))
		s[0] = 0
	}), []api.ValueType{i32, i32, i32, i32}, []api.ValueType{i32}).Export("tool_call").
		NewFunctionBuilder().WithGoModuleFunction(api.GoModuleFunc(func(_ context.Context, m api.Module, s []uint64) {
		m.Memory().Write(api.DecodeU32(s[0]), out)
		s[0] = uint64(len(out))
	}), []api.ValueType{i32, i32}, []api.ValueType{i32}).Export("result_read").
		NewFunctionBuilder().WithGoModuleFunction(api.GoModuleFunc(func(_ context.Context, _ api.Module, s []uint64) {
		s[0] = uint64(len(out))
	}), nil, []api.ValueType{i32}).Export("result_len").
		Instantiate(ctx)
	if err != nil {
		b.Fatal(err)
	}
	compiled, err := r.CompileModule(ctx, code)
	if err != nil {
		b.Fatal(err)
	}
	return &bare{r: r, compiled: compiled}
}

// call instantiates the module, calls fn and closes the instance: what one phase costs
// on bare wazero.
func (bb *bare) call(b testing.TB, fn string) {
	ctx := context.Background()
	mod, err := bb.r.InstantiateModule(ctx, bb.compiled, wazero.NewModuleConfig().WithName("").WithStartFunctions())
	if err != nil {
		b.Fatal(err)
	}
	if _, err := mod.ExportedFunction(fn).Call(ctx); err != nil {
		b.Fatal(err)
	}
	mod.Close(ctx)
}

// echoTools offers Echo.say, which returns its input, and nothing else.
type echoTools struct{}

func (echoTools) List() []sandbox.ToolName {
	return []sandbox.ToolName{{Namespace: "Echo", Method: "say"}}
}
func (echoTools) Call(_ context.Context, _, _ string, in json.RawMessage) (json.RawMessage, error) {
	return in, nil
}

// compare runs fn on bare wazero, then inv on the engine, in one run, and reports the
// engine's time per unit as a multiple of bare wazero's (x_ref). perOp is the units one
// iteration does (1000 for a handler making 1000 calls).
func compare(b *testing.B, fn string, inv sandbox.Invocation, perOp float64, unit benchcmp.Unit) {
	ref := func(b *testing.B) {
		bb := newBare(b)
		for b.Loop() {
			bb.call(b, fn)
		}
	}
	subject := func(b *testing.B) {
		p := benchProgram(b)
		inv.Function = fn
		for b.Loop() {
			if _, err := p.Invoke(context.Background(), inv); err != nil {
				b.Fatal(err)
			}
		}
	}
	benchcmp.Against(b, unit, benchcmp.Case{Run: ref, Per: perOp}, benchcmp.Case{Run: subject, Per: perOp})
}

// BenchmarkToolCall: one invocation of "calls" makes 1000 tool calls (Echo.say, then
// result_read); ns/toolcall is per call, against no-op host functions on bare wazero.
func BenchmarkToolCall(b *testing.B) {
	compare(b, "calls", sandbox.Invocation{Tools: echoTools{}, Limits: sandbox.Limits{MaxToolCalls: 1000}}, 1000, "toolcall")
}

// BenchmarkPhaseToolCall: one phase that makes one tool call and returns its result, in
// a fresh instance, against instantiate + call + close on bare wazero.
func BenchmarkPhaseToolCall(b *testing.B) {
	compare(b, "one", sandbox.Invocation{Tools: echoTools{}}, 1, "phase")
}

// BenchmarkPhase: one phase that reads __state__ and returns it, in a fresh instance,
// against instantiate + call + close on bare wazero.
func BenchmarkPhase(b *testing.B) {
	compare(b, "echo", sandbox.Invocation{Globals: sandbox.Globals{State: json.RawMessage(`{"k":"v"}`)}}, 1, "phase")
}

// BenchmarkCompute: fib(25) by plain recursion, about 243,000 guest calls, each of
// which passes the engine's termination check (see instrument).
func BenchmarkCompute(b *testing.B) {
	compare(b, "fib", sandbox.Invocation{}, 1, "phase")
}

// BenchmarkGoGuestLoad: loading a Go-built guest (about 3.5 MB) with an empty cache
// (compile) and from the disk cache written by another engine (a process restart).
func BenchmarkGoGuestLoad(b *testing.B) {
	code := buildGuest(b, conformanceDir)
	src := sandbox.Source{Name: "conformance.wasm", Code: code}
	ctx := context.Background()
	loadWith := func(b *testing.B, opts Options) {
		e, err := New(ctx, opts)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := e.Load(ctx, src); err != nil {
			b.Fatal(err)
		}
		e.Close(ctx)
	}
	b.Run("compile", func(b *testing.B) {
		for b.Loop() {
			loadWith(b, Options{NoDiskCache: true})
		}
	})
	b.Run("cached", func(b *testing.B) {
		dir := b.TempDir()
		loadWith(b, Options{CacheDir: dir})
		b.ResetTimer()
		for b.Loop() {
			loadWith(b, Options{CacheDir: dir})
		}
	})
}

// BenchmarkGoGuestPhase: one phase of a Go-built guest: a fresh instance, the Go
// runtime's _initialize, and a handler returning a number.
func BenchmarkGoGuestPhase(b *testing.B) {
	p := conformance(b)
	inv := sandbox.Invocation{Function: "fresh_instance"}
	for b.Loop() {
		if _, err := p.Invoke(context.Background(), inv); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkWarmGoGuestPhase: BenchmarkGoGuestPhase with every invocation in a new
// instance (Options.FreshInstances: "ref", the engine before instances were reused)
// and with the default reuse ("scripthost"), in one run.
func BenchmarkWarmGoGuestPhase(b *testing.B) {
	warmAgainstFresh(b, buildGuest(b, conformanceDir), sandbox.Invocation{Function: "fresh_instance"})
}

// BenchmarkWarmPhaseToolCall: BenchmarkPhaseToolCall's WAT phase in a new instance
// every time ("ref") and reusing instances ("scripthost"), in one run.
func BenchmarkWarmPhaseToolCall(b *testing.B) {
	code, err := os.ReadFile(benchWasm)
	if err != nil {
		b.Fatal(err)
	}
	warmAgainstFresh(b, code, sandbox.Invocation{Function: "one", Tools: echoTools{}})
}

func warmAgainstFresh(b *testing.B, code []byte, inv sandbox.Invocation) {
	run := func(fresh bool) func(b *testing.B) {
		return func(b *testing.B) {
			p, err := newEngine(b, Options{CacheDir: sharedCacheDir(), FreshInstances: fresh}).load(context.Background(),
				sandbox.Source{Name: "guest.wasm", Code: code})
			if err != nil {
				b.Fatal(err)
			}
			b.ResetTimer()
			for b.Loop() {
				if _, err := p.Invoke(context.Background(), inv); err != nil {
					b.Fatal(err)
				}
			}
		}
	}
	benchcmp.Against(b, "phase", benchcmp.Case{Run: run(true)}, benchcmp.Case{Run: run(false)})
}

// BenchmarkRustGuestPhaseToolCall: one phase that makes one tool call (Echo.say) and
// returns its result, in a fresh instance, for the handler built with the Rust SDK
// ("scripthost") next to the same handler written in WAT ("ref"), in one run.
func BenchmarkRustGuestPhaseToolCall(b *testing.B) {
	guestAgainstWAT(b, committedModule(b, rustConformance))
}

// BenchmarkAssemblyScriptGuestPhaseToolCall: as BenchmarkRustGuestPhaseToolCall, for
// the handler built with the AssemblyScript SDK.
func BenchmarkAssemblyScriptGuestPhaseToolCall(b *testing.B) {
	guestAgainstWAT(b, committedModule(b, ascConformance))
}

// BenchmarkGoGuestPhaseToolCall: as BenchmarkRustGuestPhaseToolCall, for the handler
// built with the Go SDK.
func BenchmarkGoGuestPhaseToolCall(b *testing.B) {
	guestAgainstWAT(b, buildGuest(b, conformanceDir))
}

// guestAgainstWAT invokes call_tool of the WAT bench guest ("ref"), then of guest
// ("scripthost"), and reports the guest's time per phase as a multiple of WAT's (x_ref)
// and its module size.
func guestAgainstWAT(b *testing.B, guest []byte) {
	wat, err := os.ReadFile(benchWasm)
	if err != nil {
		b.Fatal(err)
	}
	var refNs float64
	for _, side := range []struct {
		name string
		code []byte
	}{{"ref", wat}, {"scripthost", guest}} {
		b.Run(side.name, func(b *testing.B) {
			p, err := newEngine(b, Options{}).load(context.Background(), sandbox.Source{Name: side.name + ".wasm", Code: side.code})
			if err != nil {
				b.Fatal(err)
			}
			inv := sandbox.Invocation{Function: "call_tool", Tools: echoTools{}}
			b.ResetTimer()
			for b.Loop() {
				res, err := p.Invoke(context.Background(), inv)
				if err != nil {
					b.Fatal(err)
				}
				if string(res.Value) != `{"text":"hi"}` {
					b.Fatalf("got %s", res.Value)
				}
			}
			ns := float64(b.Elapsed().Nanoseconds()) / float64(b.N)
			b.ReportMetric(ns, "ns/phase")
			b.ReportMetric(float64(len(side.code)), "module_bytes")
			if side.name == "ref" {
				refNs = ns
			} else if refNs > 0 {
				b.ReportMetric(ns/refNs, "x_ref")
			}
		})
	}
}

// BenchmarkResetLargeMemory: a phase of a guest with a 16 MiB memory that writes 8 of
// its pages, in a reused instance whose memory is copied back whole at reset ("ref")
// and whose written pages only are ("scripthost", where the kernel tracks them), in one
// run.
func BenchmarkResetLargeMemory(b *testing.B) {
	code, err := os.ReadFile("testdata/wat/bigmem.wasm")
	if err != nil {
		b.Fatal(err)
	}
	if tr, err := tracker(); tr == nil {
		b.Skipf("no written-page tracking here: %v", err)
	}
	run := func(trackMin int) func(b *testing.B) {
		return func(b *testing.B) {
			e := newEngine(b, Options{})
			e.trackMin = trackMin
			p, err := e.load(context.Background(), sandbox.Source{Name: "bigmem.wasm", Code: code})
			if err != nil {
				b.Fatal(err)
			}
			inv := sandbox.Invocation{Function: "touch"}
			b.ResetTimer()
			for b.Loop() {
				if _, err := p.Invoke(context.Background(), inv); err != nil {
					b.Fatal(err)
				}
			}
		}
	}
	benchcmp.Against(b, "phase", benchcmp.Case{Run: run(-1)}, benchcmp.Case{Run: run(trackMinBytes)})
}
