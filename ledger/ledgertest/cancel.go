package ledgertest

import (
	"encoding/json"

	"github.com/scripthost/scripthost"
	"github.com/scripthost/scripthost/ledger"
)

// lastEvent returns the newest lifecycle event of a run.
func (f *fixture) lastEvent(runID string) ledger.LifecycleEvent {
	f.t.Helper()
	evs := must(f.s.LifecycleEvents(f.ctx, ledger.LifecycleFilter{RunID: runID}))(f.t)
	if len(evs) == 0 {
		f.t.Fatalf("run %s has no lifecycle events", runID)
	}
	return evs[len(evs)-1]
}

func testCancelRun(f *fixture) {
	c := ledger.Cancel{By: "alice", Reason: "wrong order"}
	for _, stage := range []string{stPending, stPreparing, stPrepared, stMutating} {
		f.with("before mutation at "+stage, func(f *fixture) {
			b := f.consumer(stage)
			r := must(f.s.CancelRun(f.ctx, b.run.ID, c))(f.t)
			if r.Status != scripthost.StatusCancelled || r.Phase != b.run.Phase || r.Error != "cancelled by alice: wrong order" {
				f.t.Errorf("got %s/%s %q, want %s/cancelled by alice with the reason", r.Phase, r.Status, r.Error, b.run.Phase)
			}
			if got := must(f.s.Run(f.ctx, b.run.ID))(f.t); got.Status != scripthost.StatusCancelled {
				f.t.Errorf("stored status %s, want cancelled", got.Status)
			}
			f.wantEvents(b.events, scripthost.EventPending, "")
			ev := f.lastEvent(b.run.ID)
			if ev.Type != ledger.EventCancelled || string(ev.Data) != `{"by":"alice","events":"released","reason":"wrong order"}` {
				f.t.Errorf("last event %s %s, want cancelled with events released", ev.Type, ev.Data)
			}
		})
	}
	f.with("after the outcome", func(f *fixture) {
		b := f.consumer(stEmitting)
		r := must(f.s.CancelRun(f.ctx, b.run.ID, c))(f.t)
		if r.Status != scripthost.StatusCancelled {
			f.t.Errorf("got %s, want cancelled", r.Status)
		}
		// The side effect happened: its events are consumed, never offered again.
		f.wantEvents(b.events, scripthost.EventConsumed, b.run.ID)
		if ev := f.lastEvent(b.run.ID); ev.Type != ledger.EventCancelled || string(ev.Data) != `{"by":"alice","events":"consumed","reason":"wrong order"}` {
			f.t.Errorf("last event %s %s, want cancelled with events consumed", ev.Type, ev.Data)
		}
		if m := must(f.s.Mutation(f.ctx, b.mut.ID))(f.t); m.Status != scripthost.MutationApplied {
			f.t.Errorf("mutation %s, want still applied", m.Status)
		}
	})
	f.with("paused before mutation", func(f *fixture) {
		b := f.consumer(stPrepared)
		must(f.s.SetRunStatus(f.ctx, b.run.ID, ledger.StatusChange{Status: scripthost.StatusPausedApproval}))(f.t)
		r := must(f.s.CancelRun(f.ctx, b.run.ID, ledger.Cancel{}))(f.t)
		if r.Status != scripthost.StatusCancelled || r.Error != "cancelled" {
			f.t.Errorf("got %s %q, want cancelled", r.Status, r.Error)
		}
		f.wantEvents(b.events, scripthost.EventPending, "")
	})
	f.with("producer", func(f *fixture) {
		p := f.producer(true)
		if r := must(f.s.CancelRun(f.ctx, p.ID, c))(f.t); r.Status != scripthost.StatusCancelled {
			f.t.Errorf("got %s, want cancelled", r.Status)
		}
	})
	for _, stage := range []string{stInFlight, stNeedsReconcile, stIndeterminate} {
		f.with("requested while outcome unknown at "+stage, func(f *fixture) {
			b := f.consumer(stage)
			r := must(f.s.CancelRun(f.ctx, b.run.ID, c))(f.t)
			if r.Status != b.run.Status || r.Phase != b.run.Phase {
				f.t.Errorf("got %s/%s, want %s/%s unchanged", r.Phase, r.Status, b.run.Phase, b.run.Status)
			}
			f.wantEvents(b.events, scripthost.EventReserved, b.run.ID)
			evs := must(f.s.LifecycleEvents(f.ctx, ledger.LifecycleFilter{RunID: b.run.ID}))(f.t)
			if !ledger.CancelRequested(evs) {
				f.t.Errorf("no cancel_requested in %v", evs)
			}
			reqs := must(f.s.LifecycleEvents(f.ctx, ledger.LifecycleFilter{RunID: b.run.ID, Type: ledger.EventCancelRequested}))(f.t)
			if len(reqs) != 1 || reqs[0].Type != ledger.EventCancelRequested || len(evs) < 2 {
				f.t.Errorf("the run's cancel requests: got %v among %d events, want the one", reqs, len(evs))
			}
		})
	}
	f.with("refused when final", func(f *fixture) {
		b := f.consumer(stCommitted)
		before := f.dump()
		_, err := f.s.CancelRun(f.ctx, b.run.ID, c)
		f.refused(before, err, nil)
	})
	f.with("refused twice", func(f *fixture) {
		b := f.consumer(stPrepared)
		must(f.s.CancelRun(f.ctx, b.run.ID, c))(f.t)
		before := f.dump()
		_, err := f.s.CancelRun(f.ctx, b.run.ID, c)
		f.refused(before, err, nil)
	})
	f.with("mutation refused after cancel", func(f *fixture) {
		b := f.consumer(stMutating)
		must(f.s.CancelRun(f.ctx, b.run.ID, c))(f.t)
		before := f.dump()
		_, err := f.s.BeginMutation(f.ctx, ledger.NewMutation{RunID: b.run.ID, Namespace: "Shop", Method: "ship",
			InputHash: "h-cancelled", IdempotencyKey: "k-cancelled"})
		f.refused(before, err, nil)
	})
	f.with("unknown run", func(f *fixture) {
		_, err := f.s.CancelRun(f.ctx, "no-such-run", c)
		f.refused(f.dump(), err, ledger.ErrNotFound)
	})
}

// testCancelAtOutcome: a cancel requested while the run's mutation outcome is unknown
// is honoured by the transition that records the outcome, in its own transaction: the
// run is cancelled at emitting as CancelRun cancels it there (events consumed after an
// applied or skipped mutation, released after a definite failure), the cancelled event
// carrying who asked and why after phase_started(next), with no CancelRun after the
// outcome. A transition that leaves the outcome unknown keeps the request pending.
func testCancelAtOutcome(f *fixture) {
	c := ledger.Cancel{By: "alice", Reason: "wrong order"}
	cases := []struct {
		name   string
		stage  string
		record func(f *fixture, b built)
		events scripthost.EventStatus
		data   string
	}{
		{"applied", stInFlight, func(f *fixture, b built) {
			must(f.s.ApplyMutation(f.ctx, b.mut.ID, json.RawMessage(`{"shipped":true}`)))(f.t)
		}, scripthost.EventConsumed, `{"by":"alice","events":"consumed","reason":"wrong order"}`},
		{"failed to next", stInFlight, func(f *fixture, b built) {
			must(f.s.FailMutationToNext(f.ctx, b.mut.ID, scripthost.LogicError("card declined"), false))(f.t)
		}, scripthost.EventPending, `{"by":"alice","events":"released","reason":"wrong order"}`},
		{"resolved applied", stIndeterminate, func(f *fixture, b built) {
			must(f.s.Resolve(f.ctx, b.mut.ID, ledger.Resolution{As: scripthost.MutationApplied, Result: json.RawMessage(`{"shipped":true}`), By: "ops"}))(f.t)
		}, scripthost.EventConsumed, `{"by":"alice","events":"consumed","reason":"wrong order"}`},
		{"resolved skipped", stIndeterminate, func(f *fixture, b built) {
			must(f.s.Resolve(f.ctx, b.mut.ID, ledger.Resolution{As: scripthost.MutationSkipped, By: "ops"}))(f.t)
		}, scripthost.EventSkipped, `{"by":"alice","events":"consumed","reason":"wrong order"}`},
		{"indeterminate, then resolved applied", stInFlight, func(f *fixture, b built) {
			must(f.s.MarkIndeterminate(f.ctx, b.mut.ID, "no answer"))(f.t)
			// Still unknown: the request waits, and the run with it.
			r := must(f.s.Run(f.ctx, b.run.ID))(f.t)
			if r.Status != scripthost.StatusPausedReconciliation || r.Phase != scripthost.RunMutating {
				f.t.Fatalf("indeterminate: got %s/%s, want mutating/paused:reconciliation", r.Phase, r.Status)
			}
			f.wantEvents(b.events, scripthost.EventReserved, b.run.ID)
			must(f.s.Resolve(f.ctx, b.mut.ID, ledger.Resolution{As: scripthost.MutationApplied, By: "ops"}))(f.t)
		}, scripthost.EventConsumed, `{"by":"alice","events":"consumed","reason":"wrong order"}`},
	}
	for _, tc := range cases {
		f.with(tc.name, func(f *fixture) {
			b := f.consumer(tc.stage)
			// An earlier request is overtaken by the latest.
			must(f.s.CancelRun(f.ctx, b.run.ID, ledger.Cancel{By: "bob"}))(f.t)
			must(f.s.CancelRun(f.ctx, b.run.ID, c))(f.t)
			tc.record(f, b)
			r := must(f.s.Run(f.ctx, b.run.ID))(f.t)
			if r.Status != scripthost.StatusCancelled || r.Phase != scripthost.RunEmitting || r.Error != "cancelled by alice: wrong order" || r.Outcome == nil {
				f.t.Fatalf("run: got %s/%s %q outcome %+v, want emitting/cancelled by alice with the outcome", r.Phase, r.Status, r.Error, r.Outcome)
			}
			reservedBy := b.run.ID
			if tc.events == scripthost.EventPending {
				reservedBy = ""
			}
			f.wantEvents(b.events, tc.events, reservedBy)
			evs := must(f.s.LifecycleEvents(f.ctx, ledger.LifecycleFilter{RunID: b.run.ID}))(f.t)
			if n := len(evs); n < 2 || evs[n-2].Label() != "phase_started(next)" || evs[n-1].Type != ledger.EventCancelled || string(evs[n-1].Data) != tc.data {
				f.t.Errorf("last events: got %v, want phase_started(next) then cancelled %s", evs, tc.data)
			}
			snaps := must(f.s.Snapshots(f.ctx, b.run.ID))(f.t)
			if n := len(snaps); n < 3 || snaps[n-3].Phase != scripthost.RunMutated || snaps[n-2].Phase != scripthost.RunEmitting ||
				snaps[n-2].Status != scripthost.StatusActive || snaps[n-1].Phase != scripthost.RunEmitting || snaps[n-1].Status != scripthost.StatusCancelled {
				f.t.Errorf("snapshots: got %+v, want mutated, emitting, emitting cancelled last", snaps)
			}
			// The run was cancelled once: the commit of its next phase is refused.
			before := f.dump()
			_, err := f.s.CommitConsumer(f.ctx, b.run.ID, ledger.Commit{State: json.RawMessage(`{}`)})
			f.refused(before, err, nil)
		})
	}
	f.with("no request", func(f *fixture) {
		b := f.consumer(stInFlight)
		must(f.s.ApplyMutation(f.ctx, b.mut.ID, nil))(f.t)
		if r := must(f.s.Run(f.ctx, b.run.ID))(f.t); r.Status != scripthost.StatusActive || r.Phase != scripthost.RunEmitting {
			f.t.Errorf("got %s/%s, want emitting/active", r.Phase, r.Status)
		}
	})
	// Cancelled after the outcome, a run whose mutation definitely failed releases its
	// events too, as one whose request met the failure does.
	f.with("cancelled after a definite failure", func(f *fixture) {
		b := f.consumer(stInFlight)
		must(f.s.FailMutationToNext(f.ctx, b.mut.ID, scripthost.LogicError("card declined"), false))(f.t)
		r := must(f.s.CancelRun(f.ctx, b.run.ID, c))(f.t)
		if r.Status != scripthost.StatusCancelled {
			f.t.Fatalf("got %s/%s, want cancelled", r.Phase, r.Status)
		}
		f.wantEvents(b.events, scripthost.EventPending, "")
		evs := must(f.s.LifecycleEvents(f.ctx, ledger.LifecycleFilter{RunID: b.run.ID, Type: ledger.EventCancelled}))(f.t)
		if len(evs) != 1 || string(evs[0].Data) != `{"by":"alice","events":"released","reason":"wrong order"}` {
			f.t.Errorf("cancelled events: %v, want one with events released", evs)
		}
	})
}
