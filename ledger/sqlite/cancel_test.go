package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"strings"
	"testing"

	"github.com/scripthost/scripthost"
	"github.com/scripthost/scripthost/ledger"
	"github.com/scripthost/scripthost/ledger/internal/sqlstore"
)

// inFlightRun creates a consumer run with its mutation in flight.
func inFlightRun(t *testing.T, s *Store, key string) (scripthost.Run, scripthost.Mutation) {
	t.Helper()
	ctx := context.Background()
	r := preparingRun(t, s)
	r, err := s.MarkPrepared(ctx, r.ID, ledger.PrepareResult{Mutate: true})
	if err != nil {
		t.Fatal(err)
	}
	m, err := s.BeginMutation(ctx, ledger.NewMutation{RunID: r.ID, Namespace: "Shop", Method: "ship",
		Params: json.RawMessage(`{}`), InputHash: "h-" + key, IdempotencyKey: key})
	if err != nil {
		t.Fatal(err)
	}
	return r, m
}

// cancelRequest reads a run's cancel_request column ("" for NULL).
func cancelRequest(t *testing.T, s *Store, runID string) string {
	t.Helper()
	var got sql.NullString
	if err := s.r.QueryRow(`SELECT cancel_request FROM runs WHERE id = ?`, runID).Scan(&got); err != nil {
		t.Fatal(err)
	}
	return got.String
}

// TestCancelRequestColumn follows runs.cancel_request with the row cache checked
// against the database at every read (SCRIPTHOST_VERIFY_ROW_CACHE): a cancel requested
// while the mutation is in flight sets it and writes the run (a new updated_at); the
// outcome that cancels the run clears it, and so does a failure that fails the run
// (the request lapses with it). A column that is not JSON is an error naming the run.
func TestCancelRequestColumn(t *testing.T) {
	t.Setenv(sqlstore.VerifyRowCacheEnv, "1")
	ctx := context.Background()
	s, path := tempStore(t)

	r, m := inFlightRun(t, s, "k1")
	asked, err := s.CancelRun(ctx, r.ID, ledger.Cancel{By: "alice", Reason: "wrong order"})
	if err != nil {
		t.Fatal(err)
	}
	if !asked.UpdatedAt.After(r.UpdatedAt) || asked.Status != scripthost.StatusActive {
		t.Errorf("requested: got %s updated %v, want active and written after %v", asked.Status, asked.UpdatedAt, r.UpdatedAt)
	}
	if got := cancelRequest(t, s, r.ID); got != `{"by":"alice","reason":"wrong order"}` {
		t.Errorf("cancel_request after the request: got %q", got)
	}
	if _, err := s.ApplyMutation(ctx, m.ID, json.RawMessage(`{}`)); err != nil {
		t.Fatal(err)
	}
	if got := cancelRequest(t, s, r.ID); got != "" {
		t.Errorf("cancel_request of the cancelled run: got %q, want NULL", got)
	}

	r, m = inFlightRun(t, s, "k2")
	if _, err := s.CancelRun(ctx, r.ID, ledger.Cancel{}); err != nil {
		t.Fatal(err)
	}
	if got := cancelRequest(t, s, r.ID); got != "{}" {
		t.Errorf("cancel_request of a request without who or why: got %q, want {}", got)
	}
	if _, err := s.FailMutation(ctx, m.ID, scripthost.LogicError("declined")); err != nil {
		t.Fatal(err)
	}
	if got, err := s.Run(ctx, r.ID); err != nil || got.Status != scripthost.StatusFailedLogic {
		t.Errorf("run after its mutation failed: got %s (%v), want failed:logic", got.Status, err)
	}
	if got := cancelRequest(t, s, r.ID); got != "" {
		t.Errorf("cancel_request of the failed run: got %q, want NULL", got)
	}

	other, err := sql.Open("sqlite3", path+"?_busy_timeout=5000")
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	if _, err := other.ExecContext(ctx, `UPDATE runs SET cancel_request = 'nope' WHERE id = ?`, r.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Run(ctx, r.ID); err == nil || !strings.Contains(err.Error(), r.ID) || !strings.Contains(err.Error(), "cancel_request") {
		t.Errorf("a run whose cancel_request is not JSON: got %v, want an error naming the run and the column", err)
	}
}
