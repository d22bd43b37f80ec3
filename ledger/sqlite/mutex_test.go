package sqlite

import (
	"context"
	"testing"

	"github.com/jmoiron/sqlx"
	sqlite3 "github.com/mattn/go-sqlite3"

	"github.com/scripthost/scripthost"
	"github.com/scripthost/scripthost/ledger"
)

// TestConnectionsWithoutMutex checks that every connection of the store (the writer,
// the checkpointer's, the readers) is opened without SQLite's own mutex, which
// database/sql's lock on each connection makes redundant; the driver's default
// connection, the control, has one.
func TestConnectionsWithoutMutex(t *testing.T) {
	ctx := context.Background()
	s, path := tempStore(t)
	check := func(name string, want bool) func(dc any) error {
		return func(dc any) error {
			got, err := hasMutex(dc.(*sqlite3.SQLiteConn))
			if err != nil {
				t.Fatal(err)
			}
			if got != want {
				t.Errorf("%s: has a mutex of its own: %v, want %v", name, got, want)
			}
			return nil
		}
	}
	on := func(db *sqlx.DB, f func(dc any) error) {
		t.Helper()
		c, err := db.Conn(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		if err := c.Raw(f); err != nil {
			t.Fatal(err)
		}
	}
	on(s.r, check("read connection", false))
	on(s.ckpt.db, check("checkpointer's connection", false))
	w := acquired(t, s)
	if err := w.conn.Raw(check("write connection", false)); err != nil {
		t.Fatal(err)
	}
	s.release(nil)

	plain, err := sqlx.Open("sqlite3", path+"?_query_only=1")
	if err != nil {
		t.Fatal(err)
	}
	defer plain.Close()
	on(plain, check("the driver's default connection", true))
}

// TestNoMemoryStatistics checks that SQLite keeps no memory statistics in the
// process: the package switched them off before the first connection opened, so
// SQLite counts nothing however much the store allocates.
func TestNoMemoryStatistics(t *testing.T) {
	if memstatusOff != 0 {
		t.Fatalf("SQLite answered %d to switching its memory statistics off, want 0", memstatusOff)
	}
	s, _ := tempStore(t)
	if _, err := s.CreateRun(context.Background(), ledger.NewRun{Workflow: "w", Version: 1, Handler: "h", Kind: scripthost.KindConsumer}); err != nil {
		t.Fatal(err)
	}
	if n := memoryUsed(); n != 0 {
		t.Errorf("SQLite counted %d bytes in use, want 0 (no statistics)", n)
	}
}
