package sqlite

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/jmoiron/sqlx"
)

// Checkpoints copy the WAL's pages back into the database file so that the WAL can
// start over. SQLite by default runs one inside the commit that takes the WAL past
// 1000 pages, on the committing connection: the writer, which then copies pages and
// waits for two fsyncs while every other write waits for it. The store runs them on
// a connection of its own instead, in the background, while the writer goes on
// appending to the WAL (a checkpoint and a writer do not block each other in WAL
// mode). The writer checkpoints itself only when the WAL grows past backstopFrames,
// which the background checkpointer keeps it from reaching unless it fails.
const (
	// checkpointFrames is how many frames the WAL may gain before the background
	// checkpointer is started: SQLite's own default threshold.
	checkpointFrames = 1000
	// backstopFrames is the WAL size (32 MiB of a new ledger's 2 KiB pages, 64 MiB of
	// an older one's 4 KiB) past which the writer checkpoints in its commit, as
	// SQLite would by itself.
	backstopFrames = 16 * 1024
)

// checkpointer runs passive checkpoints on its own connection when the writer asks.
type checkpointer struct {
	db     *sqlx.DB
	frames walFrames
	// every and backstop are checkpointFrames and backstopFrames (tests lower them).
	every, backstop int64
	// mark is the WAL size at the last checkpoint: the writer asks again once the WAL
	// has gained checkpointFrames since, or has started over and grown that much.
	mark atomic.Int64
	kick chan struct{}
	stop chan struct{}
	done chan struct{}
	// runs counts checkpoints, lastErr is the last one's error (tests and WALStats).
	runs    atomic.Int64
	mu      sync.Mutex
	lastErr error
}

func newCheckpointer(db *sqlx.DB) *checkpointer {
	c := &checkpointer{db: db, frames: newWALFrames(), every: checkpointFrames, backstop: backstopFrames, kick: make(chan struct{}, 1),
		stop: make(chan struct{}), done: make(chan struct{})}
	go c.loop()
	return c
}

// committed is called by the writer after each commit: it starts a background
// checkpoint when the WAL has grown enough, and reports whether the WAL is past the
// backstop, where the writer checkpoints itself.
func (c *checkpointer) committed() (backstop bool) {
	n := int64(c.frames.load())
	mark := c.mark.Load()
	if n < mark { // the WAL started over after a complete checkpoint
		c.mark.Store(0)
		mark = 0
	}
	if n-mark >= c.every {
		select {
		case c.kick <- struct{}{}:
		default: // one is running or asked for already
		}
	}
	return n >= c.backstop
}

func (c *checkpointer) loop() {
	defer close(c.done)
	for {
		select {
		case <-c.stop:
			return
		case <-c.kick:
		}
		log, err := c.run(context.Background())
		c.mu.Lock()
		c.lastErr = err
		c.mu.Unlock()
		if err == nil {
			c.mark.Store(int64(log))
		}
	}
}

// run runs one passive checkpoint: it copies what no reader still needs and returns
// the WAL's size in frames. It never waits for the writer or for readers.
func (c *checkpointer) run(ctx context.Context) (int, error) {
	c.runs.Add(1)
	return walCheckpoint(ctx, c.db)
}

// walCheckpoint runs a passive checkpoint on q and returns the WAL's size in frames.
func walCheckpoint(ctx context.Context, q sqlx.QueryerContext) (int, error) {
	var busy, log, done int
	if err := q.QueryRowxContext(ctx, "PRAGMA wal_checkpoint(PASSIVE)").Scan(&busy, &log, &done); err != nil {
		return 0, fmt.Errorf("sqlite: checkpoint: %w", err)
	}
	return log, nil
}

// err is the last checkpoint's error.
func (c *checkpointer) err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.lastErr
}

// close stops the checkpointer and closes its connection. Its frame counter stays
// until free: the writer's connection still holds it until that is closed.
func (c *checkpointer) close() error {
	close(c.stop)
	<-c.done
	return c.db.Close()
}

// free releases the frame counter, once no connection counts into it.
func (c *checkpointer) free() { c.frames.free() }
