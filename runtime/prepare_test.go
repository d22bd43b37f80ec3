package runtime_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/scripthost/scripthost"
	"github.com/scripthost/scripthost/hostfuncs"
	"github.com/scripthost/scripthost/ledger"
)

// TestPrepareFailureIsRecorded: a consumer run's prepare phase runs before the run is
// created, so one that fails creates its run in phase preparing and records the
// failure on it, as a run created first had it: one run, failed, its events still
// pending, its history the phase started and failed, in two writes.
func TestPrepareFailureIsRecorded(t *testing.T) {
	for _, tc := range []struct {
		name, prepare, why, failed string
	}{
		{"script error", `prepare() { throw new Error('no way'); }`, "no way", "phase_failed(prepare)"},
		{"result refused", `prepare() { return { reservations: 'all' }; }`, "reservations", "phase_failed(prepare/result)"},
		{"event not pending", `prepare() { return { reservations: [{ topic: 't', ids: ['nope'] }] }; }`,
			"event not available: w/t/nope", "phase_failed(prepare/result)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t)
			h.load("w", `export default { topics: ['t'], consumers: { c: { subscribe: ['t'], `+tc.prepare+` } } };`)
			h.publish("w", "t", "e")
			before := h.store.WriteStats()
			h.runOnce("w")
			runs := h.runs("w")
			if len(runs) != 1 {
				t.Fatalf("got %d runs, want 1", len(runs))
			}
			r := runs[0]
			if r.Status != scripthost.StatusFailedLogic || r.Phase != scripthost.RunPreparing || !strings.Contains(r.Error, tc.why) {
				t.Errorf("run: got %s/%s %q, want failed:logic in preparing saying %q", r.Phase, r.Status, r.Error, tc.why)
			}
			if got := h.events("w", "t")["e"]; got != scripthost.EventPending {
				t.Errorf("event: got %s, want pending", got)
			}
			if got, want := types(h.lifecycle(r.ID)), "phase_started(prepare) "+tc.failed; got != want {
				t.Errorf("events: got %s, want %s", got, want)
			}
			if got := h.store.WriteStats().Writes - before.Writes; got != 2 {
				t.Errorf("got %d writes, want 2 (created, failed)", got)
			}
		})
	}
}

// TestShutdownDuringPrepareLeavesNoRun: a host stopped while a prepare phase runs has
// written nothing for it (the run is created with the phase's result), so there is no
// run to recover, and the next start prepares again and consumes the event once.
func TestShutdownDuringPrepareLeavesNoRun(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	var calls atomic.Int32
	stop := &hostfuncs.Tool{Namespace: "Host", Method: "stop", ReadOnly: hostfuncs.ReadOnlyAlways,
		Execute: func(ctx context.Context, _ json.RawMessage) (json.RawMessage, error) {
			if calls.Add(1) == 1 {
				cancel()
				<-ctx.Done()
				return nil, ctx.Err()
			}
			return json.RawMessage(`{}`), nil
		}}
	rt, st, _ := countedRuntime(t, nil, stop)
	src := `export default { topics: ['t'], consumers: { c: { subscribe: ['t'],
  async prepare() { await Host.stop({}); const e = await Topics.peek({ topic: 't' });
    return e.length ? { reservations: [{ topic: 't', ids: [e[0].id] }] } : null; },
  next() { return { done: true }; } } } };`
	if _, err := rt.LoadWorkflow(context.Background(), "w", "w.js", []byte(src)); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Publish(context.Background(), ledger.NewEvent{Workflow: "w", Topic: "t", MessageID: "e", Payload: json.RawMessage(`{}`)}); err != nil {
		t.Fatal(err)
	}
	if err := rt.RunOnce(ctx, []string{"w"}); !errors.Is(err, context.Canceled) {
		t.Fatalf("run stopped during prepare: got %v, want context.Canceled", err)
	}
	bg := context.Background()
	runs, err := st.Runs(bg, ledger.RunFilter{Workflow: "w"})
	if err != nil || len(runs) != 0 {
		t.Fatalf("after the stop: got %d runs (%v), want none", len(runs), err)
	}
	if err := rt.RunOnce(bg, []string{"w"}); err != nil {
		t.Fatal(err)
	}
	runs, err = st.Runs(bg, ledger.RunFilter{Workflow: "w"})
	if err != nil || len(runs) != 1 || runs[0].Status != scripthost.StatusCommitted {
		t.Fatalf("after the restart: got %+v (%v), want one committed run", runs, err)
	}
	evs, err := st.Events(bg, ledger.EventFilter{Workflow: "w", Topic: "t"})
	if err != nil || len(evs) != 1 || evs[0].Status != scripthost.EventConsumed {
		t.Errorf("event: got %+v (%v), want consumed", evs, err)
	}
}
