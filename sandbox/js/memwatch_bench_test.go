package js_test

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"runtime/metrics"
	"runtime/trace"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/scripthost/scripthost"
	"github.com/scripthost/scripthost/internal/hostproc"
	"github.com/scripthost/scripthost/sandbox"
	"github.com/scripthost/scripthost/sandbox/js"
	"github.com/scripthost/scripthost/sandbox/sandboxtest"
)

// neighbourBudget is the memory budget the hostile scripts of the latency benchmark
// run under: the default.
const neighbourBudget = 64 << 20

// neighbourSources are the scripts the latency benchmark runs next to the
// well-behaved phase. "busy" only computes, for as long as a hostile run takes to be
// stopped: next to it the neighbour shares the CPU as it does with a hog, so the
// difference between the two is what memory pressure and its stopping cost.
var neighbourSources = []struct{ name, code string }{
	{"busy", `let n = 0; for (let i = 0; i < 3e6; i++) n = (n + i) % 1000003; return n`},
	{"string-doubling", `let s = 'x'; for (;;) s = s + s`},
	{"array-growth", `const a = []; for (let i = 0; ; i++) a.push(i, i + 0.5)`},
	{"object-graph", `let o = null; for (let i = 0; ; i++) o = { next: o, i, tag: 'n' + i }`},
	// One JSON.parse of 16 MB that would build about 4 GB of small arrays.
	{"json-parse-nesting", `return JSON.parse('[' + '[[[[]]]],'.repeat(1.8e6) + '[]]').length`},
	{"typed-arrays", `const a = []; for (;;) a.push(new Uint8Array(1 << 20).fill(1))`},
}

// BenchmarkNeighbourLatency runs a well-behaved phase over and over, alone and then
// next to scripts that are stopped over and over: one that only computes ("busy", the
// reference) and hostile ones that grow memory until the watcher or the string limit
// stops them. It reports the neighbour's p50 and p99 phase latency (ms) and, for the
// hostile ones, the p99 less the p99 next to "busy" (p99-delta-ms), which the memory
// budget is meant to keep under 100 ms; also the forced collections per second, and
// how many of the neighbour's phases the watcher stopped (neighbour-stopped).
func BenchmarkNeighbourLatency(b *testing.B) {
	eng := js.New(js.Options{})
	neighbour := load(b, eng, "neighbour.js", `export default { consumers: { c: { h(x) {
  let n = 0
  const seen = []
  for (let i = 0; i < 1000; i++) { n += String(i).length; if (i % 100 === 0) seen.push({ i }) }
  return { n, seen: seen.length, x }
} } } }`)
	// stopped counts the neighbour's phases the memory watcher stopped: its charge is
	// a share of the heap's growth while it ran (see memwatch.go), and a hog's growth
	// seen in one sample may, now and then, put a short phase's share over its budget
	// too. Each case reports how many (neighbour-stopped); any other error fails.
	var stopped int
	phase := func(b *testing.B) time.Duration {
		start := time.Now()
		// The region lets a trace (-trace) pick out the neighbour's slow phases.
		defer trace.StartRegion(context.Background(), "neighbour phase").End()
		_, err := neighbour.Invoke(context.Background(), sandbox.Invocation{Function: "consumers.c.h",
			Phase: scripthost.PhasePrepare, Tools: sandboxtest.NewTools()})
		var le *sandbox.LimitError
		switch {
		case errors.As(err, &le) && le.Limit == "memory":
			stopped++
		case err != nil:
			b.Fatalf("neighbour: %v", err)
		}
		return time.Since(start)
	}
	// The scripthost command runs with GOGC=400 (see cmd/scripthost): each case runs at
	// Go's default and at that.
	for _, gogc := range []int{100, 400} {
		b.Run(fmt.Sprintf("gogc=%d", gogc), func(b *testing.B) {
			defer debug.SetGCPercent(debug.SetGCPercent(gogc))
			neighbourCases(b, eng, phase, &stopped)
		})
	}
}

// neighbourCases runs the well-behaved phase alone and next to each script of
// neighbourSources.
func neighbourCases(b *testing.B, eng *js.Engine, phase func(*testing.B) time.Duration, neighbourStopped *int) {
	var busyP99 time.Duration
	b.Run("alone", func(b *testing.B) {
		lat := make([]time.Duration, 0, b.N)
		for b.Loop() {
			lat = append(lat, phase(b))
		}
		reportLatency(b, lat)
	})
	for _, src := range neighbourSources {
		hog := load(b, eng, src.name+".js", `export default { consumers: { c: { h() { `+src.code+` } } } }`)
		b.Run(src.name, func(b *testing.B) {
			stop := make(chan struct{})
			var wg sync.WaitGroup
			stopped := 0
			wg.Go(func() {
				for {
					select {
					case <-stop:
						return
					default:
					}
					_, err := hog.Invoke(context.Background(), sandbox.Invocation{Function: "consumers.c.h",
						Phase: scripthost.PhasePrepare, Tools: sandboxtest.NewTools(),
						Limits: sandbox.Limits{Timeout: farTimeout, MemoryBytes: neighbourBudget}})
					var le *sandbox.LimitError
					if src.name != "busy" && (!errors.As(err, &le) || le.Limit != "memory") {
						b.Errorf("%s: got %v, want a memory LimitError", src.name, err)
						return
					}
					stopped++
				}
			})
			peakReset := hostproc.ResetPeak()
			before := gcStats()
			*neighbourStopped = 0
			start := time.Now()
			lat := make([]time.Duration, 0, b.N)
			for b.Loop() {
				lat = append(lat, phase(b))
			}
			elapsed := time.Since(start)
			gc := gcStats().sub(before)
			close(stop)
			wg.Wait()
			p99 := reportLatency(b, lat)
			if src.name == "busy" {
				busyP99 = p99
			} else if busyP99 > 0 {
				b.ReportMetric(float64(p99-busyP99)/1e6, "p99-delta-ms")
			}
			b.ReportMetric(float64(gc.forced)/elapsed.Seconds(), "forced-gc/s")
			b.ReportMetric(float64(gc.cycles)/elapsed.Seconds(), "gc/s")
			b.ReportMetric(gc.assist/elapsed.Seconds(), "assist-cpu-s/s")
			b.ReportMetric(gc.gc/elapsed.Seconds(), "gc-cpu-s/s")
			b.ReportMetric(float64(stopped)/elapsed.Seconds(), "hog-runs/s")
			b.ReportMetric(float64(*neighbourStopped), "neighbour-stopped")
			if _, peak, ok := hostproc.Memory(); ok && peakReset {
				// The process's peak while the hog ran, next to the hog's budget.
				b.ReportMetric(float64(peak)/(1<<20), "peak-rss-MiB")
				b.ReportMetric(float64(neighbourBudget)/(1<<20), "budget-MiB")
			}
		})
	}
}

// reportLatency reports the p50 and p99 of lat in milliseconds and returns the p99.
func reportLatency(b *testing.B, lat []time.Duration) time.Duration {
	if len(lat) == 0 {
		return 0
	}
	slices.Sort(lat)
	p := func(q float64) time.Duration { return lat[min(len(lat)-1, int(q*float64(len(lat))))] }
	b.ReportMetric(float64(p(0.5))/1e6, "p50-ms")
	b.ReportMetric(float64(p(0.99))/1e6, "p99-ms")
	b.ReportMetric(0, "ns/op")
	return p(0.99)
}

// gcCounters are cumulative garbage collector counters of the process.
type gcCounters struct {
	forced, cycles uint64
	assist, gc     float64 // CPU seconds
}

func gcStats() gcCounters {
	s := []metrics.Sample{{Name: "/gc/cycles/forced:gc-cycles"}, {Name: "/gc/cycles/total:gc-cycles"},
		{Name: "/cpu/classes/gc/mark/assist:cpu-seconds"}, {Name: "/cpu/classes/gc/total:cpu-seconds"}}
	metrics.Read(s)
	return gcCounters{s[0].Value.Uint64(), s[1].Value.Uint64(), s[2].Value.Float64(), s[3].Value.Float64()}
}

func (c gcCounters) sub(d gcCounters) gcCounters {
	return gcCounters{c.forced - d.forced, c.cycles - d.cycles, c.assist - d.assist, c.gc - d.gc}
}
