// Package codegraph owns the code index of a workspace: the symbols (functions,
// methods, types, classes, constants) and references (identifiers) of its Go, Rust,
// JavaScript, TypeScript and Python files, parsed with tree-sitter and stored in a
// SQLite file (codegraph.db). The index is incremental: a file is parsed again only
// when its content hash changed.
package codegraph

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"sync"
)

// Driver is the database/sql driver the index opens its file with. The package does not
// import it, so that the code tools pick no driver: a program registers it by importing
// github.com/mattn/go-sqlite3 (ledger/sqlite does).
const Driver = "sqlite3"

// DefaultFile is the index's file name in the workspace root.
const DefaultFile = "codegraph.db"

// applicationID marks a SQLite file as a code graph ("CGDB"), so that another
// database named by mistake is refused instead of altered.
const applicationID = 0x43474442

const schemaVersion = 2

const schema = `
CREATE TABLE IF NOT EXISTS files (
	path TEXT PRIMARY KEY,
	hash TEXT NOT NULL,
	language TEXT NOT NULL,
	syntax_errors INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS symbols (
	path TEXT NOT NULL, name TEXT NOT NULL, kind TEXT NOT NULL, container TEXT NOT NULL,
	start_byte INTEGER NOT NULL, end_byte INTEGER NOT NULL,
	start_line INTEGER NOT NULL, start_col INTEGER NOT NULL,
	end_line INTEGER NOT NULL, end_col INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS symbols_path ON symbols(path);
CREATE INDEX IF NOT EXISTS symbols_name ON symbols(name);
CREATE TABLE IF NOT EXISTS refs (
	path TEXT NOT NULL, name TEXT NOT NULL,
	start_byte INTEGER NOT NULL, end_byte INTEGER NOT NULL,
	start_line INTEGER NOT NULL, start_col INTEGER NOT NULL,
	end_line INTEGER NOT NULL, end_col INTEGER NOT NULL,
	PRIMARY KEY (path, start_byte, name)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS refs_name ON refs(name, path);
`

// Graph is the code index of one directory tree. It is safe for concurrent use;
// updates are serialized.
type Graph struct {
	root   string
	dbPath string
	fs     *os.Root
	db     *sql.DB
	mu     sync.Mutex // one update at a time
}

// ErrNotIndex is returned by Open for a database file that is not a code graph.
var ErrNotIndex = errors.New("codegraph: not a code graph database")

// Open opens (creating when missing) the index of the tree rooted at root, stored in
// dbPath; "" means codegraph.db in root. Opening does not index: call Index.
func Open(ctx context.Context, root, dbPath string) (*Graph, error) {
	abs, err := filepath.Abs(root)
	if err != nil {
		return nil, fmt.Errorf("codegraph: %w", err)
	}
	fsys, err := os.OpenRoot(abs)
	if err != nil {
		return nil, fmt.Errorf("codegraph: root: %w", err)
	}
	if dbPath == "" {
		dbPath = filepath.Join(abs, DefaultFile)
	}
	q := url.Values{}
	q.Set("_busy_timeout", "10000")
	// The index can always be rebuilt from the files: a lost last commit costs a
	// re-parse, not data.
	q.Set("_synchronous", "NORMAL")
	q.Set("_txlock", "immediate")
	if !slices.Contains(sql.Drivers(), Driver) {
		fsys.Close()
		return nil, fmt.Errorf("codegraph: open %s: no %q database driver is registered (import github.com/mattn/go-sqlite3)", dbPath, Driver)
	}
	db, err := sql.Open(Driver, "file:"+dbPath+"?"+q.Encode())
	if err != nil {
		fsys.Close()
		return nil, fmt.Errorf("codegraph: open %s: %w", dbPath, err)
	}
	g := &Graph{root: abs, dbPath: dbPath, fs: fsys, db: db}
	if err := g.migrate(ctx); err != nil {
		g.Close()
		return nil, err
	}
	return g, nil
}

// Exists reports whether the index file of root (or dbPath) exists.
func Exists(root, dbPath string) bool {
	if dbPath == "" {
		dbPath = filepath.Join(root, DefaultFile)
	}
	fi, err := os.Stat(dbPath)
	return err == nil && fi.Mode().IsRegular()
}

func (g *Graph) migrate(ctx context.Context) error {
	var app, version, tables int
	if err := g.db.QueryRowContext(ctx, "PRAGMA application_id").Scan(&app); err != nil {
		return fmt.Errorf("codegraph: open %s: %w", g.dbPath, err)
	}
	if err := g.db.QueryRowContext(ctx, "PRAGMA user_version").Scan(&version); err != nil {
		return fmt.Errorf("codegraph: open %s: %w", g.dbPath, err)
	}
	if err := g.db.QueryRowContext(ctx, "SELECT count(*) FROM sqlite_master").Scan(&tables); err != nil {
		return fmt.Errorf("codegraph: open %s: %w", g.dbPath, err)
	}
	switch {
	case app == applicationID && version == schemaVersion:
		return g.wal(ctx)
	case app == applicationID:
		// An index of another version is a cache like any other: rebuilt, not read.
		if _, err := g.db.ExecContext(ctx, "DROP TABLE IF EXISTS files; DROP TABLE IF EXISTS symbols; DROP TABLE IF EXISTS refs;"); err != nil {
			return fmt.Errorf("codegraph: %s: drop the index of schema version %d: %w", g.dbPath, version, err)
		}
	case tables > 0 || app != 0:
		return fmt.Errorf("%w: %s holds another database", ErrNotIndex, g.dbPath)
	}
	stmts := schema + fmt.Sprintf("PRAGMA application_id = %d; PRAGMA user_version = %d;", applicationID, schemaVersion)
	if _, err := g.db.ExecContext(ctx, stmts); err != nil {
		return fmt.Errorf("codegraph: create schema in %s: %w", g.dbPath, err)
	}
	return g.wal(ctx)
}

// wal switches the file to write-ahead logging, once it is known to be an index:
// readers (queries from other processes) never wait for an update.
func (g *Graph) wal(ctx context.Context) error {
	var mode string
	if err := g.db.QueryRowContext(ctx, "PRAGMA journal_mode = WAL").Scan(&mode); err != nil {
		return fmt.Errorf("codegraph: %s: journal mode: %w", g.dbPath, err)
	}
	if mode != "wal" {
		return fmt.Errorf("codegraph: %s: journal mode is %s, want wal", g.dbPath, mode)
	}
	return nil
}

// Root returns the absolute directory the index covers.
func (g *Graph) Root() string { return g.root }

// Path returns the index's database file.
func (g *Graph) Path() string { return g.dbPath }

// Close closes the database.
func (g *Graph) Close() error {
	err := g.db.Close()
	if cerr := g.fs.Close(); err == nil {
		err = cerr
	}
	return err
}
