package js

import (
	"testing"
	"time"
)

// TestFinishedHogChargedUntilCollected: an invocation interrupted for memory stays
// registered after it finishes, without its runtime, and absorbs the growth seen
// until a collection that started after it finished has completed; the script
// running next to it is not charged with the hog's last allocations.
func TestFinishedHogChargedUntilCollected(t *testing.T) {
	for _, by := range []string{"the watcher", "its own string or engine limit"} {
		t.Run(by, func(t *testing.T) { finishedHogCharged(t, by == "the watcher") })
	}
}

// finishedHogCharged is TestFinishedHogChargedUntilCollected for a hog the watcher
// interrupted (byWatcher) or one its runtime's own memory check stopped (exceeded).
func finishedHogCharged(t *testing.T, byWatcher bool) {
	deadline := time.Now().Add(time.Minute)
	for {
		watcher.mu.Lock()
		idle := !watcher.running && len(watcher.entries) == 0
		if idle {
			break // holding watcher.mu: no watcher loop can start meanwhile
		}
		watcher.mu.Unlock()
		if time.Now().After(deadline) {
			t.Fatal("the watcher is still running invocations of other tests")
		}
		time.Sleep(10 * time.Millisecond)
	}
	aborted := 0
	abort := func(error) { aborted++ }
	hog := &memEntry{budget: 8 << 20, abort: abort, killed: byWatcher}
	if byWatcher {
		hog.charge = 9 << 20
	}
	hog.inJS.Store(true)
	nb := &memEntry{budget: 8 << 20, abort: abort}
	nb.inJS.Store(true)
	watcher.entries = map[*memEntry]struct{}{hog: {}, nb: {}}
	watcher.last, _ = liveHeap(0)
	watcher.mu.Unlock()
	t.Cleanup(func() {
		watcher.mu.Lock()
		clear(watcher.entries)
		watcher.mu.Unlock()
	})

	if !byWatcher {
		hog.exceeded()
	}
	hog.done()
	watcher.mu.Lock()
	defer watcher.mu.Unlock()
	if _, ok := watcher.entries[hog]; !ok || hog.doneAt == 0 {
		t.Fatalf("the finished hog is unregistered (doneAt %d), want it registered until a collection has seen it", hog.doneAt)
	}
	if hog.abort != nil {
		t.Error("the finished hog keeps its abort function, and so its runtime, reachable")
	}
	before := nb.charge
	if top := chargeLocked(watcher.last + 64<<20); top != nil {
		t.Errorf("growth after the hog finished interrupted an invocation (charge %d MiB)", top.charge>>20)
	}
	if nb.charge != before {
		t.Errorf("the neighbour was charged %d MiB of the hog's growth, want 0", (nb.charge-before)>>20)
	}
	departLocked(hog.doneAt)
	if _, ok := watcher.entries[hog]; !ok {
		t.Error("the hog left after a collection that may have started before it finished")
	}
	departLocked(hog.doneAt + 1)
	if _, ok := watcher.entries[hog]; ok {
		t.Error("the hog is still registered after a collection that started after it finished")
	}
	if aborted != 0 {
		t.Errorf("abort called %d times, want 0", aborted)
	}
}
