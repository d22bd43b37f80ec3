package view_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"path/filepath"
	"testing"
	"time"

	"github.com/scripthost/scripthost"
	"github.com/scripthost/scripthost/internal/view"
	"github.com/scripthost/scripthost/ledger"
	"github.com/scripthost/scripthost/ledger/sqlite"
)

const definition = `{"name":"orders","topics":["in"],"consumers":{
	"ship":{"subscribe":["in"],"prepare":"consumers.ship.prepare","mutate":"consumers.ship.mutate"},
	"bill":{"subscribe":["in"],"prepare":"consumers.bill.prepare"}}}`

func must[T any](v T, err error) func(t *testing.T) T {
	return func(t *testing.T) T {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
}

func ok(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// attentionLedger stores workflow orders with handler ship blocked on an indeterminate
// mutation, handler bill failed on event e2, and an agent call waiting for approval.
func attentionLedger(t *testing.T, now time.Time) (ledger.Store, scripthost.Mutation, scripthost.Run) {
	t.Helper()
	ctx := context.Background()
	clock := func() time.Time { return now }
	s := must(sqlite.Open(ctx, filepath.Join(t.TempDir(), "ledger.db"), sqlite.Options{Clock: clock}))(t)
	t.Cleanup(func() { s.Close() })
	sum := sha256.Sum256([]byte("src"))
	must(s.PutWorkflow(ctx, ledger.WorkflowVersion{Workflow: "orders", Language: "js", Path: "/w/orders.js", Source: []byte("src"),
		Hash: hex.EncodeToString(sum[:]), Definition: json.RawMessage(definition)}))(t)
	must(s.Publish(ctx, ledger.NewEvent{Workflow: "orders", Topic: "in", MessageID: "e1", Payload: json.RawMessage(`{}`)},
		ledger.NewEvent{Workflow: "orders", Topic: "in", MessageID: "e2", Payload: json.RawMessage(`{}`)}))(t)

	ship := must(s.CreateRun(ctx, ledger.NewRun{Workflow: "orders", Version: 1, Handler: "ship", Kind: scripthost.KindConsumer}))(t)
	must(s.AdvancePhase(ctx, ship.ID, scripthost.RunPending, scripthost.RunPreparing))(t)
	must(s.MarkPrepared(ctx, ship.ID, ledger.PrepareResult{Data: json.RawMessage(`{}`),
		Reservations: []scripthost.Reservation{{Topic: "in", IDs: []string{"e1"}}}}))(t)
	must(s.AdvancePhase(ctx, ship.ID, scripthost.RunPrepared, scripthost.RunMutating))(t)
	m := must(s.BeginMutation(ctx, ledger.NewMutation{RunID: ship.ID, Namespace: "Pay", Method: "charge",
		Params: json.RawMessage(`{"amount":4200,"order":"o-1"}`), InputHash: "h1", IdempotencyKey: "k1"}))(t)
	must(s.MarkNeedsReconcile(ctx, m.ID, 1, now, "timeout"))(t)
	m = must(s.MarkIndeterminate(ctx, m.ID, "no answer"))(t)

	bill := must(s.CreateRun(ctx, ledger.NewRun{Workflow: "orders", Version: 1, Handler: "bill", Kind: scripthost.KindConsumer}))(t)
	must(s.AdvancePhase(ctx, bill.ID, scripthost.RunPending, scripthost.RunPreparing))(t)
	must(s.MarkPrepared(ctx, bill.ID, ledger.PrepareResult{Data: json.RawMessage(`{}`),
		Reservations: []scripthost.Reservation{{Topic: "in", IDs: []string{"e2"}}}}))(t)
	bill = must(s.SetRunStatus(ctx, bill.ID, ledger.StatusChange{Status: scripthost.StatusFailedLogic, Error: "TypeError: x is undefined"}))(t)

	ok(t, s.CreateAgentSession(ctx, ledger.AgentSession{ID: "as-1", Task: "refund.yaml", Spec: json.RawMessage(`{}`), Status: "paused"}))
	ok(t, s.PutAgentToolCall(ctx, ledger.AgentToolCall{Session: "as-1", CallID: "c1", StepID: "s", Turn: 1, Seq: 1,
		Tool: "Pay.refund", Arguments: json.RawMessage(`{"amount":5}`), Status: "pending_approval"}))
	return s, m, bill
}

// TestNeedsAttention builds each kind of item a person must act on in a real SQLite
// ledger and checks that the report lists each with what to do about it, then that
// resolving the mutation takes it and its blocked handler off the report.
func TestNeedsAttention(t *testing.T) {
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	s, m, bill := attentionLedger(t, now)
	ctx := context.Background()
	later := now.Add(90 * time.Second)
	a, err := view.NeedsAttention(ctx, s, view.AttentionOptions{Clock: func() time.Time { return later }})
	if err != nil {
		t.Fatal(err)
	}
	if len(a.Indeterminate) != 1 {
		t.Fatalf("indeterminate: got %+v, want mutation %s", a.Indeterminate, m.ID)
	}
	ind := a.Indeterminate[0]
	if ind.ID != m.ID || ind.Workflow != "orders" || string(ind.Params) != `{"amount":4200,"order":"o-1"}` || ind.AgeSeconds != 90 {
		t.Errorf("indeterminate: got %s of %q params %s age %ds, want %s of orders with its params, 90s old",
			ind.ID, ind.Workflow, ind.Params, ind.AgeSeconds, m.ID)
	}
	if len(a.Blocked) != 2 {
		t.Fatalf("blocked: got %+v, want bill and ship", a.Blocked)
	}
	byHandler := map[string]view.Blocked{}
	for _, b := range a.Blocked {
		byHandler[b.Handler] = b
	}
	ship := byHandler["ship"]
	if ship.Mutation == nil || ship.Mutation.ID != m.ID || len(ship.Actions) != 1 || ship.Actions[0].Kind != "resolve" ||
		ship.Actions[0].Target != m.ID || ship.Actions[0].Command != "scripthost resolve "+m.ID+" --as applied|failed|skipped" {
		t.Errorf("ship: got %+v, want blocked on mutation %s with the resolve action", ship, m.ID)
	}
	b := byHandler["bill"]
	if b.RunID != bill.ID || b.Status != scripthost.StatusFailedLogic || b.Reason != "TypeError: x is undefined" {
		t.Errorf("bill: got run %s %s %q, want %s failed:logic with its error", b.RunID, b.Status, b.Reason, bill.ID)
	}
	wantActions := []view.Unblock{{Kind: "retry", Target: bill.ID}, {Kind: "skip_event", Target: "orders/in/e2",
		Command: "scripthost events skip orders in e2"}}
	if len(b.Actions) != len(wantActions) {
		t.Fatalf("bill actions: got %+v, want retry then skip e2", b.Actions)
	}
	for i, w := range wantActions {
		g := b.Actions[i]
		if g.Kind != w.Kind || g.Target != w.Target || (w.Command != "" && g.Command != w.Command) || g.Hint == "" {
			t.Errorf("bill action %d: got %+v, want %+v with a hint", i, g, w)
		}
	}
	if len(a.FailedRuns) != 1 || a.FailedRuns[0].ID != bill.ID {
		t.Errorf("failed runs: got %+v, want %s", a.FailedRuns, bill.ID)
	}
	if len(a.Approvals) != 1 || a.Approvals[0].Session != "as-1" || a.Approvals[0].Call != "c1" || string(a.Approvals[0].Arguments) != `{"amount":5}` {
		t.Errorf("approvals: got %+v, want call c1 of session as-1 with its arguments", a.Approvals)
	}
	if len(a.StaleHosts) != 0 {
		t.Errorf("stale hosts: got %+v, want none (SQLite has no leases)", a.StaleHosts)
	}
	want := view.Counts{Blocked: 2, Indeterminate: 1, FailedRuns: 1, Approvals: 1, Total: 5}
	if a.Counts != want || !a.At.Equal(later) {
		t.Errorf("counts: got %+v at %v, want %+v at %v", a.Counts, a.At, want, later)
	}

	if _, err := s.Resolve(ctx, m.ID, ledger.Resolution{As: scripthost.MutationSkipped, By: "alice"}); err != nil {
		t.Fatal(err)
	}
	a, err = view.NeedsAttention(ctx, s, view.AttentionOptions{Clock: func() time.Time { return later }})
	if err != nil {
		t.Fatal(err)
	}
	if len(a.Indeterminate) != 0 || a.Counts.Indeterminate != 0 {
		t.Errorf("after resolving: got indeterminate %+v, want none", a.Indeterminate)
	}
	for _, b := range a.Blocked {
		if b.Handler == "ship" && b.Mutation != nil {
			t.Errorf("after resolving: ship still blocked on mutation %s", b.Mutation.ID)
		}
	}
}

// TestNeedsAttentionEmpty checks that an empty ledger reports empty lists, not nulls,
// so that a client reads every list without a nil check.
func TestNeedsAttentionEmpty(t *testing.T) {
	ctx := context.Background()
	s := must(sqlite.Open(ctx, filepath.Join(t.TempDir(), "ledger.db"), sqlite.Options{}))(t)
	t.Cleanup(func() { s.Close() })
	a, err := view.NeedsAttention(ctx, s, view.AttentionOptions{})
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(a)
	var got map[string]any
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"blocked", "indeterminate", "failed_runs", "approvals", "stale_hosts"} {
		if l, ok := got[k].([]any); !ok || len(l) != 0 {
			t.Errorf("%s: got %v, want []", k, got[k])
		}
	}
}
