package runtime_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"testing"

	"github.com/scripthost/scripthost"
	"github.com/scripthost/scripthost/ledger"
)

// An operator cancels a run while its mutation is in flight: the ledger only notes
// the request; the write of the outcome when the tool returns cancels the run, with
// its event consumed, and the next phase that runs after it keeps nothing (its commit
// is refused: no state, no publication). Running again applies nothing twice and
// publishes nothing.
func TestCancelWhileMutationInFlight(t *testing.T) {
	h := newHarness(t)
	h.load("shop", orders)
	h.publish("shop", "orders", "o1")
	var asked scripthost.Run
	h.svc.during = func(ctx context.Context) {
		for _, r := range h.runsOf("shop", "ship") {
			if r.Phase == scripthost.RunMutating {
				var err error
				if asked, err = h.store.CancelRun(context.Background(), r.ID, ledger.Cancel{By: "alice", Reason: "stop"}); err != nil {
					t.Errorf("cancel: %v", err)
				}
			}
		}
	}
	h.runOnce("shop")
	h.svc.during = nil
	if asked.ID == "" || asked.Status != scripthost.StatusActive {
		t.Fatalf("cancel during the call: got run %q %s, want the run left active", asked.ID, asked.Status)
	}
	run, err := h.store.Run(h.ctx, asked.ID)
	if err != nil {
		t.Fatal(err)
	}
	if run.Status != scripthost.StatusCancelled || run.Error != "cancelled by alice: stop" {
		t.Fatalf("run: got %s %q, want cancelled by alice", run.Status, run.Error)
	}
	m, err := h.store.RunMutation(h.ctx, run.ID)
	if err != nil || m.Status != scripthost.MutationApplied {
		t.Fatalf("mutation: got %s, %v, want applied", m.Status, err)
	}
	var types []ledger.EventType
	evs, err := h.store.LifecycleEvents(h.ctx, ledger.LifecycleFilter{RunID: run.ID})
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range evs {
		switch e.Type {
		case ledger.EventCancelRequested, ledger.EventMutationOutcome, ledger.EventCancelled, ledger.EventCommitted:
			types = append(types, e.Type)
		}
	}
	want := []ledger.EventType{ledger.EventCancelRequested, ledger.EventMutationOutcome, ledger.EventCancelled}
	if len(types) != len(want) || types[0] != want[0] || types[1] != want[1] || types[2] != want[2] {
		t.Errorf("lifecycle: got %v, want %v", types, want)
	}
	h.runOnce("shop")
	h.runOnce("shop")
	if n := h.svc.count(); n != 1 {
		t.Errorf("applied %d times, want once", n)
	}
	if st := h.events("shop", "orders")["o1"]; st != scripthost.EventConsumed {
		t.Errorf("event o1: got %s, want consumed", st)
	}
	if got := h.events("shop", "shipped"); len(got) != 0 {
		t.Errorf("shipped: got %v, want nothing published by a cancelled run", got)
	}
	if got := h.state("shop", "ship"); got != "" {
		t.Errorf("state: got %s, want none kept of the cancelled run's next phase", got)
	}
}

// A run an older version left at emitting with a cancel request logged while its
// outcome was unknown (that version's transitions left the request to the runtime) is
// still cancelled by the runtime before its next phase, with its event consumed.
func TestCancelRequestLeftByOlderVersion(t *testing.T) {
	h := newHarness(t)
	h.load("orders", orders)
	h.publish("orders", "orders", "a")
	run, err := h.store.CreateRun(h.ctx, ledger.NewRun{Workflow: "orders", Version: 1, Handler: "ship", Kind: scripthost.KindConsumer})
	if err != nil {
		t.Fatal(err)
	}
	h.prepare(run)
	h.must(h.store.AdvancePhase(h.ctx, run.ID, scripthost.RunPrepared, scripthost.RunMutating))
	m := h.begin(run)
	if _, err := h.store.ApplyMutation(h.ctx, m.ID, json.RawMessage(`{"ok":true,"n":1}`)); err != nil {
		t.Fatal(err)
	}
	h.logRequest(run.ID, `{"by":"dave","reason":"duplicate"}`)

	h.restart()
	h.runOnce("orders")
	got, err := h.store.Run(h.ctx, run.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.Status != scripthost.StatusCancelled || got.Phase != scripthost.RunEmitting || got.Error != "cancelled by dave: duplicate" {
		t.Fatalf("run: got %s/%s %q, want emitting/cancelled by dave", got.Phase, got.Status, got.Error)
	}
	if st := h.events("orders", "orders")["a"]; st != scripthost.EventConsumed {
		t.Errorf("event a: got %s, want consumed", st)
	}
	if got := h.events("orders", "shipped"); len(got) != 0 {
		t.Errorf("shipped: got %v, want nothing published by a cancelled run", got)
	}
	if got := h.state("orders", "ship"); got != "" {
		t.Errorf("state: got %s, want none", got)
	}
	if n := h.svc.count(); n != 0 {
		t.Errorf("applied %d times by the runtime, want none (the mutation was applied before)", n)
	}
}

// logRequest appends a cancel_requested event with data to a run's lifecycle log
// through a connection of its own, as a version that kept the request only there
// logged it.
func (h *harness) logRequest(runID, data string) {
	h.t.Helper()
	db, err := sql.Open("sqlite3", h.db)
	if err != nil {
		h.t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.ExecContext(h.ctx, `INSERT INTO lifecycle_events (run_id, type, data, at) VALUES (?, 'cancel_requested', ?, 1)`,
		runID, data); err != nil {
		h.t.Fatal(err)
	}
}

// A run cancelled before its mutation releases its event: the next run takes it and
// applies it once.
func TestCancelBeforeMutation(t *testing.T) {
	h := newHarness(t)
	h.load("shop", orders)
	h.publish("shop", "orders", "o1")
	// A run cancelled while pending, before any step ran.
	run, err := h.store.CreateRun(h.ctx, ledger.NewRun{Workflow: "shop", Version: 1, Handler: "ship", Kind: scripthost.KindConsumer})
	if err != nil {
		t.Fatal(err)
	}
	r, err := h.store.CancelRun(h.ctx, run.ID, ledger.Cancel{By: "bob"})
	if err != nil || r.Status != scripthost.StatusCancelled {
		t.Fatalf("cancel: got %s, %v", r.Status, err)
	}
	h.runOnce("shop")
	if n := h.svc.count(); n != 1 {
		t.Errorf("applied %d times, want once by a new run", n)
	}
	if st := h.events("shop", "orders")["o1"]; st != scripthost.EventConsumed {
		t.Errorf("event o1: got %s, want consumed by the new run", st)
	}
}

// readFirst is orders with a prepare phase that reads the service first.
const readFirst = `export default {
  topics: ['orders'],
  consumers: {
    ship: {
      subscribe: ['orders'],
      async prepare() {
        await Svc.read({});
        const evs = await Topics.peek({ topic: 'orders', limit: 1 });
        if (!evs.length) return { reservations: [], data: null };
        return { reservations: [{ topic: 'orders', ids: [evs[0].id] }], data: { id: evs[0].id } };
      },
      async mutate(p) { if (p) await Svc.apply({ value: p.id }); },
    },
  },
};`

// An operator cancels a run while its prepare phase runs: the ledger refuses what the
// phase returns, the pass goes on without an error, and the event goes to the next run,
// which applies it once.
func TestCancelDuringPrepare(t *testing.T) {
	h := newHarness(t)
	h.load("shop", readFirst)
	h.publish("shop", "orders", "o1")
	run, err := h.store.CreateRun(h.ctx, ledger.NewRun{Workflow: "shop", Version: 1, Handler: "ship", Kind: scripthost.KindConsumer})
	if err != nil {
		t.Fatal(err)
	}
	h.svc.duringRead = func(ctx context.Context) {
		h.svc.mu.Lock()
		h.svc.duringRead = nil
		h.svc.mu.Unlock()
		if _, err := h.store.CancelRun(context.Background(), run.ID, ledger.Cancel{By: "carol"}); err != nil {
			t.Errorf("cancel: %v", err)
		}
	}
	h.runOnce("shop")
	got, err := h.store.Run(h.ctx, run.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.Status != scripthost.StatusCancelled || got.Phase != scripthost.RunPreparing {
		t.Fatalf("run: got %s/%s, want preparing/cancelled", got.Phase, got.Status)
	}
	h.runOnce("shop")
	if n := h.svc.count(); n != 1 {
		t.Errorf("applied %d times, want once by the next run", n)
	}
	if st := h.events("shop", "orders")["o1"]; st != scripthost.EventConsumed {
		t.Errorf("event o1: got %s, want consumed", st)
	}
}
