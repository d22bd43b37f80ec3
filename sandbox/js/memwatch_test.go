package js_test

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"runtime/metrics"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/scripthost/scripthost"
	"github.com/scripthost/scripthost/sandbox"
	"github.com/scripthost/scripthost/sandbox/js"
	"github.com/scripthost/scripthost/sandbox/sandboxtest"
)

// TestStringDoublingBounded: a script that doubles a string until it is stopped, with
// a 64 MiB budget, is stopped with a memory limit error before the heap has grown by
// twice the budget, in each of ten runs, whether it keeps every string or drops them,
// in ASCII or not. The peak is the Go heap's allocated objects (live or garbage not
// yet swept) sampled while it runs, less what they were before. A well-behaved
// workflow runs next to it all along; its slowest phase is logged, not asserted, next
// to its slowest beside a script that only computes.
func TestStringDoublingBounded(t *testing.T) {
	const budget = 64 << 20
	eng := js.New(js.Options{})
	neighbour := load(t, eng, "neighbour.js", `export default { consumers: { c: { h() {
  let n = 0
  for (let i = 0; i < 1000; i++) n += String(i).length
  return n
} } } }`)
	phase := func() time.Duration {
		start := time.Now()
		if _, err := neighbour.Invoke(context.Background(), sandbox.Invocation{Function: "consumers.c.h",
			Phase: scripthost.PhasePrepare, Tools: sandboxtest.NewTools()}); err != nil {
			t.Errorf("neighbour: %v", err)
		}
		return time.Since(start)
	}
	// Normal is next to a script that only computes, for as long as a hostile run, so
	// that the comparison is of memory pressure, not of sharing the CPU.
	busy := load(t, eng, "busy.js", `export default { consumers: { c: { h() {
  let n = 0
  for (let i = 0; i < 1e6; i++) n = (n + i) % 1000003
  return n
} } } }`)
	var normal time.Duration
	{
		done := make(chan struct{})
		go func() {
			defer close(done)
			if _, err := busy.Invoke(context.Background(), sandbox.Invocation{Function: "consumers.c.h",
				Phase: scripthost.PhasePrepare, Tools: sandboxtest.NewTools(), Limits: sandbox.Limits{Timeout: farTimeout}}); err != nil {
				t.Errorf("busy: %v", err)
			}
		}()
		for running := true; running; {
			select {
			case <-done:
				running = false
			default:
				normal = max(normal, phase())
			}
		}
	}
	for _, tt := range []struct{ name, seed, body string }{
		{"ascii", "'x'", "s = s + s"},
		{"ascii kept", "'x'", "s = s + s; keep.push(s)"},
		{"template", "'x'", "s = `${s}${s}`"},
		{"utf16", "'\u00e9\u4e2d'", "s = s + s"},
		{"utf16 kept", "'\u00e9\u4e2d'", "s = s + s; keep.push(s)"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			p := load(t, eng, "double.js", fmt.Sprintf(`export default { consumers: { c: { h() {
  let s = %s
  const keep = []
  for (;;) { %s }
} } } }`, tt.seed, tt.body))
			var worst int64
			var slowest time.Duration
			for run := range 10 {
				runtime.GC()
				base := heapObjects()
				stop := make(chan struct{})
				var wg sync.WaitGroup
				var peak int64
				wg.Go(func() {
					for {
						peak = max(peak, heapObjects())
						select {
						case <-stop:
							return
						default:
							time.Sleep(100 * time.Microsecond)
						}
					}
				})
				wg.Go(func() {
					for {
						select {
						case <-stop:
							return
						default:
							slowest = max(slowest, phase())
						}
					}
				})
				_, err := p.Invoke(context.Background(), sandbox.Invocation{Function: "consumers.c.h",
					Phase: scripthost.PhasePrepare, Tools: sandboxtest.NewTools(),
					Limits: sandbox.Limits{Timeout: farTimeout, MemoryBytes: budget}})
				close(stop)
				wg.Wait()
				var le *sandbox.LimitError
				if !errors.As(err, &le) || le.Limit != "memory" {
					t.Fatalf("run %d: got %v, want a memory LimitError", run, err)
				}
				grew := peak - base
				worst = max(worst, grew)
				if grew > 2*budget {
					t.Errorf("run %d: the heap grew by %d MiB, want at most %d MiB (twice the budget): %v", run, grew>>20, 2*budget>>20, err)
				}
			}
			t.Logf("largest heap growth over 10 runs: %d MiB (budget %d MiB); neighbour's slowest phase %v (next to a script that only computes: %v)",
				worst>>20, budget>>20, slowest.Round(time.Millisecond), normal.Round(time.Millisecond))
		})
	}
}

// TestStringLimitIsCatchable: a refused concatenation ends the invocation with a
// memory limit error that names the length, even when the script catches the
// RangeError the engine throws.
func TestStringLimitIsCatchable(t *testing.T) {
	p := load(t, js.New(js.Options{}), "catch.js", `export default { consumers: { c: { h() {
  let s = 'x'.repeat(1 << 20)
  try { s = s + s + s } catch (e) { return 'caught: ' + e }
  return 'kept going'
} } } }`)
	_, err := p.Invoke(context.Background(), sandbox.Invocation{Function: "consumers.c.h",
		Phase: scripthost.PhasePrepare, Tools: sandboxtest.NewTools(),
		Limits: sandbox.Limits{Timeout: farTimeout, MemoryBytes: 8 << 20}})
	var le *sandbox.LimitError
	if !errors.As(err, &le) || le.Limit != "memory" || !strings.Contains(err.Error(), "a string of 3145728 characters exceeds the memory budget of 8 MiB") {
		t.Fatalf("got %v, want a memory LimitError for a string of 3145728 characters", err)
	}
}

func heapObjects() int64 {
	s := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	metrics.Read(s)
	return int64(s[0].Value.Uint64())
}
