package wasm

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/scripthost/scripthost/internal/hostproc"
	"github.com/scripthost/scripthost/sandbox"
)

// BenchmarkNeighbourLatency runs a well-behaved phase (good.wasm's echo) over and
// over, alone and next to a hog run over and over: one that only computes until its
// timeout stops it ("busy", the reference), and hostile ones the budgets stop or
// refuse: a memory.grow bomb, a table grown to its cap and filled (2*10^8 elements
// asked), the Loads of a module of 100,000 nested blocks and of one of 100,003
// functions (refused by the pre-scan), and the Load of a module the pre-scan admits
// whose compilation outlasts the compile timeout (half a second). It reports the
// neighbour's p50 and p99 phase latency (ms), the p99 less the p99 next to "busy"
// (p99-delta-ms), the hog's runs per second, and the process's peak resident memory
// during the case (peak-rss-MiB, from VmHWM, reset before each case where Linux
// allows it) beside the hog's memory budget (budget-MiB, the default cap of 64 MiB;
// the tables are counted in it).
func BenchmarkNeighbourLatency(b *testing.B) {
	e := newEngine(b, Options{NoDiskCache: true})
	slowEng := newEngine(b, Options{NoDiskCache: true, Compile: CompileLimits{Timeout: 500 * time.Millisecond}})
	good := load(b, e, "good.wasm")
	loop := load(b, e, "loop.wasm")
	grow := load(b, e, "grow.wasm")
	tableHog := genGuest(genTableHog())
	tableHog.tables = append(tableHog.tables, genTable(refFunc, 0, 0, false))
	table, err := e.load(context.Background(), sandbox.Source{Name: "tablehog.wasm", Code: tableHog.bytes()})
	if err != nil {
		b.Fatal(err)
	}
	defer table.Close(context.Background())
	nested := sandbox.Source{Name: "nested.wasm", Code: genGuest(genNested(100_000)).bytes()}
	manyFuncs := genGuest(nil)
	for range defaultMaxFunctions {
		manyFuncs.addFunc(0, "", []byte{0x00, 0x0b})
	}
	funcs := sandbox.Source{Name: "funcs.wasm", Code: manyFuncs.bytes()}
	slow := sandbox.Source{Name: "slow.wasm", Code: slowCompile()}

	invoke := func(p *Program, fn string, lim sandbox.Limits) func() error {
		return func() error {
			_, err := p.Invoke(context.Background(), sandbox.Invocation{Function: fn, Limits: lim})
			return err
		}
	}
	loadOf := func(e *Engine, srcs ...sandbox.Source) func() error {
		return func() error {
			for _, src := range srcs {
				p, err := e.Load(context.Background(), src)
				if err == nil {
					p.Close(context.Background())
					return nil
				}
			}
			return errStopped
		}
	}
	hogs := []struct {
		name string
		run  func() error // returns nil when the hog was not stopped
	}{
		{"busy", invoke(loop, "spin", sandbox.Limits{Timeout: 200 * time.Millisecond})},
		{"memory-growth", invoke(grow, "bomb", sandbox.Limits{})},
		{"table-growth", invoke(table, "run", sandbox.Limits{})},
		{"huge-module", loadOf(e, nested, funcs)},
		{"slow-compile", loadOf(slowEng, slow)},
	}

	phase := func(b *testing.B) time.Duration {
		start := time.Now()
		res, err := good.Invoke(context.Background(), sandbox.Invocation{Function: "echo",
			Globals: sandbox.Globals{State: json.RawMessage(`[1]`)}})
		if err != nil || string(res.Value) != "[1]" {
			b.Fatalf("neighbour: got %s, %v; want [1]", res.Value, err)
		}
		return time.Since(start)
	}
	var busyP99 time.Duration
	b.Run("alone", func(b *testing.B) {
		hostproc.ResetPeak()
		lat := make([]time.Duration, 0, b.N)
		for b.Loop() {
			lat = append(lat, phase(b))
		}
		reportNeighbour(b, lat)
	})
	for _, hog := range hogs {
		b.Run(hog.name, func(b *testing.B) {
			hostproc.ResetPeak()
			stop := make(chan struct{})
			var wg sync.WaitGroup
			runs := 0
			wg.Go(func() {
				for {
					select {
					case <-stop:
						return
					default:
					}
					if err := hog.run(); err == nil {
						b.Errorf("%s: ended without being stopped or refused", hog.name)
						return
					}
					runs++
				}
			})
			start := time.Now()
			lat := make([]time.Duration, 0, b.N)
			for b.Loop() {
				lat = append(lat, phase(b))
			}
			elapsed := time.Since(start)
			close(stop)
			wg.Wait()
			p99 := reportNeighbour(b, lat)
			if hog.name == "busy" {
				busyP99 = p99
			} else if busyP99 > 0 {
				b.ReportMetric(float64(p99-busyP99)/1e6, "p99-delta-ms")
			}
			b.ReportMetric(float64(runs)/elapsed.Seconds(), "hog-runs/s")
			b.ReportMetric(float64(sandbox.DefaultLimits.MaxMemoryPages)/16, "budget-MiB")
		})
	}
}

// errStopped is a hog's Loads all refused.
var errStopped = errors.New("refused")

// genTableHog is a body that grows table 0 by 2*10^8 elements (refused), then by
// 1,000 at a time until table.grow fails, fills the table, and traps.
func genTableHog() []byte {
	b := []byte{0x00, 0xd0, refFunc, 0x41}
	b = appendS32(b, 200_000_000)
	b = append(b, prefixMisc, miscTableGrow, 0x00, 0x1a) // table.grow; drop
	// loop: br_if 0 (table.grow(ref.null, 1000) != -1)
	b = append(b, opLoop, 0x40, 0xd0, refFunc, 0x41)
	b = appendS32(b, 1000)
	b = append(b, prefixMisc, miscTableGrow, 0x00, 0x41, 0x7f, 0x47, 0x0d, 0x00, 0x0b)
	// table.fill(0, ref.null, table.size)
	b = append(b, 0x41, 0x00, 0xd0, refFunc, prefixMisc, 16, 0x00, prefixMisc, miscTableFill, 0x00)
	return append(b, 0x00, 0x0b) // unreachable; end
}

// reportNeighbour reports the p50 and p99 of lat in milliseconds and the process's
// peak resident memory, and returns the p99.
func reportNeighbour(b *testing.B, lat []time.Duration) time.Duration {
	if len(lat) == 0 {
		return 0
	}
	slices.Sort(lat)
	p := func(q float64) time.Duration { return lat[min(len(lat)-1, int(q*float64(len(lat))))] }
	b.ReportMetric(float64(p(0.5))/1e6, "p50-ms")
	b.ReportMetric(float64(p(0.99))/1e6, "p99-ms")
	if _, peak, ok := hostproc.Memory(); ok {
		b.ReportMetric(float64(peak)/(1<<20), "peak-rss-MiB")
	}
	b.ReportMetric(0, "ns/op")
	return p(0.99)
}
