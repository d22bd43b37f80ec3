package runtime_test

import (
	"database/sql"
	"encoding/json"
	"testing"

	"github.com/scripthost/scripthost"
	"github.com/scripthost/scripthost/ledger"
)

// TestResumeFromEveryPhase leaves a consumer run in each phase, as a crash would, then
// starts a fresh runtime on the same ledger file: the run must finish from where it
// was, and the mutation must have been applied exactly once overall.
func TestResumeFromEveryPhase(t *testing.T) {
	steps := []struct {
		name string
		// upto moves a fresh run as far as the crash left it and reports whether the
		// mutation already happened (applied by the "previous process").
		upto    func(h *harness, run scripthost.Run) bool
		applies int // applies the restarted process must make
	}{
		{"pending", func(h *harness, run scripthost.Run) bool { return false }, 1},
		{"preparing", func(h *harness, run scripthost.Run) bool {
			h.must(h.store.AdvancePhase(h.ctx, run.ID, scripthost.RunPending, scripthost.RunPreparing))
			return false
		}, 1},
		{"prepared", func(h *harness, run scripthost.Run) bool {
			h.prepare(run)
			return false
		}, 1},
		{"mutating before the call", func(h *harness, run scripthost.Run) bool {
			h.prepare(run)
			h.must(h.store.AdvancePhase(h.ctx, run.ID, scripthost.RunPrepared, scripthost.RunMutating))
			return false
		}, 1},
		{"mutating with the call in flight", func(h *harness, run scripthost.Run) bool {
			h.prepare(run)
			h.must(h.store.AdvancePhase(h.ctx, run.ID, scripthost.RunPrepared, scripthost.RunMutating))
			h.begin(run)
			// The service did apply it; its reconciler will say so.
			h.svc.reconcile = &scripthost.Reconciliation{Outcome: scripthost.ReconcileApplied, Result: json.RawMessage(`{"ok":true,"n":1}`)}
			return true
		}, 0},
		{"mutated, as older versions left it", func(h *harness, run scripthost.Run) bool {
			h.prepare(run)
			h.must(h.store.AdvancePhase(h.ctx, run.ID, scripthost.RunPrepared, scripthost.RunMutating))
			m := h.begin(run)
			if _, err := h.store.ApplyMutation(h.ctx, m.ID, json.RawMessage(`{"ok":true,"n":1}`)); err != nil {
				h.t.Fatal(err)
			}
			h.park(run.ID)
			return true
		}, 0},
		{"emitting", func(h *harness, run scripthost.Run) bool {
			h.prepare(run)
			h.must(h.store.AdvancePhase(h.ctx, run.ID, scripthost.RunPrepared, scripthost.RunMutating))
			m := h.begin(run)
			// The outcome moves the run on through mutated to emitting.
			if _, err := h.store.ApplyMutation(h.ctx, m.ID, json.RawMessage(`{"ok":true,"n":1}`)); err != nil {
				h.t.Fatal(err)
			}
			return true
		}, 0},
	}
	for _, st := range steps {
		t.Run(st.name, func(t *testing.T) {
			h := newHarness(t)
			h.load("orders", orders)
			h.publish("orders", "orders", "a")
			v, err := h.store.Workflow(h.ctx, "orders")
			if err != nil {
				t.Fatal(err)
			}
			run, err := h.store.CreateRun(h.ctx, ledger.NewRun{Workflow: "orders", Version: v.LatestVersion, Handler: "ship", Kind: scripthost.KindConsumer})
			if err != nil {
				t.Fatal(err)
			}
			st.upto(h, run)

			h.restart()
			h.runOnce("orders")

			if got := h.svc.count(); got != st.applies {
				t.Errorf("applies after the restart: got %d, want %d", got, st.applies)
			}
			got, err := h.store.Run(h.ctx, run.ID)
			if err != nil {
				t.Fatal(err)
			}
			if got.Status != scripthost.StatusCommitted {
				t.Fatalf("run: got %s/%s (%s), want committed", got.Phase, got.Status, got.Error)
			}
			if got.Outcome == nil || got.Outcome.Status != scripthost.OutcomeApplied {
				t.Errorf("outcome: got %+v, want applied", got.Outcome)
			}
			if ev := h.events("orders", "orders")["a"]; ev != scripthost.EventConsumed {
				t.Errorf("event: got %s, want consumed", ev)
			}
			if ship := h.runsOf("orders", "ship"); len(ship) != 1 {
				t.Errorf("ship runs: got %d, want the one resumed run", len(ship))
			}
			if got, want := h.state("orders", "ship"), `{"count":1,"last":"applied"}`; got != want {
				t.Errorf("state: got %s, want %s", got, want)
			}
		})
	}
}

// park puts a run back in phase mutated, where versions that did not move a run on
// to emitting with its outcome left it, through a connection of its own.
func (h *harness) park(runID string) {
	h.t.Helper()
	db, err := sql.Open("sqlite3", h.db)
	if err != nil {
		h.t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.ExecContext(h.ctx, `UPDATE runs SET phase = 'mutated' WHERE id = ?`, runID); err != nil {
		h.t.Fatal(err)
	}
	if r, err := h.store.Run(h.ctx, runID); err != nil || r.Phase != scripthost.RunMutated {
		h.t.Fatalf("parked run: got %s (%v), want phase mutated", r.Phase, err)
	}
}

func (h *harness) must(_ scripthost.Run, err error) {
	h.t.Helper()
	if err != nil {
		h.t.Fatal(err)
	}
}

// prepare moves a pending run through prepare the way the ship handler would.
func (h *harness) prepare(run scripthost.Run) {
	h.t.Helper()
	h.must(h.store.AdvancePhase(h.ctx, run.ID, scripthost.RunPending, scripthost.RunPreparing))
	h.must(h.store.MarkPrepared(h.ctx, run.ID, ledger.PrepareResult{
		Data:         json.RawMessage(`{"id":"a","seen":0}`),
		Reservations: []scripthost.Reservation{{Topic: "orders", IDs: []string{"a"}}},
	}))
}

// begin records the ship handler's mutation in flight, with the key the wrapper would
// derive.
func (h *harness) begin(run scripthost.Run) scripthost.Mutation {
	h.t.Helper()
	params := []byte(`{"value":"a"}`)
	hash := scripthost.InputHash(scripthost.KeyInput{Workflow: "orders", Handler: "ship", Events: []string{"orders/a"},
		Namespace: "Svc", Method: "apply", Params: params, Scope: run.ID})
	m, err := h.store.BeginMutation(h.ctx, ledger.NewMutation{RunID: run.ID, Workflow: "orders", Handler: "ship",
		Namespace: "Svc", Method: "apply", Params: params, InputHash: hash, IdempotencyKey: scripthost.IdempotencyKey(hash, 0)})
	if err != nil {
		h.t.Fatal(err)
	}
	return m
}
