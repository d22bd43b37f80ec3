package sqlite

import (
	"context"
	"database/sql/driver"
	"testing"

	"github.com/jmoiron/sqlx"
	sqlite3 "github.com/mattn/go-sqlite3"
)

// onConn runs check on one driver connection of db.
func onConn(t *testing.T, db *sqlx.DB, check func(conn driver.Conn)) {
	t.Helper()
	c, err := db.Conn(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := c.Raw(func(dc any) error { check(dc.(driver.Conn)); return nil }); err != nil {
		t.Fatal(err)
	}
}

// onWriter runs check on the store's write connection.
func onWriter(t *testing.T, s *Store, check func(conn driver.Conn)) {
	t.Helper()
	c := acquired(t, s)
	defer s.release(nil)
	if err := c.conn.Raw(func(dc any) error { check(dc.(driver.Conn)); return nil }); err != nil {
		t.Fatal(err)
	}
}

// TestPlansIgnoreBoundValues checks that every connection of the store has the query
// planner's stability guarantee, and what it is for: a kept statement whose bound
// value meets a partial index's condition runs with new values without being compiled
// again. The same statement on a connection without the guarantee is compiled again at
// each new value, which is what the test would see if the store's connections lost it.
func TestPlansIgnoreBoundValues(t *testing.T) {
	s, path := tempStore(t)

	// mutations_failed_input_hash is partial (status = 'failed'): the planner compares
	// the bound status with that condition.
	const q = `SELECT COUNT(*) FROM mutations WHERE input_hash = ? AND status = ?`
	recompiles := func(t *testing.T, conn driver.Conn) int {
		t.Helper()
		dst, err := conn.(*sqlite3.SQLiteConn).Prepare(q)
		if err != nil {
			t.Fatal(err)
		}
		defer dst.Close()
		st := dst.(*sqlite3.SQLiteStmt)
		for _, status := range []string{"failed", "applied", "in_flight", "failed"} {
			rows, err := st.Query([]driver.Value{"ih", status})
			if err != nil {
				t.Fatal(err)
			}
			if err := rows.Next(make([]driver.Value, 1)); err != nil {
				t.Fatal(err)
			}
			rows.Close()
		}
		n, err := reprepares(st)
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	check := func(name string) func(conn driver.Conn) {
		return func(conn driver.Conn) {
			got, err := qpsg(conn.(*sqlite3.SQLiteConn))
			if err != nil || !got {
				t.Errorf("%s: got stability guarantee %v (err %v), want on", name, got, err)
			}
			if n := recompiles(t, conn); n != 0 {
				t.Errorf("%s: the statement was compiled again %d times for new values, want 0", name, n)
			}
		}
	}
	onConn(t, s.r, check("read connection"))
	onWriter(t, s, check("write connection"))

	// The control: the driver's own connection recompiles, so the check above can fail.
	plain, err := sqlx.Open("sqlite3", path+"?_query_only=1")
	if err != nil {
		t.Fatal(err)
	}
	defer plain.Close()
	onConn(t, plain, func(conn driver.Conn) {
		if n := recompiles(t, conn); n == 0 {
			t.Errorf("plain connection: the statement was never compiled again; the check above proves nothing")
		}
	})
}
