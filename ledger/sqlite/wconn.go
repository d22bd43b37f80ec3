package sqlite

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"unicode"
	"unsafe"

	"github.com/jmoiron/sqlx"
	sqlite3 "github.com/mattn/go-sqlite3"
)

// wconn is the write connection, taken from the writer pool at the first write and
// held until Close, with the statements prepared on it.
//
// Transactions on it are plain BEGIN IMMEDIATE … COMMIT statements rather than
// database/sql transactions: a database/sql transaction watches its context on a
// goroutine of its own and makes every query inside it watch both contexts on one
// more, and the driver runs each statement whose context can be cancelled on yet
// another. On the writer, where a transaction carries a few dozen short statements,
// those goroutines and their wake-ups cost more than the statements; on a held
// connection with contexts that cannot be cancelled there are none (stmtContext).
type wconn struct {
	conn  *sqlx.Conn
	plain map[string]*sqlx.Stmt
	// execs are the statements execArgs runs, prepared on the driver's connection;
	// args its argument slice, reused from statement to statement.
	execs map[string]execStmt
	args  []driver.NamedValue
	named map[string]*sqlx.NamedStmt
	// statements counts the statements run on the connection (WriteStats).
	statements *atomic.Int64
	// db is the connection's SQLite handle, for its data version; cache the rows its
	// writes left (see rowCache).
	db    unsafe.Pointer
	cache *rowCache
}

// dataVersion is the connection's SQLite data version (see rowCache).
func (c *wconn) dataVersion() (uint32, bool) { return dataVersion(c.db) }

// acquire takes the write connection for one transaction, waiting for the
// transaction in progress, if any; release gives it back.
func (s *Store) acquire(ctx context.Context) (*wconn, error) {
	select {
	case s.wsem <- struct{}{}:
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-s.closed:
		return nil, errClosed
	}
	return s.connect(ctx)
}

// tryAcquire is acquire when the connection is free at once; ok is false when a
// transaction is in progress or the store is closed.
func (s *Store) tryAcquire() (c *wconn, ok bool) {
	select {
	case <-s.closed:
		return nil, false
	default:
	}
	select {
	case s.wsem <- struct{}{}:
	default:
		return nil, false
	}
	c, err := s.connect(context.Background())
	return c, err == nil
}

// connect returns the write connection, opening it at the first write; the caller
// holds wsem, which connect gives back when it fails.
func (s *Store) connect(ctx context.Context) (*wconn, error) {
	if s.wc == nil {
		conn, err := s.w.Connx(ctx)
		if err != nil {
			<-s.wsem
			return nil, s.dbErr("begin", err)
		}
		var db unsafe.Pointer
		if err := conn.Raw(func(dc any) error {
			sc := dc.(*sqlite3.SQLiteConn)
			var err error
			if db, err = handle(sc, "db"); err != nil {
				return err
			}
			wal, err := walName(db)
			if err != nil {
				return err
			}
			s.wsync.setPath(wal)
			return countFrames(sc, s.ckpt.frames)
		}); err != nil {
			conn.Close()
			<-s.wsem
			return nil, s.dbErr("begin", err)
		}
		s.wc = &wconn{conn: conn, plain: map[string]*sqlx.Stmt{}, execs: map[string]execStmt{}, named: map[string]*sqlx.NamedStmt{},
			statements: &s.stats.statements, db: db, cache: newRowCache()}
	}
	return s.wc, nil
}

// release gives the write connection back. After an error that says the connection
// is broken, it is dropped, to be replaced at the next write.
func (s *Store) release(err error) {
	if err != nil && (errors.Is(err, driver.ErrBadConn) || errors.Is(err, sql.ErrConnDone)) {
		s.wc.close()
		s.wc = nil
	}
	<-s.wsem
}

// closeWriter closes the write connection; the committer has stopped.
func (s *Store) closeWriter() error {
	s.wsem <- struct{}{}
	defer func() { <-s.wsem }()
	// No write runs now: the durable ones committed finish their fsync first.
	err := errors.Join(s.wsync.close(), s.wc.close())
	s.wc = nil
	return err
}

func (c *wconn) close() error {
	if c == nil {
		return nil
	}
	var errs []error
	for _, st := range c.plain {
		errs = append(errs, st.Close())
	}
	_ = c.conn.Raw(func(any) error { // the driver's statements close on its connection
		for _, st := range c.execs {
			errs = append(errs, st.Close())
		}
		return nil
	})
	for _, st := range c.named {
		errs = append(errs, st.Close())
	}
	return errors.Join(append(errs, c.conn.Close())...)
}

// exec runs a statement of the writer's own (BEGIN, COMMIT, SAVEPOINT, a pragma),
// prepared at its first use and kept like the transitions' statements: the driver's
// one-call path for a statement without arguments compiles it every time, and a batch
// runs two savepoint statements per write besides its BEGIN and COMMIT.
func (c *wconn) exec(ctx context.Context, query string) error {
	_, err := c.execArgs(stmtContext(ctx), query, nil)
	return err
}

// execArgs runs query with args on the connection, prepared at its first use and kept.
// It goes to the driver directly, inside Raw, rather than through a database/sql
// statement: for the writer's short statements, database/sql's per-call work (its
// connection bookkeeping, an argument slice allocated and converted per call, the
// result wrapped) cost about as much Go time as SQLite's own. The checks it made are
// kept: each argument converted as database/sql converts it (driver.Valuer included),
// and their number checked against the statement's.
func (c *wconn) execArgs(ctx context.Context, query string, args []any) (res driver.Result, err error) {
	c.statements.Add(1)
	err = c.conn.Raw(func(dc any) error {
		st := c.execs[query]
		if st == nil {
			pc, ok := dc.(driver.ConnPrepareContext)
			if !ok {
				return fmt.Errorf("sqlite: driver connection %T cannot prepare with a context", dc)
			}
			ps, err := pc.PrepareContext(ctx, query)
			if err != nil {
				return err
			}
			if st, ok = ps.(execStmt); !ok {
				ps.Close()
				return fmt.Errorf("sqlite: driver statement %T cannot run with a context", ps)
			}
			c.execs[query] = st
		}
		if want := st.NumInput(); want >= 0 && want != len(args) {
			return fmt.Errorf("sql: expected %d arguments, got %d", want, len(args))
		}
		named := c.args[:0]
		defer func() {
			clear(named) // kept for the next statement, without this one's values
			c.args = named[:0]
		}()
		for i, a := range args {
			v, err := driver.DefaultParameterConverter.ConvertValue(a)
			if err != nil {
				return fmt.Errorf("sql: converting argument $%d type: %w", i+1, err)
			}
			named = append(named, driver.NamedValue{Ordinal: i + 1, Value: v})
		}
		res, err = st.ExecContext(ctx, named)
		return err
	})
	return res, err
}

// execStmt is a driver statement run by execArgs.
type execStmt interface {
	driver.Stmt
	driver.StmtExecContext
}

// stmt counts a statement run on the connection and returns it prepared: at its first
// use, then kept.
func (c *wconn) stmt(ctx context.Context, query string) (*sqlx.Stmt, error) {
	c.statements.Add(1)
	if st := c.plain[query]; st != nil {
		return st, nil
	}
	st, err := c.conn.PreparexContext(ctx, query)
	if err != nil {
		return nil, err
	}
	c.plain[query] = st
	return st, nil
}

// inTx reports whether a transaction is open on the connection.
func (c *wconn) inTx() bool {
	open := false
	_ = c.conn.Raw(func(dc any) error {
		if sc, ok := dc.(*sqlite3.SQLiteConn); ok {
			open = !sc.AutoCommit()
		}
		return nil
	})
	return open
}

// wtx is a write transaction on the write connection. Its queries are prepared on the
// connection at their first use and reused after.
type wtx struct {
	c *wconn
}

func (t *wtx) ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error) {
	return t.c.execArgs(ctx, query, args)
}

func (t *wtx) QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error) {
	st, err := t.c.stmt(ctx, query)
	if err != nil {
		return nil, err
	}
	return st.QueryContext(ctx, args...)
}

func (t *wtx) QueryxContext(ctx context.Context, query string, args ...any) (*sqlx.Rows, error) {
	st, err := t.c.stmt(ctx, query)
	if err != nil {
		return nil, err
	}
	return st.QueryxContext(ctx, args...)
}

func (t *wtx) QueryRowxContext(ctx context.Context, query string, args ...any) *sqlx.Row {
	st, err := t.c.stmt(ctx, query)
	if err != nil {
		// A Row carrying the error: sqlx builds one from a failed query.
		return t.c.conn.QueryRowxContext(ctx, query, args...)
	}
	return st.QueryRowxContext(ctx, args...)
}

func (t *wtx) GetContext(ctx context.Context, dest any, query string, args ...any) error {
	return sqlx.GetContext(ctx, t, dest, query, args...)
}

func (t *wtx) SelectContext(ctx context.Context, dest any, query string, args ...any) error {
	return sqlx.SelectContext(ctx, t, dest, query, args...)
}

func (t *wtx) NamedExecContext(ctx context.Context, query string, arg any) (sql.Result, error) {
	t.c.statements.Add(1)
	st := t.c.named[query]
	if st == nil {
		q, names := compileNamed(query)
		ps, err := t.c.conn.PreparexContext(ctx, q)
		if err != nil {
			return nil, err
		}
		st = &sqlx.NamedStmt{Params: names, QueryString: q, Stmt: ps}
		t.c.named[query] = st
	}
	return st.ExecContext(ctx, arg)
}

// compileNamed turns a query with :name parameters into one with ? parameters and the
// names in order, by sqlx's rules (a name is letters, digits, _ and .; :: is a colon),
// which sqlx keeps to itself for a connection it did not open.
func compileNamed(query string) (string, []string) {
	var b strings.Builder
	var names []string
	isName := func(r rune) bool { return r == '_' || r == '.' || unicode.IsLetter(r) || unicode.IsDigit(r) }
	rs := []rune(query)
	for i := 0; i < len(rs); i++ {
		switch {
		case rs[i] == ':' && i+1 < len(rs) && rs[i+1] == ':':
			b.WriteRune(':')
			i++
		case rs[i] == ':' && i+1 < len(rs) && isName(rs[i+1]):
			j := i + 1
			for j < len(rs) && isName(rs[j]) {
				j++
			}
			names = append(names, string(rs[i+1:j]))
			b.WriteRune('?')
			i = j - 1
		default:
			b.WriteRune(rs[i])
		}
	}
	return b.String(), names
}
