package sqlite

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

// TestPagesPerConsumerRun counts the pages a consumer run's commits write to the WAL
// (each a syscall or two and a copy at checkpoint): an update rewrites no index of a
// column it cannot change, none of the runs table's indexes for superseded_by, and
// runs_status only when the status changes.
// The frames are counted from the WAL's growth with checkpoints off, averaged over
// runs after the tables have a few levels.
func TestPagesPerConsumerRun(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "ledger.db")
	s, err := Open(ctx, path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.write(ctx, func(ctx context.Context, tx *wtx) error {
		return tx.c.exec(ctx, "PRAGMA wal_autocheckpoint = 0")
	}); err != nil {
		t.Fatal(err)
	}
	const warm, runs = 50, 100
	const pageSize, frameHeader, walHeader = 4096, 24, 32
	var start int64
	for i := range warm + runs {
		if i == warm {
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
	fi, err := os.Stat(path + "-wal")
	if err != nil {
		t.Fatal(err)
	}
	if start < walHeader {
		t.Fatalf("WAL of %d bytes after %d runs: was it checkpointed?", start, warm)
	}
	perRun := float64(fi.Size()-start) / (pageSize + frameHeader) / runs
	// 9 commits; 71.5 pages when every update rewrote every index of its table, 55.2
	// when runs_status was rewritten at every phase, 50.2 then. 8 commits since the
	// outcome moves the run on to emitting, 53.6: the store now logs mutation_recorded
	// and phase_started(next) itself, which the runtime attached before (its runs
	// write no more for them), and this run attaches nothing.
	if perRun > 54 {
		t.Errorf("got %.1f pages written per consumer run, want at most 54", perRun)
	}
	t.Logf("%.1f pages per consumer run", perRun)
}
