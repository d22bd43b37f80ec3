// Package sqlstore holds the ledger's transitions written once in SQL for both
// backends, ledger/sqlite and ledger/postgres: the rows, the checks, the event
// disposition rules and the snapshots. A backend brings its write funnel (how a
// transaction is run, retried or batched), its read pool and a few dialect details.
package sqlstore

import (
	"context"
	"database/sql"
	"time"

	"github.com/jmoiron/sqlx"
)

// Tx is a write transaction as the transitions use it; queries use ? placeholders.
type Tx interface {
	sqlx.QueryerContext
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
	GetContext(ctx context.Context, dest any, query string, args ...any) error
	SelectContext(ctx context.Context, dest any, query string, args ...any) error
	NamedExecContext(ctx context.Context, query string, arg any) (sql.Result, error)
}

// Deferrer is what a write transaction offers that sends several writes as one
// statement: a write queued with Defer goes with the transaction's next statement or
// its commit (see execLater).
type Deferrer interface {
	// Defer queues q, an INSERT or UPDATE with no RETURNING; want ≥ 0 is the number of
	// rows it must change, mismatch the transaction's error when it changes another.
	Defer(q string, args []any, want int64, mismatch func() error)
}

// Truster is what a write transaction offers that can take a count on trust: Trusts
// reports whether it may (not when it runs again after a count it trusted was wrong);
// Expect queues a check that the rows the SELECT q finds number want, made with the
// transaction's next write statement, which then fails as a whole when they do not,
// and the transaction runs again reading the count.
type Truster interface {
	Trusts() bool
	Expect(q string, args []any, want int64)
}

// unwrapped is the backend's transaction under tx, where tx carries lifecycle events.
func unwrapped(tx Tx) Tx {
	if et, ok := tx.(*eventTx); ok {
		return et.Tx
	}
	return tx
}

// execLater runs the write q in tx: queued to go with the next statement where tx is
// a Deferrer, else at once. want ≥ 0 is the number of rows it must change; when it
// changes another, mismatch gives the error. what names it in a driver error.
func (s *Store) execLater(ctx context.Context, tx Tx, what, q string, args []any, want int64, mismatch func() error) error {
	if d, ok := unwrapped(tx).(Deferrer); ok {
		d.Defer(q, args, want, mismatch)
		return nil
	}
	res, err := tx.ExecContext(ctx, q, args...)
	if err != nil {
		return s.dbErr(what, err)
	}
	if want >= 0 {
		if n, err := res.RowsAffected(); err != nil || n != want {
			return mismatch()
		}
	}
	return nil
}

// Reader runs reads outside a transaction; queries use ? placeholders. The store reads
// through it with GetContext for lookups and SelectContext for lists (see reader).
type Reader interface {
	sqlx.QueryerContext
	GetContext(ctx context.Context, dest any, query string, args ...any) error
	SelectContext(ctx context.Context, dest any, query string, args ...any) error
}

// WriteFunc is the body of one write transaction. It may be run more than once (a
// backend retries a transaction that lost a deadlock or its connection), so it must
// depend only on what it reads in tx.
type WriteFunc func(ctx context.Context, tx Tx) error

// Backend is what a database gives the transitions.
type Backend interface {
	// Write runs fn in a transaction and commits it.
	Write(ctx context.Context, fn WriteFunc) error
	// MustWrite is Write for a record that must be stored even when the caller gives
	// up: it ignores ctx's cancellation and bounds the write with its own timeout.
	MustWrite(ctx context.Context, fn WriteFunc) error
	// WriteRedo is Write for a transition that recovery redoes if a database crash
	// loses it: its commit need not wait for the disk, but what survives a crash is a
	// prefix of the commits, and the next Write's flush makes it durable too.
	WriteRedo(ctx context.Context, fn WriteFunc) error
	// MustWriteRedo is WriteRedo that ignores the caller's cancellation, like MustWrite.
	MustWriteRedo(ctx context.Context, fn WriteFunc) error
	// DBErr wraps a driver error with the operation and the database.
	DBErr(op string, err error) error
}

// Dialect is how the backends' SQL differs.
type Dialect struct {
	// Name prefixes error messages: "sqlite", "postgres".
	Name string
	// Order is the column that orders rows inserted in the same nanosecond.
	Order string
	// RowLocks: reads inside a transaction lock the rows they decide on (SELECT …
	// FOR UPDATE), for databases with concurrent writers.
	RowLocks bool
	// ExecutionOf is an SQL expression of the execution log's execution_id without its
	// step part ("plan/2/build" → "plan/2"): the execution a record belongs to.
	ExecutionOf string
	// LockWorkflow, when set, is a statement taking a transaction-long lock on a
	// workflow's name (its one ? is the name), so that concurrent writers of one
	// workflow's versions take turns.
	LockWorkflow string
	// RewritesSetIndexes: an UPDATE rewrites the entries of every index on a column it
	// SETs, even to the value it had (SQLite), so the transitions leave a column out of
	// SET unless it changes.
	RewritesSetIndexes bool
	// UniqueViolation returns the constraint a unique-violation error names, or "".
	UniqueViolation func(err error) string
	// LocalReads: reads are served from a local file, where a lookup is bounded work
	// (a key or index search, lock waits bounded by the busy timeout), so a lookup
	// checks its caller's context before it starts and then runs to its end without
	// watching it (see reader).
	LocalReads bool
	// TxSurvivesErrors: a statement a constraint refuses undoes its own work and the
	// transaction goes on (SQLite), so a transition may let a unique index find a
	// conflict and look it up only then; elsewhere the refusal aborts the transaction
	// (PostgreSQL) and the lookups come first.
	TxSurvivesErrors bool
	// Embedded: the database runs in this process, where each statement costs a call
	// into it rather than a round trip, and its planner is SQLite's: the lifecycle log
	// holds the snapshots, and a snapshot takes its number from a subquery in VALUES
	// (SQLite runs an INSERT … SELECT from the table it inserts into through a
	// temporary table). Elsewhere the snapshots have a table of their own, numbered per
	// run, and a transaction's snapshots and lifecycle events are one statement at its
	// end (see appendLog). Either way a snapshot is stored as a change from the one
	// before (see snapshotBase).
	Embedded bool
	// PackedLog: a lifecycle-log row holds the consecutive events of one run that one
	// write logs, up to maxPacked: the first in its columns, the others in its more
	// column, numbered on from its seq (the log's sequence steps by maxPacked). A
	// consumer run is then three rows of the log instead of nine (see eventRows and
	// LifecycleEvents).
	PackedLog bool
}

// Options are the store's clock and ids.
type Options struct {
	Clock func() time.Time
	NewID func() string
}

// Store implements the ledger.Store transitions on a Backend. Backends embed it and
// add Close and their own methods.
type Store struct {
	name string
	opts Options
	d    Dialect
	r    *reader
	b    Backend
}

// New returns the transitions on backend b, reading through r.
func New(b Backend, r Reader, d Dialect, opts Options) *Store {
	if d.UniqueViolation == nil {
		d.UniqueViolation = func(error) string { return "" }
	}
	return &Store{name: d.Name, opts: opts, d: d, r: &reader{Reader: r, local: d.LocalReads}, b: b}
}

// The write funnels append the lifecycle events attached to ctx (ledger.WithEvents)
// inside the transaction of the change they describe.
func (s *Store) write(ctx context.Context, fn WriteFunc) error {
	return s.b.Write(ctx, s.withEvents(ctx, fn))
}
func (s *Store) mustWrite(ctx context.Context, fn WriteFunc) error {
	return s.b.MustWrite(ctx, s.withEvents(ctx, fn))
}
func (s *Store) writeRedo(ctx context.Context, fn WriteFunc) error {
	return s.b.WriteRedo(ctx, s.withEvents(ctx, fn))
}
func (s *Store) mustWriteRedo(ctx context.Context, fn WriteFunc) error {
	return s.b.MustWriteRedo(ctx, s.withEvents(ctx, fn))
}
func (s *Store) dbErr(op string, err error) error {
	if err == nil {
		return nil
	}
	return s.b.DBErr(op, err)
}

// now returns the clock's time in UTC at the precision the store keeps (nanoseconds,
// no monotonic reading), so that values returned by a write equal values read back.
func (s *Store) now() time.Time {
	return time.Unix(0, s.opts.Clock().UnixNano()).UTC()
}

// forUpdate is the suffix that locks the rows a transaction reads before deciding on
// them, where writers are concurrent: two hosts moving one run take turns.
func (s *Store) forUpdate(q sqlx.QueryerContext) string {
	if s.d.RowLocks && q != sqlx.QueryerContext(s.r) {
		return " FOR UPDATE"
	}
	return ""
}

// NewID returns a fresh id for a run or a mutation.
func (s *Store) NewID() string { return s.opts.NewID() }

// Now is the store's clock at its precision.
func (s *Store) Now() time.Time { return s.now() }
