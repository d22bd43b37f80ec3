package postgres_test

import (
	"context"
	"strings"
	"testing"

	"github.com/scripthost/scripthost/internal/pgtest"
	"github.com/scripthost/scripthost/ledger/ledgertest"
	"github.com/scripthost/scripthost/ledger/postgres"
)

// TestMigrate16HistoryIndexes: a ledger at schema version 15 with runs migrates to 16,
// whose runs_workflow ends in ord and whose runs_status holds the workflow after the
// status, and reads the same runs: a handler's newest run (of two created at the same
// time, the one created last), a workflow's active runs, the active runs of every
// workflow, and a handler's runs oldest first; then a run created after the migration
// is the handler's newest.
func TestMigrate16HistoryIndexes(t *testing.T) {
	ctx := context.Background()
	url := pgtest.URL(t)
	c := migrateTo(t, url, "mig16", 15,
		`INSERT INTO workflows (name, latest_version, created_at) VALUES ('orders', 1, 1), ('billing', 1, 1)`,
		`INSERT INTO runs (id, workflow, version, handler, kind, phase, status, created_at, updated_at) VALUES
			('a', 'orders', 1, 'ship', 'consumer', 'committed', 'committed', 1, 1),
			('c', 'orders', 1, 'ship', 'consumer', 'committed', 'committed', 2, 2),
			('b', 'orders', 1, 'ship', 'consumer', 'emitting', 'active', 2, 2),
			('d', 'orders', 1, 'poll', 'producer', 'committed', 'committed', 3, 3),
			('e', 'billing', 1, 'ship', 'consumer', 'mutating', 'active', 1, 1)`)
	s := open(t, url, postgres.Options{Schema: "mig16"})
	var v int
	if err := c.QueryRow(ctx, `SELECT MAX(version) FROM scripthost_schema`).Scan(&v); err != nil || v != postgres.SchemaVersion() || v < 16 {
		t.Fatalf("schema version: got %d (%v), binary %d; want the binary's, 16 or later", v, err, postgres.SchemaVersion())
	}
	for index, want := range map[string]string{
		"runs_workflow": "(workflow, handler, created_at, ord)",
		"runs_status":   "(status, workflow)",
	} {
		var def string
		if err := c.QueryRow(ctx, `SELECT indexdef FROM pg_indexes WHERE schemaname = 'mig16' AND indexname = $1`, index).Scan(&def); err != nil {
			t.Fatalf("index %s: %v", index, err)
		}
		if !strings.HasSuffix(def, want) {
			t.Errorf("index %s: got %s, want it on %s", index, def, want)
		}
	}

	ledgertest.RunReadsAfterIndexMigration(ctx, t, s)
}
