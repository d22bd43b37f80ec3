package ledgertest

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/scripthost/scripthost"
	"github.com/scripthost/scripthost/ledger"
)

func (f *fixture) newMutation(runID, key string) ledger.NewMutation {
	return ledger.NewMutation{RunID: runID, Namespace: "Shop", Method: "ship", Params: json.RawMessage(`{"order":2}`),
		InputHash: "hash-" + key, IdempotencyKey: key}
}

func testBeginMutation(f *fixture) {
	f.with("records in_flight", func(f *fixture) {
		b := f.consumer(stMutating)
		m := must(f.s.BeginMutation(f.ctx, ledger.NewMutation{RunID: b.run.ID, Namespace: "Shop", Method: "ship",
			Params: json.RawMessage(`{"order":7}`), InputHash: "ih", IdempotencyKey: "k-1"}))(f.t)
		if m.ID == "" || m.Status != scripthost.MutationInFlight || m.RunID != b.run.ID || m.Workflow != wf ||
			m.Handler != "ship" || m.Tool() != "Shop.ship" || string(m.Params) != `{"order":7}` || m.InputHash != "ih" ||
			m.IdempotencyKey != "k-1" || m.CreatedAt.IsZero() {
			f.t.Errorf("got %+v, want an in_flight mutation of the run", m)
		}
		got := must(f.s.RunMutation(f.ctx, b.run.ID))(f.t)
		if mustJSON(f.t, got) != mustJSON(f.t, m) {
			f.t.Errorf("read back: got %s, want %s", mustJSON(f.t, got), mustJSON(f.t, m))
		}
		if r := must(f.s.Run(f.ctx, b.run.ID))(f.t); r.Phase != scripthost.RunMutating || r.Status != scripthost.StatusActive {
			f.t.Errorf("run: got %s/%s, want mutating/active", r.Phase, r.Status)
		}
		f.wantEvents(b.events, scripthost.EventReserved, b.run.ID)
	})
	for _, stage := range []string{stPending, stPreparing, stPrepared, stMutated, stEmitting, stCommitted} {
		f.with("refused at "+stage, func(f *fixture) {
			b := f.consumer(stage)
			before := f.dump()
			_, err := f.s.BeginMutation(f.ctx, f.newMutation(b.run.ID, fmt.Sprintf("fresh-%d", f.next())))
			f.refused(before, err, nil)
		})
	}
	for _, st := range []scripthost.RunStatus{scripthost.StatusPausedTransient, scripthost.StatusFailedInternal} {
		f.with("refused when "+string(st), func(f *fixture) {
			b := f.consumer(stMutating)
			must(f.s.SetRunStatus(f.ctx, b.run.ID, ledger.StatusChange{Status: st}))(f.t)
			before := f.dump()
			_, err := f.s.BeginMutation(f.ctx, f.newMutation(b.run.ID, fmt.Sprintf("fresh-%d", f.next())))
			f.refused(before, err, nil)
		})
	}
	f.with("second mutation", func(f *fixture) {
		b := f.consumer(stInFlight)
		before := f.dump()
		_, err := f.s.BeginMutation(f.ctx, f.newMutation(b.run.ID, fmt.Sprintf("fresh-%d", f.next())))
		f.refused(before, err, ledger.ErrMutationExists)
	})
	f.with("duplicate key", func(f *fixture) {
		a := f.consumer(stInFlight)
		b := f.consumer(stMutating)
		before := f.dump()
		_, err := f.s.BeginMutation(f.ctx, f.newMutation(b.run.ID, a.key))
		f.refused(before, err, ledger.ErrDuplicateKey)
		_, err = f.s.BeginMutation(f.ctx, f.newMutation("", a.key))
		f.refused(before, err, ledger.ErrDuplicateKey)
	})
	f.with("unknown run", func(f *fixture) {
		before := f.dump()
		_, err := f.s.BeginMutation(f.ctx, f.newMutation("no-such-run", "k"))
		f.refused(before, err, ledger.ErrNotFound)
	})
	f.with("unknown mutation", func(f *fixture) {
		before := f.dump()
		for name, err := range map[string]error{
			"Mutation":           second(f.s.Mutation(f.ctx, "nope")),
			"RunMutation":        second(f.s.RunMutation(f.ctx, "nope")),
			"ApplyMutation":      second(f.s.ApplyMutation(f.ctx, "nope", nil)),
			"FailMutation":       second(f.s.FailMutation(f.ctx, "nope", scripthost.LogicError("x"))),
			"MarkNeedsReconcile": second(f.s.MarkNeedsReconcile(f.ctx, "nope", 1, f.farFuture(), "x")),
			"MarkIndeterminate":  second(f.s.MarkIndeterminate(f.ctx, "nope", "x")),
			"Resolve":            second(f.s.Resolve(f.ctx, "nope", ledger.Resolution{As: scripthost.MutationApplied, By: "ops"})),
		} {
			if !strings.Contains(fmt.Sprint(err), "nope") || !isNotFound(err) {
				f.t.Errorf("%s: got %v, want ErrNotFound naming the id", name, err)
			}
		}
		f.unchanged(before)
	})
}

// outcomeStages are the stages whose mutation outcome is not known yet.
var outcomeStages = []string{stInFlight, stNeedsReconcile, stIndeterminate}

// finished builds a run whose mutation reached a final status.
func (f *fixture) finished(status scripthost.MutationStatus) built {
	f.t.Helper()
	b := f.consumer(stInFlight)
	switch status {
	case scripthost.MutationApplied:
		must(f.s.ApplyMutation(f.ctx, b.mut.ID, json.RawMessage(`1`)))(f.t)
	case scripthost.MutationFailed:
		must(f.s.FailMutation(f.ctx, b.mut.ID, scripthost.LogicError("refused")))(f.t)
	case scripthost.MutationSkipped:
		must(f.s.MarkIndeterminate(f.ctx, b.mut.ID, "?"))(f.t)
		must(f.s.Resolve(f.ctx, b.mut.ID, ledger.Resolution{As: scripthost.MutationSkipped, By: "ops"}))(f.t)
	}
	b.mut = must(f.s.Mutation(f.ctx, b.mut.ID))(f.t)
	b.run = must(f.s.Run(f.ctx, b.run.ID))(f.t)
	return b
}

var finalMutationStatuses = []scripthost.MutationStatus{scripthost.MutationApplied, scripthost.MutationFailed, scripthost.MutationSkipped}

func testApplyMutation(f *fixture) {
	for _, stage := range outcomeStages {
		f.with("from "+stage, func(f *fixture) {
			b := f.consumer(stage)
			m := must(f.s.ApplyMutation(f.ctx, b.mut.ID, json.RawMessage(`{"tracking":"T1"}`)))(f.t)
			if m.Status != scripthost.MutationApplied || string(m.Result) != `{"tracking":"T1"}` {
				f.t.Errorf("got %s %s, want applied with the result", m.Status, m.Result)
			}
			r := must(f.s.Run(f.ctx, b.run.ID))(f.t)
			if r.Phase != scripthost.RunEmitting || r.Status != scripthost.StatusActive || r.Outcome == nil ||
				r.Outcome.Status != scripthost.OutcomeApplied || string(r.Outcome.Result) != `{"tracking":"T1"}` {
				f.t.Errorf("run: got %s/%s outcome %+v, want emitting/active with the applied result", r.Phase, r.Status, r.Outcome)
			}
			f.wantEvents(b.events, scripthost.EventReserved, b.run.ID)
		})
	}
	for _, st := range finalMutationStatuses {
		f.with("refused from "+string(st), func(f *fixture) {
			b := f.finished(st)
			before := f.dump()
			_, err := f.s.ApplyMutation(f.ctx, b.mut.ID, json.RawMessage(`2`))
			f.refused(before, err, nil)
		})
	}
}

func testFailMutation(f *fixture) {
	classes := []scripthost.ErrorClass{scripthost.ClassLogic, scripthost.ClassAuth, scripthost.ClassPermission,
		scripthost.ClassNetwork, scripthost.ClassInternal}
	for _, stage := range outcomeStages {
		for _, class := range classes {
			f.with(fmt.Sprintf("from %s with %s", stage, class), func(f *fixture) {
				b := f.consumer(stage)
				cause := scripthost.Errorf(class, "", "service said no")
				m := must(f.s.FailMutation(f.ctx, b.mut.ID, cause))(f.t)
				if m.Status != scripthost.MutationFailed || m.ErrorClass != class || !strings.Contains(m.Error, "service said no") {
					f.t.Errorf("got %s %s %q, want failed with the cause", m.Status, m.ErrorClass, m.Error)
				}
				r := must(f.s.Run(f.ctx, b.run.ID))(f.t)
				if want := class.Info().Status; r.Status != want || r.ErrorClass != class || !strings.Contains(r.Error, "service said no") {
					f.t.Errorf("run: got %s %s %q, want %s with the cause", r.Status, r.ErrorClass, r.Error, want)
				}
				f.wantEvents(b.events, scripthost.EventPending, "")
				if n := must(f.s.FailureCount(f.ctx, b.mut.InputHash))(f.t); n != 1 {
					f.t.Errorf("failure count: got %d, want 1", n)
				}
			})
		}
	}
	for _, st := range finalMutationStatuses {
		f.with("refused from "+string(st), func(f *fixture) {
			b := f.finished(st)
			before := f.dump()
			_, err := f.s.FailMutation(f.ctx, b.mut.ID, scripthost.LogicError("late"))
			f.refused(before, err, nil)
		})
	}
}

func testFailMutationToNext(f *fixture) {
	for _, release := range []bool{false, true} {
		f.with(fmt.Sprintf("release %v", release), func(f *fixture) {
			b := f.consumer(stInFlight)
			cause := scripthost.Errorf(scripthost.ClassLogic, "card_declined", "card declined")
			m := must(f.s.FailMutationToNext(f.ctx, b.mut.ID, cause, release))(f.t)
			if m.Status != scripthost.MutationFailed || m.ErrorClass != scripthost.ClassLogic {
				f.t.Errorf("got %s %s, want failed logic", m.Status, m.ErrorClass)
			}
			r := must(f.s.Run(f.ctx, b.run.ID))(f.t)
			want := scripthost.Outcome{Status: scripthost.OutcomeFailed,
				Error: &scripthost.OutcomeError{Class: scripthost.ClassLogic, Code: "card_declined", Message: "card declined"}}
			if r.Phase != scripthost.RunEmitting || r.Status != scripthost.StatusActive || r.Outcome == nil ||
				r.Outcome.Status != want.Status || r.Outcome.Error == nil || *r.Outcome.Error != *want.Error {
				f.t.Fatalf("run: got %s/%s outcome %+v, want emitting/active with %+v", r.Phase, r.Status, r.Outcome, want)
			}
			if release {
				f.wantEvents(b.events, scripthost.EventPending, "")
			} else {
				f.wantEvents(b.events, scripthost.EventReserved, b.run.ID)
			}
			if n := must(f.s.FailureCount(f.ctx, b.mut.InputHash))(f.t); n != 1 {
				f.t.Errorf("failure count: got %d, want 1", n)
			}
			// next runs and commits; only the events still reserved are consumed.
			must(f.s.CommitConsumer(f.ctx, b.run.ID, ledger.Commit{State: json.RawMessage(`{}`)}))(f.t)
			if release {
				f.wantEvents(b.events, scripthost.EventPending, "")
			} else {
				f.wantEvents(b.events, scripthost.EventConsumed, b.run.ID)
			}
		})
	}
	for _, st := range finalMutationStatuses {
		f.with("refused from "+string(st), func(f *fixture) {
			b := f.finished(st)
			before := f.dump()
			_, err := f.s.FailMutationToNext(f.ctx, b.mut.ID, scripthost.LogicError("late"), false)
			f.refused(before, err, nil)
		})
	}
}

func testMarkNeedsReconcile(f *fixture) {
	for _, stage := range []string{stInFlight, stNeedsReconcile} {
		f.with("from "+stage, func(f *fixture) {
			b := f.consumer(stage)
			next := f.farFuture().AddDate(0, 0, 1)
			m := must(f.s.MarkNeedsReconcile(f.ctx, b.mut.ID, 3, next, "still unknown"))(f.t)
			got := must(f.s.Mutation(f.ctx, b.mut.ID))(f.t)
			for _, x := range []scripthost.Mutation{m, got} {
				if x.Status != scripthost.MutationNeedsReconcile || x.ReconcileAttempts != 3 || !x.NextReconcileAt.Equal(next) || x.Error != "still unknown" {
					f.t.Errorf("got %s attempts %d next %v %q, want needs_reconcile 3 %v", x.Status, x.ReconcileAttempts, x.NextReconcileAt, x.Error, next)
				}
			}
			// The run waits for the next attempt, visibly: paused for reconciliation,
			// with the reason and the time of the next attempt.
			if r := must(f.s.Run(f.ctx, b.run.ID))(f.t); r.Status != scripthost.StatusPausedReconciliation ||
				r.Phase != scripthost.RunMutating || !r.NotBefore.Equal(next) || r.Error != "still unknown" {
				f.t.Errorf("run: got %s/%s not before %v %q, want mutating/paused:reconciliation not before %v with the reason",
					r.Phase, r.Status, r.NotBefore, r.Error, next)
			}
			f.wantEvents(b.events, scripthost.EventReserved, b.run.ID)
		})
	}
	for _, st := range append([]scripthost.MutationStatus{scripthost.MutationIndeterminate}, finalMutationStatuses...) {
		f.with("refused from "+string(st), func(f *fixture) {
			var b built
			if st == scripthost.MutationIndeterminate {
				b = f.consumer(stIndeterminate)
			} else {
				b = f.finished(st)
			}
			before := f.dump()
			_, err := f.s.MarkNeedsReconcile(f.ctx, b.mut.ID, 9, f.farFuture(), "again")
			f.refused(before, err, nil)
		})
	}
}

func testMarkIndeterminate(f *fixture) {
	for _, stage := range []string{stInFlight, stNeedsReconcile} {
		f.with("from "+stage, func(f *fixture) {
			b := f.consumer(stage)
			m := must(f.s.MarkIndeterminate(f.ctx, b.mut.ID, "retries exhausted"))(f.t)
			if m.Status != scripthost.MutationIndeterminate {
				f.t.Errorf("got %s, want indeterminate", m.Status)
			}
			r := must(f.s.Run(f.ctx, b.run.ID))(f.t)
			if r.Status != scripthost.StatusPausedReconciliation || r.Phase != scripthost.RunMutating {
				f.t.Errorf("run: got %s/%s, want mutating/paused:reconciliation", r.Phase, r.Status)
			}
			f.wantEvents(b.events, scripthost.EventReserved, b.run.ID)
		})
	}
	for _, st := range append([]scripthost.MutationStatus{scripthost.MutationIndeterminate}, finalMutationStatuses...) {
		f.with("refused from "+string(st), func(f *fixture) {
			var b built
			if st == scripthost.MutationIndeterminate {
				b = f.consumer(stIndeterminate)
			} else {
				b = f.finished(st)
			}
			before := f.dump()
			_, err := f.s.MarkIndeterminate(f.ctx, b.mut.ID, "again")
			f.refused(before, err, nil)
		})
	}
}

func testPlanStepMutation(f *fixture) {
	keys := []string{"plan/p1/e1/s1", "plan/p1/e1/s2", "plan/p1/e1/s3"}
	var ms []scripthost.Mutation
	for _, k := range keys {
		m := must(f.s.BeginMutation(f.ctx, ledger.NewMutation{Namespace: "Cmd", Method: "run", Params: json.RawMessage(`{}`),
			InputHash: "h-" + k, IdempotencyKey: k}))(f.t)
		if m.RunID != "" || m.Status != scripthost.MutationInFlight {
			f.t.Fatalf("got %+v, want an in_flight mutation without a run", m)
		}
		ms = append(ms, m)
	}
	must(f.s.ApplyMutation(f.ctx, ms[0].ID, json.RawMessage(`{"exit":0}`)))(f.t)
	must(f.s.FailMutation(f.ctx, ms[1].ID, scripthost.LogicError("exit 1")))(f.t)
	must(f.s.MarkIndeterminate(f.ctx, ms[2].ID, "killed"))(f.t)
	m := must(f.s.Resolve(f.ctx, ms[2].ID, ledger.Resolution{As: scripthost.MutationApplied, Result: json.RawMessage(`{"exit":0}`), By: "ops"}))(f.t)
	if m.Status != scripthost.MutationApplied || m.ResolvedBy != "ops" {
		f.t.Errorf("got %s by %q, want applied by ops", m.Status, m.ResolvedBy)
	}
	if runs := must(f.s.Runs(f.ctx, ledger.RunFilter{}))(f.t); len(runs) != 0 {
		f.t.Errorf("got %d runs, want none", len(runs))
	}
	if got := must(f.s.Mutations(f.ctx, ledger.MutationFilter{Status: scripthost.MutationApplied}))(f.t); len(got) != 2 {
		f.t.Errorf("applied: got %d, want 2", len(got))
	}
}

func isNotFound(err error) bool { return errors.Is(err, ledger.ErrNotFound) }
