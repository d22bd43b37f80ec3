package runtime_test

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/scripthost/scripthost"
	"github.com/scripthost/scripthost/hostfuncs"
	"github.com/scripthost/scripthost/hostfuncs/workspace"
	"github.com/scripthost/scripthost/internal/benchrun"
	"github.com/scripthost/scripthost/ledger"
	"github.com/scripthost/scripthost/ledger/sqlite"
	"github.com/scripthost/scripthost/runtime"
	"github.com/scripthost/scripthost/sandbox"
	"github.com/scripthost/scripthost/sandbox/js"
)

// countedRuntime is a runtime on a fresh SQLite ledger whose reads are counted, with
// the workspace tools and extra tools; configure, when set, adjusts its Config.
func countedRuntime(t *testing.T, configure func(*runtime.Config), extra ...*hostfuncs.Tool) (*runtime.Runtime, *sqlite.Store, *benchrun.CountingStore) {
	t.Helper()
	ctx := context.Background()
	dir := t.TempDir()
	st, err := sqlite.Open(ctx, filepath.Join(dir, "ledger.db"), sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	reg := hostfuncs.NewRegistry()
	tools, err := workspace.Tools(dir)
	if err != nil {
		t.Fatal(err)
	}
	if err := reg.Register(append(tools, extra...)...); err != nil {
		t.Fatal(err)
	}
	counted := &benchrun.CountingStore{Store: st}
	cfg := runtime.Config{Store: counted, Engines: map[string]sandbox.Engine{"js": js.New(js.Options{})}, Tools: reg}
	if configure != nil {
		configure(&cfg)
	}
	rt, err := runtime.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rt.Close(ctx) })
	return rt, st, counted
}

// TestConsumerRunLedgerCost: a consumer run with a durable mutation writes three
// transactions (the in-flight record, which creates the run prepared and moved on to
// mutating, its key derived inside; the outcome, moving on to next; the commit), one of
// which waits for the disk, and reads a handful of times per run instead of before
// every step. (Five while a run was created before its prepare phase ran and stored its
// result in a transaction of its own.)
func TestConsumerRunLedgerCost(t *testing.T) {
	ctx := context.Background()
	rt, st, counted := countedRuntime(t, nil)
	if _, err := rt.LoadWorkflow(ctx, "w", "w.js", benchrun.Source(benchrun.FileWrite)); err != nil {
		t.Fatal(err)
	}
	const n = 20
	var evs []ledger.NewEvent
	for i := range n {
		evs = append(evs, ledger.NewEvent{Workflow: "w", Topic: "in", MessageID: fmt.Sprint(i), Payload: json.RawMessage(`{}`)})
	}
	if _, err := st.Publish(ctx, evs...); err != nil {
		t.Fatal(err)
	}
	before := st.WriteStats()
	counted.Reads.Store(0)
	if err := rt.RunOnce(ctx, []string{"w"}); err != nil {
		t.Fatal(err)
	}
	ws := st.WriteStats()
	if got := ws.Writes - before.Writes; got != 3*n {
		t.Errorf("got %d writes for %d runs, want %d (3 per run)", got, n, 3*n)
	}
	if got := ws.Durable - before.Durable; got > n {
		t.Errorf("got %d commits waiting for the disk for %d runs, want at most %d", got, n, n)
	}
	// Per run: the scheduler's look at the topic, which prepare's Topics.peek is
	// answered from, read ahead for up to 16 runs at a time (the handler state comes
	// from the previous round's commit, the failure count that derives the key is
	// read in the in-flight record's transaction, the run after the mutation is the
	// outcome's transition); and per pass a few more. 2 when every run began with a
	// look at the topic of its own, 2.9 when the failure count was read before the
	// record.
	if got := float64(counted.Reads.Load()) / n; got > 1.25 {
		t.Errorf("got %.2f reads per run, want at most 1.25", got)
	}
	pending, err := st.Events(ctx, ledger.EventFilter{Status: scripthost.EventPending})
	if err != nil || len(pending) != 0 {
		t.Errorf("got %d events pending (err %v), want none", len(pending), err)
	}
}

// twoConsumers has two consumers on topics of their own, each taking one event a run.
const twoConsumers = `export default { topics: ['ta', 'tb'], consumers: {
  a: { subscribe: ['ta'], async prepare() { const e = await Topics.peek({ topic: 'ta', limit: 1 });
    return e.length ? { reservations: [{ topic: 'ta', ids: [e[0].id] }] } : null; } },
  b: { subscribe: ['tb'], async prepare() { const e = await Topics.peek({ topic: 'tb', limit: 1 });
    return e.length ? { reservations: [{ topic: 'tb', ids: [e[0].id] }] } : null; } },
} };
`

// TestRoundsKeepPassOrder: several runs of each consumer in one scheduling pass go in
// the order separate passes would give, one run of each consumer in name order, not
// all of one consumer's runs first. In deterministic mode that order is exact: the
// consumers take turns even where their runs could go side by side.
func TestRoundsKeepPassOrder(t *testing.T) {
	ctx := context.Background()
	rt, st, _ := countedRuntime(t, func(c *runtime.Config) {
		c.Deterministic = &sandbox.Determinism{Now: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), Seed: 1}
	})
	if _, err := rt.LoadWorkflow(ctx, "two", "two.js", []byte(twoConsumers)); err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		for _, topic := range []string{"ta", "tb"} {
			if _, err := st.Publish(ctx, ledger.NewEvent{Workflow: "two", Topic: topic, MessageID: fmt.Sprint(i), Payload: json.RawMessage(`{}`)}); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := rt.RunOnce(ctx, []string{"two"}); err != nil {
		t.Fatal(err)
	}
	runs, err := st.Runs(ctx, ledger.RunFilter{Workflow: "two"})
	if err != nil {
		t.Fatal(err)
	}
	var order []string
	for _, r := range runs {
		if r.Status != scripthost.StatusCommitted {
			t.Errorf("run %s of %s: got %s, want committed", r.ID, r.Handler, r.Status)
		}
		if len(r.Reservations) > 0 {
			order = append(order, r.Handler)
		}
	}
	if got, want := strings.Join(order, ","), "a,b,a,b,a,b"; got != want {
		t.Errorf("got runs in order %s, want %s", got, want)
	}
}

// counter counts the events it consumed in its state; next returns nothing for events
// whose id ends in 0 (the state stays), and a consumer without next keeps its state.
const counter = `export default { topics: ['in'], consumers: {
  count: { subscribe: ['in'],
    async prepare() { const e = await Topics.peek({ topic: 'in', limit: 1 });
      return e.length ? { reservations: [{ topic: 'in', ids: [e[0].id] }], data: e[0].id } : null; },
    next(id) { if (id.endsWith('0')) return; return { n: ((__state__ && __state__.n) || 0) + 1, last: id }; } },
  keep: { subscribe: ['in'], async prepare() { return null; } },
} };
`

// TestRoundsCarryState: the rounds of one pass hand each consumer the state its last
// commit saved, as a read of the ledger would, whatever next returned.
func TestRoundsCarryState(t *testing.T) {
	ctx := context.Background()
	rt, st, _ := countedRuntime(t, nil)
	if _, err := rt.LoadWorkflow(ctx, "w", "w.js", []byte(counter)); err != nil {
		t.Fatal(err)
	}
	const n = 25 // more than one pass's rounds
	var evs []ledger.NewEvent
	for i := range n {
		evs = append(evs, ledger.NewEvent{Workflow: "w", Topic: "in", MessageID: fmt.Sprintf("e%02d", i), Payload: json.RawMessage(`{}`)})
	}
	if _, err := st.Publish(ctx, evs...); err != nil {
		t.Fatal(err)
	}
	if err := rt.RunOnce(ctx, []string{"w"}); err != nil {
		t.Fatal(err)
	}
	hs, err := st.HandlerState(ctx, "w", "count")
	if err != nil {
		t.Fatal(err)
	}
	// e00, e10 and e20 return nothing: 22 counted, the last counted is e24.
	if want := `{"n":22,"last":"e24"}`; string(hs.State) != want {
		t.Errorf("got state %s, want %s", hs.State, want)
	}
	runs, err := st.Runs(ctx, ledger.RunFilter{Workflow: "w", Handler: "count"})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range runs {
		if r.Status != scripthost.StatusCommitted {
			t.Errorf("run %s: got %s, want committed", r.ID, r.Status)
		}
	}
	if keep, _ := st.HandlerState(ctx, "w", "keep"); len(keep.State) != 0 && string(keep.State) != "null" {
		t.Errorf("got state %s for a consumer without next, want none", keep.State)
	}
}
