package js

import (
	"testing"
	"time"
)

// lockIdleWatcher waits until no invocation of another test is registered and returns
// holding watcher.mu, so that no watcher loop can start meanwhile.
func lockIdleWatcher(t *testing.T) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		watcher.mu.Lock()
		if !watcher.running && len(watcher.entries) == 0 {
			return
		}
		watcher.mu.Unlock()
		if time.Now().After(deadline) {
			t.Fatal("the watcher is still running invocations of other tests")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestShortNeighbourChargedShortShare: growth seen in one sample is shared in
// proportion to how long each invocation ran since the previous sample. A hog that ran
// the whole millisecond, with credit for memory freed before (its charge at the
// floor), and a neighbour that started a fifth of a millisecond ago see 288 MiB of
// growth: the hog is charged most of it and interrupted, and the neighbour, charged a
// fifth and then none (the tipping sample is the hog's alone), runs on. Shared in
// equal halves, the neighbour's 144 MiB would have passed the hog's 80 and stopped it.
func TestShortNeighbourChargedShortShare(t *testing.T) {
	lockIdleWatcher(t)
	const budget = 64 << 20
	now := time.Now()
	aborted := 0
	abort := func(error) { aborted++ }
	hog := &memEntry{budget: budget, abort: abort, start: now.Add(-50 * time.Millisecond), charge: -budget}
	nb := &memEntry{budget: budget, abort: abort, start: now.Add(-200 * time.Microsecond)}
	hog.inJS.Store(true)
	nb.inJS.Store(true)
	watcher.entries = map[*memEntry]struct{}{hog: {}, nb: {}}
	watcher.last, watcher.lastAt = 1<<30, now.Add(-time.Millisecond)
	top := chargeLocked(watcher.last+288<<20, now)
	clear(watcher.entries)
	watcher.mu.Unlock()
	if top != hog {
		t.Fatalf("interrupted %p (hog %p, neighbour %p; charges %d and %d MiB), want the hog",
			top, hog, nb, hog.charge>>20, nb.charge>>20)
	}
	if nb.killed || nb.charge != 0 {
		t.Errorf("the neighbour: killed %v, charged %d MiB; want running, charged 0", nb.killed, nb.charge>>20)
	}
	if aborted != 0 {
		t.Errorf("abort called %d times by chargeLocked, want 0 (its caller interrupts)", aborted)
	}
}

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
	lockIdleWatcher(t)
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
	if top := chargeLocked(watcher.last+64<<20, time.Now()); top != nil {
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
