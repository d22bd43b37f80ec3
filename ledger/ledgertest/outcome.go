package ledgertest

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/scripthost/scripthost"
	"github.com/scripthost/scripthost/ledger"
)

// testOutcomeMovesOn: every transition that records the mutate phase's outcome moves
// the run on through mutated to emitting in its transaction, leaving what the two
// separate transitions left: a snapshot of each phase, the caller's events and then
// phase_started(next), and the run ledger.OutcomeRecorded describes.
func testOutcomeMovesOn(f *fixture) {
	attached := ledger.LifecycleEvent{Type: "attached_for_test"}
	cause := &scripthost.Error{Class: scripthost.ClassLogic, Code: "card_declined", Message: "card declined"}
	for _, tc := range []struct {
		name    string
		stage   string
		outcome string
		move    func(f *fixture, b built) error
	}{
		{"applied", stInFlight, scripthost.OutcomeApplied, func(f *fixture, b built) error {
			_, err := f.s.ApplyMutation(ledger.WithEvents(f.ctx, attached), b.mut.ID, json.RawMessage(`{"tracking":"T1"}`))
			return err
		}},
		{"applied by a late reconcile", stNeedsReconcile, scripthost.OutcomeApplied, func(f *fixture, b built) error {
			_, err := f.s.ApplyMutation(ledger.WithEvents(f.ctx, attached), b.mut.ID, json.RawMessage(`{"tracking":"T2"}`))
			return err
		}},
		{"no mutation", stMutating, scripthost.OutcomeNone, func(f *fixture, b built) error {
			r, err := f.s.MarkMutated(ledger.WithEvents(f.ctx, attached), b.run.ID)
			if err == nil && mustJSON(f.t, r) != mustJSON(f.t, must(f.s.Run(f.ctx, b.run.ID))(f.t)) {
				f.t.Errorf("MarkMutated returned %s, want the run as stored", mustJSON(f.t, r))
			}
			return err
		}},
		{"failed, on to next", stInFlight, scripthost.OutcomeFailed, func(f *fixture, b built) error {
			_, err := f.s.FailMutationToNext(ledger.WithEvents(f.ctx, attached), b.mut.ID, cause, false)
			return err
		}},
		{"resolved as applied", stIndeterminate, scripthost.OutcomeApplied, func(f *fixture, b built) error {
			_, err := f.s.Resolve(ledger.WithEvents(f.ctx, attached), b.mut.ID,
				ledger.Resolution{As: scripthost.MutationApplied, Result: json.RawMessage(`{"by":"hand"}`), By: "alice"})
			return err
		}},
		{"resolved as skipped", stIndeterminate, scripthost.OutcomeSkipped, func(f *fixture, b built) error {
			_, err := f.s.Resolve(ledger.WithEvents(f.ctx, attached), b.mut.ID, ledger.Resolution{As: scripthost.MutationSkipped, By: "alice"})
			return err
		}},
	} {
		f.with(tc.name, func(f *fixture) {
			b := f.consumer(tc.stage)
			n := len(must(f.s.Snapshots(f.ctx, b.run.ID))(f.t))
			if err := tc.move(f, b); err != nil {
				f.t.Fatalf("unexpected error: %v", err)
			}
			r := must(f.s.Run(f.ctx, b.run.ID))(f.t)
			if r.Phase != scripthost.RunEmitting || r.Status != scripthost.StatusActive || r.Outcome == nil || r.Outcome.Status != tc.outcome {
				f.t.Fatalf("run: got %s/%s outcome %+v, want emitting/active with outcome %s", r.Phase, r.Status, r.Outcome, tc.outcome)
			}
			if want := ledger.OutcomeRecorded(b.run, *r.Outcome, r.UpdatedAt); mustJSON(f.t, r) != mustJSON(f.t, want) {
				f.t.Errorf("run:\n got %s\nwant %s (ledger.OutcomeRecorded)", mustJSON(f.t, r), mustJSON(f.t, want))
			}
			snaps := must(f.s.Snapshots(f.ctx, b.run.ID))(f.t)
			if len(snaps) != n+2 {
				f.t.Fatalf("got %d snapshots, want %d (mutated and emitting added)", len(snaps), n+2)
			}
			mutated := r
			mutated.Phase = scripthost.RunMutated
			if got := snaps[n]; got.Phase != scripthost.RunMutated || string(got.Run) != mustJSON(f.t, mutated) {
				f.t.Errorf("snapshot %d: got %s %s, want mutated %s", n+1, got.Phase, got.Run, mustJSON(f.t, mutated))
			}
			if got := snaps[n+1]; got.Phase != scripthost.RunEmitting || string(got.Run) != mustJSON(f.t, r) {
				f.t.Errorf("snapshot %d: got %s %s, want emitting %s", n+2, got.Phase, got.Run, mustJSON(f.t, r))
			}
			evs := must(f.s.LifecycleEvents(f.ctx, ledger.LifecycleFilter{RunID: b.run.ID}))(f.t)
			if len(evs) < 2 {
				f.t.Fatalf("got %d lifecycle events, want the attached one and phase_started", len(evs))
			}
			last := evs[len(evs)-2:]
			if last[0].Type != attached.Type || last[1].Type != ledger.EventPhaseStarted || string(last[1].Data) != `{"attempt":1,"phase":"next"}` ||
				last[1].RunID != b.run.ID || !last[1].At.Equal(last[0].At) {
				f.t.Errorf("lifecycle events: got %+v, want %s then phase_started(next) in one transaction", last, attached.Type)
			}
			// next runs and commits from here.
			must(f.s.CommitConsumer(f.ctx, b.run.ID, ledger.Commit{State: json.RawMessage(`{}`)}))(f.t)
		})
	}
	f.with("a run parked at mutated still moves on", func(f *fixture) {
		b := f.consumer(stParked)
		r := must(f.s.AdvancePhase(f.ctx, b.run.ID, scripthost.RunMutated, scripthost.RunEmitting))(f.t)
		if r.Phase != scripthost.RunEmitting || r.Outcome == nil || r.Outcome.Status != scripthost.OutcomeApplied {
			f.t.Fatalf("got %s %+v, want emitting with the applied outcome", r.Phase, r.Outcome)
		}
		must(f.s.CommitConsumer(f.ctx, b.run.ID, ledger.Commit{State: json.RawMessage(`{}`)}))(f.t)
		f.wantEvents(b.events, scripthost.EventConsumed, b.run.ID)
	})
}

// testDerivedKey: BeginMutation without an idempotency key derives it from the input
// hash and the count of definite failures of that hash, both read in its own
// transaction, and logs it with the mutation.
func testDerivedKey(f *fixture) {
	begin := func(f *fixture, runID, hash string) (scripthost.Mutation, error) {
		return f.s.BeginMutation(f.ctx, ledger.NewMutation{RunID: runID, Workflow: wf, Handler: "ship",
			Namespace: "Shop", Method: "ship", Params: json.RawMessage(`{}`), InputHash: hash})
	}
	f.with("from the failures of the inputs", func(f *fixture) {
		hash := fmt.Sprintf("derived-%d", f.next())
		for i := range 3 {
			b := f.consumer(stMutating)
			m := must(begin(f, b.run.ID, hash))(f.t)
			want := scripthost.IdempotencyKey(hash, i)
			if m.IdempotencyKey != want || must(f.s.Mutation(f.ctx, m.ID))(f.t).IdempotencyKey != want {
				f.t.Fatalf("attempt %d: got key %s, want %s (%d earlier failures)", i+1, m.IdempotencyKey, want, i)
			}
			evs := must(f.s.LifecycleEvents(f.ctx, ledger.LifecycleFilter{RunID: b.run.ID}))(f.t)
			if len(evs) != 1 || evs[0].Type != ledger.EventMutationRecorded || evs[0].MutationID != m.ID ||
				string(evs[0].Data) != `{"idempotency_key":"`+want+`","tool":"Shop.ship"}` {
				f.t.Errorf("attempt %d: lifecycle events %+v, want mutation_recorded with the key", i+1, evs)
			}
			must(f.s.FailMutation(f.ctx, m.ID, scripthost.LogicError("declined")))(f.t)
		}
		if n := must(f.s.FailureCount(f.ctx, hash))(f.t); n != 3 {
			f.t.Errorf("failure count: got %d, want 3", n)
		}
	})
	f.with("an unknown outcome keeps the key", func(f *fixture) {
		hash := fmt.Sprintf("derived-%d", f.next())
		first := must(begin(f, f.consumer(stMutating).run.ID, hash))(f.t)
		b := f.consumer(stMutating)
		before := f.dump()
		_, err := begin(f, b.run.ID, hash)
		f.refused(before, err, ledger.ErrDuplicateKey)
		must(f.s.ApplyMutation(f.ctx, first.ID, json.RawMessage(`{}`)))(f.t)
		// Applied is not a failure: the same inputs still name the same mutation.
		before = f.dump()
		_, err = begin(f, b.run.ID, hash)
		f.refused(before, err, ledger.ErrDuplicateKey)
	})
	f.with("a given key is kept", func(f *fixture) {
		b := f.consumer(stMutating)
		m := must(f.s.BeginMutation(f.ctx, ledger.NewMutation{RunID: b.run.ID, Namespace: "Shop", Method: "ship",
			Params: json.RawMessage(`{}`), InputHash: "h", IdempotencyKey: b.key}))(f.t)
		if m.IdempotencyKey != b.key {
			f.t.Errorf("got key %s, want %s", m.IdempotencyKey, b.key)
		}
	})
	f.with("outside a run", func(f *fixture) {
		hash := fmt.Sprintf("derived-%d", f.next())
		m := must(begin(f, "", hash))(f.t)
		if m.IdempotencyKey != scripthost.IdempotencyKey(hash, 0) || m.RunID != "" {
			f.t.Errorf("got %+v, want the derived key and no run", m)
		}
	})
	f.with("neither key nor input hash", func(f *fixture) {
		b := f.consumer(stMutating)
		before := f.dump()
		_, err := begin(f, b.run.ID, "")
		if err == nil || !strings.Contains(err.Error(), "input hash") {
			f.t.Fatalf("got %v, want an error naming the missing input hash", err)
		}
		f.unchanged(before)
	})
}
