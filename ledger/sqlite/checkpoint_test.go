package sqlite

import (
	"context"
	"path/filepath"
	"testing"
	"time"
)

// fillWAL commits n writes of about a page each on s's writer.
func fillWAL(t *testing.T, s *Store, n int) {
	t.Helper()
	ctx := context.Background()
	if err := s.write(ctx, func(ctx context.Context, tx *wtx) error {
		_, err := tx.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS scratch (x BLOB)`)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	for range n {
		if err := s.writeRedo(ctx, func(ctx context.Context, tx *wtx) error {
			_, err := tx.ExecContext(ctx, `INSERT INTO scratch (x) VALUES (randomblob(3000))`)
			return err
		}); err != nil {
			t.Fatal(err)
		}
	}
}

// TestCheckpointsOffTheWriter checks who checkpoints the WAL: not the writer's commit
// (SQLite's default, which would make every write wait for the copy and its fsyncs),
// but the store's checkpointer on its own connection, once the WAL has grown by its
// threshold; and the writer itself only past the backstop, when the checkpointer does
// not keep up.
func TestCheckpointsOffTheWriter(t *testing.T) {
	ctx := context.Background()
	open := func(t *testing.T) *Store {
		s, err := Open(ctx, filepath.Join(t.TempDir(), "ledger.db"), Options{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	}

	t.Run("the writer does not checkpoint", func(t *testing.T) {
		s := open(t)
		// Without its checkpointer, nothing copies the WAL back: it grows past SQLite's
		// threshold, which the writer's commits would have acted on.
		close(s.ckpt.stop)
		<-s.ckpt.done
		s.ckpt.stop = make(chan struct{}) // for Close, which closes it again
		fillWAL(t, s, 1500)
		if n := s.ckpt.frames.load(); n < 1500 {
			t.Errorf("got %d frames in the WAL after 1500 one-page commits, want at least 1500 (someone checkpointed)", n)
		}
	})

	t.Run("the checkpointer does", func(t *testing.T) {
		s := open(t)
		fillWAL(t, s, 2500)
		deadline := time.Now().Add(10 * time.Second)
		for s.ckpt.runs.Load() == 0 && time.Now().Before(deadline) {
			time.Sleep(time.Millisecond)
		}
		if s.ckpt.runs.Load() == 0 {
			t.Fatal("the WAL passed the threshold and no checkpoint ran")
		}
		if err := s.ckpt.err(); err != nil {
			t.Fatal(err)
		}
		// Once a checkpoint has copied everything, the next commits start the WAL over.
		for time.Now().Before(deadline) {
			fillWAL(t, s, 10)
			if n := s.ckpt.frames.load(); n < checkpointFrames {
				return
			}
			time.Sleep(time.Millisecond)
		}
		t.Errorf("the WAL never started over: %d frames after %d checkpoints", s.ckpt.frames.load(), s.ckpt.runs.Load())
	})

	t.Run("the backstop", func(t *testing.T) {
		s := open(t)
		s.ckpt.every, s.ckpt.backstop = 1<<40, 300 // the checkpointer is never asked
		fillWAL(t, s, 1000)
		if n := s.ckpt.frames.load(); n >= 1000 {
			t.Errorf("got %d frames in the WAL with a backstop of 300, want it checkpointed and started over", n)
		}
		if s.ckpt.runs.Load() != 0 {
			t.Errorf("the checkpointer ran %d times, want 0", s.ckpt.runs.Load())
		}
	})
}
