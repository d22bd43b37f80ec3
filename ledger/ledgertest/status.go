package ledgertest

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/scripthost/scripthost"
	"github.com/scripthost/scripthost/ledger"
)

var allStatuses = []scripthost.RunStatus{scripthost.StatusActive, scripthost.StatusPausedTransient,
	scripthost.StatusPausedApproval, scripthost.StatusPausedReconciliation, scripthost.StatusFailedLogic,
	scripthost.StatusFailedInternal, scripthost.StatusCommitted, scripthost.StatusSkipped}

var stopStatuses = []scripthost.RunStatus{scripthost.StatusPausedTransient, scripthost.StatusPausedApproval,
	scripthost.StatusPausedReconciliation, scripthost.StatusFailedLogic, scripthost.StatusFailedInternal}

func testResolve(f *fixture) {
	f.with("as applied", func(f *fixture) {
		b := f.consumer(stIndeterminate)
		m := must(f.s.Resolve(f.ctx, b.mut.ID, ledger.Resolution{As: scripthost.MutationApplied, Result: json.RawMessage(`{"by":"hand"}`), By: "alice"}))(f.t)
		if m.Status != scripthost.MutationApplied || string(m.Result) != `{"by":"hand"}` || m.ResolvedBy != "alice" || m.ResolvedAt.IsZero() {
			f.t.Errorf("got %+v, want applied by alice with the result", m)
		}
		r := must(f.s.Run(f.ctx, b.run.ID))(f.t)
		if r.Phase != scripthost.RunEmitting || r.Status != scripthost.StatusActive || r.Outcome == nil ||
			r.Outcome.Status != scripthost.OutcomeApplied || string(r.Outcome.Result) != `{"by":"hand"}` {
			f.t.Errorf("run: got %s/%s %+v, want emitting/active with the result", r.Phase, r.Status, r.Outcome)
		}
		f.wantEvents(b.events, scripthost.EventReserved, b.run.ID)
	})
	f.with("as failed", func(f *fixture) {
		b := f.consumer(stIndeterminate)
		m := must(f.s.Resolve(f.ctx, b.mut.ID, ledger.Resolution{As: scripthost.MutationFailed, By: "alice"}))(f.t)
		if m.Status != scripthost.MutationFailed || m.ResolvedBy != "alice" {
			f.t.Errorf("got %s by %q, want failed by alice", m.Status, m.ResolvedBy)
		}
		r := must(f.s.Run(f.ctx, b.run.ID))(f.t)
		if r.Status != scripthost.StatusFailedLogic || !strings.Contains(r.Error, "resolved as failed by alice") {
			f.t.Errorf("run: got %s %q, want failed:logic resolved as failed by alice", r.Status, r.Error)
		}
		f.wantEvents(b.events, scripthost.EventPending, "")
		if n := must(f.s.FailureCount(f.ctx, b.mut.InputHash))(f.t); n != 1 {
			f.t.Errorf("failure count: got %d, want 1", n)
		}
	})
	f.with("as skipped", func(f *fixture) {
		b := f.consumer(stIndeterminate)
		m := must(f.s.Resolve(f.ctx, b.mut.ID, ledger.Resolution{As: scripthost.MutationSkipped, By: "alice"}))(f.t)
		if m.Status != scripthost.MutationSkipped || m.ResolvedBy != "alice" || m.ResolvedAt.IsZero() {
			f.t.Errorf("got %+v, want skipped by alice", m)
		}
		r := must(f.s.Run(f.ctx, b.run.ID))(f.t)
		if r.Phase != scripthost.RunEmitting || r.Status != scripthost.StatusActive || r.Outcome == nil || r.Outcome.Status != scripthost.OutcomeSkipped {
			f.t.Errorf("run: got %s/%s %+v, want emitting/active with outcome skipped", r.Phase, r.Status, r.Outcome)
		}
		for _, e := range f.eventsOf(b.events) {
			if e.Status != scripthost.EventSkipped {
				f.t.Errorf("event %s: got %s, want skipped", e.MessageID, e.Status)
			}
		}
		must(f.s.CommitConsumer(f.ctx, b.run.ID, ledger.Commit{State: json.RawMessage(`{}`)}))(f.t)
		for _, e := range f.eventsOf(b.events) {
			if e.Status != scripthost.EventSkipped {
				f.t.Errorf("after commit, event %s: got %s, want still skipped", e.MessageID, e.Status)
			}
		}
	})
	f.with("needs_reconcile with force", func(f *fixture) {
		b := f.consumer(stNeedsReconcile)
		m := must(f.s.Resolve(f.ctx, b.mut.ID, ledger.Resolution{As: scripthost.MutationApplied, By: "bob", Force: true}))(f.t)
		if m.Status != scripthost.MutationApplied {
			f.t.Errorf("got %s, want applied", m.Status)
		}
	})
	refusals := []struct {
		name  string
		stage string
		final scripthost.MutationStatus
		res   ledger.Resolution
	}{
		{"needs_reconcile without force", stNeedsReconcile, "", ledger.Resolution{As: scripthost.MutationApplied, By: "bob"}},
		{"in_flight", stInFlight, "", ledger.Resolution{As: scripthost.MutationApplied, By: "bob"}},
		{"in_flight with force", stInFlight, "", ledger.Resolution{As: scripthost.MutationFailed, By: "bob", Force: true}},
		{"applied", "", scripthost.MutationApplied, ledger.Resolution{As: scripthost.MutationSkipped, By: "bob", Force: true}},
		{"failed", "", scripthost.MutationFailed, ledger.Resolution{As: scripthost.MutationApplied, By: "bob", Force: true}},
		{"skipped", "", scripthost.MutationSkipped, ledger.Resolution{As: scripthost.MutationApplied, By: "bob", Force: true}},
		{"as in_flight", stIndeterminate, "", ledger.Resolution{As: scripthost.MutationInFlight, By: "bob"}},
		{"as nothing", stIndeterminate, "", ledger.Resolution{By: "bob"}},
	}
	for _, tc := range refusals {
		f.with("refused "+tc.name, func(f *fixture) {
			var b built
			if tc.final != "" {
				b = f.finished(tc.final)
			} else {
				b = f.consumer(tc.stage)
			}
			before := f.dump()
			_, err := f.s.Resolve(f.ctx, b.mut.ID, tc.res)
			f.refused(before, err, nil)
		})
	}
}

// Before the mutation a run that stops releases its events; resuming takes them back.
func testDispositionBefore(f *fixture) {
	for _, stage := range []string{stPrepared, stMutating} {
		for _, st := range stopStatuses {
			f.with(fmt.Sprintf("%s to %s", stage, st), func(f *fixture) {
				b := f.consumer(stage)
				r := must(f.s.SetRunStatus(f.ctx, b.run.ID, ledger.StatusChange{Status: st, Error: "stop", ErrorClass: scripthost.ClassNetwork}))(f.t)
				if r.Status != st || r.Error != "stop" || r.ErrorClass != scripthost.ClassNetwork || r.RetryFromEmitting {
					f.t.Errorf("got %s %q %s retry-from-emitting %v, want %s with the error", r.Status, r.Error, r.ErrorClass, r.RetryFromEmitting, st)
				}
				f.wantEvents(b.events, scripthost.EventPending, "")
				if !st.Paused() {
					return
				}
				r = must(f.s.SetRunStatus(f.ctx, b.run.ID, ledger.StatusChange{Status: scripthost.StatusActive}))(f.t)
				if r.Status != scripthost.StatusActive || r.Phase != b.run.Phase {
					f.t.Errorf("resumed: got %s/%s, want %s/active", r.Phase, r.Status, b.run.Phase)
				}
				f.wantEvents(b.events, scripthost.EventReserved, b.run.ID)
			})
		}
	}
	f.with("resume after the events were taken", func(f *fixture) {
		b := f.consumer(stPrepared)
		must(f.s.SetRunStatus(f.ctx, b.run.ID, ledger.StatusChange{Status: scripthost.StatusPausedTransient}))(f.t)
		other := must(f.s.CreateRun(f.ctx, ledger.NewRun{Workflow: wf, Version: 1, Handler: "ship", Kind: scripthost.KindConsumer}))(f.t)
		must(f.s.AdvancePhase(f.ctx, other.ID, scripthost.RunPending, scripthost.RunPreparing))(f.t)
		must(f.s.MarkPrepared(f.ctx, other.ID, ledger.PrepareResult{Reservations: []scripthost.Reservation{{Topic: "in", IDs: []string{b.events[1].MessageID}}}}))(f.t)
		before := f.dump()
		_, err := f.s.SetRunStatus(f.ctx, b.run.ID, ledger.StatusChange{Status: scripthost.StatusActive})
		f.refused(before, err, ledger.ErrEventUnavailable)
	})
	f.with("pending and preparing runs", func(f *fixture) {
		for _, stage := range []string{stPending, stPreparing} {
			b := f.consumer(stage)
			must(f.s.SetRunStatus(f.ctx, b.run.ID, ledger.StatusChange{Status: scripthost.StatusPausedApproval}))(f.t)
			r := must(f.s.SetRunStatus(f.ctx, b.run.ID, ledger.StatusChange{Status: scripthost.StatusActive}))(f.t)
			if r.Status != scripthost.StatusActive || r.Phase != b.run.Phase {
				f.t.Errorf("%s resumed: got %s/%s", stage, r.Phase, r.Status)
			}
			f.wantEvents(b.events, scripthost.EventPending, "")
		}
	})
}

// While the mutation's outcome is unknown, the run's events stay reserved whatever
// status the run gets, and whatever else is attempted on it.
func testDispositionUnknown(f *fixture) {
	for _, stage := range outcomeStages {
		for _, st := range allStatuses {
			f.with(fmt.Sprintf("%s to %s", stage, st), func(f *fixture) {
				b := f.consumer(stage)
				r, err := f.s.SetRunStatus(f.ctx, b.run.ID, ledger.StatusChange{Status: st, Error: "x"})
				if err == nil && (r.Status != st || r.RetryFromEmitting) {
					f.t.Errorf("got %s retry-from-emitting %v, want %s without it", r.Status, r.RetryFromEmitting, st)
				}
				f.wantEvents(b.events, scripthost.EventReserved, b.run.ID)
				_, _ = f.s.SkipRun(f.ctx, b.run.ID, "guard")
				f.wantEvents(b.events, scripthost.EventReserved, b.run.ID)
				before := f.dump()
				_, err = f.s.CreateRetryRun(f.ctx, b.run.ID, ledger.RetryRun{})
				f.refused(before, err, nil)
				before = f.dump()
				_, err = f.s.SkipRun(f.ctx, b.run.ID, "guard")
				f.refused(before, err, nil)
			})
		}
	}
	f.with("outcome arrives after the run failed", func(f *fixture) {
		b := f.consumer(stInFlight)
		must(f.s.SetRunStatus(f.ctx, b.run.ID, ledger.StatusChange{Status: scripthost.StatusFailedInternal, Error: "host crashed"}))(f.t)
		must(f.s.ApplyMutation(f.ctx, b.mut.ID, json.RawMessage(`{"late":true}`)))(f.t)
		r := must(f.s.Run(f.ctx, b.run.ID))(f.t)
		if r.Phase != scripthost.RunEmitting || r.Status != scripthost.StatusActive || r.Error != "" {
			f.t.Errorf("got %s/%s %q, want emitting/active without error", r.Phase, r.Status, r.Error)
		}
		f.wantEvents(b.events, scripthost.EventReserved, b.run.ID)
	})
}

// After the mutation the events stay reserved and a stopped run retries from emitting.
func testDispositionAfter(f *fixture) {
	for _, stage := range []string{stEmitting, stParked} {
		for _, st := range stopStatuses {
			f.with(fmt.Sprintf("%s to %s", stage, st), func(f *fixture) {
				b := f.consumer(stage)
				r := must(f.s.SetRunStatus(f.ctx, b.run.ID, ledger.StatusChange{Status: st, Error: "next failed"}))(f.t)
				if r.Status != st || !r.RetryFromEmitting || r.Phase != b.run.Phase {
					f.t.Errorf("got %s/%s retry-from-emitting %v, want %s/%s marked", r.Phase, r.Status, r.RetryFromEmitting, b.run.Phase, st)
				}
				f.wantEvents(b.events, scripthost.EventReserved, b.run.ID)
				if st.Paused() {
					r = must(f.s.SetRunStatus(f.ctx, b.run.ID, ledger.StatusChange{Status: scripthost.StatusActive}))(f.t)
					if r.Status != scripthost.StatusActive {
						f.t.Errorf("resumed: got %s, want active", r.Status)
					}
					f.wantEvents(b.events, scripthost.EventReserved, b.run.ID)
				}
			})
		}
	}
}

func testSetRunStatusRefused(f *fixture) {
	cases := []struct {
		name  string
		build func(f *fixture) string
		to    scripthost.RunStatus
	}{
		{"committed run", func(f *fixture) string { return f.consumer(stCommitted).run.ID }, scripthost.StatusActive},
		{"committed run paused", func(f *fixture) string { return f.consumer(stCommitted).run.ID }, scripthost.StatusPausedTransient},
		{"skipped run", func(f *fixture) string {
			b := f.consumer(stPrepared)
			must(f.s.SkipRun(f.ctx, b.run.ID, "guard"))(f.t)
			return b.run.ID
		}, scripthost.StatusActive},
		{"failed run resumed", func(f *fixture) string { return f.finished(scripthost.MutationFailed).run.ID }, scripthost.StatusActive},
		{"failed run paused", func(f *fixture) string { return f.finished(scripthost.MutationFailed).run.ID }, scripthost.StatusPausedApproval},
		{"to committed", func(f *fixture) string { return f.consumer(stEmitting).run.ID }, scripthost.StatusCommitted},
		{"to skipped", func(f *fixture) string { return f.consumer(stPrepared).run.ID }, scripthost.StatusSkipped},
		{"to an unknown status", func(f *fixture) string { return f.consumer(stPrepared).run.ID }, "sleeping"},
		{"resume with an indeterminate mutation", func(f *fixture) string { return f.consumer(stIndeterminate).run.ID }, scripthost.StatusActive},
		{"resume a run whose mutation failed", func(f *fixture) string {
			b := f.consumer(stInFlight)
			must(f.s.FailMutation(f.ctx, b.mut.ID, scripthost.Errorf(scripthost.ClassAuth, "", "token expired")))(f.t)
			return b.run.ID
		}, scripthost.StatusActive},
		{"resume a retried run", func(f *fixture) string {
			b := f.consumer(stPrepared)
			must(f.s.SetRunStatus(f.ctx, b.run.ID, ledger.StatusChange{Status: scripthost.StatusPausedTransient}))(f.t)
			must(f.s.CreateRetryRun(f.ctx, b.run.ID, ledger.RetryRun{}))(f.t)
			return b.run.ID
		}, scripthost.StatusActive},
	}
	for _, tc := range cases {
		f.with(tc.name, func(f *fixture) {
			id := tc.build(f)
			before := f.dump()
			_, err := f.s.SetRunStatus(f.ctx, id, ledger.StatusChange{Status: tc.to})
			f.refused(before, err, nil)
		})
	}
	f.with("unknown run", func(f *fixture) {
		before := f.dump()
		_, err := f.s.SetRunStatus(f.ctx, "no-such-run", ledger.StatusChange{Status: scripthost.StatusActive})
		f.refused(before, err, ledger.ErrNotFound)
	})
}

func testSkipRun(f *fixture) {
	for _, stage := range []string{stPending, stPreparing, stPrepared, stMutating} {
		f.with("at "+stage, func(f *fixture) {
			b := f.consumer(stage)
			r := must(f.s.SkipRun(f.ctx, b.run.ID, "guard said no"))(f.t)
			if r.Status != scripthost.StatusSkipped || r.Error != "guard said no" || r.Phase != b.run.Phase {
				f.t.Errorf("got %s/%s %q, want %s/skipped with the reason", r.Phase, r.Status, r.Error, b.run.Phase)
			}
			f.wantEvents(b.events, scripthost.EventPending, "")
		})
	}
	for _, stage := range []string{stInFlight, stNeedsReconcile, stIndeterminate, stMutated, stEmitting, stCommitted} {
		f.with("refused at "+stage, func(f *fixture) {
			b := f.consumer(stage)
			before := f.dump()
			_, err := f.s.SkipRun(f.ctx, b.run.ID, "guard said no")
			f.refused(before, err, nil)
		})
	}
	f.with("refused twice", func(f *fixture) {
		b := f.consumer(stPrepared)
		must(f.s.SkipRun(f.ctx, b.run.ID, "guard"))(f.t)
		before := f.dump()
		_, err := f.s.SkipRun(f.ctx, b.run.ID, "guard")
		f.refused(before, err, nil)
	})
}
