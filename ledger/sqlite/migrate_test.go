package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// schemaAt creates a ledger file at schema version n, as a binary that knew n
// migrations left it, and returns a plain connection to it.
func schemaAt(t *testing.T, path string, n int) *sql.DB {
	t.Helper()
	ms, err := loadMigrations()
	if err != nil {
		t.Fatal(err)
	}
	db, err := sql.Open("sqlite3", path+"?_foreign_keys=1&_journal_mode=WAL")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	db.SetMaxOpenConns(1)
	stmts := []string{`CREATE TABLE ` + markerTable + ` (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at INTEGER NOT NULL)`}
	for _, m := range ms[:n] {
		stmts = append(stmts, m.SQL, fmt.Sprintf(`INSERT INTO %s VALUES (%d, '%s', 0)`, markerTable, m.Version, m.Name))
	}
	stmts = append(stmts, fmt.Sprintf("PRAGMA user_version = %d", n))
	for _, q := range stmts {
		if _, err := db.Exec(q); err != nil {
			t.Fatalf("%.60s: %v", q, err)
		}
	}
	return db
}

// migratedFrom creates a ledger at schema version n, runs rows in it, then opens it
// with the store, which migrates it to the binary's version; the store is closed when
// the test ends.
func migratedFrom(t *testing.T, n int, rows ...string) *Store {
	t.Helper()
	path := filepath.Join(t.TempDir(), "ledger.db")
	db := schemaAt(t, path, n)
	for _, q := range rows {
		if _, err := db.Exec(q); err != nil {
			t.Fatalf("%.60s: %v", q, err)
		}
	}
	db.Close()
	s, err := Open(context.Background(), path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// columns lists the columns of table.
func columns(t *testing.T, db *sql.DB, table string) []string {
	t.Helper()
	rows, err := db.Query(`SELECT name FROM pragma_table_info(?)`, table)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var cols []string
	for rows.Next() {
		var c string
		if err := rows.Scan(&c); err != nil {
			t.Fatal(err)
		}
		cols = append(cols, c)
	}
	return cols
}

// dump returns every row of table in key order, its columns cols, each quoted by
// SQLite so that its type is part of the value (1 and '1' differ, NULL is NULL).
func dump(t *testing.T, db *sql.DB, table, key string, cols []string) []string {
	t.Helper()
	quoted := make([]string, len(cols))
	for i, c := range cols {
		quoted[i] = "quote(" + c + ")"
	}
	cols = quoted
	var out []string
	rows, err := db.Query(`SELECT ` + strings.Join(cols, ` || ' | ' || `) + ` FROM ` + table + ` ORDER BY ` + key)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	for rows.Next() {
		var r string
		if err := rows.Scan(&r); err != nil {
			t.Fatal(err)
		}
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// twoRunsSQL inserts two runs, r1 committed and r2 mutating, into the older ledgers
// the migration tests build.
const twoRunsSQL = `INSERT INTO runs (id, workflow, version, handler, kind, phase, status, created_at, updated_at) VALUES
	('r1', 'wf', 1, 'h', 'consumer', 'committed', 'committed', 1, 2),
	('r2', 'wf', 1, 'h', 'consumer', 'mutating', 'active', 3, 4)`

// version5Rows fill every table that migration 6 rebuilds or re-indexes, with the
// values a ledger holds: NULLs, JSON, large rows, gaps in the seq numbers, every
// event status.
var version5Rows = []string{
	twoRunsSQL,
	`INSERT INTO lifecycle_events (seq, run_id, type, mutation_id, data, at) VALUES
		(1, 'r1', 'phase_started', '', NULL, 1),
		(2, 'r1', 'committed', 'm1', '{"published":[]}', 2),
		(7, 'r2', 'phase_started', '', '{"phase":"prepare"}', 3)`,
	`INSERT INTO events (seq, workflow, topic, message_id, payload, status, reserved_by, attempt, caused_by, created_at) VALUES
		(1, 'wf', 'in', 'a', '{}', 'consumed', 'r1', 1, '', 1),
		(2, 'wf', 'in', 'b', NULL, 'reserved', 'r2', 2, 'r1', 2),
		(4, 'wf', 'in', 'c', '{"n":"` + strings.Repeat("x", 9000) + `"}', 'pending', NULL, 0, '', 3),
		(5, 'wf', 'out', 'c', '[1,2]', 'dead', NULL, 3, 'r2', 4)`,
	`INSERT INTO mutations (id, run_id, namespace, method, params, input_hash, idempotency_key, status, created_at, updated_at) VALUES
		('m1', 'r1', 'Shop', 'ship', '{"order":1}', 'ih', 'k1', 'applied', 1, 2),
		('m2', NULL, 'Shop', 'ship', NULL, 'ih', 'k2', 'failed', 3, 4)`,
	`INSERT INTO handler_state (workflow, handler, state, wake_at, updated_at) VALUES
		('wf', 'h', '{"n":1}', 99, 5), ('wf', 'g', NULL, NULL, 6)`,
}

// filledVersion5 creates a ledger at schema version 5 holding version5Rows.
func filledVersion5(t *testing.T, path string) *sql.DB {
	t.Helper()
	db := schemaAt(t, path, 5)
	for _, q := range version5Rows {
		if _, err := db.Exec(q); err != nil {
			t.Fatalf("%.60s: %v", q, err)
		}
	}
	return db
}

// migrated are the tables migration 6 touches and the order that lists them whole.
var migrated = []struct{ table, key string }{
	{"lifecycle_events", "seq"},
	{"events", "seq"},
	{"mutations", "id"},
	{"handler_state", "workflow, handler"},
	{"runs", "id"},
}

// TestMigration6KeepsEveryRow fills a ledger at schema version 5, opens it (which
// applies migration 6: two tables rebuilt with foreign keys on) and compares every
// row and column value before and after.
func TestMigration6KeepsEveryRow(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "ledger.db")
	db := filledVersion5(t, path)
	// The columns at version 5: later migrations add some.
	before, cols := map[string][]string{}, map[string][]string{}
	for _, m := range migrated {
		cols[m.table] = columns(t, db, m.table)
		before[m.table] = dump(t, db, m.table, m.key, cols[m.table])
	}
	db.Close()

	s, err := Open(ctx, path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for _, m := range migrated {
		if got := dump(t, s.r.DB, m.table, m.key, cols[m.table]); !slices.Equal(got, before[m.table]) {
			t.Errorf("%s after migration:\ngot  %q\nwant %q", m.table, got, before[m.table])
		}
	}
	var check []string
	if err := s.r.Select(&check, `PRAGMA integrity_check`); err != nil || !slices.Equal(check, []string{"ok"}) {
		t.Errorf("integrity_check: got %q, %v, want ok", check, err)
	}
	rows, err := s.r.Query(`PRAGMA foreign_key_check`)
	if err != nil {
		t.Fatal(err)
	}
	if rows.Next() {
		t.Error("foreign_key_check: got a dangling reference, want none")
	}
	rows.Close()
	var seqRows int
	if err := s.r.Get(&seqRows, `SELECT COUNT(*) FROM sqlite_sequence WHERE name IN ('events', 'lifecycle_events')`); err != nil {
		t.Fatal(err)
	}
	if seqRows != 0 {
		t.Errorf("sqlite_sequence: got %d rows of events and lifecycle_events, want none (no AUTOINCREMENT)", seqRows)
	}
}

// TestMigration6Rules checks what the rebuilt tables still refuse and how they number
// new rows: after the largest seq, whatever numbers were skipped before.
func TestMigration6Rules(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "ledger.db")
	db := filledVersion5(t, path)
	db.Close()
	s, err := Open(ctx, path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	refused := []struct{ name, q, want string }{
		{"update a lifecycle event", `UPDATE lifecycle_events SET type = 'x'`, "append-only"},
		{"delete a lifecycle event", `DELETE FROM lifecycle_events WHERE seq = 7`, "append-only"},
		{"delete an event", `DELETE FROM events WHERE seq = 5`, "never deleted"},
		{"lifecycle event of no run", `INSERT INTO lifecycle_events (run_id, type, at) VALUES ('nope', 'paused', 1)`, "FOREIGN KEY"},
		{"event reserved by no run", `UPDATE events SET reserved_by = 'nope' WHERE seq = 4`, "FOREIGN KEY"},
		{"event message id twice", `INSERT INTO events (workflow, topic, message_id, status, created_at) VALUES ('wf', 'in', 'a', 'pending', 1)`, "UNIQUE"},
	}
	for _, c := range refused {
		t.Run(c.name, func(t *testing.T) {
			err := s.write(ctx, func(ctx context.Context, tx *wtx) error { return tx.c.exec(ctx, c.q) })
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("got %v, want an error saying %q", err, c.want)
			}
		})
	}
	err = s.write(ctx, func(ctx context.Context, tx *wtx) error {
		for _, q := range []string{
			`INSERT INTO lifecycle_events (run_id, type, at) VALUES ('r2', 'phase_completed', 9)`,
			`INSERT INTO events (workflow, topic, message_id, status, created_at) VALUES ('wf', 'in', 'd', 'pending', 9)`,
		} {
			if err := tx.c.exec(ctx, q); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for table, want := range map[string]int64{"lifecycle_events": 8, "events": 6} {
		var got int64
		if err := s.r.Get(&got, `SELECT MAX(seq) FROM `+table); err != nil {
			t.Fatal(err)
		}
		if got != want {
			t.Errorf("%s: new row got seq %d, want %d", table, got, want)
		}
	}
}

// TestQueryPlans checks that each query whose index migration 6 replaced or narrowed
// still finds its rows through an index, in the order it returns them (no sort).
// The statements are those of ledger/internal/sqlstore, parameters bound as there.
func TestQueryPlans(t *testing.T) {
	s, err := Open(context.Background(), filepath.Join(t.TempDir(), "ledger.db"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for _, c := range []struct {
		name, q string
		args    []any
		want    string
	}{
		{"pending events of a topic", `SELECT seq, workflow, topic, message_id, payload, status, reserved_by, attempt, caused_by, created_at
			FROM events WHERE workflow = ? AND topic = ? AND status = 'pending' ORDER BY seq LIMIT 10`,
			[]any{"wf", "in"}, "USING INDEX events_pending (workflow=? AND topic=?)"},
		{"a run's reserved events", `UPDATE events SET status = ? WHERE reserved_by = ? AND status = 'reserved'`,
			[]any{"consumed", "r1"}, "USING INDEX events_reserved_by (reserved_by=?)"},
		{"failures of an input hash", `SELECT COUNT(*) FROM mutations WHERE input_hash = ? AND status = 'failed'`,
			[]any{"ih"}, "USING COVERING INDEX mutations_failed_input_hash (input_hash=?)"},
		{"a run's lifecycle events", `SELECT seq, run_id, type, mutation_id, data, at FROM lifecycle_events WHERE run_id = ? ORDER BY seq`,
			[]any{"r1"}, "USING INDEX lifecycle_events_run (run_id=?)"},
		{"lifecycle events after a seq", `SELECT seq FROM lifecycle_events WHERE seq > ? ORDER BY seq LIMIT 1000`,
			[]any{5}, "USING INTEGER PRIMARY KEY (rowid>?)"},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := queryPlan(t, s, c.q, c.args...)
			if !strings.Contains(got, c.want) || strings.Contains(got, "TEMP B-TREE") {
				t.Errorf("got plan %q, want %q and no sort", got, c.want)
			}
		})
	}
}

// queryPlan is SQLite's plan for q on a read connection of s, its steps joined by "; ".
func queryPlan(t *testing.T, s *Store, q string, args ...any) string {
	t.Helper()
	rows, err := s.r.Query(`EXPLAIN QUERY PLAN `+q, args...)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var plan []string
	for rows.Next() {
		var id, parent, unused int
		var detail string
		if err := rows.Scan(&id, &parent, &unused, &detail); err != nil {
			t.Fatal(err)
		}
		plan = append(plan, detail)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return strings.Join(plan, "; ")
}

// TestMigrationForeignKeys opens version 5 ledgers holding a row that refers to a run
// that is not there: migration 6 is refused, by the copy into a rebuilt table or by the
// runner's check of the tables it does not copy, and the file stays at version 5.
func TestMigrationForeignKeys(t *testing.T) {
	for _, c := range []struct{ name, dangling, want string }{
		{"in a rebuilt table", `INSERT INTO lifecycle_events (run_id, type, at) VALUES ('gone', 'paused', 1)`,
			"0006_fewer_pages.sql: FOREIGN KEY constraint failed (foreign key check: a row of lifecycle_events (rowid 1) refers to a missing row of runs)"},
		{"elsewhere", `INSERT INTO mutations (id, run_id, namespace, method, idempotency_key, status, created_at, updated_at) VALUES ('m', 'gone', 'n', 'm', 'k', 'applied', 1, 1)`,
			"0006_fewer_pages.sql: foreign key check: a row of mutations (rowid 1) refers to a missing row of runs"},
	} {
		t.Run(c.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "ledger.db")
			db := schemaAt(t, path, 5)
			for _, q := range []string{`PRAGMA foreign_keys = OFF`, c.dangling} {
				if _, err := db.Exec(q); err != nil {
					t.Fatal(err)
				}
			}
			_, err := Open(context.Background(), path, Options{})
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("got %v, want an error saying %q", err, c.want)
			}
			var version int
			if err := db.QueryRow(`PRAGMA user_version`).Scan(&version); err != nil || version != 5 {
				t.Errorf("schema version after the refused migration: got %d (%v), want 5", version, err)
			}
		})
	}
}
