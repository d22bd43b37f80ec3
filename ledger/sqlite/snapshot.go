package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"

	"github.com/scripthost/scripthost/ledger"
)

// OpenSnapshot opens a consistent copy of the ledger at path, made in dir through a
// read-only connection (VACUUM INTO): nothing is written to the database or its
// write-ahead log (only the -shm index, where every SQLite reader marks its reads), and a
// host may be running on it meanwhile. The copy is the caller's to remove (it is
// dir/snapshot.db). It refuses a missing file, a file that is not an SQLite database
// and a database without the ledger's schema (ledger.ErrNotLedger), naming path.
func OpenSnapshot(ctx context.Context, path, dir string, opts Options) (*Store, error) {
	fi, err := os.Stat(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil, fmt.Errorf("sqlite: %s: no such ledger file", path)
	case err != nil:
		return nil, fmt.Errorf("sqlite: %w", err)
	case fi.IsDir():
		return nil, fmt.Errorf("sqlite: %s: is a directory, not a ledger file", path)
	case fi.Size() == 0:
		return nil, fmt.Errorf("sqlite: open %s: %w: the file is empty", path, ledger.ErrNotLedger)
	}
	if err := checkHeader(path); err != nil {
		return nil, err
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, fmt.Errorf("sqlite: %w", err)
	}
	q := url.Values{}
	q.Set("mode", "ro")
	db, err := sql.Open(driverName, "file:"+(&url.URL{Path: abs}).EscapedPath()+"?"+q.Encode())
	if err != nil {
		return nil, fmt.Errorf("sqlite: open %s: %w", path, err)
	}
	defer db.Close()
	var n int
	err = db.QueryRowContext(ctx, `SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = ?`, markerTable).Scan(&n)
	if err != nil {
		return nil, fmt.Errorf("sqlite: open %s read-only: %w", path, err)
	}
	if n == 0 {
		return nil, fmt.Errorf("sqlite: open %s: %w: an SQLite database without the ledger schema", path, ledger.ErrNotLedger)
	}
	copyPath := filepath.Join(dir, "snapshot.db")
	if _, err := db.ExecContext(ctx, `VACUUM INTO ?`, copyPath); err != nil {
		return nil, fmt.Errorf("sqlite: copy %s: %w", path, err)
	}
	return Open(ctx, copyPath, opts)
}
