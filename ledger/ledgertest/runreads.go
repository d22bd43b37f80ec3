package ledgertest

import (
	"context"
	"strings"
	"testing"

	"github.com/scripthost/scripthost"
	"github.com/scripthost/scripthost/ledger"
)

// RunReadsAfterIndexMigration checks the run reads a scheduler pass and recovery make
// on a ledger just migrated from one holding these runs (created_at, phase, status):
// orders/ship a (1, committed), c (2, committed) and b (2, emitting, active, created
// after c); orders/poll d (3, committed, producer); billing/ship e (1, mutating,
// active). A handler's newest run (of two created at the same time, the one created
// last), a workflow's active runs, the active runs of every workflow, the committed
// runs, a handler's runs oldest first and the runs to recover read as before, and a
// run created after the migration is the handler's newest.
func RunReadsAfterIndexMigration(ctx context.Context, t *testing.T, s ledger.Store) {
	t.Helper()
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
