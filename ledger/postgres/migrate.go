package postgres

import (
	"context"
	"embed"
	"fmt"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/scripthost/scripthost/ledger"
	"github.com/scripthost/scripthost/ledger/internal/sqlstore"
)

// migrations holds the schema, one file per version: NNNN_name.sql. Version N is
// applied in one transaction that also records N in scripthost_schema.
//
//go:embed migrations/*.sql
var migrations embed.FS

// markerTable is the table that says "this schema is a scripthost ledger".
const markerTable = "scripthost_schema"

// migrateLock is the advisory lock key under which hosts migrate one at a time.
const migrateLock = 0x5c21_7057

func loadMigrations() ([]sqlstore.Migration, error) {
	return sqlstore.LoadMigrations(migrations, "migrations", "postgres")
}

// SchemaVersion is the schema version this binary writes.
func SchemaVersion() int {
	ms, err := loadMigrations()
	if err != nil {
		panic(err) // the embedded files are part of the binary; tests cover them
	}
	return len(ms)
}

// migrate checks that the schema is ours (or empty) and not newer than this binary,
// and applies the missing migrations, all in one transaction under an advisory lock
// so that hosts starting together migrate once. Nothing is written before the checks
// pass.
func (s *Store) migrate(ctx context.Context) error {
	ms, err := loadMigrations()
	if err != nil {
		return err
	}
	return s.write(ctx, func(ctx context.Context, tx *wtx) error {
		if _, err := tx.ExecContext(ctx, `SELECT pg_advisory_xact_lock(?)`, migrateLock); err != nil {
			return s.dbErr("open", err)
		}
		if s.opts.Schema != "" {
			if _, err := tx.ExecContext(ctx, `CREATE SCHEMA IF NOT EXISTS `+pgx.Identifier{s.opts.Schema}.Sanitize()); err != nil {
				return s.dbErr("open", err)
			}
		}
		var tables []string
		if err := tx.SelectContext(ctx, &tables, `SELECT table_name FROM information_schema.tables
			WHERE table_schema = current_schema() ORDER BY table_name`); err != nil {
			return s.dbErr("open", err)
		}
		have := 0
		switch {
		case len(tables) == 0:
			if _, err := tx.ExecContext(ctx, `CREATE TABLE `+markerTable+
				` (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at BIGINT NOT NULL)`); err != nil {
				return s.dbErr("open", err)
			}
		case !containsString(tables, markerTable):
			var schema string
			if err := tx.GetContext(ctx, &schema, `SELECT current_schema()`); err != nil {
				return s.dbErr("open", err)
			}
			return fmt.Errorf("postgres: open %s: %w: schema %q holds tables that are not a ledger's (%s); nothing was created: "+
				"give the ledger an empty database (or an empty schema) of its own",
				s.dsn, ledger.ErrNotLedger, schema, strings.Join(tables, ", "))
		default:
			if err := tx.GetContext(ctx, &have, `SELECT COALESCE(MAX(version), 0) FROM `+markerTable); err != nil {
				return s.dbErr("open", err)
			}
		}
		if have > len(ms) {
			return tooNew(s.dsn, have)
		}
		for _, m := range ms[have:] {
			if _, err := tx.execRaw(ctx, m.SQL); err != nil {
				return fmt.Errorf("postgres: open %s: migration %s: %w", s.dsn, m.Name, err)
			}
			if _, err := tx.ExecContext(ctx, `INSERT INTO `+markerTable+` (version, name, applied_at) VALUES (?, ?, ?)`,
				m.Version, m.Name, s.now().UnixNano()); err != nil {
				return fmt.Errorf("postgres: open %s: migration %s: %w", s.dsn, m.Name, err)
			}
		}
		if have > 0 && have < len(ms) {
			// Hosts of the older version still running learn of it at the commit
			// (listener.checkSchema) and stop writing.
			if _, err := tx.ExecContext(ctx, `SELECT pg_notify('`+schemaChannelPrefix+`' || current_schema(), ?)`, strconv.Itoa(len(ms))); err != nil {
				return s.dbErr("open", err)
			}
		}
		return nil
	})
}

// tooNew is the refusal of a ledger at schema version have, written by a newer binary.
func tooNew(dsn string, have int) error {
	return fmt.Errorf("postgres: open %s: %w: the ledger is at schema version %d and this binary knows versions up to %d: "+
		"a newer scripthost migrated it; upgrade scripthost on this host to that release (older hosts cannot use the ledger)",
		dsn, ledger.ErrSchemaTooNew, have, SchemaVersion())
}

// schemaVersion reads the ledger's schema version through q.
func schemaVersion(ctx context.Context, q interface {
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}) (int, error) {
	var v int
	err := q.QueryRow(ctx, `SELECT COALESCE(MAX(version), 0) FROM `+markerTable).Scan(&v)
	return v, err
}

func containsString(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
