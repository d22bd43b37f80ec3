package runtime_test

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/scripthost/scripthost"
	"github.com/scripthost/scripthost/hostfuncs"
	"github.com/scripthost/scripthost/ledger"
	"github.com/scripthost/scripthost/ledger/postgres"
)

// TestTakeoverIsLogged: a host that claims a workflow whose lease another host let
// expire (it died) says so, naming the workflow and both hosts.
func TestTakeoverIsLogged(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute) // a bound, not a measure
	defer cancel()
	var logs bytes.Buffer
	_, st, _, rt := sharedPair(t, ctx, "host-b", hostfuncs.NewRegistry(), &logs)
	src := `export default { topics: ['t'], consumers: { c: { subscribe: ['t'],
  async prepare() { return null; }, async mutate() {}, next() { return {}; } } } };`
	if _, err := rt.LoadWorkflow(ctx, "w", "w.js", []byte(src)); err != nil {
		t.Fatal(err)
	}
	// host-a held the lease and died: its lease of 1ms is not renewed.
	if _, ok, err := st.ClaimLease(ctx, "w", "host-a", time.Millisecond); err != nil || !ok {
		t.Fatalf("claim by host-a: ok=%v err=%v", ok, err)
	}
	for !strings.Contains(logs.String(), "lease taken over") {
		if err := rt.RunOnce(ctx, []string{"w"}); err != nil {
			t.Fatalf("no takeover line before: %v\n%s", err, logs.String())
		}
	}
	if !strings.Contains(logs.String(), `level=WARN msg="lease taken over: its holder stopped renewing it" workflow=w from=host-a owner=host-b`) {
		t.Errorf("log: %s", logs.String())
	}
}

// TestReservationTakenByAnotherHost: while this host's consumer run is being
// prepared, another host (its lease expired here while a write waited for the
// database) creates a run that reserves the same event. This host's run is refused
// its reservation when it is written; on a shared ledger that is not the run's failure
// but the other host's progress: nothing is written, the step is dropped with a log
// line, and the handler is not left blocked by a failed run.
func TestReservationTakenByAnotherHost(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute) // a bound, not a measure
	defer cancel()
	var takenBy string
	var other *postgres.Store
	reg := hostfuncs.NewRegistry()
	err := reg.Register(&hostfuncs.Tool{Namespace: "Race", Method: "lose", ReadOnly: func(json.RawMessage) bool { return true },
		Execute: func(ctx context.Context, _ json.RawMessage) (json.RawMessage, error) {
			run, err := other.CreateRun(ctx, ledger.NewRun{Workflow: "w", Version: 1, Handler: "c", Kind: scripthost.KindConsumer,
				Start: scripthost.RunPreparing, Prepared: &ledger.PrepareResult{Data: json.RawMessage(`"e1"`),
					Reservations: []scripthost.Reservation{{Topic: "t", IDs: []string{"e1"}}}}})
			takenBy = run.ID
			return json.RawMessage(`{}`), err
		}})
	if err != nil {
		t.Fatal(err)
	}
	var logs bytes.Buffer
	_, st, other, rt := sharedPair(t, ctx, "host-b", reg, &logs)
	src := `export default { topics: ['t'], consumers: { c: { subscribe: ['t'],
  async prepare() {
    const evs = await Topics.peek({ topic: 't', limit: 1 });
    if (evs.length === 0) return { reservations: [], data: null };
    await Race.lose({});
    return { reservations: [{ topic: 't', ids: [evs[0].id] }], data: evs[0].id };
  },
  async mutate() {}, next() { return {}; } } } };`
	if _, err := rt.LoadWorkflow(ctx, "w", "w.js", []byte(src)); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Publish(ctx, ledger.NewEvent{Workflow: "w", Topic: "t", MessageID: "e1", Payload: json.RawMessage(`{}`)}); err != nil {
		t.Fatal(err)
	}
	if _, err := rt.Tick(ctx, "w"); err != nil {
		t.Fatalf("pass: %v\n%s", err, logs.String())
	}
	if takenBy == "" {
		t.Fatalf("the other host's run was not created\n%s", logs.String())
	}
	runs, err := st.Runs(ctx, ledger.RunFilter{Workflow: "w"})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range runs {
		if r.ID != takenBy {
			t.Errorf("run %s recorded (%s, %s): want only the other host's run %s", r.ID, r.Status, r.Error, takenBy)
		}
	}
	if !strings.Contains(logs.String(), `msg="event taken by another host's run: this host's step is dropped" workflow=w event=t/e1 taken_by=`+takenBy) {
		t.Errorf("log: %s", logs.String())
	}
}
