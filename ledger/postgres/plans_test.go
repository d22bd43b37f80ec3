package postgres_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"golang.org/x/sync/errgroup"

	"github.com/scripthost/scripthost"
	"github.com/scripthost/scripthost/internal/pgtest"
	"github.com/scripthost/scripthost/ledger"
	"github.com/scripthost/scripthost/ledger/postgres"
)

// TestRunWritesReadOnlyTheirRows: the writes of a consumer run (its in-flight record,
// its outcome, its commit) reach the rows they change by their keys, so they read as
// much in a ledger with a long backlog on the run's topic and many runs and mutations
// in flight elsewhere as in a quiet one. Measured as the shared buffers each statement
// visits (pg_stat_statements), in fresh tables without statistics and with the
// statements prepared long enough for their generic plans: the conditions in which
// PostgreSQL reserved an event through the index of the topic's pending events
// (reading the whole backlog) and matched a cached run or mutation through the index
// on status (reading every active run, every mutation in flight).
func TestRunWritesReadOnlyTheirRows(t *testing.T) {
	srv := pgtest.NewServer(t) // its own: the test reads the server's statement counts
	const backlog, inFlight = 10000, 4000

	// blocks returns the shared buffers per call of each statement of measured runs
	// of workflow wf in a ledger prepared by load.
	blocks := func(load func(s *postgres.Store)) map[string]float64 {
		url := srv.URL(t)
		s := open(t, url, postgres.Options{MaxConns: 1}) // one connection: its prepared statements go generic
		publish(t, s, "busy", 0, 20)
		for i := range 10 {
			consume(t, s, "busy", i)
		}
		load(open(t, url, postgres.Options{}))
		meter := pgtest.StartMeter(t, url)
		for i := range 6 {
			consume(t, s, "busy", 10+i)
		}
		out := map[string]float64{}
		for _, sc := range meter.Stop(t).ByStatement {
			if sc.Calls > 0 {
				out[sc.Query] = float64(sc.Blocks) / float64(sc.Calls)
			}
		}
		return out
	}
	quiet := blocks(func(*postgres.Store) {})
	busy := blocks(func(s *postgres.Store) {
		publish(t, s, "busy", 20, 20+backlog)
		var g errgroup.Group
		g.SetLimit(8)
		for i := range inFlight {
			g.Go(func() error {
				_, err := beginRun(s, fmt.Sprintf("other-%d", i), "") // a run left active, its mutation in flight
				return err
			})
		}
		if err := g.Wait(); err != nil {
			t.Fatal(err)
		}
	})

	// Each statement may visit a few more pages in the larger ledger (an index one
	// level deeper); the plans this guards against visit one or more per row of the
	// backlog or per run in flight.
	const slack = 40
	writes := 0
	for q, b := range busy {
		if !strings.Contains(q, "UPDATE") && !strings.Contains(q, "INSERT") {
			continue
		}
		writes++
		qb, ok := quiet[q]
		if !ok {
			t.Errorf("statement not seen in the quiet ledger: %.200s", q)
			continue
		}
		if b > qb+slack {
			t.Errorf("a write visits %.0f buffers with %d events pending and %d runs in flight, %.0f without: %.300s", b, backlog, inFlight, qb, q)
		}
	}
	if writes < 3 {
		t.Fatalf("measured %d write statements, want the in-flight record, the outcome and the commit: %v", writes, busy)
	}
}

// publish stores events e-from to e-(to-1) on workflow wf's topic "in".
func publish(t *testing.T, s *postgres.Store, wf string, from, to int) {
	t.Helper()
	var evs []ledger.NewEvent
	for i := from; i < to; i++ {
		evs = append(evs, ledger.NewEvent{Workflow: wf, Topic: "in", MessageID: fmt.Sprintf("e-%d", i), Payload: json.RawMessage(`{}`)})
	}
	if _, err := s.Publish(context.Background(), evs...); err != nil {
		t.Fatal(err)
	}
}

// begin writes a consumer run of workflow wf that reserves event (none when ""), with
// its mutation in flight, and returns the mutation.
func begin(t *testing.T, s *postgres.Store, wf, event string) scripthost.Mutation {
	t.Helper()
	m, err := beginRun(s, wf, event)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// beginRun is begin returning its error, for a goroutine other than the test's.
func beginRun(s *postgres.Store, wf, event string) (scripthost.Mutation, error) {
	id := s.NewID()
	var res []scripthost.Reservation
	if event != "" {
		res = []scripthost.Reservation{{Topic: "in", IDs: []string{event}}}
	}
	nr := ledger.NewRun{Workflow: wf, Version: 1, Handler: "ship", Kind: scripthost.KindConsumer, ID: id,
		Start: scripthost.RunPreparing, Prepared: &ledger.PrepareResult{Data: json.RawMessage(`1`), Mutate: true, Reservations: res}}
	return s.BeginMutation(context.Background(), ledger.NewMutation{RunID: id, Run: &nr, Namespace: "Shop", Method: "ship",
		Params: json.RawMessage(`{}`), InputHash: wf + "-" + event})
}

// consume writes a whole consumer run of workflow wf over event e-i: its in-flight
// record, its outcome and its commit.
func consume(t *testing.T, s *postgres.Store, wf string, i int) {
	t.Helper()
	ctx := context.Background()
	m := begin(t, s, wf, fmt.Sprintf("e-%d", i))
	if _, err := s.ApplyMutation(ctx, m.ID, json.RawMessage(`{}`)); err != nil {
		t.Fatal(err)
	}
	if _, err := s.CommitConsumer(ctx, m.RunID, ledger.Commit{State: json.RawMessage(fmt.Sprintf(`{"n":%d}`, i))}); err != nil {
		t.Fatal(err)
	}
}
