package wasm

import (
	"context"
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"

	"github.com/scripthost/scripthost/sandbox"
)

const opcodesWasm = "testdata/wat/opcodes.wasm"

// TestDecoderOpcodes runs a module using instructions of every immediate shape, once
// as the engine rewrites it and once unchanged on a plain wazero runtime: the results
// must be the same.
func TestDecoderOpcodes(t *testing.T) {
	code, err := os.ReadFile(opcodesWasm)
	if err != nil {
		t.Fatal(err)
	}
	p, err := newEngine(t, Options{NoDiskCache: true}).load(context.Background(), sandbox.Source{Name: "opcodes.wasm", Code: code})
	if err != nil {
		t.Fatal(err)
	}
	if !p.rewrite.grows {
		t.Error("the rewrite found no memory.grow")
	}
	res, err := p.Invoke(context.Background(), sandbox.Invocation{Function: "mix"})
	if err != nil {
		t.Fatal(err)
	}
	if want := bareReturnValue(t, code, "mix"); string(res.Value) != want {
		t.Errorf("rewritten module returned %s, unchanged module %s", res.Value, want)
	}
	_, err = p.Invoke(context.Background(), sandbox.Invocation{Function: "simdgrow"})
	if le := limitOf(err); le == nil || le.Limit != "memory" {
		t.Errorf("simdgrow: got %v, want a memory LimitError", err)
	}
}

// bareReturnValue runs export fn of code on a plain wazero runtime and returns what it
// passed to return_value.
func bareReturnValue(t *testing.T, code []byte, fn string) string {
	t.Helper()
	ctx := context.Background()
	r := wazero.NewRuntime(ctx)
	defer r.Close(ctx)
	var got string
	i32 := api.ValueTypeI32
	_, err := r.NewHostModuleBuilder(hostModule).
		NewFunctionBuilder().WithGoModuleFunction(api.GoModuleFunc(func(_ context.Context, m api.Module, s []uint64) {
		b, _ := m.Memory().Read(api.DecodeU32(s[0]), api.DecodeU32(s[1]))
		got = string(b)
	}), []api.ValueType{i32, i32}, nil).Export("return_value").
		Instantiate(ctx)
	if err != nil {
		t.Fatal(err)
	}
	mod, err := r.Instantiate(ctx, code)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := mod.ExportedFunction(fn).Call(ctx); err != nil {
		t.Fatal(err)
	}
	return got
}

// FuzzInstrument rewrites arbitrary bytes: instrument either refuses them with an
// error, or its output compiles whenever the input does, with the same exported
// functions (and the start section's, when it had one). (A refused input is not compiled: wazero allocates what a binary's counts
// say, gigabytes for some of these; instrument refuses those counts first.) That it
// refuses no valid module is checked on the committed modules: the seeds here and
// TestInstrumentGuests.
func FuzzInstrument(f *testing.F) {
	for _, path := range instrumentSeeds(f) {
		code, err := os.ReadFile(path)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(code)
	}
	ctx := context.Background()
	f.Fuzz(func(t *testing.T, code []byte) {
		out, info, err := instrument(code, defaultBudgets)
		if err != nil {
			return
		}
		// The interpreter validates a module as the compiler does, without
		// generating native code for every input.
		r := wazero.NewRuntimeWithConfig(ctx, wazero.NewRuntimeConfigInterpreter())
		defer r.Close(ctx)
		orig, err := r.CompileModule(ctx, code)
		if err != nil {
			return
		}
		defer orig.Close(ctx)
		rewritten, err := r.CompileModule(ctx, out)
		if err != nil {
			t.Fatalf("wazero compiles the module but not its rewrite: %v", err)
		}
		defer rewritten.Close(ctx)
		for name := range orig.ExportedFunctions() {
			if _, ok := rewritten.ExportedFunctions()[name]; !ok {
				t.Errorf("export %q lost", name)
			}
		}
		want := len(orig.ExportedFunctions())
		if info.start {
			want++ // the start section's function, exported as exportStartFn
			if _, ok := rewritten.ExportedFunctions()[exportStartFn]; !ok {
				t.Errorf("the start section's function is not exported as %q", exportStartFn)
			}
		}
		if len(rewritten.ExportedFunctions()) != want {
			t.Errorf("got %d exported functions, want %d", len(rewritten.ExportedFunctions()), want)
		}
	})
}

// TestInstrumentAcceptsSeeds: every committed WAT module that wazero compiles,
// instrument rewrites (bar the modules the host refuses on purpose).
func TestInstrumentAcceptsSeeds(t *testing.T) {
	ctx := context.Background()
	r := wazero.NewRuntimeWithConfig(ctx, wazero.NewRuntimeConfigInterpreter())
	defer r.Close(ctx)
	for _, path := range instrumentSeeds(t) {
		code, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := r.CompileModule(ctx, code); err != nil {
			continue
		}
		if _, _, err := instrument(code, defaultBudgets); err != nil && !errors.As(err, new(refusal)) {
			t.Errorf("%s: wazero compiles it, instrument refuses it: %v", path, err)
		}
	}
}

// instrumentSeeds are the committed WAT modules: the hostile corpus and the fixtures.
// The Rust and AssemblyScript guests are too large to seed a fuzzer (it reads a
// worker busy for seconds on one input as hung); TestInstrumentGuests covers them.
func instrumentSeeds(t testing.TB) []string {
	var paths []string
	for _, pattern := range []string{filepath.Join(hostileDir, "*.wasm"), "testdata/wat/*.wasm"} {
		m, err := filepath.Glob(pattern)
		if err != nil {
			t.Fatal(err)
		}
		paths = append(paths, m...)
	}
	return paths
}

// TestInstrumentGuests rewrites the modules built with each SDK: wazero compiles the
// result, and the rewrite found the allocators' memory.grow.
func TestInstrumentGuests(t *testing.T) {
	ctx := context.Background()
	r := wazero.NewRuntimeWithConfig(ctx, wazero.NewRuntimeConfigInterpreter())
	defer r.Close(ctx)
	for name, code := range map[string][]byte{
		"rust":           committedModule(t, rustConformance),
		"assemblyscript": committedModule(t, ascConformance),
		"go":             buildGuest(t, conformanceDir),
	} {
		t.Run(name, func(t *testing.T) {
			out, info, err := instrument(code, defaultBudgets)
			if err != nil {
				t.Fatal(err)
			}
			if !info.grows {
				t.Error("no memory.grow found")
			}
			m, err := r.CompileModule(ctx, out)
			if err != nil {
				t.Fatal(err)
			}
			m.Close(ctx)
		})
	}
}

// TestInstrumentAddsSections: the rewrite adds the sections it needs where a module has
// none (here no global and no export section; no code section), in the order the
// binary format requires.
func TestInstrumentAddsSections(t *testing.T) {
	ctx := context.Background()
	r := wazero.NewRuntimeWithConfig(ctx, wazero.NewRuntimeConfigInterpreter())
	defer r.Close(ctx)
	for name, hexCode := range map[string]string{
		// (module (memory 1) (func (drop (memory.grow (i32.const 1)))))
		"grow, no globals or exports": "0061736d010000000104016000000302010005030100010a09010700410140001a0b",
		// (module (memory 1) (global (mut i32) (i32.const 0)) (export "m" (memory 0)))
		"no code": "0061736d0100000005030100010606017f0141000b070501016d0200",
	} {
		t.Run(name, func(t *testing.T) {
			code, err := hex.DecodeString(hexCode)
			if err != nil {
				t.Fatal(err)
			}
			out, info, err := instrument(code, defaultBudgets)
			if err != nil {
				t.Fatal(err)
			}
			mod, err := r.InstantiateWithConfig(ctx, out, wazero.NewModuleConfig().WithName(""))
			if err != nil {
				t.Fatalf("rewritten module: %v", err)
			}
			defer mod.Close(ctx)
			for _, g := range info.mutableGlobals {
				if mod.ExportedGlobal(exportGlobal(g)) == nil {
					t.Errorf("global %d not exported", g)
				}
			}
			if (mod.ExportedGlobal(exportRefused) != nil) != info.grows {
				t.Errorf("%s exported: %v, want %v", exportRefused, !info.grows, info.grows)
			}
		})
	}
}
