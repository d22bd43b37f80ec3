package sqlite

import (
	"os"

	"github.com/scripthost/scripthost/ledger/internal/sqlstore"
)

// maxCachedRows bounds the row cache. The rows a transition reads are those of runs in
// progress, a few per workflow at a time; the cache keeps two generations of
// maxCachedRows/2 rows each, so that a row read again survives the start of a new
// generation (see rowCache).
const maxCachedRows = 1024

// rowCache is the write connection's cache of the run and mutation rows its writes
// wrote or read (see sqlstore.RowCache): a transition's read of the row the previous
// transition of the same run left is served from here, one SELECT fewer per write.
//
// It is exact because this connection is the process's one writer and follows its
// transactions: a write's rows are kept only when the write is (its savepoint
// released), a transaction's only when it commits; and every other connection's
// commit, in this process or another, changes the connection's data version, which
// begin compares with the version after this connection's own last commit, starting
// the cache over when they differ.
//
// The committed rows come in two generations: when the young one holds
// maxCachedRows/2 rows, it becomes the old one and the old one is dropped. A row found
// in the old generation moves to the young one, so the rows of runs in progress,
// read by each of their transitions, stay while those of finished runs age out; with
// one generation that started over, every run in progress missed once at each start.
// Both hold rows as of the last commit: a row a later commit wrote is in the young
// generation, which get reads first.
type rowCache struct {
	// committed are the rows as of the connection's last commit, old the generation
	// before; tx the ones the transaction in progress wrote in the writes it kept;
	// write the write's in progress, in the order it cached them (a write caches a
	// row or two).
	committed, old, tx map[sqlstore.RowKey]any
	write              []cachedRow
	// version is the connection's data version after its last commit; known says it
	// was read.
	version uint32
	known   bool
	verify  bool
}

type cachedRow struct {
	key sqlstore.RowKey
	row any
}

func newRowCache() *rowCache {
	return &rowCache{committed: map[sqlstore.RowKey]any{}, old: map[sqlstore.RowKey]any{}, tx: map[sqlstore.RowKey]any{},
		verify: os.Getenv(sqlstore.VerifyRowCacheEnv) != ""}
}

// begin follows the start of a transaction on the connection, whose data version is
// now v (ok: it could be read).
func (c *rowCache) begin(v uint32, ok bool) {
	if !ok || !c.known || v != c.version {
		c.committed, c.old = reset(c.committed), reset(c.old)
	}
	c.tx = reset(c.tx)
	c.write = c.write[:0]
}

// endWrite follows the end of one write inside the transaction: kept, or rolled back
// (to its savepoint, or with the whole transaction).
func (c *rowCache) endWrite(kept bool) {
	if kept {
		for _, e := range c.write {
			c.tx[e.key] = e.row
		}
	}
	if cap(c.write) > 64 {
		c.write = nil // after a write of many rows: not kept at that size
	}
	c.write = c.write[:0]
}

// end follows the end of the transaction: committed, leaving the connection at data
// version v (ok: it could be read), or rolled back.
func (c *rowCache) end(committed bool, v uint32, ok bool) {
	switch {
	case committed && ok:
		if len(c.tx) > maxCachedRows/2 { // a larger transaction's rows are not kept
			for k := range c.tx {
				delete(c.committed, k)
				delete(c.old, k)
			}
		} else {
			if len(c.committed)+len(c.tx) > maxCachedRows/2 {
				c.committed, c.old = reset(c.old), c.committed
			}
			for k, row := range c.tx {
				c.committed[k] = row
				delete(c.old, k)
			}
		}
		c.version, c.known = v, true
	case committed:
		c.committed, c.old = reset(c.committed), reset(c.old)
		c.known = false
	}
	c.tx = reset(c.tx)
	c.write = c.write[:0]
}

// reset empties m: a map keeps the room it once grew to, which clearing and ranging
// over would then pay for, so a large one is replaced.
func reset(m map[sqlstore.RowKey]any) map[sqlstore.RowKey]any {
	if len(m) > 64 {
		return map[sqlstore.RowKey]any{}
	}
	clear(m)
	return m
}

func (c *rowCache) get(k sqlstore.RowKey) (any, bool) {
	for i := len(c.write) - 1; i >= 0; i-- {
		if c.write[i].key == k {
			return c.write[i].row, true
		}
	}
	if v, ok := c.tx[k]; ok {
		return v, true
	}
	if v, ok := c.committed[k]; ok {
		return v, true
	}
	v, ok := c.old[k]
	if ok { // read again: into the young generation
		c.committed[k] = v
		delete(c.old, k)
	}
	return v, ok
}

// The write transaction offers the connection's cache to the transitions.

func (t *wtx) CachedRow(k sqlstore.RowKey) (any, bool) { return t.c.cache.get(k) }
func (t *wtx) CacheRow(k sqlstore.RowKey, row any) {
	t.c.cache.write = append(t.c.cache.write, cachedRow{k, row})
}
func (t *wtx) VerifyRows() bool      { return t.c.cache.verify }
func (t *wtx) VerifySnapshots() bool { return t.c.cache.verify }

var _ sqlstore.RowCache = (*wtx)(nil)
