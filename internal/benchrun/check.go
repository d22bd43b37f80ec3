package benchrun

import (
	"context"
	"testing"

	"github.com/scripthost/scripthost"
	"github.com/scripthost/scripthost/ledger"
)

// CheckRuns checks, after a benchmark's runs, that each of its events was run once:
// none left pending, events consumed runs committed, one each, and one applied
// mutation per run, each with an idempotency key of its own.
func CheckRuns(b testing.TB, st ledger.Store, events int) {
	b.Helper()
	ctx := context.Background()
	pending, err := st.Events(ctx, ledger.EventFilter{Status: scripthost.EventPending})
	if err != nil {
		b.Fatal(err)
	}
	if len(pending) != 0 {
		b.Fatalf("%d events left pending", len(pending))
	}
	consumed, err := st.Events(ctx, ledger.EventFilter{Status: scripthost.EventConsumed})
	if err != nil {
		b.Fatal(err)
	}
	runs, err := st.Runs(ctx, ledger.RunFilter{Status: scripthost.StatusCommitted})
	if err != nil {
		b.Fatal(err)
	}
	if len(consumed) != events || len(runs) != events {
		b.Fatalf("%d events consumed and %d runs committed, want %d of each", len(consumed), len(runs), events)
	}
	byRun := map[string]int{}
	for _, ev := range consumed {
		byRun[ev.ReservedBy]++
	}
	for _, r := range runs {
		if byRun[r.ID] != 1 {
			b.Fatalf("run %s consumed %d events, want 1", r.ID, byRun[r.ID])
		}
	}
	muts, err := st.Mutations(ctx, ledger.MutationFilter{})
	if err != nil {
		b.Fatal(err)
	}
	keys := map[string]bool{}
	for _, m := range muts {
		if m.Status != scripthost.MutationApplied {
			b.Fatalf("mutation %s of run %s is %s, want applied", m.ID, m.RunID, m.Status)
		}
		if keys[m.IdempotencyKey] {
			b.Fatalf("idempotency key %s applied twice", m.IdempotencyKey)
		}
		keys[m.IdempotencyKey] = true
	}
	if len(muts) != events {
		b.Fatalf("%d mutations applied for %d runs", len(muts), events)
	}
}
