package postgres_test

import (
	"context"
	"testing"

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
		return open(t, url, postgres.Options{Schema: "conformance_" + string(rune('a'+n/26)) + string(rune('a'+n%26))})
	})
}
