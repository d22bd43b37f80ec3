package postgres_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/scripthost/scripthost"
	"github.com/scripthost/scripthost/internal/pgtest"
	"github.com/scripthost/scripthost/ledger"
	"github.com/scripthost/scripthost/ledger/postgres"
)

// TestMigrate13CancelRequest: a ledger at schema version 12 with runs and the cancel
// requests logged for them: migration 13 gives each run still waiting for its
// mutation's outcome (active or paused, mutation in_flight, needs_reconcile or
// indeterminate) its latest request, and no other run one; the transition that records
// the outcome then cancels the run as the request asked, and a run without one moves on.
func TestMigrate13CancelRequest(t *testing.T) {
	ctx := context.Background()
	url := pgtest.URL(t)
	c := migrateTo(t, url, "mig13", 12,
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
			('r5', 'cancel_requested', '{"by":"dave"}', 2)`)
	s := open(t, url, postgres.Options{Schema: "mig13"})
	var v int
	if err := c.QueryRow(ctx, `SELECT MAX(version) FROM scripthost_schema`).Scan(&v); err != nil || v != postgres.SchemaVersion() || v < 13 {
		t.Fatalf("schema version: got %d (%v), binary %d; want the binary's, 13 or later", v, err, postgres.SchemaVersion())
	}
	want := map[string]string{"r1": `{"by":"alice","reason":"wrong order"}`, "r2": "{}", "r3": "", "r4": "", "r5": ""}
	for id, w := range want {
		var got *string
		if err := c.QueryRow(ctx, `SELECT cancel_request FROM runs WHERE id = $1`, id).Scan(&got); err != nil || (got == nil) != (w == "") || (got != nil && *got != w) {
			t.Errorf("run %s: cancel_request %v (%v), want %q", id, got, err, w)
		}
	}

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
