package ledgertest

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/scripthost/scripthost"
	"github.com/scripthost/scripthost/ledger"
)

// History writes through s, as the scheduler writes them, history committed runs of
// workflow "orders"'s consumer "ship", then one run of it in flight, the newest, and
// one run left active in each of others other workflows, their runs between the
// history's (so that the active runs lie on pages of their own, as on a ledger that
// has run for a while). It returns the id of the run in flight.
func History(ctx context.Context, t *testing.T, s ledger.Store, history, others int) string {
	t.Helper()
	events := make([]ledger.NewEvent, history+1)
	for i := range events {
		events[i] = ledger.NewEvent{Workflow: "orders", Topic: "in", MessageID: fmt.Sprintf("e-%d", i), Payload: json.RawMessage(`{}`)}
	}
	if _, err := s.Publish(ctx, events...); err != nil {
		t.Fatal(err)
	}
	mutating := func(i int) scripthost.Mutation {
		t.Helper()
		id := s.NewID()
		msg := fmt.Sprintf("e-%d", i)
		nr := ledger.NewRun{Workflow: "orders", Version: 1, Handler: "ship", Kind: scripthost.KindConsumer, ID: id,
			InputState: json.RawMessage(fmt.Sprintf(`{"shipped":%d}`, i)), Start: scripthost.RunPreparing,
			Prepared: &ledger.PrepareResult{Data: json.RawMessage(`{"order":"` + msg + `"}`), Mutate: true,
				Reservations: []scripthost.Reservation{{Topic: "in", IDs: []string{msg}}}}}
		m, err := s.BeginMutation(ctx, ledger.NewMutation{RunID: id, Run: &nr, Namespace: "Shop", Method: "ship",
			Params: json.RawMessage(`{}`), InputHash: "h-" + msg})
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	for i := 0; i < max(history, others); i++ {
		if i < history {
			m := mutating(i)
			if _, err := s.ApplyMutation(ctx, m.ID, json.RawMessage(`{"shipped":true}`)); err != nil {
				t.Fatal(err)
			}
			if _, err := s.CommitConsumer(ctx, m.RunID, ledger.Commit{State: json.RawMessage(fmt.Sprintf(`{"shipped":%d}`, i+1))}); err != nil {
				t.Fatal(err)
			}
		}
		if i < others {
			if _, err := s.CreateRun(ctx, ledger.NewRun{Workflow: fmt.Sprintf("other-%d", i), Version: 1, Handler: "ship",
				Kind: scripthost.KindConsumer, Start: scripthost.RunPreparing}); err != nil {
				t.Fatal(err)
			}
		}
	}
	return mutating(history).RunID
}
