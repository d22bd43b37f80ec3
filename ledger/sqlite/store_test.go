package sqlite_test

import (
	"context"
	"encoding/json"
	"path/filepath"
	"testing"

	"github.com/scripthost/scripthost"
	"github.com/scripthost/scripthost/ledger"
	"github.com/scripthost/scripthost/ledger/sqlite"
)

func openTemp(t *testing.T) *sqlite.Store {
	t.Helper()
	s, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "ledger.db"), sqlite.Options{})
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func TestSmoke(t *testing.T) {
	ctx := context.Background()
	s := openTemp(t)
	if _, err := s.Publish(ctx, ledger.NewEvent{Workflow: "w", Topic: "in", MessageID: "a", Payload: json.RawMessage(`{"x":1}`)}); err != nil {
		t.Fatal(err)
	}
	r, err := s.CreateRun(ctx, ledger.NewRun{Workflow: "w", Version: 1, Handler: "h", Kind: scripthost.KindConsumer})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.AdvancePhase(ctx, r.ID, scripthost.RunPending, scripthost.RunPreparing); err != nil {
		t.Fatal(err)
	}
	if _, err := s.MarkPrepared(ctx, r.ID, ledger.PrepareResult{Data: json.RawMessage(`1`), Reservations: []scripthost.Reservation{{Topic: "in", IDs: []string{"a"}}}}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.AdvancePhase(ctx, r.ID, scripthost.RunPrepared, scripthost.RunMutating); err != nil {
		t.Fatal(err)
	}
	m, err := s.BeginMutation(ctx, ledger.NewMutation{RunID: r.ID, Namespace: "N", Method: "m", Params: json.RawMessage(`{}`), IdempotencyKey: "k"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.ApplyMutation(ctx, m.ID, json.RawMessage(`{"ok":true}`)); err != nil {
		t.Fatal(err)
	}
	if _, err := s.AdvancePhase(ctx, r.ID, scripthost.RunMutated, scripthost.RunEmitting); err != nil {
		t.Fatal(err)
	}
	got, err := s.CommitConsumer(ctx, r.ID, ledger.Commit{State: json.RawMessage(`{"n":1}`)})
	if err != nil {
		t.Fatal(err)
	}
	if got.Status != scripthost.StatusCommitted {
		t.Fatalf("got status %s, want committed", got.Status)
	}
	evs, _ := s.Events(ctx, ledger.EventFilter{})
	if evs[0].Status != scripthost.EventConsumed {
		t.Fatalf("got event %+v", evs[0])
	}
	snaps, _ := s.Snapshots(ctx, r.ID)
	t.Logf("%d snapshots", len(snaps))
}
