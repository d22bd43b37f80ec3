package postgres_test

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/scripthost/scripthost/internal/pgtest"
	"github.com/scripthost/scripthost/ledger/postgres"
)

// TestMigration6 fills a ledger at schema version 5, opens it (which applies version
// 6: narrower indexes) and checks that every row is still there and that each query of
// a replaced index finds its rows through the new one, without a sort.
func TestMigration6(t *testing.T) {
	ctx := context.Background()
	url := pgtest.URL(t)
	c := migrateTo(t, url, "mig6", 5,
		`INSERT INTO runs (id, workflow, version, handler, kind, phase, status, created_at, updated_at) VALUES
			('r1', 'wf', 1, 'h', 'consumer', 'committed', 'committed', 1, 2)`,
		`INSERT INTO events (workflow, topic, message_id, payload, status, reserved_by, attempt, created_at) VALUES
			('wf', 'in', 'a', '{}', 'consumed', 'r1', 1, 1), ('wf', 'in', 'b', NULL, 'pending', NULL, 0, 2)`,
		`INSERT INTO mutations (id, run_id, namespace, method, input_hash, idempotency_key, status, created_at, updated_at) VALUES
			('m1', 'r1', 'Shop', 'ship', 'ih', 'k1', 'failed', 1, 2)`,
		`INSERT INTO handler_state (workflow, handler, state, wake_at, updated_at) VALUES ('wf', 'h', '{}', 9, 3)`)
	dump := func() []string {
		return dumpRows(t, c,
			`SELECT row_to_json(e)::text FROM events e ORDER BY seq`,
			`SELECT row_to_json(m)::text FROM mutations m ORDER BY id`,
			`SELECT row_to_json(h)::text FROM handler_state h ORDER BY workflow, handler`)
	}
	before := dump()
	open(t, url, postgres.Options{Schema: "mig6"})
	if after := dump(); !slices.Equal(after, before) {
		t.Errorf("rows after migration:\ngot  %q\nwant %q", after, before)
	}

	if _, err := c.Exec(ctx, `SET enable_seqscan = off`); err != nil {
		t.Fatal(err)
	}
	for _, p := range []struct{ q, want string }{
		{`SELECT seq, workflow, topic, message_id, payload, status, reserved_by, attempt, caused_by, created_at
			FROM events WHERE workflow = 'wf' AND topic = 'in' AND status = 'pending' ORDER BY seq LIMIT 10`, "events_pending"},
		{`UPDATE events SET status = 'consumed' WHERE reserved_by = 'r1' AND status = 'reserved'`, "events_reserved_by"},
		{`SELECT COUNT(*) FROM mutations WHERE input_hash = 'ih' AND status = 'failed'`, "mutations_failed_input_hash"},
	} {
		got := plan(t, c, p.q)
		if !strings.Contains(got, p.want) || strings.Contains(got, "Sort") {
			t.Errorf("%.50s: got plan\n%s\nwant %s and no sort", p.q, got, p.want)
		}
	}
}
