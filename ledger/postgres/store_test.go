package postgres_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/scripthost/scripthost/internal/pgtest"
	"github.com/scripthost/scripthost/ledger"
	"github.com/scripthost/scripthost/ledger/ledgertest"
	"github.com/scripthost/scripthost/ledger/postgres"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

func open(t *testing.T, url string, opts postgres.Options) *postgres.Store {
	t.Helper()
	s, err := postgres.Open(context.Background(), url, opts)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func TestConformance(t *testing.T) {
	url := pgtest.URL(t)
	n := 0
	ledgertest.Run(t, func(t *testing.T) ledger.Store {
		n++
		schema := "conformance_" + string(rune('a'+n/26)) + string(rune('a'+n%26))
		return parkable{open(t, url, postgres.Options{Schema: schema}), url, schema}
	})
}

// parkable puts a run back in phase mutated through a connection of its own, as
// versions that did not move a run on to emitting with its outcome left it.
type parkable struct {
	*postgres.Store
	url, schema string
}

func (s parkable) ParkAtMutated(ctx context.Context, runID string) error {
	c, err := pgx.Connect(ctx, s.url)
	if err != nil {
		return err
	}
	defer c.Close(ctx)
	_, err = c.Exec(ctx, `UPDATE `+pgx.Identifier{s.schema, "runs"}.Sanitize()+` SET phase = 'mutated' WHERE id = $1`, runID)
	return err
}

// TestOpenRefuses: a database holding something else, a ledger written by a newer
// binary and a malformed URL are refused with errors that name the database (without
// its password) and change nothing.
func TestOpenRefuses(t *testing.T) {
	ctx := context.Background()
	url := pgtest.URL(t)
	s := open(t, url, postgres.Options{Schema: "newer"})
	s.Close()

	foreign := open(t, url, postgres.Options{Schema: "scratch"})
	foreign.Close()
	c, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(ctx)
	for _, q := range []string{
		`CREATE SCHEMA other`, `CREATE TABLE other.accounts (id int)`,
		fmt.Sprintf(`INSERT INTO newer.scripthost_schema VALUES (%d, 'future', 0)`, postgres.SchemaVersion()+1),
	} {
		if _, err := c.Exec(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	withPassword := strings.Replace(url, "postgres@", "postgres:hunter2@", 1)
	tests := []struct {
		name   string
		url    string
		schema string
		want   error
	}{
		{"not a ledger", withPassword, "other", ledger.ErrNotLedger},
		{"newer schema", withPassword, "newer", ledger.ErrSchemaTooNew},
		{"bad URL", "postgres://[::1", "", nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s, err := postgres.Open(ctx, tc.url, postgres.Options{Schema: tc.schema})
			if err == nil {
				s.Close()
				t.Fatal("got a store, want a refusal")
			}
			if tc.want != nil && !errors.Is(err, tc.want) {
				t.Errorf("got %v, want %v", err, tc.want)
			}
			if !strings.HasPrefix(err.Error(), "postgres: open ") || strings.Contains(err.Error(), "hunter2") {
				t.Errorf("error %q: want it to start with \"postgres: open\" and to hide the password", err)
			}
		})
	}
	var n int
	if err := c.QueryRow(ctx, `SELECT count(*) FROM information_schema.tables WHERE table_schema = 'other'`).Scan(&n); err != nil || n != 1 {
		t.Errorf("tables in the foreign schema after the refusal: got %d (%v), want 1", n, err)
	}
}
