package postgres

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/jmoiron/sqlx"

	"github.com/scripthost/scripthost/ledger"
	"github.com/scripthost/scripthost/ledger/internal/sqlstore"
)

// errClosed is returned by writes after Close.
var errClosed = errors.New("postgres: store is closed")

// conn runs the store's queries, written with ? placeholders, as PostgreSQL's $n.
type conn struct{ x queryer }

// queryer is where conn's queries go: the pool, or a transaction's connection.
type queryer interface {
	sqlx.QueryerContext
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
}

// rebind writes q's ? placeholders as $1, $2, … (see renumber).
func rebind(q string) string {
	n := 0
	return string(renumber(make([]byte, 0, len(q)+16), q, &n))
}

func (c conn) QueryContext(ctx context.Context, q string, args ...any) (*sql.Rows, error) {
	return c.x.QueryContext(ctx, rebind(q), args...)
}

func (c conn) QueryxContext(ctx context.Context, q string, args ...any) (*sqlx.Rows, error) {
	return c.x.QueryxContext(ctx, rebind(q), args...)
}

func (c conn) QueryRowxContext(ctx context.Context, q string, args ...any) *sqlx.Row {
	return c.x.QueryRowxContext(ctx, rebind(q), args...)
}

func (c conn) ExecContext(ctx context.Context, q string, args ...any) (sql.Result, error) {
	return c.x.ExecContext(ctx, rebind(q), args...)
}

func (c conn) GetContext(ctx context.Context, dest any, q string, args ...any) error {
	return sqlx.GetContext(ctx, c, dest, q, args...)
}

func (c conn) SelectContext(ctx context.Context, dest any, q string, args ...any) error {
	return sqlx.SelectContext(ctx, c, dest, q, args...)
}

// wtx is a write transaction. Rows read through it are locked until it ends (see
// forUpdate).
type wtx struct {
	conn
	// c is the transaction's connection, on which it runs BEGIN and COMMIT as
	// statements of its own; begun once BEGIN was sent, pending while it waits to go
	// with the transaction's first write (see begin), neither when inTx is false and
	// the transaction's writes are one statement (see flushAlone).
	c       *sqlx.Conn
	begun   bool
	pending bool
	inTx    bool
	cache   txCache

	// ctx is the transaction's; s its store.
	ctx context.Context
	s   *Store
	// queue are the writes deferred to the next statement (see Defer), flushErr the
	// error of the first that failed, async whether the commit is not to wait for
	// the WAL flush (see AsyncCommit).
	queue    []deferred
	flushErr error
	async    bool
	asyncSet bool // a flush set it

	// fence is the lease the transaction writes under (ledger.WithFence), nil when
	// none; fenced once a statement of the transaction checked it, direct once a
	// statement was sent other than its deferred writes (see checkFence).
	fence  *ledger.Lease
	fenced bool
	direct bool
}

func (t *wtx) NamedExecContext(ctx context.Context, q string, arg any) (sql.Result, error) {
	q, args, err := sqlx.Named(q, arg)
	if err != nil {
		return nil, err
	}
	return t.ExecContext(ctx, q, args...)
}

// begin begins the transaction, if it has not begun: its BEGIN waits to go with the
// transaction's first write statement, in one round trip (see queryRow), or by
// itself before a read (see open).
func (t *wtx) begin() {
	if t.begun || t.pending || t.flushErr != nil {
		return
	}
	t.pending, t.conn = true, conn{t.c}
}

// open sends a pending BEGIN by itself; its error is the transaction's (see ready).
func (t *wtx) open() {
	if !t.pending {
		return
	}
	_ = t.raw(func(c *pgx.Conn) error { t.openOn(c); return nil })
}

// openOn sends a pending BEGIN by itself on c, the transaction's pgx connection.
func (t *wtx) openOn(c *pgx.Conn) {
	t.pending = false
	if _, err := c.Exec(t.ctx, "BEGIN"); err != nil {
		if t.flushErr == nil {
			t.flushErr = t.s.dbErr("begin", err)
		}
		return
	}
	t.begun = true
}

// raw runs fn on the transaction's pgx connection: its writes, BEGIN and COMMIT skip
// database/sql's per-call work (a database/sql transaction also watches its context
// on a goroutine of its own).
func (t *wtx) raw(fn func(*pgx.Conn) error) error {
	return t.c.Raw(func(dc any) error { return fn(dc.(*stdlib.Conn).Conn()) })
}

// queryRow runs q with args on the transaction's connection and scans its one row
// into dest. A pending BEGIN goes with it, in one round trip: sent unprepared, so
// that the server counts it like any BEGIN, and q prepared on the connection once
// (see preparedOn); on a connection that has prepared its share, BEGIN goes first by
// itself.
func (t *wtx) queryRow(q string, args []any, dest []any) error {
	return t.raw(func(c *pgx.Conn) error {
		if !t.pending {
			return c.QueryRow(t.ctx, q, args...).Scan(dest...)
		}
		sd, err := preparedOn(t.ctx, c, q)
		if err != nil {
			return err
		}
		if sd == nil {
			t.openOn(c) // not open: the connection is this callback's
			if t.flushErr != nil {
				return t.flushErr
			}
			return c.QueryRow(t.ctx, q, args...).Scan(dest...)
		}
		t.pending = false
		return t.beginWith(c, sd, args, dest)
	})
}

// beginWith sends BEGIN and the prepared statement sd with args in one round trip
// and scans the statement's one row into dest.
func (t *wtx) beginWith(c *pgx.Conn, sd *pgconn.StatementDescription, args []any, dest []any) error {
	var eqb pgx.ExtendedQueryBuilder
	if err := eqb.Build(c.TypeMap(), sd, args); err != nil {
		return err
	}
	var b pgconn.Batch
	b.ExecParams("BEGIN", nil, nil, nil, nil)
	b.ExecStatement(sd, eqb.ParamValues, eqb.ParamFormats, eqb.ResultFormats)
	mrr := c.PgConn().ExecBatch(t.ctx, &b)
	if !mrr.NextResult() {
		return noResult(mrr.Close(), "BEGIN")
	}
	if _, err := mrr.ResultReader().Close(); err != nil {
		mrr.Close()
		return err
	}
	t.begun = true
	if !mrr.NextResult() {
		return noResult(mrr.Close(), "the write statement")
	}
	rr := mrr.ResultReader()
	rows := 0
	var scanErr error
	for rr.NextRow() {
		if rows++; rows == 1 {
			scanErr = scanValues(c.TypeMap(), rr.FieldDescriptions(), rr.Values(), dest)
		}
	}
	if _, err := rr.Close(); err != nil {
		mrr.Close()
		return err
	}
	if err := mrr.Close(); err != nil {
		return err
	}
	if rows != 1 {
		return fmt.Errorf("postgres: a write statement returned %d rows, want 1", rows)
	}
	return scanErr
}

// noResult is the error of a batch that ended before the result of what: err, or
// one saying so, never success.
func noResult(err error, what string) error {
	if err != nil {
		return err
	}
	return fmt.Errorf("postgres: no result for %s", what)
}

// scanValues scans a row's values, as the server sent them, into dest.
func scanValues(m *pgtype.Map, fds []pgconn.FieldDescription, values [][]byte, dest []any) error {
	if len(values) != len(dest) {
		return fmt.Errorf("postgres: a write statement returned %d columns, want %d", len(values), len(dest))
	}
	for i, fd := range fds {
		if err := m.Scan(fd.DataTypeOID, fd.Format, values[i], dest[i]); err != nil {
			return fmt.Errorf("postgres: a write statement's column %d: %w", i, err)
		}
	}
	return nil
}

// maxPrepared bounds the statements preparedOn prepares on one connection: the
// write statements of the transitions that begin a transaction, a few dozen shapes.
const maxPrepared = 128

// preparedKey is where preparedOn keeps, in a connection's custom data, the
// statements it prepared there, by text.
const preparedKey = "scripthost.prepared"

// preparedOn returns q prepared on c, preparing it at its first use there; nil when
// c has prepared maxPrepared statements already. A statement prepared before is found
// by its text, without a round trip.
func preparedOn(ctx context.Context, c *pgx.Conn, q string) (*pgconn.StatementDescription, error) {
	data := c.PgConn().CustomData()
	prepared, _ := data[preparedKey].(map[string]*pgconn.StatementDescription)
	if sd := prepared[q]; sd != nil {
		return sd, nil
	}
	if prepared == nil {
		prepared = map[string]*pgconn.StatementDescription{}
		data[preparedKey] = prepared
	}
	if len(prepared) >= maxPrepared {
		return nil, nil
	}
	sd, err := c.Prepare(ctx, "scripthost_"+strconv.Itoa(len(prepared)), q)
	if err != nil {
		return nil, err
	}
	prepared[q] = sd
	return sd, nil
}

// commit commits the transaction: an error when it was rolled back instead (a
// statement of it failed).
func (t *wtx) commit() error {
	return t.raw(func(c *pgx.Conn) error {
		tag, err := c.Exec(t.ctx, "COMMIT")
		if err == nil && tag.String() == "ROLLBACK" {
			err = pgx.ErrTxCommitRollback
		}
		return err
	})
}

// rollback ends a transaction that did not commit; a connection where that fails is
// not given back to the pool.
func (t *wtx) rollback() {
	if !t.begun {
		return
	}
	_ = t.raw(func(c *pgx.Conn) error {
		ctx, cancel := context.WithTimeout(context.WithoutCancel(t.ctx), 5*time.Second)
		defer cancel()
		if _, err := c.Exec(ctx, "ROLLBACK"); err != nil || c.PgConn().TxStatus() != 'I' {
			return driver.ErrBadConn
		}
		return nil
	})
}

type writeFunc func(ctx context.Context, tx *wtx) error

// write runs fn in a transaction and commits it. A transaction that fails with a
// deadlock or serialisation failure, or that lost its connection before COMMIT was
// sent, is run again from the start (fn must only depend on what it reads in tx),
// until ctx is done. A failed COMMIT is not retried: whether it took effect is
// unknown, and every caller re-reads the ledger before its next step. A transaction
// that failed after it found a row in the row cache is run again at once without the
// cache: the row may have changed since (see rowCache).
//
// A transaction that need not wait for the WAL flush (WriteRedo) and reads nothing,
// its writes one deferred statement, is sent as that statement alone, its own
// transaction: no BEGIN and COMMIT round trips. The statement fails as a whole when
// one of its parts changes a count of rows it must not (see flushAlone), and the
// transaction then runs again in a transaction of its own, where each part is checked.
// Like a COMMIT, a statement whose connection was lost after it was sent is not run
// again.
//
// Once the ledger is outdated (see Store.Outdated) it refuses.
func (s *Store) write(ctx context.Context, fn writeFunc) error {
	wait := 10 * time.Millisecond
	noCache, inTx := false, false
	for attempt := 1; ; attempt++ {
		if err := s.writable(); err != nil {
			return err
		}
		err, retry, usedCache := s.runTx(ctx, fn, noCache, inTx)
		if errors.Is(err, errInTx) && ctx.Err() == nil {
			// A write that alone found a count it did not expect: again, each part
			// checked; after a row from the cache, without the cache.
			if usedCache {
				s.retried(retryStaleRow)
				noCache = true
			}
			inTx = true
			continue
		}
		if err != nil && usedCache && ctx.Err() == nil && !errors.Is(err, sqlstore.ErrSnapshotCacheWrong) &&
			!errors.Is(err, ledger.ErrLeaseLost) {
			s.retried(retryStaleRow)
			noCache = true
			continue
		}
		if err == nil || !retry || ctx.Err() != nil {
			return err
		}
		s.retried(retryReason(err))
		select {
		case <-ctx.Done():
			return err
		case <-s.closed:
			return errClosed
		case <-time.After(wait):
		}
		wait = min(wait*2, time.Second)
	}
}

// Reasons a transaction was run again, as Options.OnRetry names them.
const (
	retryStaleRow      = "stale_row"
	retrySerialization = "serialization"
	retryDeadlock      = "deadlock"
	retryConnection    = "connection"
)

// retryReason names why a retryable failure is retried.
func retryReason(err error) string {
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		switch pe.Code {
		case "40001":
			return retrySerialization
		case "40P01":
			return retryDeadlock
		}
	}
	return retryConnection
}

// retried counts a transaction run again.
func (s *Store) retried(reason string) {
	if s.opts.OnRetry != nil {
		s.opts.OnRetry(reason)
	}
}

// mustWrite is write for a record that must reach the database even when the caller
// gives up: it ignores the caller's cancellation and bounds the write, retries
// included, with its own timeout instead.
func (s *Store) mustWrite(ctx context.Context, fn writeFunc) error {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), s.opts.WriteTimeout)
	defer cancel()
	return s.write(ctx, fn)
}

// runTx runs fn once and reports whether a failure may be retried and whether the
// transaction found rows in the row cache (which noCache turns off). inTx begins the
// transaction before fn, so that its writes are never sent alone.
func (s *Store) runTx(ctx context.Context, fn writeFunc, noCache, inTx bool) (error, bool, bool) {
	c, err := s.db.Connx(ctx)
	if err != nil {
		return s.dbErr("begin", err), retryable(err, false), false
	}
	defer c.Close()
	w := &wtx{c: c, ctx: ctx, s: s, inTx: inTx}
	if l, ok := ledger.FenceOf(ctx); ok {
		w.fence = &l
	}
	committed := false
	defer func() {
		if !committed {
			w.rollback()
		}
	}()
	if !noCache {
		w.cache.shared = s.cache
	}
	used := func() bool {
		if len(w.cache.used) == 0 {
			return false
		}
		s.cache.drop(w.cache.used)
		return true
	}
	if inTx {
		w.begin()
	}
	err = fn(ctx, w)
	if err == nil && w.flushErr == nil && !w.begun && !w.pending && w.async {
		// No read: the transaction's writes are one statement, committed by itself.
		w.flushAlone()
		if w.flushErr != nil {
			return w.flushErr, errors.Is(w.flushErr, errInTx) || retryable(w.flushErr, !pgconn.SafeToRetry(w.flushErr)), used()
		}
		s.cache.commit(w.cache.rows)
		return nil, false, false
	}
	if err == nil {
		w.begin()
		w.flush()
		w.open()
	}
	if err == nil && w.flushErr == nil && w.async && !w.asyncSet {
		_, err = w.ExecContext(ctx, `SET LOCAL synchronous_commit = off`)
		err = s.dbErr("write", err)
	}
	if err == nil && w.flushErr == nil {
		err = w.checkFence(ctx)
	}
	if w.flushErr != nil { // a deferred write's failure comes first: later steps met its effects
		err = w.flushErr
	}
	if err != nil {
		return err, retryable(err, false), used()
	}
	committed = true
	if err := w.commit(); err != nil {
		s.cache.drop(w.cache.used)
		return s.dbErr("commit", err), retryable(err, true), false
	}
	s.cache.commit(w.cache.rows)
	return nil, false, false
}

// retryable reports whether running the transaction again is safe and may succeed:
// a deadlock or serialisation failure (rolled back by the server), or a lost
// connection before COMMIT.
func retryable(err error, committing bool) bool {
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		switch pe.Code {
		case "40001", "40P01": // serialization_failure, deadlock_detected
			return true
		case "57P01", "57P02", "57P03": // admin_shutdown, crash_shutdown, cannot_connect_now
			return !committing
		}
		return false
	}
	if committing {
		return false
	}
	return connectionLost(err)
}

// connectionLost reports whether err means the server could not be reached or went
// away: the database restarting, not a refused statement.
func connectionLost(err error) bool {
	if errors.Is(err, sql.ErrConnDone) || errors.Is(err, driver.ErrBadConn) {
		return true
	}
	var ce *pgconn.ConnectError
	if errors.As(err, &ce) {
		return true
	}
	if pgconn.SafeToRetry(err) || pgconn.Timeout(err) {
		return true
	}
	var ne interface{ Timeout() bool }
	if errors.As(err, &ne) {
		return true
	}
	msg := err.Error()
	for _, s := range []string{"connection refused", "connection reset", "broken pipe", "unexpected EOF", "conn closed", "EOF"} {
		if strings.Contains(msg, s) {
			return true
		}
	}
	return false
}

// unavailable reports whether err means the database could not be reached or went
// away (shutting down, starting, the connection lost), rather than a refused
// statement.
func unavailable(err error) bool {
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		return strings.HasPrefix(pe.Code, "08") || strings.HasPrefix(pe.Code, "57P")
	}
	return connectionLost(err)
}

// uniqueViolation returns the constraint a unique violation names, or "".
func uniqueViolation(err error) string {
	var pe *pgconn.PgError
	if errors.As(err, &pe) && pe.Code == "23505" {
		return pe.ConstraintName
	}
	return ""
}
