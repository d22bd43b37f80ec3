package observe

import "sync"

// authored tells the lifecycle events this process wrote from those other hosts
// sharing the ledger wrote, so that each host logs the lines of its own work only: a
// failed run, an indeterminate mutation or a reconcile given up is logged once, by the
// host that drove the run or reconciled the mutation, not by every host that reads the
// shared log. A key is a run id, or a mutation id for a mutation outside a run.
//
// A key is held from the start of the work (a drive, a reconcile) until the first poll
// of the log that began after the work ended: that poll reads every event the work
// wrote, since each was committed before the work ended.
type authored struct {
	mu    sync.Mutex
	polls int64 // polls begun
	keys  map[string]*work
}

type work struct {
	active int
	// endedBefore is the number of polls begun when the last work on the key ended.
	endedBefore int64
}

// begin marks key as worked on by this process; the function it returns ends the
// work.
func (a *authored) begin(key string) func() {
	if key == "" {
		return func() {}
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.keys == nil {
		a.keys = map[string]*work{}
	}
	w := a.keys[key]
	if w == nil {
		w = &work{}
		a.keys[key] = w
	}
	w.active++
	return func() {
		a.mu.Lock()
		defer a.mu.Unlock()
		w.active--
		w.endedBefore = a.polls
	}
}

// pollBegins is called as a poll of the log begins; it returns the poll's number.
func (a *authored) pollBegins() int64 {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.polls++
	return a.polls
}

// pollEnded forgets the keys whose work ended before poll n began: that poll read
// what the work wrote.
func (a *authored) pollEnded(n int64) {
	a.mu.Lock()
	defer a.mu.Unlock()
	for k, w := range a.keys {
		if w.active == 0 && w.endedBefore < n {
			delete(a.keys, k)
		}
	}
}

// mine reports whether this process worked on any of keys.
func (a *authored) mine(keys ...string) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, k := range keys {
		if _, ok := a.keys[k]; ok && k != "" {
			return true
		}
	}
	return false
}
