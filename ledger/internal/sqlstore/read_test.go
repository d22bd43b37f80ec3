package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/jmoiron/sqlx"
	sqlite3 "github.com/mattn/go-sqlite3"
)

// endless is a query that runs until it is interrupted, calling started() as it goes.
const endless = `WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT count(*) FROM c WHERE started()`

// running receives a value whenever a query calls started(), if it is waited for.
var running = make(chan struct{})

func init() {
	sql.Register("sqlite3_started", &sqlite3.SQLiteDriver{ConnectHook: func(c *sqlite3.SQLiteConn) error {
		return c.RegisterFunc("started", func() bool {
			select {
			case running <- struct{}{}:
			default:
			}
			return true
		}, false)
	}})
}

func readerOn(t *testing.T, local bool) *reader {
	t.Helper()
	db, err := sqlx.Open("sqlite3_started", filepath.Join(t.TempDir(), "read.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return New(nil, db, Dialect{Name: "test", LocalReads: local}, Options{}).r
}

// interrupted runs read with a context cancelled once the read has started, and
// reports what it returned; a read that does not stop fails the test.
func interrupted(t *testing.T, read func(ctx context.Context) error) error {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- read(ctx) }()
	select {
	case <-running:
	case err := <-done:
		t.Fatalf("the read ended before it was cancelled: %v", err)
	}
	cancel()
	select {
	case err := <-done:
		return err
	case <-time.After(30 * time.Second):
		t.Fatal("the read went on 30s after its context was cancelled")
		return nil
	}
}

// TestListInterrupted: a list keeps its caller's context, with LocalReads too, so that
// cancelling it stops a long one.
func TestListInterrupted(t *testing.T) {
	for _, local := range []bool{false, true} {
		r := readerOn(t, local)
		err := interrupted(t, func(ctx context.Context) error {
			var n []int64
			return r.SelectContext(ctx, &n, endless)
		})
		if !errors.Is(err, context.Canceled) {
			t.Errorf("local=%v: got %v, want context.Canceled", local, err)
		}
	}
}

// TestLookupInterrupted: without LocalReads a lookup keeps its caller's context too.
func TestLookupInterrupted(t *testing.T) {
	r := readerOn(t, false)
	err := interrupted(t, func(ctx context.Context) error {
		var n int64
		return r.GetContext(ctx, &n, endless)
	})
	if !errors.Is(err, context.Canceled) {
		t.Errorf("got %v, want context.Canceled", err)
	}
}

// TestLocalLookup: with LocalReads a lookup whose caller has given up fails with the
// context's error without running; one whose caller has not runs with the context's
// values.
func TestLocalLookup(t *testing.T) {
	r := readerOn(t, true)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	var n int64
	if err := r.GetContext(ctx, &n, `SELECT 1`); !errors.Is(err, context.Canceled) {
		t.Errorf("GetContext with a cancelled context: got %v, want context.Canceled", err)
	}
	if err := r.selectLookup(ctx, &[]int64{}, `SELECT 1`); !errors.Is(err, context.Canceled) {
		t.Errorf("selectLookup with a cancelled context: got %v, want context.Canceled", err)
	}
	type key struct{}
	live := context.WithValue(context.Background(), key{}, "v")
	if got := r.lookupContext(live); got.Value(key{}) != "v" || got.Done() != nil {
		t.Errorf("lookup context: got value %v, done %v; want v and no done channel", got.Value(key{}), got.Done())
	}
	if err := r.GetContext(live, &n, `SELECT 7`); err != nil || n != 7 {
		t.Errorf("GetContext: got %d, %v; want 7", n, err)
	}
}
