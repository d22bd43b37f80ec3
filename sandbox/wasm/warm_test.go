package wasm

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/scripthost/scripthost/sandbox"
)

func loadWAT(t testing.TB, e *Engine, name string) *Program {
	t.Helper()
	code, err := os.ReadFile("testdata/wat/" + name)
	if err != nil {
		t.Fatal(err)
	}
	p, err := e.load(context.Background(), sandbox.Source{Name: name, Code: code})
	if err != nil {
		t.Fatalf("Load %s: %v", name, err)
	}
	t.Cleanup(func() { _ = p.Close(context.Background()) })
	return p
}

func invokeValue(t *testing.T, p *Program, inv sandbox.Invocation) string {
	t.Helper()
	res, err := p.Invoke(context.Background(), inv)
	if err != nil {
		t.Fatalf("%s: %v", inv.Function, err)
	}
	return string(res.Value)
}

// resetModes runs test with an engine that resets memories by copying them whole,
// then with one that tracks the written pages of every memory (pages_linux.go),
// where the kernel can. pageResets tells how many resets copied back written pages
// only, in the instances p keeps.
func resetModes(t *testing.T, test func(t *testing.T, newEng func() *Engine)) {
	t.Run("copy", func(t *testing.T) {
		test(t, func() *Engine {
			e := newEngine(t, Options{})
			e.trackMin = -1
			return e
		})
	})
	t.Run("tracked", func(t *testing.T) {
		needTracker(t)
		test(t, func() *Engine {
			e := newEngine(t, Options{})
			e.trackMin = 0
			return e
		})
	})
}

// pageResets sums the resets by written pages of the instances p keeps.
func pageResets(p *Program) (n int) {
	p.pool.mu.Lock()
	defer p.pool.mu.Unlock()
	for _, in := range p.pool.idle {
		n += in.pageResets
	}
	return n
}

// TestResetAfterScribble: an invocation that overwrites the whole memory and every
// global and returns normally leaves an instance that the next invocation sees exactly
// as a fresh one after _initialize: the same checksum of memory and globals, and
// counters in memory and globals back at their start. The instance is reused (not
// replaced), except after a growth, a trap or a limit, which drop it. The same with
// the memory copied back whole and by its written pages.
func TestResetAfterScribble(t *testing.T) {
	resetModes(t, func(t *testing.T, newEng func() *Engine) {
		p := loadWAT(t, newEng(), "scribble.wasm")
		if !p.reusable {
			t.Fatal("scribble.wasm is not reusable")
		}
		fresh := loadWAT(t, newEngine(t, Options{FreshInstances: true}), "scribble.wasm")
		want := invokeValue(t, fresh, sandbox.Invocation{Function: "check"})

		steps := []struct {
			fn      string
			fails   bool
			limits  sandbox.Limits
			created int64 // instances made so far, after the check that follows fn
		}{
			{fn: "check", created: 2}, // describe at Load made the first
			{fn: "scribble", created: 2},
			{fn: "count", created: 2},
			{fn: "count", created: 2},
			{fn: "scribble_grow", created: 3}, // grown memory cannot shrink: dropped
			{fn: "scribble_trap", fails: true, created: 4},
			{fn: "scribble", limits: sandbox.Limits{MaxMemoryPages: 1}, fails: true, created: 4}, // 2 pages > cap 1: refused before any instance
		}
		for i, st := range steps {
			res, err := p.Invoke(context.Background(), sandbox.Invocation{Function: st.fn, Limits: st.limits})
			if (err != nil) != st.fails {
				t.Fatalf("step %d %s: got %v, want failure %v", i, st.fn, err, st.fails)
			}
			if st.fn == "count" && string(res.Value) != "2" {
				t.Errorf("step %d: count returned %s, want 2 (memory and global counters at 1)", i, res.Value)
			}
			if got := invokeValue(t, p, sandbox.Invocation{Function: "check"}); got != want {
				t.Errorf("step %d: after %s check returned %s, want %s (a fresh instance's)", i, st.fn, got, want)
			}
			if got := p.created.Load(); got != st.created {
				t.Errorf("step %d: after %s: %d instances made, want %d", i, st.fn, got, st.created)
			}
		}
		if p.reused.Load() == 0 {
			t.Error("no invocation reused an instance")
		}
		if tracked := pageResets(p) > 0; tracked != (p.eng.trackMin >= 0) {
			t.Errorf("resets by written pages: %v, want %v", tracked, p.eng.trackMin >= 0)
		}
	})
}

// TestResetTimeout: a reused instance still stops at its timeout, and is dropped; the
// next invocation is pristine.
func TestResetTimeout(t *testing.T) {
	resetModes(t, func(t *testing.T, newEng func() *Engine) {
		p := loadWAT(t, newEng(), "scribble.wasm")
		want := invokeValue(t, p, sandbox.Invocation{Function: "check"})
		for range 2 {
			reused := p.reused.Load()
			_, err := p.Invoke(context.Background(), sandbox.Invocation{Function: "spin", Limits: sandbox.Limits{Timeout: 50 * time.Millisecond}})
			if le := limitOf(err); le == nil || le.Limit != "timeout" {
				t.Fatalf("got %v, want a timeout", err)
			}
			if p.reused.Load() != reused+1 {
				t.Error("spin did not run in a reused instance")
			}
			if got := invokeValue(t, p, sandbox.Invocation{Function: "check"}); got != want {
				t.Errorf("after a timeout check returned %s, want %s", got, want)
			}
		}
	})
}

// TestNotReusable: a module whose tables change, or whose _initialize reads from the
// host (here WASI random_get, as the Go runtime does to seed itself), gets a fresh
// instance every time.
func TestNotReusable(t *testing.T) {
	e := newEngine(t, Options{})
	ops := loadWAT(t, e, "opcodes.wasm")
	if ops.reusable {
		t.Error("opcodes.wasm (table.set, elem.drop, data.drop) is reusable")
	}
	first := invokeValue(t, ops, sandbox.Invocation{Function: "mix"})
	if again := invokeValue(t, ops, sandbox.Invocation{Function: "mix"}); again != first {
		t.Errorf("mix changed its tables and segments: got %s, then %s", first, again)
	}
	if ops.reused.Load() != 0 {
		t.Error("an instance of opcodes.wasm was reused")
	}
	p := loadWAT(t, e, "initrand.wasm")
	before := p.created.Load()
	a := invokeValue(t, p, sandbox.Invocation{Function: "seed"})
	b := invokeValue(t, p, sandbox.Invocation{Function: "seed"})
	if a == b {
		t.Errorf("two invocations got the same seed %s", a)
	}
	if got := p.created.Load() - before; got != 2 {
		t.Errorf("%d instances made for 2 invocations, want 2", got)
	}
	det := func(seed int64) string {
		return invokeValue(t, p, sandbox.Invocation{Function: "seed", Deterministic: &sandbox.Determinism{Seed: seed}})
	}
	if det(1) != det(1) || det(1) == det(2) {
		t.Errorf("deterministic seeds: got %s, %s for seed 1 and %s for 2", det(1), det(1), det(2))
	}
}

// TestReusedRandomness: a reused instance draws from the invocation's random source:
// different numbers in every invocation, and in deterministic mode the numbers of the
// seed, the same as a fresh instance's.
func TestReusedRandomness(t *testing.T) {
	p := loadWAT(t, newEngine(t, Options{}), "scribble.wasm")
	fresh := loadWAT(t, newEngine(t, Options{FreshInstances: true}), "scribble.wasm")
	seen := map[string]bool{}
	for range 5 {
		v := invokeValue(t, p, sandbox.Invocation{Function: "random"})
		if seen[v] {
			t.Errorf("random %s drawn twice", v)
		}
		seen[v] = true
	}
	d := func(p *Program, seed int64) string {
		return invokeValue(t, p, sandbox.Invocation{Function: "random", Deterministic: &sandbox.Determinism{Seed: seed, Now: time.Unix(0, 0)}})
	}
	if a, b, c := d(p, 7), d(p, 7), d(fresh, 7); a != b || a != c {
		t.Errorf("seed 7: reused %s then %s, fresh %s; want all equal", a, b, c)
	}
	if d(p, 7) == d(p, 8) {
		t.Error("seeds 7 and 8 drew the same numbers")
	}
	if p.reused.Load() == 0 {
		t.Error("no invocation reused an instance")
	}
}

// TestReusedConsole: output and results belong to the invocation that made them.
func TestReusedConsole(t *testing.T) {
	p := load(t, newEngine(t, Options{}), "good.wasm")
	for i := range 3 {
		state := json.RawMessage(`{"n":` + string(rune('0'+i)) + `}`)
		res, err := p.Invoke(context.Background(), sandbox.Invocation{Function: "echo", Globals: sandbox.Globals{State: state}})
		if err != nil || string(res.Value) != string(state) {
			t.Fatalf("invocation %d: got %s, %v; want %s", i, res.Value, err, state)
		}
	}
	if p.reused.Load() == 0 {
		t.Error("no invocation reused an instance")
	}
}

// TestGoGuestReused: a Go guest's instance is reused: its runtime's random generator is
// reseeded for every invocation (math/rand draws differ each time), module state is
// reset (fresh_instance returns 1), and in deterministic mode it runs as in a fresh
// instance (the same numbers for the same seed as an engine without reuse).
func TestGoGuestReused(t *testing.T) {
	code := buildGuest(t, conformanceDir)
	load := func(opts Options) *Program {
		opts.CacheDir = sharedCacheDir()
		p, err := newEngine(t, opts).load(context.Background(), sandbox.Source{Name: "conformance.wasm", Code: code})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = p.Close(context.Background()) })
		return p
	}
	p := load(Options{})
	if !p.reusable {
		t.Fatal("the Go guest is not reusable")
	}
	seen := map[string]bool{}
	for i := range 5 {
		if got := invokeValue(t, p, sandbox.Invocation{Function: "fresh_instance"}); got != "1" {
			t.Errorf("fresh_instance %d: got %s, want 1", i, got)
		}
		v := invokeValue(t, p, sandbox.Invocation{Function: "deterministic"})
		var out struct{ Random []float64 }
		if err := json.Unmarshal([]byte(v), &out); err != nil || len(out.Random) != 3 {
			t.Fatalf("deterministic returned %s", v)
		}
		for _, r := range out.Random {
			k := strconv.FormatFloat(r, 'g', -1, 64)
			if seen[k] {
				t.Errorf("invocation %d drew %s again", i, k)
			}
			seen[k] = true
		}
	}
	if got := p.reused.Load(); got < 8 {
		t.Errorf("%d of 10 invocations reused an instance, want at least 8", got)
	}
	// The Go runtime's memory (about 3.4 MiB) is reset by its written pages where the
	// kernel tracks them.
	if tr, _ := tracker(); tr != nil && pageResets(p) == 0 {
		t.Error("no reset of the Go guest copied back its written pages only")
	}
	fresh := load(Options{FreshInstances: true})
	det := sandbox.Invocation{Function: "deterministic", Deterministic: &sandbox.Determinism{Seed: 9, Now: time.Unix(5, 0)}}
	if a, b, c := invokeValue(t, p, det), invokeValue(t, p, det), invokeValue(t, fresh, det); a != b || a != c {
		t.Errorf("seed 9: got %s, then %s, fresh %s; want all equal", a, b, c)
	}
}

// TestIdleBudget: instances are kept for reuse only within Options.MaxIdleBytes.
func TestIdleBudget(t *testing.T) {
	// scribble.wasm's instance holds 2 pages and their snapshot: 256 KiB.
	for _, tt := range []struct {
		max    int64
		reused bool
	}{{max: 200 << 10, reused: false}, {max: 300 << 10, reused: true}} {
		e := newEngine(t, Options{MaxIdleBytes: tt.max})
		p := loadWAT(t, e, "scribble.wasm")
		for range 3 {
			invokeValue(t, p, sandbox.Invocation{Function: "count"})
		}
		if got := p.reused.Load() > 0; got != tt.reused {
			t.Errorf("budget %d: reused %v, want %v", tt.max, got, tt.reused)
		}
		_ = p.Close(context.Background())
		if e.idle.used != 0 {
			t.Errorf("budget %d: %d bytes still counted after Close", tt.max, e.idle.used)
		}
	}
}

// TestReusedCallEngine: a reused instance keeps the functions it called, with their
// call engines: wazero gives each looked-up export a call engine of its own with a
// stack of its own (about 12 KB), which, looked up at every invocation, was most of
// what a warm phase allocated. A warm phase with one tool call now allocates a few
// KB at most.
func TestReusedCallEngine(t *testing.T) {
	p := loadWAT(t, newEngine(t, Options{}), "bench.wasm")
	inv := sandbox.Invocation{Function: "call_tool", Tools: echoTools{}}
	for range 3 { // warm: instances made and pooled
		invokeValue(t, p, inv)
	}
	const phases = 200
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	for range phases {
		if _, err := p.Invoke(context.Background(), inv); err != nil {
			t.Fatal(err)
		}
	}
	runtime.ReadMemStats(&after)
	if p.reused.Load() < phases {
		t.Fatalf("%d of %d invocations reused an instance", p.reused.Load(), phases)
	}
	perPhase := (after.TotalAlloc - before.TotalAlloc) / phases
	t.Logf("%d bytes allocated per warm phase", perPhase)
	if perPhase > 6<<10 {
		t.Errorf("a warm phase allocated %d bytes, want at most 6 KiB: is a call engine made at every invocation?", perPhase)
	}
}

// TestStartSection: a module's start section runs once per instance, after
// instantiation and before _initialize (the rewrite exports its function and the
// engine calls it); one that never ends is stopped by the timeout, where wazero,
// running it inside instantiation, could not stop it.
func TestStartSection(t *testing.T) {
	resetModes(t, func(t *testing.T, newEng func() *Engine) {
		p := loadWAT(t, newEng(), "start.wasm")
		for range 3 {
			if got := invokeValue(t, p, sandbox.Invocation{Function: "order"}); got != "10" {
				t.Errorf("order returned %s, want 10 (start once, then _initialize)", got)
			}
		}
	})
	code, err := os.ReadFile("testdata/wat/startspin.wasm")
	if err != nil {
		t.Fatal(err)
	}
	e := newEngine(t, Options{Limits: sandbox.Limits{Timeout: 100 * time.Millisecond}})
	_, err = e.load(context.Background(), sandbox.Source{Name: "startspin.wasm", Code: code})
	if le := limitOf(err); le == nil || le.Limit != "timeout" {
		t.Fatalf("loading a module whose start section never ends: got %v, want a timeout", err)
	}
}

// TestStopIsReset: an invocation whose context has ended is stopped at its guest's
// first check, and the stop reaches neither the next invocation of the reused
// instance nor the snapshot of an instance initialized under it. "count" runs too
// briefly to reach a check and returns normally (the first time in a new instance,
// the stopped check's having been closed); "check", which loops over the whole
// memory, then runs to its end.
func TestStopIsReset(t *testing.T) {
	resetModes(t, func(t *testing.T, newEng func() *Engine) {
		p := loadWAT(t, newEng(), "scribble.wasm")
		want := invokeValue(t, p, sandbox.Invocation{Function: "check"})
		ended, cancel := context.WithCancel(context.Background())
		cancel()
		if _, err := p.Invoke(ended, sandbox.Invocation{Function: "check"}); !errors.Is(err, context.Canceled) {
			t.Fatalf("check with an ended context: got %v, want an error wrapping context.Canceled", err)
		}
		for i := range 3 {
			reused, created := p.reused.Load(), p.created.Load()
			if _, err := p.Invoke(ended, sandbox.Invocation{Function: "count"}); err != nil {
				t.Fatalf("count with an ended context: %v", err)
			}
			if got := invokeValue(t, p, sandbox.Invocation{Function: "check"}); got != want {
				t.Errorf("check after a stopped count returned %s, want %s", got, want)
			}
			wantMade := int64(0)
			if i == 0 {
				wantMade = 1
			}
			if made := p.created.Load() - created; made != wantMade || p.reused.Load()-reused != 2-made {
				t.Errorf("round %d: %d instances made and %d reused, want %d made", i, made, p.reused.Load()-reused, wantMade)
			}
		}
	})
}

// TestNoMemoryRefused: a module without a memory, whose rewrite has no memory.grow to
// put in its check function, is refused for the missing memory, in words.
func TestNoMemoryRefused(t *testing.T) {
	code, err := os.ReadFile("testdata/wat/nomemory.wasm")
	if err != nil {
		t.Fatal(err)
	}
	_, err = newEngine(t, Options{}).load(context.Background(), sandbox.Source{Name: "nomemory.wasm", Code: code})
	if err == nil || !strings.Contains(err.Error(), `module does not export its memory as "memory"`) {
		t.Fatalf("got %v, want the missing memory named", err)
	}
}
