package postgres_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/scripthost/scripthost"
	"github.com/scripthost/scripthost/internal/pgtest"
	"github.com/scripthost/scripthost/ledger"
	"github.com/scripthost/scripthost/ledger/postgres"
)

// TestDerivedKeyTakenOnTrust: a mutation whose key is derived from the failures of its
// inputs records itself without reading the failure count first: BEGIN, the write and
// COMMIT, the count checked by the write. When the inputs failed before, the write
// finds the count it trusted wrong, writes nothing, and runs again reading it: the key
// is the one of the count, and nothing of the first attempt is left. The server counts
// the statements (pg_stat_statements), so the test starts a server of its own.
func TestDerivedKeyTakenOnTrust(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute) // a bound, not a measure
	defer cancel()
	url := pgtest.NewServer(t).URL(t)
	s := open(t, url, postgres.Options{})
	begin := func(hash string) (scripthost.Mutation, pgtest.Counts) {
		t.Helper()
		meter := pgtest.StartMeter(t, url)
		m, err := s.BeginMutation(ctx, ledger.NewMutation{Namespace: "Shop", Method: "ship",
			Params: json.RawMessage(`{}`), InputHash: hash})
		if err != nil {
			t.Fatal(err)
		}
		c := meter.Stop(t)
		if c.Statements < 0 {
			t.Fatal("the server does not count statements: pg_stat_statements is not loaded")
		}
		return m, c
	}
	counted := func(c pgtest.Counts) bool {
		for _, sc := range c.ByStatement {
			if strings.Contains(sc.Query, "SELECT COUNT(*) FROM mutations") {
				return true
			}
		}
		return false
	}
	statements := func(c pgtest.Counts) string {
		var qs []string
		for _, sc := range c.ByStatement {
			qs = append(qs, sc.Query)
		}
		return strings.Join(qs, "\n")
	}

	first, c := begin("h")
	if want := scripthost.IdempotencyKey("h", 0); first.IdempotencyKey != want {
		t.Fatalf("key %s, want %s", first.IdempotencyKey, want)
	}
	if c.Statements != 3 || c.Begins != 1 || counted(c) {
		t.Fatalf("%d statements, %d BEGIN, want BEGIN, the write and COMMIT without a read of the count:\n%s",
			c.Statements, c.Begins, statements(c))
	}

	if _, err := s.FailMutation(ctx, first.ID, scripthost.LogicError("declined")); err != nil {
		t.Fatal(err)
	}
	again, c := begin("h")
	if want := scripthost.IdempotencyKey("h", 1); again.IdempotencyKey != want {
		t.Fatalf("after a failure: key %s, want %s", again.IdempotencyKey, want)
	}
	if !counted(c) {
		t.Fatalf("after a failure the count was not read:\n%s", statements(c))
	}
	ms, err := s.Mutations(ctx, ledger.MutationFilter{})
	if err != nil {
		t.Fatal(err)
	}
	if len(ms) != 2 {
		t.Fatalf("%d mutations, want the failed one and the one begun again: %+v", len(ms), ms)
	}
}
