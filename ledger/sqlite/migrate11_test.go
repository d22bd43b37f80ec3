package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"testing"

	"github.com/scripthost/scripthost"
	"github.com/scripthost/scripthost/ledger"
)

// cancelRequestRows are runs at schema version 10 (SQLite) or 12 (PostgreSQL), each
// with its mutation and cancel_requested events, for migration 11's (13's) backfill:
// r1 and r2 wait for their outcome with requests logged (r1 two, the later one kept;
// r2 one without data); r3 has its outcome, r4 no request, r5 is final.
var cancelRequestRows = []string{
	`INSERT INTO workflows (name, latest_version, created_at) VALUES ('orders', 1, 1)`,
	`INSERT INTO runs (id, workflow, version, handler, kind, phase, status, created_at, updated_at) VALUES
		('r1', 'orders', 1, 'ship', 'consumer', 'mutating', 'active', 1, 1),
		('r2', 'orders', 1, 'ship', 'consumer', 'mutating', 'paused:reconciliation', 1, 1),
		('r3', 'orders', 1, 'ship', 'consumer', 'emitting', 'active', 1, 1),
		('r4', 'orders', 1, 'ship', 'consumer', 'mutating', 'active', 1, 1),
		('r5', 'orders', 1, 'ship', 'consumer', 'mutating', 'failed:logic', 1, 1)`,
	`INSERT INTO mutations (id, run_id, namespace, method, idempotency_key, status, created_at, updated_at) VALUES
		('m1', 'r1', 'Shop', 'ship', 'k1', 'in_flight', 1, 1),
		('m2', 'r2', 'Shop', 'ship', 'k2', 'indeterminate', 1, 1),
		('m3', 'r3', 'Shop', 'ship', 'k3', 'applied', 1, 1),
		('m4', 'r4', 'Shop', 'ship', 'k4', 'in_flight', 1, 1),
		('m5', 'r5', 'Shop', 'ship', 'k5', 'needs_reconcile', 1, 1)`,
	`INSERT INTO lifecycle_events (run_id, type, data, at) VALUES
		('r1', 'cancel_requested', '{"by":"bob"}', 2),
		('r1', 'phase_started', '{"phase":"mutate"}', 3),
		('r1', 'cancel_requested', '{"by":"alice","reason":"wrong order"}', 4),
		('r2', 'cancel_requested', NULL, 2),
		('r3', 'cancel_requested', '{"by":"carol"}', 2),
		('r5', 'cancel_requested', '{"by":"dave"}', 2)`,
}

// wantCancelRequests are the cancel_request columns migration 11 (13) leaves in
// cancelRequestRows' runs.
var wantCancelRequests = map[string]string{"r1": `{"by":"alice","reason":"wrong order"}`, "r2": "{}", "r3": "", "r4": "", "r5": ""}

// TestMigration11CancelRequest opens a ledger at schema version 10 with runs and their
// cancel requests: migration 11 gives each run still waiting for its mutation's outcome
// its latest request, and no other run one, and the transition that records the outcome
// then cancels the run as the request asked.
func TestMigration11CancelRequest(t *testing.T) {
	ctx := context.Background()
	s := migratedFrom(t, 10, cancelRequestRows...)
	var version int
	if err := s.r.QueryRow(`SELECT MAX(version) FROM scripthost_schema`).Scan(&version); err != nil || version != SchemaVersion() || version < 11 {
		t.Fatalf("schema version: got %d %v, want the binary's %d, 11 or later", version, err, SchemaVersion())
	}
	for id, want := range wantCancelRequests {
		var got sql.NullString
		if err := s.r.QueryRow(`SELECT cancel_request FROM runs WHERE id = ?`, id).Scan(&got); err != nil || got.String != want || got.Valid != (want != "") {
			t.Errorf("run %s: cancel_request %+v (%v), want %q", id, got, err, want)
		}
	}
	checkMigratedRequests(ctx, t, s)
}

// checkMigratedRequests records the outcomes of cancelRequestRows' r1 and r2, migrated:
// each is cancelled by the transition as its request asked, r4 without one is not.
func checkMigratedRequests(ctx context.Context, t *testing.T, s ledger.Store) {
	t.Helper()
	if _, err := s.ApplyMutation(ctx, "m1", json.RawMessage(`{}`)); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Resolve(ctx, "m2", ledger.Resolution{As: scripthost.MutationApplied, By: "ops"}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.ApplyMutation(ctx, "m4", json.RawMessage(`{}`)); err != nil {
		t.Fatal(err)
	}
	for id, want := range map[string]string{"r1": "cancelled by alice: wrong order", "r2": "cancelled"} {
		if r, err := s.Run(ctx, id); err != nil || r.Status != scripthost.StatusCancelled || r.Error != want {
			t.Errorf("run %s after its outcome: got %s %q (%v), want cancelled %q", id, r.Status, r.Error, err, want)
		}
	}
	if r, err := s.Run(ctx, "r4"); err != nil || r.Status != scripthost.StatusActive || r.Phase != scripthost.RunEmitting {
		t.Errorf("run r4 after its outcome: got %s/%s (%v), want emitting/active", r.Phase, r.Status, err)
	}
}
