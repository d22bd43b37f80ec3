package sqlite

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/scripthost/scripthost/ledger"
)

// TestMutationConflictsNamed: SQLite records a mutation without looking for conflicts
// first (its unique indexes find them at the INSERT); a conflict is still refused
// with the ledger's error naming the mutation it conflicts with, and nothing written.
func TestMutationConflictsNamed(t *testing.T) {
	ctx := context.Background()
	s, ids := benchStore(t, 2, Options{})
	first, err := s.BeginMutation(ctx, ledger.NewMutation{RunID: ids[0], Namespace: "Shop", Method: "ship",
		Params: json.RawMessage(`{}`), IdempotencyKey: "k1"})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		m    ledger.NewMutation
		want error
	}{
		{"a second mutation of the run", ledger.NewMutation{RunID: ids[0], Namespace: "Shop", Method: "ship",
			Params: json.RawMessage(`{}`), IdempotencyKey: "k2"}, ledger.ErrMutationExists},
		{"a used key", ledger.NewMutation{RunID: ids[1], Namespace: "Shop", Method: "ship",
			Params: json.RawMessage(`{}`), IdempotencyKey: "k1"}, ledger.ErrDuplicateKey},
	} {
		t.Run(c.name, func(t *testing.T) {
			before := s.WriteStats()
			_, err := s.BeginMutation(ctx, c.m)
			if !errors.Is(err, c.want) || !strings.Contains(err.Error(), first.ID) {
				t.Errorf("got %v, want %v naming mutation %s", err, c.want, first.ID)
			}
			if st := s.WriteStats(); st.Writes != before.Writes {
				t.Errorf("got %d writes committed for a refused mutation, want 0", st.Writes-before.Writes)
			}
		})
	}
	muts, err := s.Mutations(ctx, ledger.MutationFilter{})
	if err != nil || len(muts) != 1 {
		t.Errorf("got %d mutations (err %v), want the first alone", len(muts), err)
	}
}
