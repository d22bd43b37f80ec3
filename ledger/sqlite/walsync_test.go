package sqlite

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// heldSync replaces the store's fsync of the WAL with one that tells entered when it
// starts and waits for release, then fails with fail if set.
type heldSync struct {
	entered chan struct{}
	release chan error
}

func holdSyncs(s *Store) *heldSync {
	h := &heldSync{entered: make(chan struct{}, 16), release: make(chan error)}
	s.wsync.syncFile = func(f *os.File) error {
		h.entered <- struct{}{}
		if err := <-h.release; err != nil {
			return err
		}
		return f.Sync()
	}
	return h
}

func (h *heldSync) waitEntered(t *testing.T, what string) {
	t.Helper()
	select {
	case <-h.entered:
	case <-time.After(10 * time.Second):
		t.Fatalf("%s: no fsync of the WAL began", what)
	}
}

func returned(errs <-chan error) (error, bool) {
	select {
	case err := <-errs:
		return err, true
	case <-time.After(50 * time.Millisecond):
		return nil, false
	}
}

// TestDurableWriteWaitsForSync checks that a durable write returns only after an fsync
// of the WAL that began after its commit, and that the writer goes on meanwhile: a
// redoable write commits and returns while the disk is waited for, and a durable write
// committed during an fsync waits for the next one.
func TestDurableWriteWaitsForSync(t *testing.T) {
	ctx := context.Background()
	s, _ := tempStore(t)
	h := holdSyncs(s)
	base := s.WriteStats()

	first := make(chan error, 1)
	go func() { first <- s.write(ctx, insertEvent("first")) }()
	h.waitEntered(t, "durable write")
	if _, done := returned(first); done {
		t.Fatal("durable write returned before the fsync of the WAL ended")
	}
	// The writer is free while the disk is waited for.
	redo := make(chan error, 1)
	go func() { redo <- s.writeRedo(ctx, insertEvent("redo")) }()
	select {
	case err := <-redo:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("a redoable write waited for another write's fsync")
	}
	// Committed after the fsync in progress began: it is not covered by it.
	second := make(chan error, 1)
	go func() { second <- s.write(ctx, insertEvent("second")) }()
	for s.WriteStats().Writes-base.Writes < 3 {
		time.Sleep(time.Millisecond)
	}
	h.release <- nil
	if err := <-first; err != nil {
		t.Fatal(err)
	}
	h.waitEntered(t, "durable write committed during an fsync")
	if _, done := returned(second); done {
		t.Fatal("durable write returned on an fsync that began before its commit")
	}
	h.release <- nil
	if err := <-second; err != nil {
		t.Fatal(err)
	}
	if got := s.WriteStats().Syncs - base.Syncs; got != 2 {
		t.Errorf("got %d fsyncs, want 2", got)
	}
}

// TestSyncShared checks that the durable writes committed while an fsync is in
// progress share the next one, whichever batches carried them.
func TestSyncShared(t *testing.T) {
	ctx := context.Background()
	s, _ := tempStore(t)
	h := holdSyncs(s)
	var covered atomic.Int64 // what Options.OnSync is told
	s.wsync.onSync = func(commits int, _ time.Duration) { covered.Add(int64(commits)) }
	base := s.WriteStats()
	const n = 8
	errs := make(chan error, n+1)
	go func() { errs <- s.write(ctx, insertEvent("held")) }()
	h.waitEntered(t, "durable write")
	for i := range n {
		go func() { errs <- s.write(ctx, insertEvent(fmt.Sprint(i))) }()
	}
	for s.WriteStats().Writes-base.Writes < n+1 {
		time.Sleep(time.Millisecond)
	}
	go func() {
		h.release <- nil // the first fsync
		<-h.entered
		h.release <- nil // the one the others share
	}()
	for range n + 1 {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	st := s.WriteStats()
	if got := st.Syncs - base.Syncs; got != 2 {
		t.Errorf("got %d fsyncs for %d durable writes in %d commits, want 2", got, n+1, st.Commits-base.Commits)
	}
	if got, want := covered.Load(), st.Commits-base.Commits; got != want {
		t.Errorf("OnSync was told of %d commits synced, want the %d made", got, want)
	}
}

// TestSyncFailureStopsWrites checks a failed fsync of the WAL: the durable write
// waiting for it gets the error, which names the file, and so does every later write,
// since the kernel may have dropped what it could not write; reads go on, and the
// ledger reopened takes writes again.
func TestSyncFailureStopsWrites(t *testing.T) {
	ctx := context.Background()
	s, path := tempStore(t)
	h := holdSyncs(s)
	errs := make(chan error, 1)
	go func() { errs <- s.write(ctx, insertEvent("lost")) }()
	h.waitEntered(t, "durable write")
	h.release <- syscall.EIO
	err := <-errs
	if !errors.Is(err, syscall.EIO) || !strings.Contains(err.Error(), "ledger.db-wal") {
		t.Fatalf("durable write: got %v, want the fsync's EIO naming ledger.db-wal", err)
	}
	for name, write := range map[string]func() error{
		"durable":   func() error { return s.write(ctx, insertEvent("after")) },
		"redoable":  func() error { return s.writeRedo(ctx, insertEvent("after")) },
		"must-redo": func() error { return s.mustWriteRedo(ctx, insertEvent("after")) },
	} {
		if err := write(); !errors.Is(err, syscall.EIO) {
			t.Errorf("%s write after the failed fsync: got %v, want the fsync's error", name, err)
		}
	}
	var n int
	if err := s.r.GetContext(ctx, &n, `SELECT COUNT(*) FROM events`); err != nil {
		t.Errorf("read after the failed fsync: %v", err)
	}
	s = reopen(t, s, path)
	if err := s.write(ctx, insertEvent("reopened")); err != nil {
		t.Errorf("write after reopening: %v", err)
	}
}

// TestCloseWaitsForSync checks that Close lets a durable write committed before it
// finish its fsync.
func TestCloseWaitsForSync(t *testing.T) {
	ctx := context.Background()
	s, _ := tempStore(t) // its cleanup's second Close does nothing
	h := holdSyncs(s)
	errs := make(chan error, 1)
	go func() { errs <- s.write(ctx, insertEvent("closing")) }()
	h.waitEntered(t, "durable write")
	closed := make(chan error, 1)
	go func() { closed <- s.Close() }()
	if _, done := returned(closed); done {
		t.Fatal("Close returned while a durable write waited for its fsync")
	}
	h.release <- nil
	if err := <-errs; err != nil {
		t.Errorf("durable write: %v", err)
	}
	if err := <-closed; err != nil {
		t.Errorf("Close: %v", err)
	}
}

// TestSyncFollowsSQLitesWAL checks that the fsync finds the WAL SQLite writes when the
// ledger is opened through a symbolic link to its file, and after the process changed
// its directory: the name comes from SQLite, not from the path given to Open.
func TestSyncFollowsSQLitesWAL(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	real := filepath.Join(dir, "real")
	if err := os.Mkdir(real, 0o755); err != nil {
		t.Fatal(err)
	}
	// A fresh ledger, then a link to its file from another directory.
	s, err := Open(ctx, filepath.Join(real, "ledger.db"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(real, "ledger.db"), filepath.Join(dir, "link.db")); err != nil {
		t.Fatal(err)
	}
	t.Chdir(dir)
	s, err = Open(ctx, "link.db", Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := os.Chdir(real); err != nil {
		t.Fatal(err)
	}
	base := s.WriteStats()
	if err := s.write(ctx, insertEvent("linked")); err != nil {
		t.Fatalf("durable write through a link, after a chdir: %v", err)
	}
	if got := s.WriteStats().Syncs - base.Syncs; got != 1 {
		t.Errorf("got %d fsyncs, want 1", got)
	}
	if _, err := os.Stat(filepath.Join(dir, "link.db-wal")); err == nil {
		t.Errorf("a WAL beside the link: SQLite writes the one beside the file")
	}
}
