package sqlite_test

import (
	"context"
	"database/sql"
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
		ledgertest.Run(t, func(t *testing.T) ledger.Store { return parkable{openTemp(t)} })
	})
	t.Run("OneTransactionPerWrite", func(t *testing.T) {
		ledgertest.Run(t, func(t *testing.T) ledger.Store {
			return parkable{openWith(t, sqlite.Options{DisableGroupCommit: true})}
		})
	})
}

// parkable puts a run back in phase mutated through a connection of its own, as
// versions that did not move a run on to emitting with its outcome left it.
type parkable struct{ *sqlite.Store }

func (s parkable) ParkAtMutated(ctx context.Context, runID string) error {
	db, err := sql.Open("sqlite3", s.Path())
	if err != nil {
		return err
	}
	defer db.Close()
	_, err = db.ExecContext(ctx, `UPDATE runs SET phase = 'mutated' WHERE id = ?`, runID)
	return err
}
