package postgres_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/scripthost/scripthost"
	"github.com/scripthost/scripthost/internal/pgtest"
	"github.com/scripthost/scripthost/ledger"
	"github.com/scripthost/scripthost/ledger/ledgertest"
	"github.com/scripthost/scripthost/ledger/postgres"
)

// historyLedger is a ledger whose workflow "orders" has committed runs of its consumer
// "ship" (its history), then one run of it in flight, the newest; other workflows each
// have a run left active.
type historyLedger struct {
	url      string
	inFlight string // the id of the run of orders/ship in flight
}

// newHistoryLedger builds a historyLedger with history committed runs and others other
// workflows, each run written as the scheduler writes it. The runs table is kept from
// autovacuum, so that it has the statistics the test gives it and no others.
func newHistoryLedger(ctx context.Context, t *testing.T, url string, history, others int) historyLedger {
	t.Helper()
	s := open(t, url, postgres.Options{})
	c, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(ctx)
	if _, err := c.Exec(ctx, `ALTER TABLE runs SET (autovacuum_enabled = off)`); err != nil {
		t.Fatal(err)
	}
	return historyLedger{url: url, inFlight: ledgertest.History(ctx, t, s, history, others)}
}

// passReadCalls is how many times each read is measured.
const passReadCalls = 10

// passReads makes the two reads of runs a scheduler pass makes of workflow orders (see
// the runtime's latestRuns and its resumption of active runs) through a store that
// connects with params, and returns the pages each read per call, as the server
// counted them. The reads are made once before they are measured, as the passes
// before the one measured made them: a first read of index entries whose rows are
// dead (the runs' earlier versions, not vacuumed yet) reads those rows once and marks
// the entries, which later reads skip.
func passReads(ctx context.Context, t *testing.T, l historyLedger, params string) (latest, active float64) {
	t.Helper()
	s := open(t, l.url+params, postgres.Options{})
	read := func() {
		t.Helper()
		newest, err := s.Runs(ctx, ledger.RunFilter{Workflow: "orders", Handler: "ship", Newest: true, Limit: 1})
		if err != nil {
			t.Fatal(err)
		}
		if len(newest) != 1 || newest[0].ID != l.inFlight {
			t.Fatalf("newest run of orders/ship: got %v, want the one in flight, %s", newest, l.inFlight)
		}
		runs, err := s.Runs(ctx, ledger.RunFilter{Workflow: "orders", Status: scripthost.StatusActive})
		if err != nil {
			t.Fatal(err)
		}
		if len(runs) != 1 || runs[0].ID != l.inFlight {
			t.Fatalf("active runs of orders: got %v, want the one in flight, %s", runs, l.inFlight)
		}
	}
	read()
	meter := pgtest.StartMeter(t, l.url)
	for i := 0; i < passReadCalls; i++ {
		read()
	}
	c := meter.Stop(t)
	if c.Statements < 0 {
		t.Fatal("the server does not count statements: pg_stat_statements is not loaded")
	}
	perCall := func(fragment string) float64 {
		t.Helper()
		for _, sc := range c.ByStatement {
			if strings.Contains(sc.Query, "FROM runs") && strings.Contains(sc.Query, fragment) {
				if sc.Calls != passReadCalls {
					t.Fatalf("%s: %d calls, want %d", sc.Query, sc.Calls, passReadCalls)
				}
				return float64(sc.Blocks) / float64(sc.Calls)
			}
		}
		t.Fatalf("no statement with %q among those the server counted", fragment)
		return 0
	}
	return perCall("handler = $2 ORDER BY created_at DESC"), perCall("status = $2 ORDER BY created_at")
}

// TestPassReadsBoundedByHistory: the two reads of runs each scheduler pass makes of a
// workflow, the newest run of a handler and the workflow's active runs, read as many
// pages on a ledger whose handler has 500 committed runs and where 200 runs of other
// workflows are active as on one with 5 and 2, but for a level of B-tree more: lookups
// bounded by the run they return, not a scan of the handler's history or of every
// active run. So with no statistics
// (a new ledger, as the benchmarks have) and after ANALYZE, and with the plans
// PostgreSQL makes for the values at hand and those it makes for any value (generic:
// the ones a prepared statement keeps). Pages are the server's count
// (pg_stat_statements), so the test starts a server of its own.
func TestPassReadsBoundedByHistory(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute) // a bound, not a measure
	defer cancel()
	srv := pgtest.NewServer(t)
	short := newHistoryLedger(ctx, t, srv.URL(t), 5, 2)
	long := newHistoryLedger(ctx, t, srv.URL(t), 500, 200)

	// Each read goes down a B-tree from its root to a leaf, then reads the row it
	// returns: on the long ledger, a page per level (two) and one of the table. The
	// short ledger's may read less (its table is one page, read whole once analyzed);
	// its reads plus slack pages bound the long one's. Without the indexes of schema
	// 16 the long ledger's reads were 40 pages per call for the newest run (with no
	// statistics; 3 once analyzed) and 14 to 28 for the active run (by the plan).
	const slack = 3
	for _, stats := range []string{"no statistics", "analyzed"} {
		for _, l := range []historyLedger{short, long} {
			setStats(ctx, t, l.url, stats == "analyzed")
		}
		for _, mode := range []string{"force_custom_plan", "force_generic_plan"} {
			// Sequential scans are left out: on a table of a few dozen pages, analyzed,
			// the planner may read it whole for the one active run (it estimates the
			// workflow's and the status's shares as if independent), where on a ledger
			// of any size it reads an index. Which index serves is what is measured.
			params := "&plan_cache_mode=" + mode + "&enable_seqscan=off"
			shortLatest, shortActive := passReads(ctx, t, short, params)
			longLatest, longActive := passReads(ctx, t, long, params)
			t.Logf("%s, %s: pages per call: newest run %.1f (5 runs) %.1f (500 runs); active runs %.1f (2 other workflows) %.1f (200)",
				stats, mode, shortLatest, longLatest, shortActive, longActive)
			if longLatest > shortLatest+slack {
				t.Errorf("%s, %s: the newest run of a handler read %.1f pages per call with 500 runs of the handler, %.1f with 5: "+
					"want about as many, whatever the history", stats, mode, longLatest, shortLatest)
			}
			if longActive > shortActive+slack {
				t.Errorf("%s, %s: the active runs of a workflow read %.1f pages per call with 200 other workflows' runs active, %.1f with 2: "+
					"want about as many, whatever the others", stats, mode, longActive, shortActive)
			}
		}
	}
}

// setStats gives the ledger's runs table statistics (ANALYZE) when analyze, and checks
// that it has them then, and none otherwise.
func setStats(ctx context.Context, t *testing.T, url string, analyze bool) {
	t.Helper()
	c, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(ctx)
	if analyze {
		if _, err := c.Exec(ctx, `ANALYZE runs`); err != nil {
			t.Fatal(err)
		}
	}
	var columns int
	if err := c.QueryRow(ctx, `SELECT count(*) FROM pg_stats WHERE schemaname = current_schema() AND tablename = 'runs'`).Scan(&columns); err != nil {
		t.Fatal(err)
	}
	if (columns > 0) != analyze {
		t.Fatalf("runs: statistics of %d columns, want them only once analyzed (analyzed: %v)", columns, analyze)
	}
}
