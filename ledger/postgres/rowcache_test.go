package postgres_test

import (
	"context"
	"errors"
	"sync"
	"testing"

	"github.com/scripthost/scripthost"
	"github.com/scripthost/scripthost/internal/pgtest"
	"github.com/scripthost/scripthost/ledger"
	"github.com/scripthost/scripthost/ledger/postgres"
)

// retries counts a store's retried transactions by reason (Options.OnRetry).
type retries struct {
	mu sync.Mutex
	by map[string]int
}

func (r *retries) add(reason string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.by == nil {
		r.by = map[string]int{}
	}
	r.by[reason]++
}

func (r *retries) get(reason string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.by[reason]
}

// TestRowCacheSeesOtherHosts: a store's transitions read the run their previous
// transition left from the store's row cache, but another host (here a second store
// on the database) may change the run meanwhile. The next transition then decides on
// the stored run, not the cached one: refused while the other host has paused the
// run, and made after it resumed it, each time with the transaction run again
// (counted as a stale_row retry).
func TestRowCacheSeesOtherHosts(t *testing.T) {
	ctx := context.Background()
	url := pgtest.URL(t)
	var ra retries
	a := open(t, url, postgres.Options{OnRetry: ra.add})
	b := open(t, url, postgres.Options{})
	run, err := a.CreateRun(ctx, ledger.NewRun{Workflow: "wf", Version: 1, Handler: "h",
		Kind: scripthost.KindConsumer, Start: scripthost.RunPreparing})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.SetRunStatus(ctx, run.ID, ledger.StatusChange{Status: scripthost.StatusPausedTransient}); err != nil {
		t.Fatal(err)
	}
	_, err = a.MarkPrepared(ctx, run.ID, ledger.PrepareResult{})
	if !errors.Is(err, ledger.ErrIllegalTransition) {
		t.Fatalf("preparing a run another host paused: got %v, want a refused transition", err)
	}
	if n := ra.get("stale_row"); n != 1 {
		t.Errorf("got %d stale_row retries, want 1", n)
	}
	// A second run, which the other host pauses and resumes: a run as active as the
	// cached one, but not the same row.
	run, err = a.CreateRun(ctx, ledger.NewRun{Workflow: "wf", Version: 1, Handler: "h",
		Kind: scripthost.KindConsumer, Start: scripthost.RunPreparing})
	if err != nil {
		t.Fatal(err)
	}
	for _, st := range []scripthost.RunStatus{scripthost.StatusPausedTransient, scripthost.StatusActive} {
		if _, err := b.SetRunStatus(ctx, run.ID, ledger.StatusChange{Status: st}); err != nil {
			t.Fatal(err)
		}
	}
	got, err := a.MarkPrepared(ctx, run.ID, ledger.PrepareResult{})
	if err != nil {
		t.Fatalf("preparing the run once the other host resumed it: %v", err)
	}
	if got.Phase != scripthost.RunPrepared || got.Status != scripthost.StatusActive {
		t.Errorf("got %s %s, want prepared and active", got.Phase, got.Status)
	}
	stored, err := b.Run(ctx, run.ID)
	if err != nil {
		t.Fatal(err)
	}
	if stored.Phase != scripthost.RunPrepared || !stored.UpdatedAt.Equal(got.UpdatedAt) {
		t.Errorf("stored %s at %v, want what the transition returned (%s at %v)", stored.Phase, stored.UpdatedAt, got.Phase, got.UpdatedAt)
	}
	if n := ra.get("stale_row"); n != 2 {
		t.Errorf("got %d stale_row retries, want 2", n)
	}
}
