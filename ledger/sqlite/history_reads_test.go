package sqlite

import (
	"context"
	"database/sql/driver"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"testing"

	"github.com/jmoiron/sqlx"
	sqlite3 "github.com/mattn/go-sqlite3"

	"github.com/scripthost/scripthost"
	"github.com/scripthost/scripthost/ledger"
	"github.com/scripthost/scripthost/ledger/ledgertest"
)

// The two reads of runs a scheduler pass makes of a workflow (see the runtime's
// latestRuns and its resumption of active runs), as sqlstore's listRuns writes them
// for SQLite: the newest run of a handler and the workflow's active runs.
const (
	newestRunSQL  = `SELECT * FROM runs WHERE workflow = ? AND handler = ? ORDER BY created_at DESC, rowid DESC LIMIT 1`
	activeRunsSQL = `SELECT * FROM runs WHERE workflow = ? AND status = ? ORDER BY created_at, rowid`
)

// historyLedger builds, at path, a ledger whose workflow "orders" has history
// committed runs of its consumer "ship", then one run of it in flight, the newest,
// and where others other workflows each have a run left active, their runs between
// the history's. It returns the id of the run in flight.
func historyLedger(t *testing.T, path string, history, others int) string {
	t.Helper()
	ctx := context.Background()
	s, err := Open(ctx, path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	return ledgertest.History(ctx, t, s, history, others)
}

// passReadSteps opens the ledger at path and makes the two reads of a pass on one of
// its read connections, returning the virtual machine steps each took, and its plans.
func passReadSteps(t *testing.T, path, inFlight string) (newest, active int, plans string) {
	t.Helper()
	ctx := context.Background()
	s, err := Open(ctx, path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	// The store's own reads find the run in flight.
	if runs, err := s.Runs(ctx, ledger.RunFilter{Workflow: "orders", Handler: "ship", Newest: true, Limit: 1}); err != nil || len(runs) != 1 || runs[0].ID != inFlight {
		t.Fatalf("newest run of orders/ship: got %v (%v), want the one in flight, %s", runs, err, inFlight)
	}
	if runs, err := s.Runs(ctx, ledger.RunFilter{Workflow: "orders", Status: scripthost.StatusActive}); err != nil || len(runs) != 1 || runs[0].ID != inFlight {
		t.Fatalf("active runs of orders: got %v (%v), want the one in flight, %s", runs, err, inFlight)
	}
	onConn(t, s.r, func(conn driver.Conn) {
		c := conn.(*sqlite3.SQLiteConn)
		steps := func(q string, args ...driver.Value) int {
			t.Helper()
			st, err := c.Prepare(q)
			if err != nil {
				t.Fatal(err)
			}
			defer st.Close()
			rows, err := st.Query(args)
			if err != nil {
				t.Fatal(err)
			}
			dest := make([]driver.Value, len(rows.Columns()))
			n := 0
			for ; ; n++ {
				if err := rows.Next(dest); err == io.EOF {
					break
				} else if err != nil {
					t.Fatal(err)
				}
			}
			rows.Close()
			if n != 1 {
				t.Fatalf("%s: %d rows, want the run in flight", q, n)
			}
			v, err := vmSteps(st.(*sqlite3.SQLiteStmt))
			if err != nil {
				t.Fatal(err)
			}
			return v
		}
		newest = steps(newestRunSQL, "orders", "ship")
		active = steps(activeRunsSQL, "orders", string(scripthost.StatusActive))
	})
	var sb strings.Builder
	for _, q := range []string{newestRunSQL, activeRunsSQL} {
		fmt.Fprintf(&sb, "%s: %s\n", q, queryPlan(t, s, q, "", ""))
	}
	return newest, active, sb.String()
}

// TestPassReadsBoundedByHistory: the two reads of runs each scheduler pass makes of a
// workflow, the newest run of a handler and the workflow's active runs, take as many
// steps of SQLite's virtual machine on a ledger whose handler has 500 committed runs
// and where 200 runs of other workflows are active as on one with 5 and 2: lookups
// bounded by the run they return, not a scan of the handler's history or of every
// active run. So without statistics (the ledger never runs ANALYZE) and with them (an
// operator's ANALYZE), on the store's read connections (plans made for any value).
func TestPassReadsBoundedByHistory(t *testing.T) {
	dir := t.TempDir()
	short, long := filepath.Join(dir, "short.db"), filepath.Join(dir, "long.db")
	shortRun := historyLedger(t, short, 5, 2)
	longRun := historyLedger(t, long, 500, 200)
	for _, stats := range []string{"no statistics", "analyzed"} {
		if stats == "analyzed" {
			for _, path := range []string{short, long} {
				db, err := sqlx.Open("sqlite3", path)
				if err != nil {
					t.Fatal(err)
				}
				_, err = db.Exec(`ANALYZE`)
				db.Close()
				if err != nil {
					t.Fatal(err)
				}
			}
		}
		shortNewest, shortActive, _ := passReadSteps(t, short, shortRun)
		longNewest, longActive, plans := passReadSteps(t, long, longRun)
		t.Logf("%s: steps: newest run %d (5 runs) %d (500 runs); active runs %d (2 other workflows) %d (200)\n%s",
			stats, shortNewest, longNewest, shortActive, longActive, plans)
		// A seek is one step whatever the depth of the B-tree; a row read is about ten
		// (a step per column). The slack is for plans that differ by a step or two.
		const slack = 4
		if longNewest > shortNewest+slack {
			t.Errorf("%s: the newest run of a handler took %d steps with 500 runs of the handler, %d with 5: want about as many, whatever the history\n%s",
				stats, longNewest, shortNewest, plans)
		}
		if longActive > shortActive+slack {
			t.Errorf("%s: the active runs of a workflow took %d steps with 200 other workflows' runs active, %d with 2: want about as many, whatever the others\n%s",
				stats, longActive, shortActive, plans)
		}
	}
}
