package sqlite

import (
	"context"
	"database/sql"
	"path/filepath"
	"testing"
)

// TestMigration10LeaseHistory opens a ledger at schema version 9: migration 10 adds the
// lease history tables, empty (a SQLite ledger has one host and no leases), and the
// ledger reports the binary's schema version, 10 or later.
func TestMigration10LeaseHistory(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "ledger.db")
	db := schemaAt(t, path, 9)
	db.Close()
	s, err := Open(ctx, path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	db, err = sql.Open("sqlite3", path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var version, rows int
	if err := db.QueryRow(`SELECT MAX(version) FROM scripthost_schema`).Scan(&version); err != nil || version != SchemaVersion() || version < 10 {
		t.Fatalf("schema version: got %d %v, want the binary's %d, 10 or later", version, err, SchemaVersion())
	}
	if err := db.QueryRow(`SELECT (SELECT COUNT(*) FROM lease_hosts) + (SELECT COUNT(*) FROM lease_takeovers)`).Scan(&rows); err != nil || rows != 0 {
		t.Fatalf("lease history: got %d rows, %v; want two empty tables", rows, err)
	}
}
