package sqlite

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"os"
	"testing"

	"github.com/scripthost/scripthost"
	"github.com/scripthost/scripthost/ledger"
)

// TestWALWritesGathered checks that a transaction's WAL frames reach the file in one
// write (or a few, for a large one) instead of two per frame, and that the write
// connection's WAL is the one gathered: found linked to its main database.
func TestWALWritesGathered(t *testing.T) {
	ctx := context.Background()
	s, _ := tempStore(t)
	if err := consumerRun(ctx, s, "warm"); err != nil {
		t.Fatal(err)
	}
	w0, p0, u0 := walWriteCounts()
	c0 := s.WriteStats().Commits
	const runs = 20
	for i := range runs {
		if err := consumerRun(ctx, s, fmt.Sprint(i)); err != nil {
			t.Fatal(err)
		}
	}
	w1, p1, u1 := walWriteCounts()
	commits := float64(s.WriteStats().Commits - c0)
	writes, passed := float64(w1-w0)/commits, float64(p1-p0)/commits
	t.Logf("per commit: SQLite wrote %.1f times to the WAL, %.1f writes reached the file", writes, passed)
	if u1 != u0 {
		t.Errorf("%d WALs opened without their main database: written through, not gathered", u1-u0)
	}
	if writes < 6 {
		t.Fatalf("SQLite wrote %.1f times per commit: too few frames to tell", writes)
	}
	if passed > 1.5 {
		t.Errorf("%.1f writes per commit reached the WAL file, want 1 (the frames gathered)", passed)
	}
}

// TestCommitInFileWhenReturned checks that every commit, the ones that wait for the
// disk and the ones that do not, is in the WAL file when the write returns: the last
// frame the WAL index counts is a commit frame of the WAL's current generation. A
// commit left in the process's buffer would be lost with the process, and could be
// read stale by another connection.
func TestCommitInFileWhenReturned(t *testing.T) {
	ctx := context.Background()
	s, path := tempStore(t)
	const walHeader, frameHeader = 32, 24
	check := func(step string) {
		t.Helper()
		wal, err := os.ReadFile(path + "-wal")
		if err != nil {
			t.Fatal(err)
		}
		frames := s.ckpt.frames.load()
		if frames == 0 || len(wal) < walHeader {
			return // checkpointed and restarted: nothing of the commit is left to read
		}
		pageSize := int(binary.BigEndian.Uint32(wal[8:]))
		end := walHeader + frames*(frameHeader+pageSize)
		if len(wal) < end {
			t.Fatalf("after %s: the WAL index counts %d frames, the file holds %d bytes, want at least %d",
				step, frames, len(wal), end)
		}
		last := wal[end-frameHeader-pageSize:]
		if commit := binary.BigEndian.Uint32(last[4:]); commit == 0 {
			t.Fatalf("after %s: frame %d is not a commit frame", step, frames)
		}
		if string(last[8:16]) != string(wal[16:24]) {
			t.Fatalf("after %s: frame %d is of an earlier WAL generation (its salt differs)", step, frames)
		}
	}
	for i := range 30 {
		r, err := s.CreateRun(ctx, ledger.NewRun{Workflow: "w", Version: 1, Handler: "h", Kind: scripthost.KindConsumer,
			Start: scripthost.RunPreparing})
		if err != nil {
			t.Fatal(err)
		}
		check("creating a run")
		if _, err := s.MarkPrepared(ctx, r.ID, ledger.PrepareResult{Mutate: true}); err != nil {
			t.Fatal(err)
		}
		check("a prepare result")
		m, err := s.BeginMutation(ctx, ledger.NewMutation{RunID: r.ID, Namespace: "Shop", Method: "ship",
			Params: json.RawMessage(`{"order":1}`), InputHash: fmt.Sprint("ih-", i)})
		if err != nil {
			t.Fatal(err)
		}
		check("an in-flight mutation (durable)")
		if _, err := s.ApplyMutation(ctx, m.ID, json.RawMessage(`{"ok":true}`)); err != nil {
			t.Fatal(err)
		}
		check("a mutation's outcome (not waiting for the disk)")
	}
}
