package sqlite

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/scripthost/scripthost"
	"github.com/scripthost/scripthost/ledger"
)

// TestMigration12ActiveRunsIndex opens a ledger at schema version 11 with runs:
// migration 12 indexes runs_status on (status, workflow), and the ledger reads the
// same runs: a handler's newest run (of two created at the same time, the one
// created last), a workflow's active runs, the active runs of every workflow, the runs
// to recover and a handler's runs oldest first; a run created after the migration is
// the workflow's active run and the handler's newest.
func TestMigration12ActiveRunsIndex(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "ledger.db")
	db := schemaAt(t, path, 11)
	for _, q := range []string{
		`INSERT INTO workflows (name, latest_version, created_at) VALUES ('orders', 1, 1), ('billing', 1, 1)`,
		`INSERT INTO runs (id, workflow, version, handler, kind, phase, status, created_at, updated_at) VALUES
			('a', 'orders', 1, 'ship', 'consumer', 'committed', 'committed', 1, 1),
			('c', 'orders', 1, 'ship', 'consumer', 'committed', 'committed', 2, 2),
			('b', 'orders', 1, 'ship', 'consumer', 'emitting', 'active', 2, 2),
			('d', 'orders', 1, 'poll', 'producer', 'committed', 'committed', 3, 3),
			('e', 'billing', 1, 'ship', 'consumer', 'mutating', 'active', 1, 1)`,
	} {
		if _, err := db.Exec(q); err != nil {
			t.Fatalf("%.60s: %v", q, err)
		}
	}
	db.Close()
	s, err := Open(ctx, path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var version int
	if err := s.r.QueryRow(`SELECT MAX(version) FROM scripthost_schema`).Scan(&version); err != nil || version != SchemaVersion() || version < 12 {
		t.Fatalf("schema version: got %d %v, want the binary's %d, 12 or later", version, err, SchemaVersion())
	}
	var def string
	if err := s.r.QueryRow(`SELECT sql FROM sqlite_master WHERE type = 'index' AND name = 'runs_status'`).Scan(&def); err != nil ||
		!strings.HasSuffix(def, "runs(status, workflow)") {
		t.Errorf("runs_status: got %q (%v), want it on runs(status, workflow)", def, err)
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
