package runtime_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/scripthost/scripthost"
	"github.com/scripthost/scripthost/hostfuncs"
	"github.com/scripthost/scripthost/internal/pgtest"
	"github.com/scripthost/scripthost/ledger"
	"github.com/scripthost/scripthost/ledger/postgres"
	"github.com/scripthost/scripthost/runtime"
	"github.com/scripthost/scripthost/sandbox"
	"github.com/scripthost/scripthost/sandbox/js"
)

// sharedPair opens two stores of one PostgreSQL ledger, this host's and another
// host's, and this host's runtime, named owner in the leases, with tools and a log.
func sharedPair(t *testing.T, ctx context.Context, owner string, reg *hostfuncs.Registry, logs *bytes.Buffer) (url string, st, other *postgres.Store, rt *runtime.Runtime) {
	t.Helper()
	url = pgtest.URL(t)
	var err error
	if st, err = postgres.Open(ctx, url, postgres.Options{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	if other, err = postgres.Open(ctx, url, postgres.Options{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { other.Close() })
	rt, err = runtime.New(runtime.Config{Store: st, Engines: map[string]sandbox.Engine{"js": js.New(js.Options{})},
		Tools: reg, Logger: slog.New(slog.NewTextHandler(logs, nil)),
		Lease: runtime.LeaseOptions{Owner: owner, TTL: time.Minute}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rt.Close(context.Background()) })
	return url, st, other, rt
}

// otherHostOnce is the read-only tool Race.method, which the first time it is called
// lets another host act (fn, with a context of its own) while this host's phase runs.
func otherHostOnce(method string, fn func(ctx context.Context) error) *hostfuncs.Tool {
	var done atomic.Bool
	return &hostfuncs.Tool{Namespace: "Race", Method: method, ReadOnly: func(json.RawMessage) bool { return true },
		Execute: func(context.Context, json.RawMessage) (json.RawMessage, error) {
			if done.Swap(true) {
				return json.RawMessage(`{}`), nil
			}
			return json.RawMessage(`{}`), fn(context.Background())
		}}
}

// countedCharge is the mutating tool Shop.charge, counting its calls in n.
func countedCharge(n *atomic.Int32) *hostfuncs.Tool {
	return &hostfuncs.Tool{Namespace: "Shop", Method: "charge",
		Execute: func(context.Context, json.RawMessage) (json.RawMessage, error) {
			n.Add(1)
			return json.RawMessage(`{}`), nil
		}}
}

// TestWritesStopWhenLeaseTakenOver: while this host's consumer run is being
// prepared, its lease expires (a pause longer than the TTL, before its heartbeat
// could tell) and another host takes the workflow over. The run's first write, its
// in-flight mutation, is refused by the ledger for the lease it was made under: the
// charge is never made, nothing of the run is written, and the host stops driving
// the workflow. Without the fence the host would charge and record a run beside
// the new holder's.
func TestWritesStopWhenLeaseTakenOver(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute) // a bound, not a measure
	defer cancel()
	var charges atomic.Int32
	var other *postgres.Store
	var url string
	reg := hostfuncs.NewRegistry()
	err := reg.Register(
		otherHostOnce("pause", func(ctx context.Context) error {
			// The lease expires during the pause, and the other host claims it.
			c, err := pgx.Connect(ctx, url)
			if err != nil {
				return err
			}
			defer c.Close(ctx)
			if _, err := c.Exec(ctx, `UPDATE leases SET expires_at = clock_timestamp() - interval '1 second' WHERE workflow = 'w'`); err != nil {
				return err
			}
			if _, ok, err := other.ClaimLease(ctx, "w", "host-b", time.Minute); err != nil || !ok {
				return fmt.Errorf("takeover: ok=%v err=%v", ok, err)
			}
			return nil
		}),
		countedCharge(&charges),
	)
	if err != nil {
		t.Fatal(err)
	}
	var logs bytes.Buffer
	var st *postgres.Store
	var rt *runtime.Runtime
	url, st, other, rt = sharedPair(t, ctx, "host-a", reg, &logs)
	src := `export default { topics: ['t'], consumers: { c: { subscribe: ['t'],
  async prepare() {
    const evs = await Topics.peek({ topic: 't', limit: 1 });
    if (evs.length === 0) return { reservations: [], data: null };
    await Race.pause({});
    return { reservations: [{ topic: 't', ids: [evs[0].id] }], data: evs[0].id };
  },
  async mutate(p) { await Shop.charge({ id: p }); }, next() { return {}; } } } };`
	if _, err := rt.LoadWorkflow(ctx, "w", "w.js", []byte(src)); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Publish(ctx, ledger.NewEvent{Workflow: "w", Topic: "t", MessageID: "e1", Payload: json.RawMessage(`{}`)}); err != nil {
		t.Fatal(err)
	}
	if _, err := rt.Tick(ctx, "w"); err != nil {
		t.Fatalf("pass: %v\n%s", err, logs.String())
	}
	if n := charges.Load(); n != 0 {
		t.Errorf("charges: got %d, want none by a host that lost the lease", n)
	}
	runs, err := st.Runs(ctx, ledger.RunFilter{Workflow: "w"})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range runs {
		t.Errorf("run %s recorded (%s/%s) by a host that lost the lease", r.ID, r.Phase, r.Status)
	}
	evs, err := st.Events(ctx, ledger.EventFilter{Workflow: "w"})
	if err != nil {
		t.Fatal(err)
	}
	if len(evs) != 1 || evs[0].Status != scripthost.EventPending {
		t.Errorf("events: got %+v, want e1 still pending for the new holder", evs)
	}
	if !strings.Contains(logs.String(), "lease lost: stopped driving the workflow") ||
		!strings.Contains(logs.String(), "mutation not recorded: its run was refused") {
		t.Errorf("log: want the lease's loss and the mutation not recorded\n%s", logs.String())
	}
	if strings.Contains(logs.String(), "level=ERROR") {
		t.Errorf("log: a refused write is the lease's loss, not an error\n%s", logs.String())
	}
}

// TestRunFromStaleStateRefused: while this host's producer runs, another run of the
// same producer commits a newer state (another host's, or one this host took for
// lost). The run begun from the older state is refused when it is written, the pass
// ends, and the next pass begins from the newer state: no committed state is written
// over by a run that never saw it.
func TestRunFromStaleStateRefused(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute) // a bound, not a measure
	defer cancel()
	var other *postgres.Store
	reg := hostfuncs.NewRegistry()
	err := reg.Register(otherHostOnce("commitElsewhere", func(ctx context.Context) error {
		hs, err := other.HandlerState(ctx, "w", "p")
		if err != nil {
			return err
		}
		_, err = other.CreateRun(ctx, ledger.NewRun{Workflow: "w", Version: 1, Handler: "p", Kind: scripthost.KindProducer,
			Start: scripthost.RunExecuting, InputState: hs.State, StateFrom: &hs,
			Commit: &ledger.Commit{State: json.RawMessage(`{"n":100}`), NextRunAt: time.Now().Add(-time.Second)}})
		return err
	}))
	if err != nil {
		t.Fatal(err)
	}
	var logs bytes.Buffer
	_, st, o, rt := sharedPair(t, ctx, "host-a", reg, &logs)
	other = o
	src := `export default { producers: { p: { schedule: { every: '1s' },
  async handler(state) {
    await Race.commitElsewhere({});
    return { n: ((state && state.n) || 0) + 1 };
  } } } };`
	if _, err := rt.LoadWorkflow(ctx, "w", "w.js", []byte(src)); err != nil {
		t.Fatal(err)
	}
	if _, err := rt.Tick(ctx, "w"); err != nil {
		t.Fatalf("first pass: %v\n%s", err, logs.String())
	}
	if _, err := rt.Tick(ctx, "w"); err != nil {
		t.Fatalf("second pass: %v\n%s", err, logs.String())
	}
	hs, err := st.HandlerState(ctx, "w", "p")
	if err != nil {
		t.Fatal(err)
	}
	if string(hs.State) != `{"n":101}` {
		t.Errorf("state: got %s, want {\"n\":101}: the run after the other's commit begins from its state", hs.State)
	}
	runs, err := st.Runs(ctx, ledger.RunFilter{Workflow: "w", Handler: "p"})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range runs {
		if r.Status == scripthost.StatusCommitted && string(r.OutputState) == `{"n":1}` {
			t.Errorf("run %s committed {\"n\":1}, begun from the state before the other run's commit", r.ID)
		}
	}
	if !strings.Contains(logs.String(), "handler state changed since the pass read it") {
		t.Errorf("log: want the refused run's pass ended\n%s", logs.String())
	}
}

// TestConsumerRunFromStaleStateRefused is TestRunFromStaleStateRefused for a consumer,
// whose run is first written with its in-flight mutation: the run begun from the older
// state is refused at that write, before its charge, and the next pass charges from
// the newer state. This is the database chaos test's lost update (a commit a crash lost
// while the pass went on from it), made on purpose.
func TestConsumerRunFromStaleStateRefused(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute) // a bound, not a measure
	defer cancel()
	var other *postgres.Store
	var charges atomic.Int32
	reg := hostfuncs.NewRegistry()
	err := reg.Register(
		otherHostOnce("commitElsewhere", func(ctx context.Context) error {
			id := other.NewID()
			if _, err := other.CreateRun(ctx, ledger.NewRun{Workflow: "w", Version: 1, Handler: "c", Kind: scripthost.KindConsumer,
				ID: id, Start: scripthost.RunPreparing, Prepared: &ledger.PrepareResult{Mutate: true}}); err != nil {
				return err
			}
			if _, err := other.MarkMutated(ctx, id); err != nil {
				return err
			}
			_, err := other.CommitConsumer(ctx, id, ledger.Commit{State: json.RawMessage(`{"n":100}`)})
			return err
		}),
		countedCharge(&charges),
	)
	if err != nil {
		t.Fatal(err)
	}
	var logs bytes.Buffer
	_, st, o, rt := sharedPair(t, ctx, "host-a", reg, &logs)
	other = o
	src := `export default { topics: ['t'], consumers: { c: { subscribe: ['t'],
  async prepare(state) {
    const evs = await Topics.peek({ topic: 't', limit: 1 });
    if (evs.length === 0) return { reservations: [], data: null };
    await Race.commitElsewhere({});
    return { reservations: [{ topic: 't', ids: [evs[0].id] }], data: ((state && state.n) || 0) + 1 };
  },
  async mutate(n) { await Shop.charge({ n }); },
  next(n) { return { n }; } } } };`
	if _, err := rt.LoadWorkflow(ctx, "w", "w.js", []byte(src)); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Publish(ctx, ledger.NewEvent{Workflow: "w", Topic: "t", MessageID: "e1", Payload: json.RawMessage(`{}`)}); err != nil {
		t.Fatal(err)
	}
	if err := rt.RunOnce(ctx, []string{"w"}); err != nil {
		t.Fatalf("run: %v\n%s", err, logs.String())
	}
	if n := charges.Load(); n != 1 {
		t.Errorf("charges: got %d, want 1, made from the newer state", n)
	}
	hs, err := st.HandlerState(ctx, "w", "c")
	if err != nil {
		t.Fatal(err)
	}
	if string(hs.State) != `{"n":101}` {
		t.Errorf("state: got %s, want {\"n\":101}: the run after the other's commit begins from its state\n%s", hs.State, logs.String())
	}
	if !strings.Contains(logs.String(), "handler state changed since the pass read it") {
		t.Errorf("log: want the refused run's pass ended\n%s", logs.String())
	}
	if strings.Contains(logs.String(), "level=ERROR") {
		t.Errorf("log: a refused run is not an error\n%s", logs.String())
	}
}
