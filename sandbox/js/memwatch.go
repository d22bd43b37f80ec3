package js

import (
	"fmt"
	"runtime/metrics"
	"sync"
	"sync/atomic"
	"time"

	"github.com/scripthost/scripthost/sandbox"
)

// The memory watcher is an approximation: goja allocates on the shared Go heap and
// Go cannot say which goroutine allocated what. While invocations run, one goroutine
// samples the live heap every watchPeriod and charges each growth (or shrinkage) in
// equal shares to the invocations that were running script code at the time (not
// waiting in a tool call). An invocation whose charge passes its MemoryBytes budget is
// interrupted with a "memory" LimitError; when several pass it at once, only the one
// with the largest charge is, and the others' share of that sample is taken back. Two
// scripts that run side by side for their whole lives are charged alike, so a
// long-running script next to a memory hog with the same budget may be interrupted
// too.
// Allocations by other parts of the process while scripts run are charged to the
// scripts too, and a single huge allocation inside a built-in cannot be interrupted
// until it returns (which is why the one-shot allocating built-ins are guarded before
// they allocate; see prelude.js).
const watchPeriod = time.Millisecond

const heapMetric = "/memory/classes/heap/objects:bytes"

// memEntry is one running invocation as the watcher sees it.
type memEntry struct {
	budget int64
	abort  func(error)
	inJS   atomic.Bool
	charge int64  // guarded by watcher.mu
	killed bool   // guarded by watcher.mu
	detail string // set with killed
}

var watcher struct {
	mu      sync.Mutex
	entries map[*memEntry]struct{}
	last    int64
	running bool
}

func liveHeap() int64 {
	s := []metrics.Sample{{Name: heapMetric}}
	metrics.Read(s)
	if s[0].Value.Kind() != metrics.KindUint64 {
		return 0
	}
	return int64(s[0].Value.Uint64())
}

// watch registers an invocation with a budget of budget bytes.
func watch(budget int64, abort func(error)) *memEntry {
	e := &memEntry{budget: budget, abort: abort}
	e.inJS.Store(true)
	watcher.mu.Lock()
	defer watcher.mu.Unlock()
	if watcher.entries == nil {
		watcher.entries = map[*memEntry]struct{}{}
	}
	watcher.entries[e] = struct{}{}
	if !watcher.running {
		watcher.running = true
		watcher.last = liveHeap()
		go watchLoop()
	}
	return e
}

// done charges the growth since the last sample and unregisters the invocation, so
// that what it allocated at the end is not charged to the others.
func (e *memEntry) done() {
	cur := liveHeap()
	watcher.mu.Lock()
	top := chargeLocked(cur)
	delete(watcher.entries, e)
	watcher.mu.Unlock()
	kill(top)
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
	cur := liveHeap()
	watcher.mu.Lock()
	if len(watcher.entries) == 0 {
		watcher.running = false
		watcher.mu.Unlock()
		return false
	}
	top := chargeLocked(cur)
	watcher.mu.Unlock()
	kill(top)
	return true
}

// chargeLocked shares the growth since the last sample among the invocations running
// script code and returns the one to interrupt, if any. An interrupted invocation is
// still charged until it is done: it may finish an allocation first.
func chargeLocked(cur int64) *memEntry {
	delta := cur - watcher.last
	watcher.last = cur
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
	share := delta / int64(len(running))
	for _, e := range running {
		// Shrinkage is shared like growth, so charges stay a fair split of the net
		// growth; the floor keeps freed garbage from becoming a large credit.
		e.charge = max(e.charge+share, -e.budget)
		if !e.killed && e.charge > e.budget && (top == nil || e.charge > top.charge) {
			top = e
		}
	}
	if top == nil {
		return nil
	}
	top.killed = true
	top.detail = fmt.Sprintf("heap grew by about %d MiB while the script ran, over the budget of %d MiB", top.charge>>20, top.budget>>20)
	for _, e := range running {
		if e != top && !e.killed && e.charge > e.budget {
			e.charge -= share
		}
	}
	return top
}

func kill(e *memEntry) {
	if e != nil {
		e.abort(&sandbox.LimitError{Limit: "memory", Detail: e.detail})
	}
}
