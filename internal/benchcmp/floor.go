package benchcmp

import (
	"context"
	"database/sql"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
)

// FloorDSN returns the data source name of the plain-SQLite reference for a file with
// mattn/go-sqlite3 (which the calling test imports): synchronous=FULL, immediate
// transactions, the settings of the ledger's in-flight write, and no mutex of SQLite's
// own on the connection, as the ledger's connections have none. TwoCommitFloor gives
// the database the ledger's page size and WAL mode (in that order: SQLite fixes the
// page size when it first writes the file).
func FloorDSN(path string) string {
	return "file:" + path + "?_synchronous=FULL&_txlock=immediate&_busy_timeout=5000&_mutex=no"
}

// FloorPageSize is the page size of a new ledger (ledger/sqlite's pageSize, which its
// tests check against this), given to the floor's database so that both write the
// same size of page.
const FloorPageSize = 2048

// TwoCommitFloor is what a durable effect costs on plain SQLite at the least, without
// any ledger: on one connection, a row is inserted and committed (the record made
// before the call), then updated and committed (the outcome). workers goroutines share
// the connection, as concurrent runs share the ledger's writer. It does b.N such pairs.
func TwoCommitFloor(b *testing.B, db *sql.DB, workers int) {
	b.Helper()
	ctx := context.Background()
	db.SetMaxOpenConns(1)
	for _, q := range []string{fmt.Sprintf("PRAGMA page_size = %d", FloorPageSize), "PRAGMA journal_mode = WAL"} {
		if _, err := db.ExecContext(ctx, q); err != nil {
			b.Fatal(err)
		}
	}
	if _, err := db.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS floor (id TEXT PRIMARY KEY, status TEXT, result TEXT)`); err != nil {
		b.Fatal(err)
	}
	Workers(b, workers, b.N, func(i int) error {
		id := fmt.Sprintf("%d-%d", b.N, i)
		if _, err := db.ExecContext(ctx, `INSERT INTO floor (id, status) VALUES (?, 'in_flight')`, id); err != nil {
			return err
		}
		_, err := db.ExecContext(ctx, `UPDATE floor SET status = 'applied', result = '{"ok":true}' WHERE id = ?`, id)
		return err
	})
}

// Workers times n calls of fn (with i from 0 to n-1) shared by workers goroutines,
// resetting the timer before and stopping it after; the first error fails b.
func Workers(b *testing.B, workers, n int, fn func(i int) error) {
	b.Helper()
	b.ResetTimer()
	err := Parallel(workers, n, fn)
	b.StopTimer()
	if err != nil {
		b.Fatal(err)
	}
}

// Parallel makes n calls of fn (with i from 0 to n-1) shared by workers goroutines,
// untimed, and returns the first error; a worker stops at its error, the others go on.
func Parallel(workers, n int, fn func(i int) error) error {
	var next atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for range workers {
		wg.Go(func() {
			for {
				i := int(next.Add(1)) - 1
				if i >= n {
					return
				}
				if err := fn(i); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	return <-errs
}
