package postgres

import (
	"sync"

	"github.com/scripthost/scripthost/ledger/internal/sqlstore"
)

// maxCachedRows bounds the row cache: the rows of runs in progress, a few per
// workflow this host drives, and of those it finished lately.
const maxCachedRows = 4096

// rowCache keeps the run and mutation rows this store's committed transactions wrote
// or read (see sqlstore.RowCache), so that a transition reads the row the previous
// transition of its run left without a SELECT … FOR UPDATE. Other hosts and commands
// write the database too, so a cached row is a guess: the transitions check it where
// they write it, and a transaction that met a changed row, or failed after deciding on
// a cached one, is run again without the cache (sqlstore.GuardedRows).
//
// The rows come in two generations, as in ledger/sqlite: when the young one holds
// maxCachedRows/2 rows it becomes the old one and the old one is dropped; a row found
// in the old generation moves to the young one.
type rowCache struct {
	mu         sync.Mutex
	young, old map[sqlstore.RowKey]any
}

func newRowCache() *rowCache {
	return &rowCache{young: map[sqlstore.RowKey]any{}, old: map[sqlstore.RowKey]any{}}
}

func (c *rowCache) get(k sqlstore.RowKey) (any, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if v, ok := c.young[k]; ok {
		return v, true
	}
	v, ok := c.old[k]
	if ok {
		c.putLocked(k, v)
		delete(c.old, k)
	}
	return v, ok
}

// commit keeps the rows of a committed transaction.
func (c *rowCache) commit(rows map[sqlstore.RowKey]any) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for k, v := range rows {
		c.putLocked(k, v)
		delete(c.old, k)
	}
}

func (c *rowCache) putLocked(k sqlstore.RowKey, v any) {
	if len(c.young) >= maxCachedRows/2 {
		c.young, c.old = map[sqlstore.RowKey]any{}, c.young
	}
	c.young[k] = v
}

// drop forgets the rows under keys.
func (c *rowCache) drop(keys []sqlstore.RowKey) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, k := range keys {
		delete(c.young, k)
		delete(c.old, k)
	}
}

// txCache is a write transaction's side of the cache: the rows it wrote or read, kept
// when it commits, and the rows it found in the shared cache, which it must check.
type txCache struct {
	shared *rowCache // nil: the transaction runs without the cache
	rows   map[sqlstore.RowKey]any
	guards map[sqlstore.RowKey]any
	// used are the keys of the rows found in the shared cache.
	used []sqlstore.RowKey
}

func (t *wtx) CachedRow(k sqlstore.RowKey) (any, bool) {
	c := &t.cache
	if v, ok := c.rows[k]; ok {
		return v, true
	}
	if c.shared == nil {
		return nil, false
	}
	v, ok := c.shared.get(k)
	if ok {
		if c.guards == nil {
			c.guards = map[sqlstore.RowKey]any{}
		}
		c.guards[k] = v
		c.used = append(c.used, k)
	}
	return v, ok
}

func (t *wtx) CacheRow(k sqlstore.RowKey, row any) {
	if t.cache.rows == nil {
		t.cache.rows = map[sqlstore.RowKey]any{}
	}
	t.cache.rows[k] = row
}

// VerifyRows is false: another host may change a cached row, which the guards catch.
func (t *wtx) VerifyRows() bool { return false }

// VerifySnapshots is the store's setting (sqlstore.VerifyRowCacheEnv): the stored
// snapshots a cached one stands for do not change, whatever other hosts write.
func (t *wtx) VerifySnapshots() bool { return t.s.verifySnapshots }

func (t *wtx) TakeGuard(k sqlstore.RowKey) (any, bool) {
	v, ok := t.cache.guards[k]
	delete(t.cache.guards, k)
	return v, ok
}

func (t *wtx) Guards() map[sqlstore.RowKey]any { return t.cache.guards }
