package sqlite

import (
	"context"
	"database/sql/driver"
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
	s, path := tempStore(t)
	check := func(name string, want bool) func(conn driver.Conn) {
		return func(conn driver.Conn) {
			got, err := hasMutex(conn.(*sqlite3.SQLiteConn))
			if err != nil {
				t.Fatal(err)
			}
			if got != want {
				t.Errorf("%s: has a mutex of its own: %v, want %v", name, got, want)
			}
		}
	}
	onConn(t, s.r, check("read connection", false))
	onConn(t, s.ckpt.db, check("checkpointer's connection", false))
	onWriter(t, s, check("write connection", false))

	plain, err := sqlx.Open("sqlite3", path+"?_query_only=1")
	if err != nil {
		t.Fatal(err)
	}
	defer plain.Close()
	onConn(t, plain, check("the driver's default connection", true))
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
