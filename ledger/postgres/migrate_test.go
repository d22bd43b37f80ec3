package postgres_test

import (
	"context"
	"os"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/scripthost/scripthost/internal/pgtest"
	"github.com/scripthost/scripthost/ledger"
	"github.com/scripthost/scripthost/ledger/postgres"
)

// TestMigrateExecutionNumbers: a ledger written before execution numbers were reserved
// keeps its numbers (the next reservation comes after them, whatever follows the
// number in an id) and keeps both records two racing executors wrote under one id.
func TestMigrateExecutionNumbers(t *testing.T) {
	ctx := context.Background()
	url := pgtest.URL(t)
	c, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(ctx)
	stmts := []string{`CREATE SCHEMA mig3`, `SET search_path TO mig3`}
	for _, f := range []string{"migrations/0001_init.sql", "migrations/0002_lifecycle_events.sql"} {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		stmts = append(stmts, string(b))
	}
	stmts = append(stmts,
		`CREATE TABLE scripthost_schema (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at BIGINT NOT NULL)`,
		`INSERT INTO scripthost_schema VALUES (1, '0001_init', 0), (2, '0002_lifecycle_events', 0)`,
		`INSERT INTO execution_log (execution_id, plan_id, step_id) VALUES
			('p/1', 'p', 'a'), ('p/1', 'p', 'a'), ('p/4#retried', 'p', 'b'), ('p/zz', 'p', 'c'), ('q', 'q', 'd')`)
	for _, q := range stmts {
		if _, err := c.Exec(ctx, q); err != nil {
			t.Fatalf("%.60s: %v", q, err)
		}
	}
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
