package ledgertest

import (
	"encoding/json"
	"errors"

	"github.com/scripthost/scripthost"
	"github.com/scripthost/scripthost/ledger"
)

// testStateFrom: a run begun from a handler state is created only while that is
// still the saved state, however it is created (pending, with its mutation, committed
// at once), and a refused one writes nothing: not the run, its mutation, its event
// reservations or its state.
func testStateFrom(f *fixture) {
	t, s := f.t, f.s
	// A producer's committed runs save its state, one after the other.
	commit := func(hs ledger.HandlerState, cursor string) (scripthost.Run, error) {
		return s.CreateRun(f.ctx, ledger.NewRun{Workflow: wf, Version: 1, Handler: "poll", Kind: scripthost.KindProducer,
			Start: scripthost.RunExecuting, InputState: hs.State, StateFrom: &hs,
			Commit: &ledger.Commit{State: json.RawMessage(`{"cursor":` + cursor + `}`)}})
	}
	none := must(s.HandlerState(f.ctx, wf, "poll"))(t)
	if !none.UpdatedAt.IsZero() {
		t.Fatalf("state before any run: got %+v, want none", none)
	}
	must(commit(none, "1"))(t)
	first := must(s.HandlerState(f.ctx, wf, "poll"))(t)
	must(commit(first, "2"))(t) // begun from the saved state: created
	second := must(s.HandlerState(f.ctx, wf, "poll"))(t)

	before := f.dump()
	for _, tc := range []struct {
		name string
		from ledger.HandlerState
	}{
		{"begun from no state, one saved since", none},
		{"begun from a state committed over since", first},
		{"begun from a state saved at another time", ledger.HandlerState{Workflow: wf, Handler: "poll",
			State: second.State, UpdatedAt: second.UpdatedAt.Add(1)}},
	} {
		if _, err := commit(tc.from, "3"); !errors.Is(err, ledger.ErrStateChanged) {
			t.Errorf("%s: producer run created committed: got %v, want ErrStateChanged", tc.name, err)
		}
		if _, err := s.CreateRun(f.ctx, ledger.NewRun{Workflow: wf, Version: 1, Handler: "poll", Kind: scripthost.KindProducer,
			InputState: tc.from.State, StateFrom: &tc.from}); !errors.Is(err, ledger.ErrStateChanged) {
			t.Errorf("%s: run created pending: got %v, want ErrStateChanged", tc.name, err)
		}
	}
	f.unchanged(before)

	// A consumer's run created with its mutation: refused whole, its event left
	// pending.
	evs := f.publish("in", "sf-a")
	f.consumer(stCommitted)
	shipped := must(s.HandlerState(f.ctx, wf, "ship"))(t)
	begin := func(hs ledger.HandlerState) error {
		id := s.NewID()
		nr := ledger.NewRun{Workflow: wf, Version: 1, Handler: "ship", Kind: scripthost.KindConsumer, ID: id,
			InputState: hs.State, StateFrom: &hs, Start: scripthost.RunPreparing,
			Prepared: &ledger.PrepareResult{Data: json.RawMessage(`"d"`), Mutate: true,
				Reservations: []scripthost.Reservation{{Topic: "in", IDs: []string{evs[0].MessageID}}}}}
		_, err := s.BeginMutation(f.ctx, ledger.NewMutation{RunID: id, Run: &nr, Namespace: "Shop", Method: "ship",
			Params: json.RawMessage(`{"n":1}`), InputHash: "sf"})
		return err
	}
	before = f.dump()
	stale := ledger.HandlerState{Workflow: wf, Handler: "ship"}
	if err := begin(stale); !errors.Is(err, ledger.ErrStateChanged) {
		t.Errorf("consumer run created with its mutation from a stale state: got %v, want ErrStateChanged", err)
	}
	f.unchanged(before)
	if err := begin(shipped); err != nil {
		t.Errorf("consumer run created with its mutation from the saved state: %v", err)
	}
	if got := f.eventsOf(evs); got[0].Status != scripthost.EventReserved {
		t.Errorf("event: got %s, want reserved by the run begun from the saved state", got[0].Status)
	}
}
