package sqlite

import (
	"context"
	"strings"
	"testing"

	"github.com/scripthost/scripthost/ledger/ledgertest"
)

// TestMigration12ActiveRunsIndex opens a ledger at schema version 11 with runs:
// migration 12 indexes runs_status on (status, workflow), and the ledger reads the
// same runs: a handler's newest run (of two created at the same time, the one
// created last), a workflow's active runs, the active runs of every workflow, the runs
// to recover and a handler's runs oldest first; a run created after the migration is
// the workflow's active run and the handler's newest.
func TestMigration12ActiveRunsIndex(t *testing.T) {
	ctx := context.Background()
	s := migratedFrom(t, 11,
		`INSERT INTO workflows (name, latest_version, created_at) VALUES ('orders', 1, 1), ('billing', 1, 1)`,
		`INSERT INTO runs (id, workflow, version, handler, kind, phase, status, created_at, updated_at) VALUES
			('a', 'orders', 1, 'ship', 'consumer', 'committed', 'committed', 1, 1),
			('c', 'orders', 1, 'ship', 'consumer', 'committed', 'committed', 2, 2),
			('b', 'orders', 1, 'ship', 'consumer', 'emitting', 'active', 2, 2),
			('d', 'orders', 1, 'poll', 'producer', 'committed', 'committed', 3, 3),
			('e', 'billing', 1, 'ship', 'consumer', 'mutating', 'active', 1, 1)`,
	)
	var version int
	if err := s.r.QueryRow(`SELECT MAX(version) FROM scripthost_schema`).Scan(&version); err != nil || version != SchemaVersion() || version < 12 {
		t.Fatalf("schema version: got %d %v, want the binary's %d, 12 or later", version, err, SchemaVersion())
	}
	var def string
	if err := s.r.QueryRow(`SELECT sql FROM sqlite_master WHERE type = 'index' AND name = 'runs_status'`).Scan(&def); err != nil ||
		!strings.HasSuffix(def, "runs(status, workflow)") {
		t.Errorf("runs_status: got %q (%v), want it on runs(status, workflow)", def, err)
	}

	ledgertest.RunReadsAfterIndexMigration(ctx, t, s)
}
