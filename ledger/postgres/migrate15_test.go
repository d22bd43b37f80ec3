package postgres_test

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/scripthost/scripthost/internal/pgtest"
	"github.com/scripthost/scripthost/ledger"
	"github.com/scripthost/scripthost/ledger/postgres"
)

// TestMigrate15FewerIndexEntries: a ledger at schema version 14 keeps every row through
// migration 15, which drops the unique indexes on runs.ord and mutations.ord and
// narrows events_reserved_by to reserved events. Runs and mutations created in one
// nanosecond still list in the order they were written, the new rows' ord still comes
// after the old ones', and a run's reserved events are still found by the index.
func TestMigrate15FewerIndexEntries(t *testing.T) {
	ctx := context.Background()
	url := pgtest.URL(t)
	c := migrateTo(t, url, "mig15", 14,
		`INSERT INTO workflows (name, latest_version, created_at) VALUES ('wf', 1, 1)`,
		`INSERT INTO runs (id, workflow, version, handler, kind, phase, status, created_at, updated_at) VALUES
			('z-old', 'wf', 1, 'h', 'consumer', 'committed', 'committed', 5, 5),
			('a-old', 'wf', 1, 'h', 'consumer', 'mutating', 'active', 5, 5)`,
		`INSERT INTO events (workflow, topic, message_id, payload, status, reserved_by, attempt, created_at) VALUES
			('wf', 'in', 'a', '{}', 'consumed', 'z-old', 1, 1), ('wf', 'in', 'b', '{}', 'reserved', 'a-old', 1, 2),
			('wf', 'in', 'c', NULL, 'pending', NULL, 0, 3)`,
		`INSERT INTO mutations (id, run_id, namespace, method, input_hash, idempotency_key, status, created_at, updated_at) VALUES
			('m-z', 'z-old', 'Shop', 'ship', 'ih', 'k1', 'applied', 5, 5), ('m-a', 'a-old', 'Shop', 'ship', 'ih2', 'k2', 'in_flight', 5, 5)`)
	dump := func() []string {
		return dumpRows(t, c,
			`SELECT row_to_json(r)::text FROM runs r ORDER BY ord`,
			`SELECT row_to_json(e)::text FROM events e ORDER BY seq`,
			`SELECT row_to_json(m)::text FROM mutations m ORDER BY ord`)
	}
	before := dump()
	s := open(t, url, postgres.Options{Schema: "mig15"})
	if after := dump(); !slices.Equal(after, before) {
		t.Errorf("rows after migration:\ngot  %q\nwant %q", after, before)
	}

	left := texts(t, c, `SELECT conname FROM pg_constraint WHERE connamespace = 'mig15'::regnamespace AND conname IN ('runs_ord_key', 'mutations_ord_key')`)
	if len(left) > 0 {
		t.Errorf("unique indexes on ord left: %q", left)
	}

	// Ties in created_at list in the order written, old rows before new ones.
	r, err := s.CreateRun(ctx, ledger.NewRun{Workflow: "wf", Version: 1, Handler: "h", Kind: "producer"})
	if err != nil {
		t.Fatal(err)
	}
	runs, err := s.Runs(ctx, ledger.RunFilter{Workflow: "wf"})
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, r := range runs {
		ids = append(ids, r.ID)
	}
	if want := []string{"z-old", "a-old", r.ID}; !slices.Equal(ids, want) {
		t.Errorf("runs in order: got %q, want %q", ids, want)
	}
	ms, err := s.Mutations(ctx, ledger.MutationFilter{Workflow: ""})
	if err != nil {
		t.Fatal(err)
	}
	var mids []string
	for _, m := range ms {
		mids = append(mids, m.ID)
	}
	if want := []string{"m-z", "m-a"}; !slices.Equal(mids, want) {
		t.Errorf("mutations in order: got %q, want %q", mids, want)
	}

	if _, err := c.Exec(ctx, `SET search_path TO mig15`); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Exec(ctx, `SET enable_seqscan = off`); err != nil {
		t.Fatal(err)
	}
	if got := plan(t, c, `UPDATE events SET status = 'consumed' WHERE reserved_by = 'a-old' AND status = 'reserved'`); !strings.Contains(got, "events_reserved_by") {
		t.Errorf("a run's reserved events: got plan\n%s\nwant events_reserved_by", got)
	}
}
