package sqlite

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"
)

// writeFunc is the body of one write: it runs inside a transaction and must use the
// context it is given, not its caller's, so that a caller giving up cannot abort a
// transaction that other callers' work shares.
type writeFunc func(ctx context.Context, tx *wtx) error

// errClosed is returned by writes after Close.
var errClosed = errors.New("sqlite: store is closed")

// maxBatch bounds how many writes one group commit carries.
const maxBatch = 64

type writeReq struct {
	ctx  context.Context
	fn   writeFunc
	done chan error
	// redo marks a transition that recovery redoes if a power cut loses it: its
	// commit need not wait for the disk (see writeRedo).
	redo bool
	// syncTo is the commit that carried a durable write, for its caller to wait on
	// (walSync) once the writer answered.
	syncTo uint64
}

// write runs fn in a write transaction and commits it, or rolls back fn's work when fn
// or the commit fails. Every state change goes through here: there is one writer.
//
// With DisableGroupCommit each call is its own transaction on the one write
// connection. Otherwise the call is handed to the committer goroutine, which gathers the
// calls waiting at that moment into one transaction, runs each inside its own SAVEPOINT
// (rolled back to on that call's error, so one failure leaves the others' work intact),
// commits once and answers every caller. Either way, write then waits for an fsync of
// the WAL that covers the commit, shared with every other durable write committed
// before it began (walSync). Callers see the same contract either way: their work is
// durable when write returns nil and absent when it returns an error, but for a failed
// fsync, after which the work may be in the ledger without being on the disk and the
// store refuses every write.
func (s *Store) write(ctx context.Context, fn writeFunc) error {
	return s.submit(&writeReq{ctx: ctx, fn: fn})
}

// writeRedo is write for a transition that recovery redoes: its commit is in the WAL
// (safe from a process crash) when writeRedo returns, but reaches the disk only with
// the next fsync of the WAL. A power cut may lose it together with every later commit,
// never one without the other: WAL frames carry cumulative checksums, so what survives
// is a prefix of the commits. The writes that a power cut must not lose, above all a
// mutation's in-flight record, go through write, whose caller waits for an fsync
// begun after its commit (walSync), which makes every earlier commit durable too.
// RATIONALE.md has the argument for each transition.
func (s *Store) writeRedo(ctx context.Context, fn writeFunc) error {
	return s.submit(&writeReq{ctx: ctx, fn: fn, redo: true})
}

// mustWriteRedo is writeRedo that ignores the caller's cancellation, like mustWrite.
func (s *Store) mustWriteRedo(ctx context.Context, fn writeFunc) error {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), s.opts.WriteTimeout)
	defer cancel()
	return s.submit(&writeReq{ctx: ctx, fn: fn, redo: true})
}

func (s *Store) submit(req *writeReq) error {
	ctx := req.ctx
	if err := s.wsync.broken(); err != nil {
		return err
	}
	if s.opts.DisableGroupCommit {
		return s.writeOne(ctx, req)
	}
	req.done = make(chan error, 1)
	// An idle writer runs the write here, in the caller's goroutine: handing it to the
	// committer and the answer back would cost two goroutine wake-ups, more than a
	// short write's statements. Writes that arrive meanwhile queue for the committer,
	// which gathers them into one batch and takes the connection when this one is done.
	if c, ok := s.tryAcquire(); ok {
		s.runBatch(c, []*writeReq{req})
		return s.durable(req, <-req.done)
	}
	select {
	case s.reqs <- req:
	case <-ctx.Done():
		return ctx.Err()
	case <-s.closed:
		return errClosed
	}
	// Once handed over the write is waited for: returning early could report a
	// failure for work that is then committed.
	return s.durable(req, <-req.done)
}

// durable waits, after a durable write committed, for the fsync that puts its commit
// on the disk (see walSync).
func (s *Store) durable(req *writeReq, err error) error {
	if err != nil || req.syncTo == 0 {
		return err
	}
	return s.wsync.wait(req.syncTo)
}

// mustWrite is write for a record that must reach the disk even when the caller gives
// up: an in-flight mutation, its outcome, a commit. It ignores the caller's
// cancellation and bounds the write with its own timeout instead.
func (s *Store) mustWrite(ctx context.Context, fn writeFunc) error {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), s.opts.WriteTimeout)
	defer cancel()
	return s.submit(&writeReq{ctx: ctx, fn: fn})
}

// writeOne runs the request in a transaction of its own.
func (s *Store) writeOne(ctx context.Context, req *writeReq) error {
	select {
	case <-s.closed:
		return errClosed
	default:
	}
	start := time.Now()
	c, err := s.acquire(ctx)
	if err != nil {
		return err
	}
	err = s.runTx(ctx, c, req, start)
	s.release(err)
	return s.durable(req, err)
}

func (s *Store) runTx(ctx context.Context, c *wconn, req *writeReq, start time.Time) error {
	tx, err := s.begin(ctx, c)
	if err != nil {
		return err
	}
	if err := req.fn(stmtContext(ctx), tx); err != nil {
		s.rollback(tx)
		return err
	}
	c.cache.endWrite(true)
	seq, err := s.commitTx(tx)
	if err != nil {
		return err
	}
	s.awaitSync(req, seq)
	s.count(1, !req.redo, start)
	return nil
}

// committed follows each commit on the write connection c (commitTx): it has the WAL
// checkpointed in the background when it has grown (see checkpointer), or here, in the
// writer, when it is past the backstop. A checkpoint's failure is not the write's:
// the write is committed, and the WAL is only larger than it should be.
func (s *Store) committed(c *wconn) {
	if s.ckpt.committed() {
		c.statements.Add(1)
		_, _ = walCheckpoint(context.Background(), c.conn)
	}
}

// stmtContext is the context a write's statements run with: ctx's values without its
// cancellation (see wconn). A write stays bounded: the lock waits inside a statement
// by busy_timeout, and a batch by its deadline, past which the committer starts none of
// its remaining writes. The statements themselves are short lookups and updates by key.
func stmtContext(ctx context.Context) context.Context { return context.WithoutCancel(ctx) }

// begin begins a transaction on the connection. IMMEDIATE takes the write lock at
// once, waiting busy_timeout for it, instead of failing half-way on a first write.
func (s *Store) begin(ctx context.Context, c *wconn) (*wtx, error) {
	err := c.exec(ctx, "BEGIN IMMEDIATE")
	if err != nil && c.inTx() {
		// A transaction whose ROLLBACK failed (a full or failing disk) is still open;
		// its writes were reported failed, so it is ended here, and the write goes on.
		_ = c.exec(ctx, "ROLLBACK")
		err = c.exec(ctx, "BEGIN IMMEDIATE")
	}
	if err != nil {
		return nil, s.dbErr("begin", err)
	}
	c.cache.begin(c.dataVersion())
	return &wtx{c: c}, nil
}

// commitTx commits tx, or rolls it back when the commit fails (SQLite may leave the
// transaction open after a failed COMMIT, e.g. on a full disk).
func (s *Store) commitTx(tx *wtx) (uint64, error) {
	if err := tx.c.exec(context.Background(), "COMMIT"); err != nil {
		s.rollback(tx)
		return 0, s.dbErr("commit", err)
	}
	seq := s.wsync.commit()
	v, ok := tx.c.dataVersion()
	tx.c.cache.end(true, v, ok)
	s.committed(tx.c)
	return seq, nil
}

// rollback ends tx without its work. Its error is not the caller's: the write already
// failed, and a transaction SQLite itself rolled back leaves nothing to end.
func (s *Store) rollback(tx *wtx) {
	_ = tx.c.exec(context.Background(), "ROLLBACK")
	tx.c.cache.end(false, 0, false)
}

// WriteStats counts the store's write transactions since Open.
type WriteStats struct {
	// Writes is the number of writes committed; Commits the transactions that carried
	// them (group commit puts several writes in one), Durable the commits that had to
	// reach the disk (a write in them must survive a power cut, or SyncEveryCommit);
	// MaxBatch the most writes one commit carried.
	Writes, Commits, Durable, MaxBatch int64
	// Syncs counts the fsyncs of the WAL that durable writes waited for, each covering
	// every commit before it (walSync); commits made with SyncEveryCommit sync
	// themselves and are not counted here.
	Syncs int64
	// Statements counts the statements the writes ran on the write connection, the
	// writer's own (BEGIN, COMMIT, savepoints, pragmas) included.
	Statements int64
}

// WriteStats returns the counts of committed writes and transactions.
func (s *Store) WriteStats() WriteStats {
	return WriteStats{Writes: s.stats.writes.Load(), Commits: s.stats.commits.Load(),
		Durable: s.stats.durable.Load(), MaxBatch: s.stats.maxBatch.Load(), Statements: s.stats.statements.Load(),
		Syncs: s.wsync.fsyncs.Load()}
}

type writeCounters struct {
	writes, commits, durable, maxBatch, statements atomic.Int64
}

// count records one committed transaction carrying writes writes.
func (s *Store) count(writes int, durable bool, start time.Time) {
	if s.opts.OnCommit != nil {
		s.opts.OnCommit(writes, time.Since(start))
	}
	c := &s.stats
	c.writes.Add(int64(writes))
	c.commits.Add(1)
	if durable || s.opts.SyncEveryCommit {
		c.durable.Add(1)
	}
	for {
		m := c.maxBatch.Load()
		if int64(writes) <= m || c.maxBatch.CompareAndSwap(m, int64(writes)) {
			return
		}
	}
}

// commit is the group committer: it takes the waiting writes in batches until the
// store is closed.
func (s *Store) commit() {
	defer close(s.committerDone)
	for {
		var batch []*writeReq
		select {
		case <-s.closed:
			return
		case r := <-s.reqs:
			batch = append(batch, r)
		}
	gather:
		for len(batch) < maxBatch {
			select {
			case r := <-s.reqs:
				batch = append(batch, r)
			default:
				break gather
			}
		}
		ctx, cancel := context.WithTimeout(context.Background(), s.opts.WriteTimeout)
		c, err := s.acquire(ctx)
		cancel()
		if err != nil {
			for _, r := range batch {
				r.done <- err
			}
			continue
		}
		s.runBatch(c, batch)
	}
}

// runBatch runs a batch of writes in one transaction on the write connection c, which
// it releases, and answers each caller.
func (s *Store) runBatch(c *wconn, batch []*writeReq) {
	start := time.Now()
	results := make([]error, len(batch))
	defer func() {
		for i, r := range batch {
			r.done <- results[i]
		}
	}()
	fail := func(err error) {
		for i := range results {
			if results[i] == nil {
				results[i] = err
			}
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), s.opts.WriteTimeout)
	defer cancel()
	deadline, _ := ctx.Deadline()
	defer func() { s.release(errors.Join(results...)) }()
	ctx = stmtContext(ctx)
	// One write that must be durable makes the batch's commit one that the disk is
	// waited for (by that write's caller).
	durable := false
	for _, r := range batch {
		durable = durable || !r.redo
	}
	tx, err := s.begin(ctx, c)
	if err != nil {
		fail(err)
		return
	}
	if len(batch) == 1 {
		results[0] = s.runOne(ctx, tx, batch[0], deadline)
		c.cache.endWrite(results[0] == nil)
		if results[0] != nil {
			s.rollback(tx)
		} else if seq, err := s.commitTx(tx); err != nil {
			results[0] = err
		} else {
			s.awaitSync(batch[0], seq)
			s.count(1, durable, start)
		}
		return
	}
	// Savepoints only where there is something to keep apart: each write of a batch
	// in one, so that its failure drops its own work alone.
	n := 0
	for i, r := range batch {
		if err := c.exec(ctx, "SAVEPOINT w"); err != nil {
			s.rollback(tx)
			fail(s.dbErr("savepoint", err))
			return
		}
		results[i] = s.runOne(ctx, tx, r, deadline)
		c.cache.endWrite(results[i] == nil)
		if results[i] != nil {
			if err := c.exec(ctx, "ROLLBACK TO w"); err != nil {
				// The transaction is unusable: nobody's work in it survives.
				s.rollback(tx)
				fail(s.dbErr("rollback to savepoint", err))
				return
			}
		} else {
			n++
		}
		if err := c.exec(ctx, "RELEASE w"); err != nil {
			s.rollback(tx)
			fail(s.dbErr("release savepoint", err))
			return
		}
	}
	if n == 0 {
		s.rollback(tx)
		return
	}
	seq, err := s.commitTx(tx)
	fail(err)
	if err == nil {
		for i, r := range batch {
			if results[i] == nil {
				s.awaitSync(r, seq)
			}
		}
		s.count(n, durable, start)
	}
}

// awaitSync has r, a write committed in commit seq, wait for that commit to reach the
// disk before its caller goes on, when r is durable.
func (s *Store) awaitSync(r *writeReq, seq uint64) {
	if r.redo || s.opts.SyncEveryCommit { // with SyncEveryCommit the commit synced itself
		return
	}
	s.wsync.expect()
	r.syncTo = seq
}

// runOne runs one request's function, unless its caller gave up before it started or
// the batch is past its deadline; a panic becomes that caller's error instead of taking
// the committer down.
func (s *Store) runOne(ctx context.Context, tx *wtx, r *writeReq, deadline time.Time) (err error) {
	if err := r.ctx.Err(); err != nil {
		return err
	}
	if time.Now().After(deadline) {
		return fmt.Errorf("sqlite: write on %s: %w (the batch took longer than %v)", s.path, context.DeadlineExceeded, s.opts.WriteTimeout)
	}
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("sqlite: write panicked: %v", p)
		}
	}()
	return r.fn(ctx, tx)
}
