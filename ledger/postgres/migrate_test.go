package postgres_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/scripthost/scripthost/internal/pgtest"
	"github.com/scripthost/scripthost/ledger"
	"github.com/scripthost/scripthost/ledger/postgres"
)

// migrateTo creates schema at version n, as a binary that knew n migrations left it, in
// the database of url, runs then in it and returns the connection it used.
func migrateTo(t *testing.T, url, schema string, n int, then ...string) *pgx.Conn {
	t.Helper()
	ctx := context.Background()
	c, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close(ctx) })
	stmts := []string{`CREATE SCHEMA ` + schema, `SET search_path TO ` + schema,
		`CREATE TABLE scripthost_schema (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at BIGINT NOT NULL)`}
	files, err := filepath.Glob("migrations/*.sql")
	if err != nil || len(files) < n {
		t.Fatalf("migrations: got %q, %v, want %d", files, err, n)
	}
	for i, f := range files[:n] {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		stmts = append(stmts, string(b), fmt.Sprintf(`INSERT INTO scripthost_schema VALUES (%d, '%s', 0)`, i+1, filepath.Base(f)))
	}
	for _, q := range append(stmts, then...) {
		if _, err := c.Exec(ctx, q); err != nil {
			t.Fatalf("%.60s: %v", q, err)
		}
	}
	return c
}

// texts returns the one text column of q's rows on c, in order.
func texts(t *testing.T, c *pgx.Conn, q string, args ...any) []string {
	t.Helper()
	rows, err := c.Query(context.Background(), q, args...)
	if err != nil {
		t.Fatalf("%.60s: %v", q, err)
	}
	out, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatalf("%.60s: %v", q, err)
	}
	return out
}

// dumpRows returns the rows of each query on c (each row one text column), in order:
// what a migration test compares before and after the migration.
func dumpRows(t *testing.T, c *pgx.Conn, queries ...string) []string {
	t.Helper()
	var out []string
	for _, q := range queries {
		out = append(out, texts(t, c, q)...)
	}
	return out
}

// plan returns PostgreSQL's plan of q on c, a line per node.
func plan(t *testing.T, c *pgx.Conn, q string) string {
	t.Helper()
	return strings.Join(texts(t, c, `EXPLAIN `+q), "\n")
}

// TestMigrateExecutionNumbers: a ledger written before execution numbers were reserved
// keeps its numbers (the next reservation comes after them, whatever follows the
// number in an id) and keeps both records two racing executors wrote under one id.
func TestMigrateExecutionNumbers(t *testing.T) {
	ctx := context.Background()
	url := pgtest.URL(t)
	migrateTo(t, url, "mig3", 2,
		`INSERT INTO execution_log (execution_id, plan_id, step_id) VALUES
			('p/1', 'p', 'a'), ('p/1', 'p', 'a'), ('p/4#retried', 'p', 'b'), ('p/zz', 'p', 'c'), ('q', 'q', 'd')`)
	s := open(t, url, postgres.Options{Schema: "mig3"})
	n, err := s.ReserveExecution(ctx, "p")
	if err != nil {
		t.Fatal(err)
	}
	if n != 5 {
		t.Errorf("next execution of p: got %d, want 5", n)
	}
	recs, err := s.Executions(ctx, ledger.ExecutionFilter{})
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, r := range recs {
		ids = append(ids, r.ExecutionID)
	}
	want := []string{"p/1", "p/1#duplicate-2", "p/4#retried", "p/zz", "q"}
	if len(ids) != len(want) {
		t.Fatalf("records: got %q, want %q", ids, want)
	}
	for i := range want {
		if ids[i] != want[i] {
			t.Errorf("records: got %q, want %q", ids, want)
			break
		}
	}
}
