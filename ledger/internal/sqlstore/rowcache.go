package sqlstore

import (
	"bytes"
	"context"
	"fmt"
	"reflect"
	"time"

	"github.com/jmoiron/sqlx"
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
// BeginMutation's INSERT or saveMutation, each of which caches the row it wrote.
type RowCache interface {
	// CachedRow returns the row cached under key, if any.
	CachedRow(key RowKey) (any, bool)
	// CacheRow caches row, as this transaction's write has it, under key.
	CacheRow(key RowKey, row any)
	// VerifyRows says that every row found in the cache is to be checked against the
	// database: a test setting (SCRIPTHOST_VERIFY_ROW_CACHE), never a production one.
	VerifyRows() bool
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

// cachedRun returns the cached row of run id, checked against the database when the
// cache says so.
func (s *Store) cachedRun(ctx context.Context, c RowCache, id string) (runRow, bool, error) {
	v, ok := c.CachedRow(RowKey{"runs", id})
	if !ok {
		return runRow{}, false, nil
	}
	row := v.(runRow).clone()
	if c.VerifyRows() {
		var db runRow
		err := c.(sqlx.QueryerContext).QueryRowxContext(ctx, `SELECT `+runColumns+` FROM runs WHERE id = ?`, id).Scan(db.fields()...)
		if err != nil || !reflect.DeepEqual(db.clone(), row) {
			return runRow{}, false, fmt.Errorf("%s: the row cache is out of date for run %s: cached %+v, stored %+v (%v)", s.name, id, row, db, err)
		}
	}
	return row, true, nil
}

// cachedMutation is cachedRun for a mutation.
func (s *Store) cachedMutation(ctx context.Context, c RowCache, id string) (mutationRow, bool, error) {
	v, ok := c.CachedRow(RowKey{"mutations", id})
	if !ok {
		return mutationRow{}, false, nil
	}
	row := v.(mutationRow).clone()
	if c.VerifyRows() {
		var db mutationRow
		err := c.(sqlx.QueryerContext).QueryRowxContext(ctx, `SELECT `+mutationColumns+` FROM mutations WHERE id = ?`, id).Scan(db.fields()...)
		if err != nil || !reflect.DeepEqual(db.clone(), row) {
			return mutationRow{}, false, fmt.Errorf("%s: the row cache is out of date for mutation %s: cached %+v, stored %+v (%v)", s.name, id, row, db, err)
		}
	}
	return row, true, nil
}

// cacheRun caches a run row tx wrote or read, if tx keeps a cache.
func cacheRun(tx sqlx.QueryerContext, row runRow) {
	if c := rowCache(tx); c != nil {
		c.CacheRow(RowKey{"runs", row.ID}, row.clone())
	}
}

// cacheMutation caches a mutation row tx wrote or read, if tx keeps a cache.
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
