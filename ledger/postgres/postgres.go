// Package postgres is the ledger.Store for several hosts: one PostgreSQL database
// shared by every scripthost process, through sqlx and the pgx stdlib driver.
//
// Every state change runs in one transaction at READ COMMITTED with the rows it
// decides on locked (SELECT … FOR UPDATE), so concurrent hosts serialise per run and
// per mutation instead of per database. A transaction that loses a deadlock or a
// serialisation race, or whose connection is lost before it commits, is run again; a
// write that must complete (an in-flight mutation, its outcome, a commit) keeps trying
// through a database restart for up to Options.WriteTimeout.
//
// Besides the Store contract it implements ledger.Leaser: the leases with which hosts
// split the workflows between them, and LISTEN/NOTIFY wake-ups when work arrives.
package postgres

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/jmoiron/sqlx"

	"github.com/scripthost/scripthost/ledger"
	"github.com/scripthost/scripthost/ledger/internal/sqlstore"
)

// Options configure a Store. The zero value is usable.
type Options struct {
	// Clock returns the current time; default time.Now. Leases use the database's
	// clock instead, so that hosts with skewed clocks agree on expiry.
	Clock func() time.Time
	// WriteTimeout bounds a write that must complete even when the caller's context is
	// cancelled (a mutation's in-flight record and its outcome), retries included;
	// default 30s.
	WriteTimeout time.Duration
	// NewID returns a fresh id for runs and mutations; default a UUIDv7 string.
	NewID func() string
	// MaxConns caps the connection pool; default 16.
	MaxConns int
	// OnRetry, when set, is called each time a write transaction is run again, with
	// why: "serialization" or "deadlock" (the server refused it), "connection" (the
	// connection was lost before COMMIT) or "stale_row" (a row it found in the
	// store's row cache had changed in the database, or it failed after deciding on
	// such a row).
	OnRetry func(reason string)
	// Schema, when set, keeps the ledger's tables in that schema (created if missing)
	// instead of the connection's default search path: several ledgers can then share
	// one database.
	Schema string
	// ConnectWait bounds how long Open waits for the server to answer (a server
	// starting or restarting answers within it); default 10s. An unreachable server is
	// then refused with ledger.ErrUnavailable.
	ConnectWait time.Duration
}

func (o Options) withDefaults() Options {
	if o.Clock == nil {
		o.Clock = time.Now
	}
	if o.WriteTimeout <= 0 {
		o.WriteTimeout = ledger.WriteTimeout
	}
	if o.NewID == nil {
		o.NewID = sqlstore.NewUUID
	}
	if o.MaxConns <= 0 {
		o.MaxConns = 16
	}
	if o.ConnectWait <= 0 {
		o.ConnectWait = 10 * time.Second
	}
	return o
}

// Store is a ledger.Store backed by a PostgreSQL database.
type Store struct {
	// The transitions, shared with ledger/sqlite, run on this store's transactions.
	*sqlstore.Store

	dsn  string // for messages: the URL without its password
	opts Options
	cfg  *pgx.ConnConfig
	db   *sqlx.DB
	// r reads through the pool with the store's placeholders.
	r conn

	// cache keeps the rows the store's writes left (see rowCache).
	cache *rowCache
	// statements keeps the texts of the write statements (see wtx.send).
	statements statements
	// verifySnapshots has a cached snapshot checked against the stored ones before a
	// change from it is logged (sqlstore.VerifyRowCacheEnv: a test setting).
	verifySnapshots bool
	// notes remembers when the hosts' claims last wrote the lease history.
	notes hostNotes

	closeOnce sync.Once
	closed    chan struct{}
	listener  *listener

	// outdated holds the error of a ledger migrated past this binary's schema by a
	// newer host while this store was open; once set, writes are refused with it.
	outdated     atomic.Pointer[error]
	outdatedOnce sync.Once
	outdatedCh   chan struct{}
}

var (
	_ ledger.Store        = (*Store)(nil)
	_ ledger.Leaser       = (*Store)(nil)
	_ ledger.LeaseHistory = (*Store)(nil)
)

// IsURL reports whether a --db value names a PostgreSQL database rather than a file.
func IsURL(s string) bool {
	return strings.HasPrefix(s, "postgres://") || strings.HasPrefix(s, "postgresql://")
}

// CheckURL reports what is wrong with a postgres:// URL (or key=value connection
// string) without connecting; the error names it without its password.
func CheckURL(dsn string) error {
	if _, err := pgx.ParseConfig(dsn); err != nil {
		return fmt.Errorf("%s: not a valid PostgreSQL URL: %w", redactURL(dsn), err)
	}
	return nil
}

// Open connects to the database named by a postgres:// URL (or a key=value
// connection string) and brings the ledger's schema up to date. Concurrent Opens of
// one database migrate it once.
//
// It refuses, without changing the database: a server that does not answer within
// Options.ConnectWait (ledger.ErrUnavailable), a database holding tables of something
// else in the ledger's schema (ledger.ErrNotLedger) and a ledger written by a newer
// binary (ledger.ErrSchemaTooNew). Errors name the database without its password.
func Open(ctx context.Context, dsn string, opts Options) (*Store, error) {
	opts = opts.withDefaults()
	cfg, err := pgx.ParseConfig(dsn)
	if err != nil {
		return nil, fmt.Errorf("postgres: open %s: %w", redactURL(dsn), err)
	}
	if opts.Schema != "" {
		if cfg.RuntimeParams == nil {
			cfg.RuntimeParams = map[string]string{}
		}
		cfg.RuntimeParams["search_path"] = opts.Schema
	}
	s := &Store{dsn: redactURL(dsn), opts: opts, cfg: cfg, closed: make(chan struct{}), outdatedCh: make(chan struct{}), cache: newRowCache(),
		verifySnapshots: os.Getenv(sqlstore.VerifyRowCacheEnv) != ""}
	db := sqlx.NewDb(stdlib.OpenDB(*cfg), "pgx")
	db.SetMaxOpenConns(opts.MaxConns)
	db.SetMaxIdleConns(opts.MaxConns)
	db.SetConnMaxIdleTime(5 * time.Minute)
	s.db = db
	s.r = conn{db}
	if err := s.reach(ctx); err != nil {
		db.Close()
		return nil, err
	}
	if err := s.migrate(ctx); err != nil {
		db.Close()
		return nil, err
	}
	s.Store = sqlstore.New(backend{s}, s.r, sqlstore.Dialect{
		Name: "postgres", Order: "ord", RowLocks: true,
		ExecutionOf:     `split_part(execution_id, '/', 1) || '/' || split_part(execution_id, '/', 2)`,
		LockWorkflow:    `SELECT pg_advisory_xact_lock(hashtext($1))`,
		UniqueViolation: uniqueViolation, PackedLog: true,
	}, sqlstore.Options{Clock: opts.Clock, NewID: opts.NewID})
	s.listener = newListener(s)
	return s, nil
}

// reach waits for the server to answer, trying again while it cannot be reached, for
// up to Options.ConnectWait. Other failures (a database that does not exist, a
// password refused) are returned at once.
func (s *Store) reach(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, s.opts.ConnectWait)
	defer cancel()
	wait := 50 * time.Millisecond
	var last error // the last failure that was not the wait running out
	for {
		err := s.db.PingContext(ctx)
		if err == nil {
			return nil
		}
		if ctx.Err() == nil || last == nil {
			last = err
		}
		if !unreachable(err) || ctx.Err() != nil {
			if unavailable(last) || ctx.Err() != nil {
				return fmt.Errorf("postgres: open %s: %w: no answer within %v (is the server running, and are the URL's host and port right?): %w",
					s.dsn, ledger.ErrUnavailable, s.opts.ConnectWait, last)
			}
			return fmt.Errorf("postgres: open %s: %w", s.dsn, last)
		}
		select {
		case <-ctx.Done():
		case <-time.After(wait):
		}
		wait = min(wait*2, time.Second)
	}
}

// unreachable reports whether a failed connection attempt may succeed later: the
// server could not be reached, or is starting or shutting down. A server that answered
// with a refusal (no such database, a password refused) answers the same later.
func unreachable(err error) bool {
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		return strings.HasPrefix(pe.Code, "57P") || strings.HasPrefix(pe.Code, "08")
	}
	return connectionLost(err)
}

// Outdated returns a channel that is closed when a newer host migrated the ledger past
// the schema this binary knows while the store was open. From then on the store
// refuses writes with OutdatedErr (ledger.ErrSchemaTooNew); reads go on. The host
// should stop: its leases expire and hosts of the newer version take its workflows
// over, reconciling what it left in flight as after a crash.
func (s *Store) Outdated() <-chan struct{} { return s.outdatedCh }

// OutdatedErr is the error writes are refused with once the ledger is outdated, or nil.
func (s *Store) OutdatedErr() error {
	if p := s.outdated.Load(); p != nil {
		return *p
	}
	return nil
}

// markOutdated records that the ledger's schema is at version have, newer than this
// binary's.
func (s *Store) markOutdated(have int) {
	s.outdatedOnce.Do(func() {
		err := tooNew(s.dsn, have)
		s.outdated.Store(&err)
		close(s.outdatedCh)
	})
}

// String names the database without its password.
func (s *Store) String() string { return s.dsn }

// Close stops the wake-up listener and closes the connection pool.
func (s *Store) Close() error {
	var err error
	s.closeOnce.Do(func() {
		close(s.closed)
		s.listener.stop()
		err = s.db.Close()
	})
	return err
}

// now returns the clock's time in UTC at the precision the store keeps (nanoseconds,
// no monotonic reading), so that values returned by a write equal values read back.
func (s *Store) now() time.Time {
	return time.Unix(0, s.opts.Clock().UnixNano()).UTC()
}

// Redact returns a connection URL without its password, for messages.
func Redact(dsn string) string { return redactURL(dsn) }

// redactURL drops the password from a connection URL for messages.
func redactURL(dsn string) string {
	u, err := url.Parse(dsn)
	if err != nil || u.Scheme == "" {
		if strings.Contains(dsn, "password") {
			return "(connection string)"
		}
		// A URL that does not parse may still carry user:password@.
		return userinfoPassword.ReplaceAllString(dsn, "${1}:xxxxx@")
	}
	return u.Redacted()
}

// userinfoPassword matches the password in the user information of a URL.
var userinfoPassword = regexp.MustCompile(`^([A-Za-z][A-Za-z0-9+.-]*://[^:@/]*):[^@/]*@`)

// dbErr wraps a driver error with the operation and the database.
func (s *Store) dbErr(op string, err error) error {
	if err == nil {
		return nil
	}
	if errors.Is(err, errClosed) {
		return err
	}
	if unavailable(err) {
		return fmt.Errorf("postgres: %s %s: %w: %w", op, s.dsn, ledger.ErrUnavailable, err)
	}
	return fmt.Errorf("postgres: %s %s: %w", op, s.dsn, err)
}

// backend gives the shared transitions this store's transactions.
type backend struct{ s *Store }

func (b backend) Write(ctx context.Context, fn sqlstore.WriteFunc) error {
	return b.s.write(ctx, func(ctx context.Context, tx *wtx) error { return fn(ctx, tx) })
}

func (b backend) MustWrite(ctx context.Context, fn sqlstore.WriteFunc) error {
	return b.s.mustWrite(ctx, func(ctx context.Context, tx *wtx) error { return fn(ctx, tx) })
}

func (b backend) WriteRedo(ctx context.Context, fn sqlstore.WriteFunc) error {
	return b.s.write(ctx, func(ctx context.Context, tx *wtx) error { return redo(ctx, tx, fn) })
}

func (b backend) MustWriteRedo(ctx context.Context, fn sqlstore.WriteFunc) error {
	return b.s.mustWrite(ctx, func(ctx context.Context, tx *wtx) error { return redo(ctx, tx, fn) })
}

// redo runs fn in a transaction whose commit does not wait for the WAL flush: a
// database crash may lose it, only together with every later commit, and the next
// synchronous commit flushes it too.
func redo(ctx context.Context, tx *wtx, fn sqlstore.WriteFunc) error {
	tx.AsyncCommit()
	return fn(ctx, tx)
}

func (b backend) DBErr(op string, err error) error { return b.s.dbErr(op, err) }
