package sqlite_test

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/scripthost/scripthost/ledger"
	"github.com/scripthost/scripthost/ledger/ledgertest"
	"github.com/scripthost/scripthost/ledger/sqlite"
)

func openTemp(t *testing.T) *sqlite.Store {
	t.Helper()
	return openWith(t, sqlite.Options{})
}

func openWith(t *testing.T, opts sqlite.Options) *sqlite.Store {
	t.Helper()
	s, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "ledger.db"), opts)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func TestConformance(t *testing.T) {
	t.Run("GroupCommit", func(t *testing.T) {
		ledgertest.Run(t, func(t *testing.T) ledger.Store { return openTemp(t) })
	})
	t.Run("OneTransactionPerWrite", func(t *testing.T) {
		ledgertest.Run(t, func(t *testing.T) ledger.Store { return openWith(t, sqlite.Options{DisableGroupCommit: true}) })
	})
}
