package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"testing"
	"time"

	"github.com/scripthost/scripthost"
	"github.com/scripthost/scripthost/ledger"
	"github.com/scripthost/scripthost/ledger/internal/sqlstore"
)

// preparingRun creates a consumer run in phase preparing: its row is then in the
// writer's row cache.
func preparingRun(t *testing.T, s *Store) scripthost.Run {
	t.Helper()
	r, err := s.CreateRun(context.Background(), ledger.NewRun{Workflow: "w", Version: 1, Handler: "h",
		Kind: scripthost.KindConsumer, Start: scripthost.RunPreparing})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// TestRowCacheFollowsOtherConnections changes a run the writer has cached through
// another connection, as a second process would: the writer's next transition of the
// run starts from the changed row, not the cached one.
func TestRowCacheFollowsOtherConnections(t *testing.T) {
	ctx := context.Background()
	s, path := tempStore(t)
	r := preparingRun(t, s)
	other, err := sql.Open("sqlite3", path+"?_busy_timeout=5000")
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	if _, err := other.ExecContext(ctx, `UPDATE runs SET attempt = 7 WHERE id = ?`, r.ID); err != nil {
		t.Fatal(err)
	}
	got, err := s.MarkPrepared(ctx, r.ID, ledger.PrepareResult{Mutate: true})
	if err != nil {
		t.Fatal(err)
	}
	if got.Attempt != 7 {
		t.Errorf("the transition after another connection's change returned attempt %d, want 7 (the stored row)", got.Attempt)
	}
}

// refused is a context whose lifecycle event the log refuses: a transition carrying it
// fails after its own statements ran, which then are rolled back.
var refused = ledger.WithEvents(context.Background(), ledger.LifecycleEvent{Type: "snapshot"})

// TestRowCacheDropsFailedWrites checks that the rows a failed write left in the cache
// go with the write, alone in its transaction or in a batch beside writes that
// succeed: the run's next transition starts from the stored row.
func TestRowCacheDropsFailedWrites(t *testing.T) {
	ctx := context.Background()
	s, _ := tempStore(t)

	alone := preparingRun(t, s)
	if _, err := s.MarkPrepared(refused, alone.ID, ledger.PrepareResult{Mutate: true}); err == nil {
		t.Fatal("a transition with a refused lifecycle event succeeded")
	}

	// A batch: hold the writer with one write, let the committer take a third and
	// wait for the connection, and queue the two transitions behind it: the committer
	// takes them together next.
	failing, passing, passing2 := preparingRun(t, s), preparingRun(t, s), preparingRun(t, s)
	hold, release := make(chan struct{}), make(chan struct{})
	first := make(chan error, 2)
	go func() {
		first <- s.write(ctx, func(ctx context.Context, tx *wtx) error { close(hold); <-release; return nil })
	}()
	<-hold
	waitFor := func(n int) {
		t.Helper()
		for deadline := time.Now().Add(10 * time.Second); waiting() < n; time.Sleep(time.Millisecond) {
			if time.Now().After(deadline) {
				close(release)
				t.Fatalf("%d writers waiting in submit after 10s, want %d", waiting(), n)
			}
		}
	}
	go func() { first <- s.write(ctx, func(ctx context.Context, tx *wtx) error { return nil }) }()
	waitFor(2)
	errs := make(chan error, 3)
	go func() {
		_, err := s.MarkPrepared(refused, failing.ID, ledger.PrepareResult{Mutate: true})
		errs <- err
	}()
	for _, r := range []scripthost.Run{passing, passing2} {
		go func() {
			_, err := s.MarkPrepared(ctx, r.ID, ledger.PrepareResult{Mutate: true})
			errs <- err
		}()
	}
	waitFor(5)
	close(release)
	for range 2 {
		if err := <-first; err != nil {
			t.Fatal(err)
		}
	}
	failed := 0
	for range 3 {
		if err := <-errs; err != nil {
			failed++
		}
	}
	if failed != 1 {
		t.Fatalf("%d of the three batched transitions failed, want 1", failed)
	}
	if st := s.WriteStats(); st.MaxBatch < 2 {
		t.Fatalf("the transitions were not batched: %+v", st)
	}

	for _, r := range []scripthost.Run{alone, failing} {
		got, err := s.MarkPrepared(ctx, r.ID, ledger.PrepareResult{Mutate: true})
		if err != nil {
			t.Fatalf("run %s after its failed transition: %v (the failed write's row was kept)", r.ID, err)
		}
		if got.Phase != scripthost.RunMutating {
			t.Errorf("run %s at %s, want mutating", r.ID, got.Phase)
		}
	}
	for _, r := range []scripthost.Run{passing, passing2} {
		got, err := s.Run(ctx, r.ID)
		if err != nil {
			t.Fatal(err)
		}
		if got.Phase != scripthost.RunMutating {
			t.Errorf("a batched transition that succeeded left its run at %s, want mutating", got.Phase)
		}
	}
}

// TestRowCacheBounded checks that the cache holds at most maxCachedRows rows, after a
// transaction that wrote more as after many that wrote a few.
func TestRowCacheBounded(t *testing.T) {
	c := newRowCache()
	c.begin(1, true)
	for i := range 3 * maxCachedRows {
		c.write = append(c.write, cachedRow{sqlstore.RowKey{Table: "runs", ID: fmt.Sprint(i)}, i})
	}
	c.endWrite(true)
	c.end(true, 2, true)
	if n := len(c.committed) + len(c.old); n > maxCachedRows {
		t.Fatalf("%d rows cached after one large transaction, want at most %d", n, maxCachedRows)
	}
	for i := range 3 * maxCachedRows {
		c.begin(2, true)
		c.write = append(c.write, cachedRow{sqlstore.RowKey{Table: "runs", ID: fmt.Sprint("r", i)}, i})
		c.endWrite(true)
		c.end(true, 2, true)
		if n := len(c.committed) + len(c.old); n > maxCachedRows {
			t.Fatalf("%d rows cached, want at most %d", n, maxCachedRows)
		}
	}
	if _, ok := c.get(sqlstore.RowKey{Table: "runs", ID: fmt.Sprint("r", 3*maxCachedRows-1)}); !ok {
		t.Error("the last transaction's row is not cached")
	}
}

// TestRowCacheKeepsRowsReadAgain checks that a row each transaction reads stays cached
// while many transactions write rows of their own (a run in progress among finished
// ones), that a large transaction's rows leave the cache (none of them is kept, and
// no earlier copy of them stays), and that a commit by another connection empties it.
func TestRowCacheKeepsRowsReadAgain(t *testing.T) {
	c := newRowCache()
	hot := sqlstore.RowKey{Table: "runs", ID: "hot"}
	c.begin(1, true)
	c.write = append(c.write, cachedRow{hot, "v1"})
	c.endWrite(true)
	c.end(true, 1, true)
	for i := range 3 * maxCachedRows {
		c.begin(1, true)
		if v, ok := c.get(hot); !ok || v != "v1" {
			t.Fatalf("after %d transactions the row read in each is %v (cached: %v), want v1", i, v, ok)
		}
		c.write = append(c.write, cachedRow{sqlstore.RowKey{Table: "runs", ID: fmt.Sprint("r", i)}, i})
		c.endWrite(true)
		c.end(true, 1, true)
	}
	if _, ok := c.get(sqlstore.RowKey{Table: "runs", ID: "r0"}); ok {
		t.Error("a row not read again since the first of 3072 transactions is still cached")
	}

	c.begin(1, true)
	for i := range maxCachedRows {
		c.write = append(c.write, cachedRow{sqlstore.RowKey{Table: "runs", ID: fmt.Sprint("big", i)}, i})
	}
	c.write = append(c.write, cachedRow{hot, "v2"})
	c.endWrite(true)
	c.end(true, 1, true)
	if v, ok := c.get(hot); ok {
		t.Fatalf("a row a large transaction wrote is cached as %v, want it read from the database", v)
	}

	c.begin(1, true)
	c.write = append(c.write, cachedRow{hot, "v3"})
	c.endWrite(true)
	c.end(true, 1, true)
	c.begin(2, true) // another connection committed
	if v, ok := c.get(hot); ok {
		t.Fatalf("after another connection's commit the cache still has %v", v)
	}
}
