// Package sqlite is the embedded ledger.Store: one SQLite file in WAL mode, written by
// one connection and read through a separate pool.
//
// Every write goes through one funnel (Store.write). By default the funnel commits
// concurrent writes together, each write in its own savepoint, so a write's failure
// drops that write alone. Commits do not wait for the disk in the funnel: the callers
// of the writes that must survive a power cut wait, after it, for an fsync of the WAL
// that they share with every such write committed before it began. The schema is embedded and versioned
// (migrations/NNNN_*.sql); Open refuses files it does not recognise without touching
// them.
package sqlite

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/jmoiron/sqlx"
	sqlite3 "github.com/mattn/go-sqlite3"

	"github.com/scripthost/scripthost/ledger"
	"github.com/scripthost/scripthost/ledger/internal/sqlstore"
)

// Options configure a Store. The zero value is usable.
type Options struct {
	// Clock returns the current time; default time.Now.
	Clock func() time.Time
	// BusyTimeout is how long a statement waits for a lock held by another
	// connection or process before the store reports ledger.ErrLocked; default 5s.
	BusyTimeout time.Duration
	// WriteTimeout bounds a write that must complete even when the caller's context
	// is cancelled (a mutation's in-flight record and its outcome), and a group-commit
	// batch: a write of the batch not started by then fails with
	// context.DeadlineExceeded (statements are not interrupted; lock waits are bounded
	// by BusyTimeout); default 30s.
	WriteTimeout time.Duration
	// NewID returns a fresh id for runs and mutations; default a UUIDv7 string.
	NewID func() string
	// ReadConns is the size of the read pool; default 4.
	ReadConns int
	// DisableGroupCommit gives every write a transaction (and an fsync) of its own.
	// By default concurrent writes are batched into one transaction, one fsync per
	// batch, each write in its own savepoint: throughput rises when many runs write at
	// once, and a lone writer sees no difference.
	DisableGroupCommit bool
	// HostLock takes an exclusive lock (an flock on PATH.lock) for as long as the store
	// is open, and refuses with ledger.ErrLocked when another process holds it. A
	// process that runs workflows on the file sets it, so that two hosts never drive
	// one SQLite ledger; `scripthost run` does. Processes that only look or resolve
	// (the operator commands) do not need it. The kernel drops the lock when the
	// process dies.
	HostLock bool
	// SyncEveryCommit makes every commit wait for the disk (synchronous=FULL), inside
	// the write funnel. By default only the writes a power cut must not lose do, and
	// outside it: a mutation's in-flight record, a person's resolution, published input
	// events, workflow versions and settings. The transitions that recovery redoes (creating and moving runs, a
	// mutation's outcome, a run's commit) are durable against a process crash at once
	// and against a power cut with the next commit that waits for the disk.
	SyncEveryCommit bool
	// OnCommit, when set, is called after every committed write transaction with the
	// number of writes it carried (group commit batches several) and how long it took
	// from its start to the end of its commit (metrics).
	OnCommit func(writes int, took time.Duration)
	// OnSync, when set, is called after every fsync of the WAL that durable writes
	// waited for, with the number of commits it put on the disk and how long it took
	// (metrics). It runs in the goroutine of one of the writes waiting.
	OnSync func(commits int, took time.Duration)
}

func (o Options) withDefaults() Options {
	if o.Clock == nil {
		o.Clock = time.Now
	}
	if o.BusyTimeout <= 0 {
		o.BusyTimeout = 5 * time.Second
	}
	if o.WriteTimeout <= 0 {
		o.WriteTimeout = ledger.WriteTimeout
	}
	if o.NewID == nil {
		o.NewID = sqlstore.NewUUID
	}
	if o.ReadConns <= 0 {
		o.ReadConns = 4
	}
	return o
}

// readStmtCache is how many prepared statements each read connection keeps, least
// recently used dropped first: more than the distinct queries the runtime reads with.
const readStmtCache = 64

// Store is a ledger.Store backed by one SQLite file.
type Store struct {
	// The transitions, shared with ledger/postgres, run on this store's writer.
	*sqlstore.Store

	path string
	opts Options
	// w is the one write connection: every write transaction goes through write.
	w *sqlx.DB
	// r is the read pool; its connections refuse writes.
	r *sqlx.DB

	// The group committer takes writes from reqs (unless DisableGroupCommit).
	reqs          chan *writeReq
	closed        chan struct{}
	closeOnce     sync.Once
	committerDone chan struct{}
	// wsem holds the write connection wc while a transaction runs on it.
	wsem chan struct{}
	wc   *wconn
	// ckpt checkpoints the WAL on a connection of its own (see checkpointer).
	ckpt *checkpointer
	// lock is the host lock (Options.HostLock), released by Close.
	lock  *hostLock
	stats writeCounters
	// wsync puts durable commits on the disk outside the write lock.
	wsync *walSync
}

var _ ledger.Store = (*Store)(nil)

// Open opens or creates the ledger at path and brings its schema up to date.
//
// It refuses, without changing the file: a file that is not an SQLite database or is
// an SQLite database without the ledger's schema (ledger.ErrNotLedger), a ledger
// written by a newer binary (ledger.ErrSchemaTooNew), and a database whose write lock
// another process holds for longer than the busy timeout (ledger.ErrLocked). Each
// error names the file.
func Open(ctx context.Context, path string, opts Options) (*Store, error) {
	opts = opts.withDefaults()
	if path == "" || strings.ContainsAny(path, "?") || strings.HasPrefix(path, "file:") || path == ":memory:" {
		return nil, fmt.Errorf("sqlite: open %q: need a plain file path", path)
	}
	var lock *hostLock
	if opts.HostLock {
		var err error
		if lock, err = lockHost(path); err != nil {
			return nil, err
		}
	}
	s, err := open(ctx, path, opts)
	if err != nil {
		lock.release(true)
		return nil, err
	}
	s.lock = lock
	return s, nil
}

func open(ctx context.Context, path string, opts Options) (*Store, error) {
	if err := checkHeader(path); err != nil {
		return nil, err
	}
	s := &Store{path: path, opts: opts, reqs: make(chan *writeReq), closed: make(chan struct{}), wsem: make(chan struct{}, 1), wsync: newWALSync(opts.OnSync)}
	ms := strconv.FormatInt(opts.BusyTimeout.Milliseconds(), 10)

	// The writer: one connection, immediate transactions so that a transaction takes
	// the write lock when it begins (and waits busy_timeout for it) instead of failing
	// half-way on its first write. journal_mode is set after the schema check so that
	// a foreign database is never converted to WAL.
	if err := registerWALVFS(); err != nil {
		return nil, err
	}
	wq := url.Values{}
	wq.Set("vfs", walVFS)
	wq.Set("_busy_timeout", ms)
	wq.Set("_foreign_keys", "1")
	// Commits leave the disk to walSync, unless each must sync itself.
	if opts.SyncEveryCommit {
		wq.Set("_synchronous", "FULL")
	} else {
		wq.Set("_synchronous", "NORMAL")
	}
	wq.Set("_txlock", "immediate")
	// No connection of the store needs SQLite's mutex (SQLITE_OPEN_NOMUTEX; the driver
	// opens with SQLITE_OPEN_FULLMUTEX): database/sql hands a connection to one
	// goroutine at a time and holds its lock around every call into the driver, so
	// SQLite's own lock, taken and released in every API call, guarded nothing.
	wq.Set("_mutex", "no")
	w, err := sqlx.Open(driverName, path+"?"+wq.Encode())
	if err != nil {
		return nil, fmt.Errorf("sqlite: open %s: %w", path, err)
	}
	w.SetMaxOpenConns(1)
	w.SetMaxIdleConns(1)
	w.SetConnMaxLifetime(0)
	w.SetConnMaxIdleTime(0)
	s.w = w
	// The checkpointer's connection: opened here, before the writer's first commit,
	// which counts its frames for it.
	cq := url.Values{}
	cq.Set("_busy_timeout", ms)
	cq.Set("_mutex", "no")
	c, err := sqlx.Open(driverName, path+"?"+cq.Encode())
	if err != nil {
		w.Close()
		return nil, fmt.Errorf("sqlite: open %s: %w", path, err)
	}
	c.SetMaxOpenConns(1)
	c.SetMaxIdleConns(1)
	s.ckpt = newCheckpointer(c)
	if err := s.migrate(ctx); err != nil {
		s.closeConns()
		return nil, err
	}

	// The readers: each connection keeps its last readStmtCache statements prepared,
	// keyed by their text, so that a read parses and plans its query once per
	// connection instead of at every call (SQLite re-prepares a kept statement by
	// itself after a schema change). The pool keeps every connection it opened, each
	// with its schema parsed and its statements prepared.
	rq := url.Values{}
	rq.Set("_busy_timeout", ms)
	rq.Set("_foreign_keys", "1")
	rq.Set("_query_only", "1")
	rq.Set("_mutex", "no")
	rq.Set("_stmt_cache_size", strconv.Itoa(readStmtCache))
	r, err := sqlx.Open(driverName, path+"?"+rq.Encode())
	if err != nil {
		s.closeConns()
		return nil, fmt.Errorf("sqlite: open %s: %w", path, err)
	}
	r.SetMaxOpenConns(opts.ReadConns)
	r.SetMaxIdleConns(opts.ReadConns)
	s.r = r
	s.Store = sqlstore.New(backend{s}, r, sqlstore.Dialect{Name: "sqlite", Order: "rowid", ExecutionOf: sqliteExecutionOf, RewritesSetIndexes: true, UniqueViolation: uniqueViolation, LocalReads: true, Embedded: true, TxSurvivesErrors: true},
		sqlstore.Options{Clock: opts.Clock, NewID: opts.NewID})
	if !opts.DisableGroupCommit {
		s.committerDone = make(chan struct{})
		go s.commit()
	}
	return s, nil
}

// Path returns the file the store was opened on.
func (s *Store) Path() string { return s.path }

// Close waits for the write in progress, if any, and closes both connection pools.
// Writes after Close fail.
func (s *Store) Close() error {
	var err error
	s.closeOnce.Do(func() {
		close(s.closed)
		if s.committerDone != nil {
			<-s.committerDone
		}
		err = s.closeConns()
		s.lock.release(false)
	})
	return err
}

// closeConns closes the connections open and, last, the WAL frame counter the write
// connection held.
func (s *Store) closeConns() error {
	errs := []error{s.closeWriter(), s.ckpt.close()}
	if s.r != nil {
		errs = append(errs, s.r.Close())
	}
	errs = append(errs, s.w.Close())
	s.ckpt.free()
	return errors.Join(errs...)
}

// now returns the clock's time in UTC at the precision the store keeps (nanoseconds,
// no monotonic reading), so that values returned by a write equal values read back.
func (s *Store) now() time.Time {
	return time.Unix(0, s.opts.Clock().UnixNano()).UTC()
}

// dbErr wraps a driver error with the operation and the file, translating lock and
// corruption errors to the ledger's sentinels.
func (s *Store) dbErr(op string, err error) error {
	if err == nil {
		return nil
	}
	var se sqlite3.Error
	if errors.As(err, &se) {
		switch se.Code {
		case sqlite3.ErrBusy, sqlite3.ErrLocked:
			return fmt.Errorf("sqlite: %s %s: %w (held by another connection or process for more than %v): %v",
				op, s.path, ledger.ErrLocked, s.opts.BusyTimeout, err)
		case sqlite3.ErrNotADB, sqlite3.ErrCorrupt:
			return fmt.Errorf("sqlite: %s %s: %w: %v", op, s.path, ledger.ErrNotLedger, err)
		case sqlite3.ErrFull:
			return fmt.Errorf("sqlite: %s %s: %w: %v", op, s.path, ledger.ErrNoSpace, err)
		case sqlite3.ErrReadonly, sqlite3.ErrCantOpen:
			return fmt.Errorf("sqlite: %s %s: %w (check the permissions of the file and its directory, and that its file system is mounted read-write): %v",
				op, s.path, ledger.ErrReadOnly, err)
		case sqlite3.ErrIoErr:
			if errors.Is(se.SystemErrno, syscall.ENOSPC) {
				return fmt.Errorf("sqlite: %s %s: %w: %v", op, s.path, ledger.ErrNoSpace, err)
			}
		}
	}
	return fmt.Errorf("sqlite: %s %s: %w", op, s.path, err)
}

// backend gives the shared transitions this store's one writer.
type backend struct{ s *Store }

func (b backend) Write(ctx context.Context, fn sqlstore.WriteFunc) error {
	return b.s.write(ctx, func(ctx context.Context, tx *wtx) error { return fn(ctx, tx) })
}

func (b backend) MustWrite(ctx context.Context, fn sqlstore.WriteFunc) error {
	return b.s.mustWrite(ctx, func(ctx context.Context, tx *wtx) error { return fn(ctx, tx) })
}

func (b backend) WriteRedo(ctx context.Context, fn sqlstore.WriteFunc) error {
	return b.s.writeRedo(ctx, func(ctx context.Context, tx *wtx) error { return fn(ctx, tx) })
}

func (b backend) MustWriteRedo(ctx context.Context, fn sqlstore.WriteFunc) error {
	return b.s.mustWriteRedo(ctx, func(ctx context.Context, tx *wtx) error { return fn(ctx, tx) })
}

func (b backend) DBErr(op string, err error) error { return b.s.dbErr(op, err) }

// uniqueViolation reports a UNIQUE constraint violation by the columns SQLite names in
// its message ("UNIQUE constraint failed: mutations.run_id" gives "mutations.run_id");
// SQLite names no constraint.
func uniqueViolation(err error) string {
	var se sqlite3.Error
	if !errors.As(err, &se) || se.ExtendedCode != sqlite3.ErrConstraintUnique {
		return ""
	}
	if _, cols, ok := strings.Cut(err.Error(), "UNIQUE constraint failed: "); ok && cols != "" {
		return cols
	}
	return "unique"
}

// sqliteExecutionOf is execution_id up to its second '/' (sqlstore.Dialect.ExecutionOf).
const sqliteExecutionOf = `substr(execution_id, 1, instr(execution_id || '/', '/') +
	instr(substr(execution_id || '/', instr(execution_id || '/', '/') + 1), '/') - 1)`
