package runtime

import (
	"fmt"
	"maps"
	"slices"

	"github.com/scripthost/scripthost"
	"github.com/scripthost/scripthost/hostfuncs"
	"github.com/scripthost/scripthost/ledger"
)

// readAhead is how many pending events of each topic the scheduler reads before a run
// of a consumer that is not idle. The events the run does not take are kept for the
// handler's next runs (keptEvents), which then begin without a read of their own: one
// read serves up to readAhead runs of a backlog taking one event each. It is
// maxRounds, the runs a consumer makes in one scheduling pass, so that a pass through
// a backlog reads its pending events about once; more would be held in memory for
// passes that may drop them (see forgetAhead) and read again.
const readAhead = maxRounds

// keptEvents are pending events of one handler read ahead of its runs, by topic:
// the oldest pending events of the topic, oldest first, as long as nothing made an
// older event pending again or took one of them. The scheduler drops them whenever it
// cannot tell (see settleAhead and forgetAhead): the cost of dropping is one read.
type keptEvents map[string][]scripthost.Event

// aheadState is what the scheduler read ahead for one workflow's consumers.
type aheadState struct {
	// kept: handler → its events kept.
	kept map[string]keptEvents
	// off: a run of the pass ended unsettled, holding events it may release later
	// (a cancel, a failed reconciliation) behind the back of what would be kept:
	// nothing more is kept until the next pass, which sees that run (mayKeepAhead).
	off bool
}

// takeAhead returns the events kept for the handler as the Peeked of its next run,
// with the highest sequence number among them; ok is false when nothing is kept. Each
// topic listed holds at least Limit events, so that Topics.peek answers from them only
// a peek asking for at most as many events as are kept for its topic; a peek asking
// for more, or on a topic with nothing kept, reads the ledger.
func (rt *Runtime) takeAhead(workflow, handler string) (p *hostfuncs.Peeked, newest int64, ok bool) {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	var kept keptEvents
	if a := rt.ahead[workflow]; a != nil {
		kept = a.kept[handler]
	}
	p = &hostfuncs.Peeked{Events: make(map[string][]scripthost.Event, len(kept))}
	for topic, evs := range kept {
		if len(evs) == 0 {
			continue
		}
		if !ok || len(evs) < p.Limit {
			p.Limit = len(evs)
		}
		ok = true
		p.Events[topic] = evs
		newest = max(newest, evs[len(evs)-1].Seq)
	}
	return p, newest, ok
}

// mayKeepAhead reports whether a read of pending events may be kept for the next
// runs: not while a run of the workflow is not settled (settled is false when the pass
// began with one; aheadState.off when one of the pass ended so), as the events such a
// run reserved were not pending at the read and may become pending again, older than
// every event kept, without a run of this scheduler ending (a person resolving its
// mutation as failed).
func (rt *Runtime) mayKeepAhead(workflow string, settled bool) bool {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	a := rt.ahead[workflow]
	return settled && (a == nil || !a.off)
}

// keepAhead keeps the events a read of the handler's pending events returned (see
// pending) for its next runs.
func (rt *Runtime) keepAhead(workflow, handler string, p *hostfuncs.Peeked) {
	kept := keptEvents{}
	for topic, evs := range p.Events {
		if len(evs) > 0 {
			kept[topic] = evs
		}
	}
	rt.mu.Lock()
	defer rt.mu.Unlock()
	a := rt.aheadOf(workflow)
	a.kept[handler] = kept
}

// aheadOf returns the workflow's aheadState, made when it has none; rt.mu is held.
func (rt *Runtime) aheadOf(workflow string) *aheadState {
	a := rt.ahead[workflow]
	if a == nil {
		a = &aheadState{kept: map[string]keptEvents{}}
		rt.ahead[workflow] = a
	}
	return a
}

// settleAhead updates what is kept after a run of the handler begun by the scheduler
// ended its turn. A run that committed having reserved, on each topic with events
// kept, the oldest of them leaves the others the oldest pending: what it took is
// removed from what every handler of the workflow keeps (consumers of a topic compete
// for its events). A run written that reserved nothing took and released nothing:
// only what the handler keeps is dropped (it goes idle). Any other end may have made
// older events pending again (a run that failed, was skipped or paused released its
// events; one still under way may yet), or taken events the handler did not keep
// first, or nothing was written (a dropped step): everything the workflow's handlers
// keep is dropped, and a run not settled stops the pass from keeping more.
func (rt *Runtime) settleAhead(workflow, handler string, run scripthost.Run) {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	a := rt.aheadOf(workflow)
	taken := reservedIDs(run.Reservations)
	switch {
	case run.ID != "" && len(taken) == 0:
		delete(a.kept, handler)
		return
	case run.Status != scripthost.StatusCommitted || !oldestKept(a.kept[handler], taken):
		clear(a.kept)
		a.off = a.off || !run.Status.Settled()
		return
	}
	for _, kept := range a.kept {
		for topic, ids := range taken {
			if evs, ok := kept[topic]; ok {
				kept[topic] = slices.DeleteFunc(slices.Clone(evs), func(e scripthost.Event) bool {
					_, took := ids[e.MessageID]
					return took
				})
			}
		}
	}
}

// passAhead begins the consumer rounds of a scheduling pass: runs left unsettled by
// the previous pass are the pass's to see (keepAhead), and when the pass did anything
// before (a reconciliation, a run resumed, a retry created), which may have released
// or taken events, everything kept for the workflow is dropped.
func (rt *Runtime) passAhead(workflow string, did bool) {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	if did {
		delete(rt.ahead, workflow)
	} else if a := rt.ahead[workflow]; a != nil {
		a.off = false
	}
}

// forgetAhead drops every event kept for the workflow's handlers: something other
// than their own runs may have changed its pending events (a reconciliation, a run
// resumed or retried, another host holding the lease meanwhile).
func (rt *Runtime) forgetAhead(workflow string) {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	delete(rt.ahead, workflow)
}

// reservedIDs are the ids of the events reserved, by topic.
func reservedIDs(res []scripthost.Reservation) map[string]map[string]struct{} {
	out := map[string]map[string]struct{}{}
	for _, r := range res {
		for _, id := range r.IDs {
			if out[r.Topic] == nil {
				out[r.Topic] = map[string]struct{}{}
			}
			out[r.Topic][id] = struct{}{}
		}
	}
	return out
}

// oldestKept reports whether, on every topic with events kept, the events taken are
// the oldest kept ones (in any order).
func oldestKept(kept keptEvents, taken map[string]map[string]struct{}) bool {
	for _, topic := range slices.Sorted(maps.Keys(taken)) {
		evs, ok := kept[topic]
		if !ok {
			continue
		}
		ids := taken[topic]
		if len(ids) > len(evs) {
			return false
		}
		for _, e := range evs[:len(ids)] {
			if _, ok := ids[e.MessageID]; !ok {
				return false
			}
		}
	}
	return true
}

// staleKept is the end of a step of a run not written yet that began with events kept
// from an earlier read and whose reservation the ledger refused: an event kept was
// taken or skipped since (by an operator, or another process). The script chose from
// a list the ledger no longer holds, which a fresh read would not have shown it, so
// the step is dropped, nothing written, and the scheduler begins the run again after
// a read instead of failing it.
func (rt *Runtime) staleKept(run ledger.NewRun) error {
	rt.forgetAhead(run.Workflow)
	rt.cfg.Logger.Info("events read ahead were taken meanwhile: the run is begun again", "workflow", run.Workflow,
		"handler", run.Handler)
	return fmt.Errorf("%w: events read ahead were taken meanwhile", errStepDropped)
}
