package sqlite

import (
	"context"
	"database/sql"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/scripthost/scripthost/internal/benchcmp"
	"github.com/scripthost/scripthost/ledger"
)

// pagesRuns is how many consumer runs are measured, after as many warm-up runs: the
// tables then have a few levels, as in a ledger that has been running for a while.
const pagesRuns = 100

// walPages makes consumer runs on a fresh store with checkpoints off (a run's
// lifecycle events attached when events is set) and returns the page number of each
// WAL frame the measured runs wrote: each frame is a syscall or two at commit and a
// copy at checkpoint.
func walPages(t *testing.T, events bool) (*Store, []uint32) {
	t.Helper()
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "ledger.db")
	s, err := Open(ctx, path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	if err := s.write(ctx, func(ctx context.Context, tx *wtx) error {
		return tx.c.exec(ctx, "PRAGMA wal_autocheckpoint = 0")
	}); err != nil {
		t.Fatal(err)
	}
	if events {
		// What the runtime attaches to a transition: the phase left and the one entered.
		ctx = ledger.WithEvents(ctx,
			ledger.LifecycleEvent{Type: ledger.EventPhaseCompleted, Data: json.RawMessage(`{"phase":"prepare"}`)},
			ledger.LifecycleEvent{Type: ledger.EventPhaseStarted, Data: json.RawMessage(`{"phase":"mutate"}`)})
	}
	const frameHeader, walHeader = 24, 32
	var start int64
	for i := range 2 * pagesRuns {
		if i == pagesRuns {
			fi, err := os.Stat(path + "-wal")
			if err != nil {
				t.Fatal(err)
			}
			start = fi.Size()
		}
		if err := consumerRun(ctx, s, fmt.Sprint(i)); err != nil {
			t.Fatal(err)
		}
	}
	if start < walHeader {
		t.Fatalf("WAL of %d bytes after %d runs: was it checkpointed?", start, pagesRuns)
	}
	wal, err := os.ReadFile(path + "-wal")
	if err != nil {
		t.Fatal(err)
	}
	if ps := int64(binary.BigEndian.Uint32(wal[8:])); ps != pageSize {
		t.Fatalf("the WAL's pages are of %d bytes, want %d (a new ledger's)", ps, pageSize)
	}
	var pages []uint32
	for off := start; off+frameHeader+pageSize <= int64(len(wal)); off += frameHeader + pageSize {
		pages = append(pages, binary.BigEndian.Uint32(wal[off:]))
	}
	return s, pages
}

// TestPagesPerConsumerRun counts the pages a consumer run's commits write to the WAL:
// an update rewrites no index of a column it cannot change, none of the runs table's
// indexes for superseded_by, and runs_status only when the status changes; an
// appended event or lifecycle event writes no sqlite_sequence row, and the narrowed
// indexes of events and mutations are written only for the rows their queries read.
// TestPagesPerBtree (-tags sqlite_dbstat) says which B-trees the pages belong to.
func TestPagesPerConsumerRun(t *testing.T) {
	for _, c := range []struct {
		name   string
		events bool
		want   float64
	}{
		// 9 commits; 71.5 pages when every update rewrote every index of its table, 55.2
		// when runs_status was rewritten at every phase, 50.2 then. 8 commits since the
		// outcome moves the run on to emitting, 53.6 (54.8 on the tables of 100 runs):
		// the store logs mutation_recorded and phase_started(next) itself, which the
		// runtime attached before, and this run attaches nothing. 45.6 with version 6 of
		// the schema (no AUTOINCREMENT, narrowed indexes of events and mutations, no
		// handler_state_wake). 43.8 with version 7 (snapshots in the lifecycle log),
		// 42.8 with version 8 (a snapshot logged as what changed). Pages of 4 KiB until
		// then; 47.3 pages of 2 KiB since (94.6 KiB written per run, against 171). 36.0
		// since the in-flight record creates the run (consumerRun: four commits instead
		// of eight, the publish included); 35.9 to 36.1 from run to run, as the random
		// part of run ids decides where index pages split. 36.2 to 36.3 with version 12
		// (runs_status holds the workflow after the status).
		{"bare", false, 36.5},
		// 2 lifecycle events more per write (the kind the runtime attaches): 74.0 pages
		// before version 6 of the schema, 59.3 with it, 47.2 with version 7, 46.4 with
		// version 8; 53.2 pages of 2 KiB (106 KiB, against 186); 38.5 in four commits
		// (38.5 to 38.8 from run to run), 38.9 to 39.1 with version 12.
		{"lifecycle events", true, 39.5},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, pages := walPages(t, c.events)
			perRun := float64(len(pages)) / pagesRuns
			if perRun > c.want {
				t.Errorf("got %.1f pages written per consumer run, want at most %.1f", perRun, c.want)
			}
			t.Logf("%.1f pages per consumer run", perRun)
		})
	}
}

// TestPageSize checks that a new ledger has pages of pageSize, and that one created
// with SQLite's 4 KiB pages (by an earlier version) keeps them and works.
func TestPageSize(t *testing.T) {
	ctx := context.Background()
	pageSizeOf := func(s *Store) int {
		var n int
		if err := s.r.GetContext(ctx, &n, "PRAGMA page_size"); err != nil {
			t.Fatal(err)
		}
		return n
	}
	s, err := Open(ctx, filepath.Join(t.TempDir(), "new.db"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if got := pageSizeOf(s); got != pageSize {
		t.Errorf("a new ledger has pages of %d bytes, want %d", got, pageSize)
	}
	if benchcmp.FloorPageSize != pageSize {
		t.Errorf("the benchmarks' plain-SQLite floor has pages of %d bytes, a new ledger %d", benchcmp.FloorPageSize, pageSize)
	}

	// An empty database whose page size is already fixed, as a ledger created before
	// had it when its first table was made.
	old := filepath.Join(t.TempDir(), "old.db")
	db, err := sql.Open("sqlite3", old)
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{"PRAGMA page_size = 4096", "PRAGMA user_version = 0", "VACUUM"} {
		if _, err := db.ExecContext(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	var fixed int
	if err := db.QueryRowContext(ctx, "PRAGMA page_size").Scan(&fixed); err != nil {
		t.Fatal(err)
	}
	db.Close()
	if fixed != 4096 {
		t.Fatalf("set-up: the database has pages of %d bytes, want 4096", fixed)
	}
	s4, err := Open(ctx, old, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s4.Close()
	if got := pageSizeOf(s4); got != 4096 {
		t.Errorf("a ledger of 4 KiB pages has pages of %d bytes after opening", got)
	}
	if err := consumerRun(ctx, s4, "1"); err != nil {
		t.Fatalf("a consumer run on a ledger of 4 KiB pages: %v", err)
	}
}
