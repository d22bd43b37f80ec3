package postgres_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/scripthost/scripthost"
	"github.com/scripthost/scripthost/internal/pgtest"
	"github.com/scripthost/scripthost/ledger"
	"github.com/scripthost/scripthost/ledger/postgres"
)

// TestRunInsertsWakeOnlyForRetries: a run a host creates for itself (here with its
// mutation's in-flight record) notifies nobody, so that its commit does not take the
// server's notification lock; a retry of it wakes the workflow's hosts. Notifications
// arrive in commit order, so a marker notified after each write tells whether the
// write notified.
func TestRunInsertsWakeOnlyForRetries(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	url := pgtest.URL(t)
	s := open(t, url, postgres.Options{})
	l, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close(context.Background())
	if _, err := l.Exec(ctx, `LISTEN "scripthost:public"`); err != nil {
		t.Fatal(err)
	}
	m, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close(context.Background())
	// heard returns the payloads notified up to the marker, which it notifies itself.
	heard := func() []string {
		t.Helper()
		if _, err := m.Exec(ctx, `SELECT pg_notify('scripthost:public', 'marker')`); err != nil {
			t.Fatal(err)
		}
		var got []string
		for {
			n, err := l.WaitForNotification(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if n.Payload == "marker" {
				return got
			}
			got = append(got, n.Payload)
		}
	}

	id := s.NewID()
	mut, err := s.BeginMutation(ctx, ledger.NewMutation{RunID: id, Namespace: "Shop", Method: "ship",
		Params: json.RawMessage(`{}`), InputHash: "ih", Run: &ledger.NewRun{ID: id, Workflow: "wf", Version: 1,
			Handler: "h", Kind: scripthost.KindConsumer, Start: scripthost.RunPreparing,
			Prepared: &ledger.PrepareResult{Mutate: true}}})
	if err != nil {
		t.Fatal(err)
	}
	if got := heard(); len(got) != 0 {
		t.Errorf("creating a run with its mutation notified %q, want nothing", got)
	}
	if _, err := s.FailMutation(ctx, mut.ID, &scripthost.Error{Class: scripthost.ClassLogic, Message: "no"}); err != nil {
		t.Fatal(err)
	}
	heard()
	if _, err := s.CreateRetryRun(ctx, id, ledger.RetryRun{}); err != nil {
		t.Fatal(err)
	}
	if got := heard(); len(got) != 1 || got[0] != "wf" {
		t.Errorf("a retry notified %q, want its workflow once", got)
	}
}
