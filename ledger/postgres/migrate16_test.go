package postgres_test

import (
	"context"
	"strings"
	"testing"

	"github.com/scripthost/scripthost"
	"github.com/scripthost/scripthost/internal/pgtest"
	"github.com/scripthost/scripthost/ledger"
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

	ids := func(f ledger.RunFilter) string {
		t.Helper()
		runs, err := s.Runs(ctx, f)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, r := range runs {
			out = append(out, r.ID)
		}
		return strings.Join(out, " ")
	}
	for _, tc := range []struct {
		what string
		f    ledger.RunFilter
		want string
	}{
		{"the newest run of orders/ship", ledger.RunFilter{Workflow: "orders", Handler: "ship", Newest: true, Limit: 1}, "b"},
		{"the newest run of orders/poll", ledger.RunFilter{Workflow: "orders", Handler: "poll", Newest: true, Limit: 1}, "d"},
		{"the runs of orders/ship", ledger.RunFilter{Workflow: "orders", Handler: "ship"}, "a c b"},
		{"the active runs of orders", ledger.RunFilter{Workflow: "orders", Status: scripthost.StatusActive}, "b"},
		{"the active runs", ledger.RunFilter{Status: scripthost.StatusActive}, "e b"},
		{"the committed runs", ledger.RunFilter{Status: scripthost.StatusCommitted}, "a c d"},
	} {
		if got := ids(tc.f); got != tc.want {
			t.Errorf("%s: got %q, want %q", tc.what, got, tc.want)
		}
	}
	rec, err := s.Recover(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var recovered []string
	for _, r := range rec.Runs {
		recovered = append(recovered, r.ID)
	}
	if got := strings.Join(recovered, " "); got != "e b" {
		t.Errorf("runs to recover: got %q, want %q", got, "e b")
	}

	r, err := s.CreateRun(ctx, ledger.NewRun{Workflow: "orders", Version: 1, Handler: "ship", Kind: scripthost.KindConsumer})
	if err != nil {
		t.Fatal(err)
	}
	if got := ids(ledger.RunFilter{Workflow: "orders", Handler: "ship", Newest: true, Limit: 1}); got != r.ID {
		t.Errorf("the newest run of orders/ship after a new one: got %q, want %q", got, r.ID)
	}
	if got := ids(ledger.RunFilter{Workflow: "orders", Status: scripthost.StatusActive}); got != "b "+r.ID {
		t.Errorf("the active runs of orders after a new one: got %q, want %q", got, "b "+r.ID)
	}
}
