package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"sync"

	"github.com/jmoiron/sqlx"
)

// stmtCache holds statements prepared on the writer pool. database/sql keeps a
// statement prepared per connection and a transaction on that connection reuses it, so
// the one writer connection parses each statement once instead of on every write.
//
// A statement cannot be prepared while a transaction holds the only connection, so a
// transaction that meets a new query runs it unprepared and notes it; the writer
// prepares the noted queries after the transaction ends.
type stmtCache struct {
	mu      sync.Mutex
	plain   map[string]*sqlx.Stmt
	named   map[string]*sqlx.NamedStmt
	pending map[string]bool // query → named
}

func newStmtCache() *stmtCache {
	return &stmtCache{plain: map[string]*sqlx.Stmt{}, named: map[string]*sqlx.NamedStmt{}, pending: map[string]bool{}}
}

func (c *stmtCache) lookup(query string) *sqlx.Stmt {
	c.mu.Lock()
	defer c.mu.Unlock()
	st := c.plain[query]
	if st == nil {
		c.pending[query] = false
	}
	return st
}

func (c *stmtCache) lookupNamed(query string) *sqlx.NamedStmt {
	c.mu.Lock()
	defer c.mu.Unlock()
	st := c.named[query]
	if st == nil {
		c.pending[query] = true
	}
	return st
}

// prepare prepares the noted queries on db. The caller holds no transaction; the
// lock is not held while preparing, which waits for the writer connection.
func (c *stmtCache) prepare(ctx context.Context, db *sqlx.DB) {
	c.mu.Lock()
	pending := c.pending
	c.pending = map[string]bool{}
	c.mu.Unlock()
	for q, named := range pending {
		var ps *sqlx.Stmt
		var ns *sqlx.NamedStmt
		var err error
		if named {
			ns, err = db.PrepareNamedContext(ctx, q)
		} else {
			ps, err = db.PreparexContext(ctx, q)
		}
		if err != nil {
			continue // it stays unprepared until a transaction notes it again
		}
		c.mu.Lock()
		kept := false
		if named && c.named[q] == nil {
			c.named[q], kept = ns, true
		} else if !named && c.plain[q] == nil {
			c.plain[q], kept = ps, true
		}
		c.mu.Unlock()
		if !kept { // another writer prepared it first
			if ns != nil {
				ns.Close()
			}
			if ps != nil {
				ps.Close()
			}
		}
	}
}

func (c *stmtCache) close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	var errs []error
	for _, st := range c.plain {
		errs = append(errs, st.Close())
	}
	for _, st := range c.named {
		errs = append(errs, st.Close())
	}
	return errors.Join(errs...)
}

// wtx is a write transaction whose statements go through the cache. It overrides the
// query methods the store uses; everything else is the embedded transaction.
type wtx struct {
	*sqlx.Tx
	c *stmtCache
	// touched, when set, records what the write changed (see withEvents).
	touched *touched
}

func (t *wtx) ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error) {
	if st := t.c.lookup(query); st != nil {
		return t.Tx.StmtxContext(ctx, st).ExecContext(ctx, args...)
	}
	return t.Tx.ExecContext(ctx, query, args...)
}

func (t *wtx) QueryxContext(ctx context.Context, query string, args ...any) (*sqlx.Rows, error) {
	if st := t.c.lookup(query); st != nil {
		return t.Tx.StmtxContext(ctx, st).QueryxContext(ctx, args...)
	}
	return t.Tx.QueryxContext(ctx, query, args...)
}

func (t *wtx) QueryRowxContext(ctx context.Context, query string, args ...any) *sqlx.Row {
	if st := t.c.lookup(query); st != nil {
		return t.Tx.StmtxContext(ctx, st).QueryRowxContext(ctx, args...)
	}
	return t.Tx.QueryRowxContext(ctx, query, args...)
}

func (t *wtx) GetContext(ctx context.Context, dest any, query string, args ...any) error {
	return sqlx.GetContext(ctx, t, dest, query, args...)
}

func (t *wtx) SelectContext(ctx context.Context, dest any, query string, args ...any) error {
	return sqlx.SelectContext(ctx, t, dest, query, args...)
}

func (t *wtx) NamedExecContext(ctx context.Context, query string, arg any) (sql.Result, error) {
	if st := t.c.lookupNamed(query); st != nil {
		return t.Tx.NamedStmtContext(ctx, st).ExecContext(ctx, arg)
	}
	return t.Tx.NamedExecContext(ctx, query, arg)
}
