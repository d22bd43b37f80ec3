package postgres

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/stdlib"

	"github.com/scripthost/scripthost"
	"github.com/scripthost/scripthost/internal/pgtest"
	"github.com/scripthost/scripthost/ledger"
)

func TestTargetTable(t *testing.T) {
	for q, want := range map[string]string{
		"INSERT INTO runs (id) VALUES (?)":             "runs",
		"  insert\tinto\n lifecycle_events (run_id)":   "lifecycle_events",
		"UPDATE mutations SET status = ? WHERE id = ?": "mutations",
		"update\nevents SET status = ?":                "events",
		"SELECT 1 FROM mutations":                      "SELECT 1 FROM mutations",
		"INSERT INTO":                                  "INSERT INTO",
		"UPDATE":                                       "UPDATE",
		"":                                             "",
	} {
		if got := targetTable(q); got != want {
			t.Errorf("targetTable(%q) = %q, want %q", q, got, want)
		}
	}
}

func TestRenumber(t *testing.T) {
	n := 0
	b := renumber(nil, "UPDATE runs SET a = ?, b = ? WHERE id = ?", &n)
	b = renumber(append(b, "; "...), "SELECT 1", &n)
	b = renumber(append(b, "; "...), "INSERT INTO x VALUES (?), (?)", &n)
	want := "UPDATE runs SET a = $1, b = $2 WHERE id = $3; SELECT 1; INSERT INTO x VALUES ($4), ($5)"
	if string(b) != want || n != 5 {
		t.Errorf("renumber = %q (n %d), want %q (n 5)", b, n, want)
	}
	if got := rebind("SELECT ? , é ?"); got != "SELECT $1 , é $2" {
		t.Errorf("rebind = %q", got)
	}
}

// TestPreparedBound: a connection that has prepared maxPrepared write statements
// prepares no more; a transaction on it sends its BEGIN by itself and still commits.
func TestPreparedBound(t *testing.T) {
	ctx := context.Background()
	s, err := Open(ctx, pgtest.URL(t), Options{MaxConns: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	names := map[string]*pgconn.StatementDescription{}
	for i := range maxPrepared {
		names[fmt.Sprint("SELECT ", i)] = &pgconn.StatementDescription{}
	}
	c, err := s.db.Connx(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Raw(func(dc any) error {
		dc.(*stdlib.Conn).Conn().PgConn().CustomData()[preparedKey] = names
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	c.Close()
	m, err := s.BeginMutation(ctx, ledger.NewMutation{Namespace: "Shop", Method: "ship", Params: json.RawMessage(`{}`), InputHash: "h"})
	if err != nil {
		t.Fatal(err)
	}
	if len(names) != maxPrepared {
		t.Errorf("the connection prepared %d statements, want %d", len(names), maxPrepared)
	}
	if got, err := s.Mutation(ctx, m.ID); err != nil || got.Status != scripthost.MutationInFlight {
		t.Errorf("mutation after a BEGIN sent alone: %+v, %v", got, err)
	}
}
