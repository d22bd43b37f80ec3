package sqlite

import (
	"context"
	"errors"
	"fmt"
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
}

// write runs fn in a write transaction and commits it, or rolls back fn's work when fn
// or the commit fails. Every state change goes through here: there is one writer.
//
// With DisableGroupCommit each call is its own transaction on the one write
// connection. Otherwise the call is handed to the committer goroutine, which gathers the
// calls waiting at that moment into one transaction, runs each inside its own SAVEPOINT
// (rolled back to on that call's error, so one failure leaves the others' work intact),
// commits once, one fsync for the batch, and only then answers every caller. Callers
// see the same contract either way: their work is durable when write returns nil and
// absent when it returns an error.
func (s *Store) write(ctx context.Context, fn writeFunc) error {
	fn = s.withEvents(ctx, fn)
	if s.opts.DisableGroupCommit {
		return s.writeOne(ctx, fn)
	}
	req := &writeReq{ctx: ctx, fn: fn, done: make(chan error, 1)}
	select {
	case s.reqs <- req:
	case <-ctx.Done():
		return ctx.Err()
	case <-s.closed:
		return errClosed
	}
	// Once handed over the write is waited for: returning early could report a
	// failure for work that is then committed.
	return <-req.done
}

// mustWrite is write for a record that must reach the disk even when the caller gives
// up: an in-flight mutation, its outcome, a commit. It ignores the caller's
// cancellation and bounds the write with its own timeout instead.
func (s *Store) mustWrite(ctx context.Context, fn writeFunc) error {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), s.opts.WriteTimeout)
	defer cancel()
	return s.write(ctx, fn)
}

// writeOne runs fn in a transaction of its own.
func (s *Store) writeOne(ctx context.Context, fn writeFunc) error {
	select {
	case <-s.closed:
		return errClosed
	default:
	}
	err := s.runTx(ctx, fn)
	s.stmts.prepare(ctx, s.w)
	return err
}

func (s *Store) runTx(ctx context.Context, fn writeFunc) error {
	tx, err := s.w.BeginTxx(ctx, nil)
	if err != nil {
		return s.dbErr("begin", err)
	}
	defer tx.Rollback()
	if err := fn(ctx, &wtx{Tx: tx, c: s.stmts}); err != nil {
		return err
	}
	if err := tx.Commit(); err != nil {
		return s.dbErr("commit", err)
	}
	return nil
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
		s.runBatch(batch)
		s.stmts.prepare(context.Background(), s.w)
	}
}

// runBatch runs a batch of writes in one transaction and answers each caller.
func (s *Store) runBatch(batch []*writeReq) {
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
	sqltx, err := s.w.BeginTxx(ctx, nil)
	if err != nil {
		fail(s.dbErr("begin", err))
		return
	}
	defer sqltx.Rollback()
	tx := &wtx{Tx: sqltx, c: s.stmts}
	if len(batch) == 1 {
		if results[0] = s.runOne(ctx, tx, batch[0]); results[0] == nil {
			results[0] = s.dbErr("commit", tx.Commit())
		}
		return
	}
	committed := false
	for i, r := range batch {
		if _, err := tx.ExecContext(ctx, "SAVEPOINT w"); err != nil {
			fail(s.dbErr("savepoint", err))
			return
		}
		if results[i] = s.runOne(ctx, tx, r); results[i] != nil {
			if _, err := tx.ExecContext(ctx, "ROLLBACK TO w"); err != nil {
				// The transaction is unusable: nobody's work in it survives.
				fail(s.dbErr("rollback to savepoint", err))
				return
			}
		}
		if _, err := tx.ExecContext(ctx, "RELEASE w"); err != nil {
			fail(s.dbErr("release savepoint", err))
			return
		}
		committed = committed || results[i] == nil
	}
	if committed {
		fail(s.dbErr("commit", tx.Commit()))
	}
}

// runOne runs one request's function, unless its caller gave up before it started; a
// panic becomes that caller's error instead of taking the committer down.
func (s *Store) runOne(ctx context.Context, tx *wtx, r *writeReq) (err error) {
	if err := r.ctx.Err(); err != nil {
		return err
	}
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("sqlite: write panicked: %v", p)
		}
	}()
	return r.fn(ctx, tx)
}
