package js

import (
	"fmt"
	"runtime"
	"runtime/metrics"
	"sync"
	"sync/atomic"
	"time"

	"github.com/dop251/goja"

	"github.com/scripthost/scripthost/sandbox"
)

// The memory watcher is an approximation (limitStrings, below, is the exact part):
// goja allocates on the shared Go heap and Go cannot say which goroutine allocated
// what. While invocations run, one goroutine samples the heap every watchPeriod. It
// looks at the live heap as of the last garbage collection, so that garbage is not
// mistaken for growth, and forces a collection when more than the smallest running
// budget has been allocated since the last one, so that growth is seen before it is
// far past a budget. Each change of the live heap is charged to the invocations that
// were running script code at the time (not waiting in a tool call), in shares in
// proportion to how long each has run since the previous sample: one that started
// since then made none of what was allocated before it started, and a short script
// next to a memory hog is charged a short share of the hog's growth, not half of it.
// An invocation whose charge passes its MemoryBytes budget is interrupted with a
// "memory" LimitError; when several pass it at once, only the one with the largest
// charge is, and the whole sample is charged to it. In effect the budgets of the
// scripts running together are pooled: n scripts running side by side may together
// grow the heap by about n budgets before one is stopped. Two scripts that run side by
// side for their whole lives are charged alike, so a long-running script next to a
// memory hog with the same budget may be interrupted too; memory other parts of the
// process retain while scripts run is charged to the scripts. A single huge allocation
// inside a built-in cannot be interrupted until it returns, which is why the one-shot
// allocating built-ins are refused before they allocate (goja.Limits, set from the
// budget, and limitStrings for every string).
const watchPeriod = time.Millisecond

const (
	heapObjects = "/memory/classes/heap/objects:bytes" // live and not yet swept
	heapLive    = "/gc/heap/live:bytes"                // marked live by the last GC
	gcCycles    = "/gc/cycles/total:gc-cycles"         // collections completed
)

// memEntry is one running invocation as the watcher sees it.
type memEntry struct {
	budget int64
	abort  func(error)
	start  time.Time // when it was registered
	inJS   atomic.Bool
	charge int64  // guarded by watcher.mu
	killed bool   // guarded by watcher.mu
	detail string // set with killed
	// doneAt, when not 0, is one more than the count of completed collections when
	// the interrupted invocation finished (guarded by watcher.mu); see done.
	doneAt uint64
}

var watcher struct {
	mu      sync.Mutex
	entries map[*memEntry]struct{}
	last    int64
	lastAt  time.Time // when last was sampled
	running bool
}

// liveHeap returns the heap the last collection found live and the count of
// collections completed, first forcing a collection when more than collectAfter bytes
// were allocated since the last one (always when collectAfter is negative, never when
// it is 0).
func liveHeap(collectAfter int64) (int64, uint64) {
	s := []metrics.Sample{{Name: heapObjects}, {Name: heapLive}, {Name: gcCycles}}
	metrics.Read(s)
	objects, live := int64(s[0].Value.Uint64()), int64(s[1].Value.Uint64())
	if collectAfter < 0 || collectAfter > 0 && objects-live > collectAfter {
		runtime.GC()
		metrics.Read(s)
		live = int64(s[1].Value.Uint64())
	}
	return live, s[2].Value.Uint64()
}

// watch registers an invocation with a budget of budget bytes.
func watch(budget int64, abort func(error)) *memEntry {
	e := &memEntry{budget: budget, abort: abort, start: time.Now()}
	e.inJS.Store(true)
	watcher.mu.Lock()
	defer watcher.mu.Unlock()
	if watcher.entries == nil {
		watcher.entries = map[*memEntry]struct{}{}
	}
	watcher.entries[e] = struct{}{}
	if !watcher.running {
		watcher.running = true
		watcher.last, _ = liveHeap(0)
		watcher.lastAt = e.start
		go watchLoop()
	}
	return e
}

// exceeded marks the invocation as stopped for memory by a check other than the
// watcher's (see instance.stop): like one the watcher interrupted, it is charged alone
// with the growth seen while it still runs, and stays registered when done.
func (e *memEntry) exceeded() {
	watcher.mu.Lock()
	e.killed = true
	watcher.mu.Unlock()
}

// done charges the growth seen since the last sample and unregisters the invocation.
// An invocation interrupted for memory stays registered instead, charged with any
// growth, until a collection that started after it finished has completed: its last
// allocations are only seen then, and must not be charged to the scripts still
// running. Forcing that collection here, while its runtime is still reachable, would
// mark the whole of its heap, the costliest collection there is, with every goroutine
// that allocates meanwhile made to help; the watcher forces one only once no script
// is left running.
func (e *memEntry) done() {
	cur, cycles := liveHeap(0)
	watcher.mu.Lock()
	interrupt := killer(chargeLocked(cur, time.Now()))
	if e.killed {
		e.doneAt = cycles + 1
		e.abort = nil // the runtime must not stay reachable through the watcher
		e.inJS.Store(true)
	} else {
		delete(watcher.entries, e)
	}
	watcher.mu.Unlock()
	interrupt()
}

func watchLoop() {
	t := time.NewTicker(watchPeriod)
	defer t.Stop()
	for range t.C {
		if !sample() {
			return
		}
	}
}

// sample charges one heap sample; it reports false (and marks the watcher stopped)
// when no invocation is running.
func sample() bool {
	watcher.mu.Lock()
	collectAfter := int64(0)
	running := false
	for e := range watcher.entries {
		if collectAfter == 0 || e.budget < collectAfter {
			collectAfter = e.budget
		}
		running = running || e.doneAt == 0
	}
	if !running && len(watcher.entries) > 0 {
		collectAfter = -1 // only finished scripts are left: a collection delays no one
	}
	watcher.mu.Unlock()
	cur, cycles := liveHeap(collectAfter)
	watcher.mu.Lock()
	if len(watcher.entries) == 0 {
		watcher.running = false
		watcher.mu.Unlock()
		return false
	}
	interrupt := killer(chargeLocked(cur, time.Now()))
	departLocked(cycles)
	watcher.mu.Unlock()
	interrupt()
	return true
}

// departLocked unregisters the finished invocations whose last allocations a
// completed collection has seen, given the count of completed collections.
func departLocked(cycles uint64) {
	for e := range watcher.entries {
		// doneAt-1 collections had completed when e finished; one more may have been
		// under way; the one after started later.
		if e.doneAt != 0 && cycles > e.doneAt {
			delete(watcher.entries, e)
		}
	}
}

// chargeLocked shares the growth since the last sample, cur being the live heap at
// now, among the invocations running script code and returns the one to interrupt, if
// any. An interrupted invocation is still charged until it is done: it may finish an
// allocation first.
func chargeLocked(cur int64, now time.Time) *memEntry {
	delta, window := cur-watcher.last, now.Sub(watcher.lastAt)
	watcher.last, watcher.lastAt = cur, now
	var running []*memEntry
	for e := range watcher.entries {
		if e.inJS.Load() {
			running = append(running, e)
		}
	}
	if len(running) == 0 {
		return nil
	}
	// Growth after an invocation was interrupted for memory is charged to it alone
	// while it still runs: it is likely finishing the allocation that tipped it over.
	if delta > 0 {
		var killed []*memEntry
		for _, e := range running {
			if e.killed {
				killed = append(killed, e)
			}
		}
		if len(killed) > 0 {
			running = killed
		}
	}
	var top *memEntry
	shares := sharesLocked(delta, window, now, running)
	for i, e := range running {
		// Shrinkage is shared like growth, so charges stay a fair split of the net
		// growth; the floor keeps freed garbage from becoming a large credit.
		e.charge = max(e.charge+shares[i], -e.budget)
		if !e.killed && e.charge > e.budget && (top == nil || e.charge > top.charge) {
			top = e
		}
	}
	if top == nil {
		return nil
	}
	top.killed = true
	top.detail = fmt.Sprintf("heap grew by about %d MiB while the script ran, over the budget of %d MiB", top.charge>>20, top.budget>>20)
	// The sample that tipped top over its budget is charged to top alone.
	for i, e := range running {
		if e != top {
			e.charge -= shares[i]
			top.charge += shares[i]
		}
	}
	return top
}

// sharesLocked splits delta, the change of the live heap over the window that ended
// at now, among the running invocations: in proportion to how much of the window each
// ran (the whole of it, unless it started since).
func sharesLocked(delta int64, window time.Duration, now time.Time, running []*memEntry) []int64 {
	weights := make([]float64, len(running))
	total := 0.0
	for i, e := range running {
		w := window
		if ran := now.Sub(e.start); ran < w {
			w = ran
		}
		weights[i] = float64(max(w, time.Nanosecond))
		total += weights[i]
	}
	shares := make([]int64, len(running))
	for i := range running {
		shares[i] = int64(float64(delta) * weights[i] / total)
	}
	return shares
}

// killer returns the call that interrupts e, or one that does nothing when e is nil.
// It is called with watcher.mu held, the call made after it is released.
func killer(e *memEntry) func() {
	if e == nil {
		return func() {}
	}
	abort, err := e.abort, &sandbox.LimitError{Limit: "memory", Detail: e.detail}
	return func() { abort(err) }
}

// allocStep is the share of the budget the built-ins of goja may allocate in bulk
// (see goja.Limits.Allocate) between two looks at the heap by reserve: the most by
// which such allocations can pass the budget unseen.
const allocStep = 16

// minAllocStep is the smallest step, for small budgets: a look costs a read of the
// runtime's metrics, about a microsecond.
const minAllocStep = 256 << 10

// reserve is called on the runtime's goroutine, through goja.Limits.Allocate, before
// a built-in allocates n bytes at once, or before the allocation that brings what the
// runtime's built-ins allocated since the last call to the step (allocStep): typed
// arrays and ArrayBuffers, an array's elements as it grows, what JSON.parse builds,
// Map and Set entries. The watcher's periodic sample sees such growth only after the
// fact, and a built-in that never returns to the VM loop sees its interrupt only when
// it checks; reserve takes the same sample synchronously, before the allocation, so
// that one loop or one call cannot run far past the budget between two samples. It
// returns "" to let the allocation go ahead, or why it is refused: e's charge,
// brought up to date, leaves less than n bytes of its budget. A collection is forced
// first only when the growth since the last one is more than the room left (or the
// step) and could therefore hide an overrun, or when the charge already says no: a
// refusal is only made on the live heap, so garbage never counts against a script.
func (e *memEntry) reserve(n int64) string {
	watcher.mu.Lock()
	charge, killed := e.charge, e.killed
	watcher.mu.Unlock()
	if killed {
		return ""
	}
	step := max(e.budget/allocStep, minAllocStep)
	s := []metrics.Sample{{Name: heapObjects}, {Name: heapLive}}
	metrics.Read(s)
	unseen := int64(s[0].Value.Uint64()) - int64(s[1].Value.Uint64())
	if charge+n <= e.budget && unseen <= max(e.budget-charge-n, step) {
		return ""
	}
	cur, cycles := liveHeap(-1)
	now := time.Now()
	watcher.mu.Lock()
	top := chargeLocked(cur, now)
	departLocked(cycles)
	detail := ""
	switch {
	case top == e:
		detail = e.detail
		top = nil // stopped by the refusal, on its own goroutine
	case !e.killed && e.charge+n > e.budget:
		e.killed = true
		detail = fmt.Sprintf("heap grew by about %d MiB while the script ran, and %d MiB more would pass the budget of %d MiB",
			max(e.charge, 0)>>20, n>>20, e.budget>>20)
		e.detail = detail
	}
	interrupt := killer(top)
	watcher.mu.Unlock()
	interrupt()
	return detail
}

// limitStrings refuses, before it allocates, a string built by +, += or a template
// literal that is longer than a quarter of the budget in UTF-16 code units (half the
// budget in bytes for a string outside Latin-1, a quarter for ASCII): the invocation
// is interrupted with a "memory" LimitError. The watcher only sees an allocation after
// it happened, and a concatenation doubles a string in one step, so a string-doubling
// script would be seen at a budget's worth of strings only once its next doubling, to
// twice that, had been made. With this limit the strings such a script builds, and
// keeps, total at most the budget. goja checks the same limit in every built-in that
// builds a string (replace, join, String.raw, JSON.stringify, ...), before it grows.
func limitStrings(vm *goja.Runtime, budget int64, abort func(error)) {
	limit := budget / 4
	vm.SetMaxStringLength(int(limit), func(n int) {
		abort(&sandbox.LimitError{Limit: "memory",
			Detail: fmt.Sprintf("a string of %d characters exceeds the memory budget of %d MiB (at most %d characters)", n, budget>>20, limit)})
	})
}
