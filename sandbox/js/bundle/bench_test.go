package bundle_test

import (
	"context"
	"os"
	"testing"

	"github.com/scripthost/scripthost"
	"github.com/scripthost/scripthost/internal/benchcmp"
	"github.com/scripthost/scripthost/sandbox"
	"github.com/scripthost/scripthost/sandbox/js"
	"github.com/scripthost/scripthost/sandbox/js/bundle"
	"github.com/scripthost/scripthost/sandbox/sandboxtest"
)

const (
	benchProject = "testdata/project/workflow.ts"
	benchESM     = "testdata/project/esm.ts"
	benchSingle  = "testdata/single/workflow.ts"
)

// loadEach loads code in a fresh engine per iteration (an engine caches what it
// compiled), after build turns the entry into code.
func loadEach(build func(b *testing.B) []byte) func(b *testing.B) {
	return func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			code := build(b)
			p, err := js.New(js.Options{}).Load(context.Background(), sandbox.Source{Name: "workflow.ts", Code: code})
			if err != nil {
				b.Fatal(err)
			}
			_ = p.Close(context.Background())
		}
	}
}

// BenchmarkBundleLoad: loading the project of seven files (bundling it, then
// compiling and evaluating the bundle), against loading the same code written as one
// file (compiling and evaluating it, as a single-file workflow has always been).
func BenchmarkBundleLoad(b *testing.B) {
	single, err := os.ReadFile(benchSingle)
	if err != nil {
		b.Fatal(err)
	}
	ref := loadEach(func(*testing.B) []byte { return single })
	subject := loadEach(func(b *testing.B) []byte {
		r, err := bundle.Build(benchProject, nil)
		if err != nil {
			b.Fatal(err)
		}
		return r.Code
	})
	benchcmp.Against(b, "load", benchcmp.Case{Run: ref}, benchcmp.Case{Run: subject})
}

// BenchmarkBundledPhase: one prepare phase of the bundled project, against the same
// phase of the project written as one file: with its CommonJS package (the module
// wrappers and the interop helpers run when the module is evaluated, in every fresh
// runtime) and with ES modules alone.
func BenchmarkBundledPhase(b *testing.B) {
	single, err := os.ReadFile(benchSingle)
	if err != nil {
		b.Fatal(err)
	}
	eng := js.New(js.Options{})
	phase := func(b *testing.B, code []byte) func(b *testing.B) {
		p, err := eng.Load(context.Background(), sandbox.Source{Name: "workflow.ts", Code: code})
		if err != nil {
			b.Fatal(err)
		}
		inv := sandbox.Invocation{Function: "consumers.price.prepare", Phase: scripthost.PhasePrepare, Tools: sandboxtest.NewTools()}
		return func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := p.Invoke(context.Background(), inv); err != nil {
					b.Fatal(err)
				}
			}
		}
	}
	for _, entry := range []struct{ name, path string }{{"cjs", benchProject}, {"esm", benchESM}} {
		b.Run(entry.name, func(b *testing.B) {
			r, err := bundle.Build(entry.path, nil)
			if err != nil {
				b.Fatal(err)
			}
			benchcmp.Against(b, "phase", benchcmp.Case{Run: phase(b, single)}, benchcmp.Case{Run: phase(b, r.Code)})
		})
	}
}
