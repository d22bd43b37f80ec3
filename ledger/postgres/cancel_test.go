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
	"github.com/scripthost/scripthost/ledger/internal/sqlstore"
	"github.com/scripthost/scripthost/ledger/postgres"
)

// inFlight moves a new consumer run of s to mutating with its mutation in flight,
// leaving the run and mutation rows in s's row cache.
func inFlight(ctx context.Context, t *testing.T, s *postgres.Store, key string) (scripthost.Run, scripthost.Mutation) {
	t.Helper()
	run, err := s.CreateRun(ctx, ledger.NewRun{Workflow: "wf", Version: 1, Handler: "h",
		Kind: scripthost.KindConsumer, Start: scripthost.RunPreparing})
	if err != nil {
		t.Fatal(err)
	}
	if run, err = s.MarkPrepared(ctx, run.ID, ledger.PrepareResult{Mutate: true}); err != nil {
		t.Fatal(err)
	}
	m, err := s.BeginMutation(ctx, ledger.NewMutation{RunID: run.ID, Namespace: "Shop", Method: "ship",
		Params: json.RawMessage(`{}`), InputHash: "h-" + key, IdempotencyKey: key})
	if err != nil {
		t.Fatal(err)
	}
	return run, m
}

// TestCancelRequestThroughRowCache: a host holds a run in its row cache while its
// mutation is in flight; another host (a second store on the database) asks to cancel
// it. The first host's write of the outcome, guarded by the cached row, finds the row
// changed, runs again on the stored row and cancels the run as asked, in the same
// transaction (one stale_row retry).
func TestCancelRequestThroughRowCache(t *testing.T) {
	ctx := context.Background()
	url := pgtest.URL(t)
	var ra retries
	a := open(t, url, postgres.Options{OnRetry: ra.add})
	b := open(t, url, postgres.Options{})
	run, m := inFlight(ctx, t, a, "k1")
	asked, err := b.CancelRun(ctx, run.ID, ledger.Cancel{By: "bob", Reason: "late"})
	if err != nil || asked.Status != scripthost.StatusActive || asked.Phase != scripthost.RunMutating {
		t.Fatalf("cancel while in flight: got %s/%s (%v), want the run left mutating and active", asked.Phase, asked.Status, err)
	}
	if _, err := a.ApplyMutation(ctx, m.ID, json.RawMessage(`{"shipped":true}`)); err != nil {
		t.Fatal(err)
	}
	got, err := b.Run(ctx, run.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.Status != scripthost.StatusCancelled || got.Phase != scripthost.RunEmitting || got.Error != "cancelled by bob: late" {
		t.Errorf("run after the outcome: got %s/%s %q, want emitting/cancelled by bob", got.Phase, got.Status, got.Error)
	}
	if n := ra.get("stale_row"); n != 1 {
		t.Errorf("got %d stale_row retries, want 1", n)
	}
	if _, err := a.CommitConsumer(ctx, run.ID, ledger.Commit{State: json.RawMessage(`{}`)}); err == nil {
		t.Error("the cancelled run's commit: accepted, want it refused")
	}
}

// TestOutcomeReadsNoCancelRequest: the write of a mutation's outcome on a run in the
// host's row cache reads neither the run nor its lifecycle log for a cancel request:
// BEGIN, the mutation's and the run's guarded updates, the log and COMMIT, as without
// a request. The server counts the statements (pg_stat_statements), so the test starts
// a server of its own.
func TestOutcomeReadsNoCancelRequest(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute) // a bound, not a measure
	defer cancel()
	url := pgtest.NewServer(t).URL(t)
	t.Setenv(sqlstore.VerifyRowCacheEnv, "") // its checks are statements too
	s := open(t, url, postgres.Options{})
	_, m := inFlight(ctx, t, s, "k1")
	meter := pgtest.StartMeter(t, url)
	if _, err := s.ApplyMutation(ctx, m.ID, json.RawMessage(`{"shipped":true}`)); err != nil {
		t.Fatal(err)
	}
	c := meter.Stop(t)
	if c.Statements < 0 {
		t.Fatal("the server does not count statements: pg_stat_statements is not loaded")
	}
	var qs []string
	for _, sc := range c.ByStatement {
		qs = append(qs, sc.Query)
		if strings.HasPrefix(strings.TrimSpace(sc.Query), "SELECT") || strings.Contains(sc.Query, "FROM lifecycle_events") {
			t.Errorf("a read in the outcome's write: %s", sc.Query)
		}
	}
	if c.Statements != 1 {
		t.Errorf("%d statements, want the one write:\n%s", c.Statements, strings.Join(qs, "\n"))
	}
}
