package sqlstore

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"reflect"
	"time"

	"github.com/jmoiron/sqlx"

	"github.com/scripthost/scripthost/ledger"
)

// RowCache is what a backend's write transaction offers when the backend keeps the
// run and mutation rows its writes left behind, so that a transition reading a row it
// or an earlier write of the process wrote or read finds it without a SELECT. Each
// transition reads its run (or mutation) first; the row is almost always the one the
// previous transition of the same run wrote.
//
// The backend answers for the cache being exact: it holds only what this
// transaction's writes and the committed ones left, drops a write's rows when the
// write is rolled back, and drops everything when another connection may have written
// (SQLite: its data version changed). The transitions keep their side of it: every
// statement that writes a runs or mutations row goes through insertRun, saveRun,
// BeginMutation's INSERT or saveMutation, each of which caches the row it wrote. The
// cache also keeps, under snapshotKey, the last snapshot the process logged of each
// run it moved, from which the next one is logged as a change (see snapshotBase).
type RowCache interface {
	// CachedRow returns the row cached under key, if any.
	CachedRow(key RowKey) (any, bool)
	// CacheRow caches row, as this transaction's write has it, under key.
	CacheRow(key RowKey, row any)
	// VerifyRows says that every row found in the cache is to be checked against the
	// database: a test setting (SCRIPTHOST_VERIFY_ROW_CACHE), never a production one.
	VerifyRows() bool
	// VerifySnapshots says that a run's last snapshot found in the cache is to be
	// checked against the stored ones before a change from it is logged
	// (verifyLastSnapshot): the same test setting, which holds where the rows may
	// differ from the database's (other writers), because the stored snapshots a
	// cached one stands for are never changed.
	VerifySnapshots() bool
}

// VerifyRowCacheEnv, when set in the environment, has the backends check what they
// find in their row caches against the database (RowCache.VerifyRows and
// VerifySnapshots): `make test` sets it.
const VerifyRowCacheEnv = "SCRIPTHOST_VERIFY_ROW_CACHE"

// GuardedRows is what a write transaction offers whose row cache may be out of date:
// the database has other writers (PostgreSQL: several hosts, an operator's command),
// so that a row found in the cache is what the database held when this process last
// wrote or read it, not necessarily now. The transitions check each such row where they
// write it: the UPDATE matches it only while the phase (runs), the status and
// updated_at are still the cached ones; a row found in the cache and not written is
// confirmed, and locked, at the end of the transaction (confirmGuards). A row that
// changed meanwhile fails the write with ErrStaleRow, and the backend runs the
// transaction again without its cache, as it does a transaction that failed after
// deciding on a cached row.
type GuardedRows interface {
	// TakeGuard returns the row under key as the transaction found it in the cache, if
	// it did and has not checked it yet, and forgets it: the caller checks it.
	TakeGuard(key RowKey) (any, bool)
	// Guards returns the rows found in the cache and not checked yet.
	Guards() map[RowKey]any
}

// ErrStaleRow: a row the transaction found in its cache had changed in the database;
// the backend runs the transaction again without the cache.
var ErrStaleRow = errors.New("a cached row changed in the database")

// guardedRows returns q's guarded cache when q is a write transaction that has one.
func guardedRows(q sqlx.QueryerContext) GuardedRows {
	if et, ok := q.(*eventTx); ok {
		q = et.Tx
	}
	g, _ := q.(GuardedRows)
	return g
}

// takeGuard returns the row under key that tx found in its cache and must check
// where it writes it.
func takeGuard(tx sqlx.QueryerContext, key RowKey) (any, bool) {
	if g := guardedRows(tx); g != nil {
		return g.TakeGuard(key)
	}
	return nil, false
}

// guardRun is the condition that matches a run row only as it was cached, and its
// arguments. It follows a match of the row's primary key, and compares with IS NOT
// DISTINCT FROM, which no index serves, so that the key is the only way to the row.
// With =, PostgreSQL may reach the row through the index on status (the plan it
// makes for a table it has no statistics of yet, and the generic plan of a prepared
// statement) and read every row of that status on the way: every active run, every
// mutation in flight.
func guardRun(row any) (string, []any) {
	o := row.(runRow)
	return ` AND (phase, status, updated_at) IS NOT DISTINCT FROM (?, ?, ?)`, []any{o.Phase, o.Status, o.UpdatedAt}
}

// guardMutation is guardRun for a mutation row.
func guardMutation(row any) (string, []any) {
	o := row.(mutationRow)
	return ` AND (status, updated_at) IS NOT DISTINCT FROM (?, ?)`, []any{o.Status, o.UpdatedAt}
}

// guardedExec runs an UPDATE of the row under key, matching it only as tx found it in
// its cache when it did (see GuardedRows).
func (s *Store) guardedExec(ctx context.Context, tx Tx, key RowKey, guard func(any) (string, []any), what, q string, args []any) error {
	row, guarded := takeGuard(tx, key)
	want := int64(-1)
	if guarded {
		cond, gargs := guard(row)
		q, args, want = q+cond, append(args, gargs...), 1
	}
	return s.execLater(ctx, tx, what, q, args, want, func() error {
		return fmt.Errorf("%s: %s %s %s: %w", s.name, what, key.Table, key.ID, ErrStaleRow)
	})
}

// confirmGuards confirms, and locks, the rows tx found in its cache and did not write:
// a transition that decided on one must not commit when it changed meanwhile.
func (s *Store) confirmGuards(ctx context.Context, tx Tx) error {
	g := guardedRows(tx)
	if g == nil {
		return nil
	}
	for key, row := range g.Guards() {
		guard := guardRun
		if key.Table == "mutations" {
			guard = guardMutation
		}
		cond, args := guard(row)
		var one int
		err := tx.GetContext(ctx, &one, `SELECT 1 FROM `+key.Table+` WHERE id = ?`+cond+` FOR UPDATE`, append([]any{key.ID}, args...)...)
		if errors.Is(err, sql.ErrNoRows) {
			return fmt.Errorf("%s: %s %s: %w", s.name, key.Table, key.ID, ErrStaleRow)
		}
		if err != nil {
			return s.dbErr("confirm "+key.Table, err)
		}
		g.TakeGuard(key)
	}
	return nil
}

// RowKey names a cached row: its table and its id.
type RowKey struct{ Table, ID string }

// rowCache returns q's row cache when q is a write transaction that has one.
func rowCache(q sqlx.QueryerContext) RowCache {
	if et, ok := q.(*eventTx); ok {
		q = et.Tx
	}
	c, _ := q.(RowCache)
	return c
}

// row is what the cache holds: a row type whose pointer scans it (fields) and that
// copies itself as reading it back would (clone).
type row[R any] interface {
	*R
	fields() []any
	clone() R
}

// cachedRow returns the row of table cached under id (what names the row in errors),
// a copy of its own, after reading the stored row with cols and comparing when the
// cache says so.
func cachedRow[R any, P row[R]](ctx context.Context, s *Store, c RowCache, what, table, cols, id string) (R, bool, error) {
	var zero R
	v, ok := c.CachedRow(RowKey{table, id})
	if !ok {
		return zero, false, nil
	}
	got := P(new(R))
	*got = v.(R)
	cached := got.clone()
	if c.VerifyRows() {
		stored := P(new(R))
		err := c.(sqlx.QueryerContext).QueryRowxContext(ctx, `SELECT `+cols+` FROM `+table+` WHERE id = ?`, id).Scan(stored.fields()...)
		if err != nil || !reflect.DeepEqual(stored.clone(), cached) {
			return zero, false, fmt.Errorf("%s: the row cache is out of date for %s %s: cached %+v, stored %+v (%v)", s.name, what, id, cached, *stored, err)
		}
	}
	return cached, true, nil
}

// readRow reads the row of table with id (what names it in errors) inside a
// transaction or from the read pool: from q's row cache when q is a write transaction
// that has it there, else from the database, then caching it.
func readRow[R any, P row[R]](ctx context.Context, s *Store, q sqlx.QueryerContext, what, table, cols, id string) (R, error) {
	var zero R
	c := rowCache(q)
	if c != nil {
		if cached, ok, err := cachedRow[R, P](ctx, s, c, what, table, cols, id); err != nil || ok {
			return cached, err
		}
	}
	row := P(new(R))
	err := q.QueryRowxContext(ctx, `SELECT `+cols+` FROM `+table+` WHERE id = ?`+s.forUpdate(q), id).Scan(row.fields()...)
	if errors.Is(err, sql.ErrNoRows) {
		return zero, fmt.Errorf("%w: %s %q", ledger.ErrNotFound, what, id)
	}
	if err != nil {
		return zero, s.dbErr("read "+what, err)
	}
	if c != nil {
		c.CacheRow(RowKey{table, id}, row.clone())
	}
	return *row, nil
}

// cacheRun caches a run row tx wrote, if tx keeps a cache.
func cacheRun(tx sqlx.QueryerContext, row runRow) {
	if c := rowCache(tx); c != nil {
		c.CacheRow(RowKey{"runs", row.ID}, row.clone())
	}
}

// cacheMutation caches a mutation row tx wrote, if tx keeps a cache.
func cacheMutation(tx sqlx.QueryerContext, row mutationRow) {
	if c := rowCache(tx); c != nil {
		c.CacheRow(RowKey{"mutations", row.ID}, row.clone())
	}
}

// clone returns the row as reading it back would: its own copies of the JSON (no
// caller's slice shared with the cache), an empty JSON value as NULL, times at the
// stored precision in UTC.
func (r runRow) clone() runRow {
	r.Prepared, r.Reservations = r.Prepared.clone(), r.Reservations.clone()
	r.InputState, r.OutputState, r.Outcome = r.InputState.clone(), r.OutputState.clone(), r.Outcome.clone()
	r.CancelRequest = r.CancelRequest.clone()
	r.WakeAt, r.NotBefore, r.CreatedAt, r.UpdatedAt = r.WakeAt.norm(), r.NotBefore.norm(), r.CreatedAt.norm(), r.UpdatedAt.norm()
	return r
}

// clone is runRow.clone for a mutation row.
func (r mutationRow) clone() mutationRow {
	r.Params, r.Result = r.Params.clone(), r.Result.clone()
	r.NextReconcileAt, r.ResolvedAt = r.NextReconcileAt.norm(), r.ResolvedAt.norm()
	r.CreatedAt, r.UpdatedAt = r.CreatedAt.norm(), r.UpdatedAt.norm()
	return r
}

func (j rawJSON) clone() rawJSON {
	if len(j) == 0 {
		return nil
	}
	return bytes.Clone(j)
}

func (t nanos) norm() nanos { return nanos(norm(time.Time(t))) }
