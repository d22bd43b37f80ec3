package postgres_test

import (
	"context"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/scripthost/scripthost"
	"github.com/scripthost/scripthost/internal/pgtest"
	"github.com/scripthost/scripthost/ledger"
	"github.com/scripthost/scripthost/ledger/postgres"
)

// TestLifecycleEventsAppendOnly: the lifecycle log is written in the transaction of
// the change it describes, and the database itself refuses to change or remove a row
// of it, whoever asks.
func TestLifecycleEventsAppendOnly(t *testing.T) {
	ctx := context.Background()
	url := pgtest.URL(t)
	s := open(t, url, postgres.Options{Schema: "append_only"})
	run, err := s.CreateRun(ledger.WithEvents(ctx, ledger.NewLifecycleEvent("", "created_for_test", nil)),
		ledger.NewRun{Workflow: "wf", Version: 1, Handler: "ship", Kind: scripthost.KindConsumer})
	if err != nil {
		t.Fatal(err)
	}
	evs, err := s.LifecycleEvents(ctx, ledger.LifecycleFilter{RunID: run.ID})
	if err != nil {
		t.Fatal(err)
	}
	if len(evs) != 1 || evs[0].Type != "created_for_test" || evs[0].RunID != run.ID {
		t.Fatalf("got %+v, want the one event of run %s", evs, run.ID)
	}

	c, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(ctx)
	for _, q := range []string{
		`UPDATE append_only.lifecycle_events SET type = 'rewritten'`,
		`DELETE FROM append_only.lifecycle_events`,
		`TRUNCATE append_only.lifecycle_events`,
	} {
		if _, err := c.Exec(ctx, q); err == nil || !strings.Contains(err.Error(), "append-only") {
			t.Errorf("%s: got %v, want a refusal saying the log is append-only", q, err)
		}
	}
	evs, err = s.LifecycleEvents(ctx, ledger.LifecycleFilter{RunID: run.ID})
	if err != nil {
		t.Fatal(err)
	}
	if len(evs) != 1 || evs[0].Type != "created_for_test" {
		t.Errorf("after the refusals: got %+v, want the event unchanged", evs)
	}
}
