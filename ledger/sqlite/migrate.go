package sqlite

import (
	"bytes"
	"context"
	"database/sql"
	"embed"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strconv"
	"strings"

	"github.com/jmoiron/sqlx"

	"github.com/scripthost/scripthost/ledger"
	"github.com/scripthost/scripthost/ledger/internal/sqlstore"
)

// migrations holds the schema, one file per version: NNNN_name.sql. Version N is
// applied in one transaction that also records N in scripthost_schema and user_version.
//
//go:embed migrations/*.sql
var migrations embed.FS

// markerTable is the table that says "this database is a scripthost ledger".
const markerTable = "scripthost_schema"

func loadMigrations() ([]sqlstore.Migration, error) {
	return sqlstore.LoadMigrations(migrations, "migrations", "sqlite")
}

// SchemaVersion is the schema version this binary writes.
func SchemaVersion() int {
	ms, err := loadMigrations()
	if err != nil {
		panic(err) // the embedded files are part of the binary; tests cover them
	}
	return len(ms)
}

// sqliteHeader starts every SQLite database file.
var sqliteHeader = []byte("SQLite format 3\x00")

// checkHeader refuses an existing, non-empty file that is not an SQLite database
// before the driver touches it.
func checkHeader(path string) error {
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("sqlite: open %s: %w", path, err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return fmt.Errorf("sqlite: open %s: %w", path, err)
	}
	if st.IsDir() {
		return fmt.Errorf("sqlite: open %s: is a directory", path)
	}
	if st.Size() == 0 {
		return nil
	}
	head := make([]byte, len(sqliteHeader))
	if _, err := io.ReadFull(f, head); err != nil || !bytes.Equal(head, sqliteHeader) {
		return fmt.Errorf("sqlite: open %s: %w: the file is not an SQLite database", path, ledger.ErrNotLedger)
	}
	return nil
}

// migrate checks that the file is ours (or empty) and not newer than this binary,
// switches it to WAL, and applies the missing migrations. Nothing is written before the
// checks pass.
func (s *Store) migrate(ctx context.Context) error {
	ms, err := loadMigrations()
	if err != nil {
		return err
	}
	want := len(ms)
	if err := s.setPageSize(ctx); err != nil {
		return err
	}
	have, err := s.inspect(ctx, want)
	if err != nil {
		return err
	}
	var mode string
	if err := s.w.GetContext(ctx, &mode, "PRAGMA journal_mode=WAL"); err != nil {
		return s.dbErr("open", err)
	}
	if !strings.EqualFold(mode, "wal") {
		return fmt.Errorf("sqlite: open %s: journal mode is %s, want wal", s.path, mode)
	}
	for _, m := range ms[have:] {
		err := s.writeOne(ctx, &writeReq{ctx: ctx, fn: func(ctx context.Context, tx *wtx) error {
			// Re-check inside the write lock: another process may have migrated since.
			v, err := schemaVersion(ctx, tx)
			if err != nil {
				return s.dbErr("open", err)
			}
			if v >= m.Version {
				return nil
			}
			if v != m.Version-1 {
				return fmt.Errorf("sqlite: open %s: schema version %d, cannot apply %s", s.path, v, m.Name)
			}
			if _, err := tx.c.conn.ExecContext(ctx, m.SQL); err != nil {
				if fk := foreignKeyCheck(ctx, tx.c.conn); fk != nil {
					err = fmt.Errorf("%w (%v)", err, fk) // SQLite's error names no row
				}
				return fmt.Errorf("sqlite: open %s: migration %s: %w", s.path, m.Name, err)
			}
			if err := foreignKeyCheck(ctx, tx.c.conn); err != nil {
				return fmt.Errorf("sqlite: open %s: migration %s: %w", s.path, m.Name, err)
			}
			if _, err := tx.c.conn.ExecContext(ctx, `INSERT INTO `+markerTable+` (version, name, applied_at) VALUES (?, ?, ?)`,
				m.Version, m.Name, s.now().UnixNano()); err != nil {
				return fmt.Errorf("sqlite: open %s: migration %s: %w", s.path, m.Name, err)
			}
			if _, err := tx.c.conn.ExecContext(ctx, fmt.Sprintf("PRAGMA user_version = %d", m.Version)); err != nil {
				return fmt.Errorf("sqlite: open %s: migration %s: %w", s.path, m.Name, err)
			}
			return nil
		}})
		if err != nil {
			return err
		}
	}
	return nil
}

// inspect reads the schema version under the write lock (so that a database another
// process holds is reported as locked) and rolls back: it never writes.
// pageSize is the page size of a ledger this package creates; one created before, or
// by another program, keeps its own (SQLite fixes it when the first table is made).
// 2 KiB instead of SQLite's 4 KiB: a commit writes each page it changed whole to the
// WAL, and a ledger's commits change a few small rows in many B-trees, so smaller
// pages halve what a commit writes, copies, checksums and syncs (RATIONALE.md, "Pages
// of 2 KiB").
const pageSize = 2048

// setPageSize sets pageSize on the write connection while the database is still
// empty, before inspect creates its first table; on a database that has pages it does
// nothing (SQLite would ignore it too).
func (s *Store) setPageSize(ctx context.Context) error {
	var pages int
	if err := s.w.GetContext(ctx, &pages, "PRAGMA page_count"); err != nil {
		return s.dbErr("open", err)
	}
	if pages > 0 {
		return nil
	}
	if _, err := s.w.ExecContext(ctx, "PRAGMA page_size = "+strconv.Itoa(pageSize)); err != nil {
		return s.dbErr("open", err)
	}
	return nil
}

func (s *Store) inspect(ctx context.Context, want int) (int, error) {
	tx, err := s.w.BeginTxx(ctx, nil)
	if err != nil {
		return 0, s.dbErr("open", err)
	}
	defer tx.Rollback()
	var tables []string
	if err := tx.SelectContext(ctx, &tables,
		`SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'`); err != nil {
		return 0, s.dbErr("open", err)
	}
	if len(tables) == 0 {
		if _, err := tx.ExecContext(ctx, `CREATE TABLE `+markerTable+
			` (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at INTEGER NOT NULL)`); err != nil {
			return 0, s.dbErr("open", err)
		}
		if err := tx.Commit(); err != nil {
			return 0, s.dbErr("open", err)
		}
		return 0, nil
	}
	ours := false
	for _, t := range tables {
		if t == markerTable {
			ours = true
		}
	}
	if !ours {
		return 0, fmt.Errorf("sqlite: open %s: %w: an SQLite database without the ledger schema (tables: %s)",
			s.path, ledger.ErrNotLedger, strings.Join(tables, ", "))
	}
	have, err := schemaVersion(ctx, tx)
	if err != nil {
		return 0, s.dbErr("open", err)
	}
	if have > want {
		return 0, fmt.Errorf("sqlite: open %s: %w: schema version %d, this binary knows up to %d",
			s.path, ledger.ErrSchemaTooNew, have, want)
	}
	return have, nil
}

// schemaVersion is the larger of the marker table's newest version and user_version,
// so that either one moved forward by a newer binary is noticed.
func schemaVersion(ctx context.Context, q sqlx.QueryerContext) (int, error) {
	var table, user int
	if err := sqlx.GetContext(ctx, q, &table, `SELECT COALESCE(MAX(version), 0) FROM `+markerTable); err != nil {
		return 0, err
	}
	if err := sqlx.GetContext(ctx, q, &user, `PRAGMA user_version`); err != nil {
		return 0, err
	}
	return max(table, user), nil
}

// foreignKeyCheck fails when a row refers to a row that is not there. A migration that
// rebuilds a table (create, copy, drop, rename) runs with foreign keys on, inside its
// transaction where PRAGMA foreign_keys cannot change; the check is what proves that
// the rebuild left every reference whole.
func foreignKeyCheck(ctx context.Context, q sqlx.QueryerContext) error {
	rows, err := q.QueryContext(ctx, "PRAGMA foreign_key_check")
	if err != nil {
		return err
	}
	defer rows.Close()
	if rows.Next() {
		var table, parent string
		var rowid sql.NullInt64
		var fkid int
		if err := rows.Scan(&table, &rowid, &parent, &fkid); err != nil {
			return err
		}
		return fmt.Errorf("foreign key check: a row of %s (rowid %v) refers to a missing row of %s", table, rowid.Int64, parent)
	}
	return rows.Err()
}
