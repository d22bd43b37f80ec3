package observe_test

import (
	"context"
	"encoding/json"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/scripthost/scripthost"
	"github.com/scripthost/scripthost/hostfuncs"
	"github.com/scripthost/scripthost/ledger"
	"github.com/scripthost/scripthost/ledger/sqlite"
	"github.com/scripthost/scripthost/observe"
	"github.com/scripthost/scripthost/runtime"
	"github.com/scripthost/scripthost/sandbox"
	"github.com/scripthost/scripthost/sandbox/js"
)

// fakeClock is a clock the test moves.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *fakeClock) add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// TestLedgerGauges: a consumer whose prepare throws leaves a failed run, its handler
// blocked and its events pending; a retried run is active. The gauges read that from the ledger, reuse the
// reading within the cache time, read again after it, and say when the ledger stops
// answering.
func TestLedgerGauges(t *testing.T) {
	ctx := context.Background()
	st, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "ledger.db"), sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	clock := &fakeClock{t: time.Unix(1_700_000_000, 0)}
	o := observe.New(observe.Options{Clock: clock.now})
	rt, err := runtime.New(runtime.Config{Store: st, Engines: map[string]sandbox.Engine{"js": js.New(js.Options{})},
		Tools: hostfuncs.NewRegistry(), Observer: o})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close(ctx)
	src := `export default { topics: ['t', 'u'], consumers: {
  c: { subscribe: ['t'], async prepare() { throw new Error('broken'); }, async mutate() {}, next() { return {}; } },
  d: { subscribe: ['u'], onError: { strategy: 'retry', maxRetries: 1, delayMs: 3600000 },
    async prepare() { throw new Error('not yet'); }, async mutate() {}, next() { return {}; } } } };`
	if _, err := rt.LoadWorkflow(ctx, "w", "w.js", []byte(src)); err != nil {
		t.Fatal(err)
	}
	publish := func(id string) {
		publishTo(ctx, t, st, "t", id)
	}
	publishTo(ctx, t, st, "u", "x1")
	publish("e1")
	publish("e2")
	if err := o.Follow(ctx, st, time.Hour); err != nil {
		t.Fatal(err)
	}
	o.WatchBlocked(func(ctx context.Context) ([]scripthost.Run, error) {
		out, err := rt.Outstanding(ctx, []string{"w"})
		var runs []scripthost.Run
		for _, b := range out.Blocked {
			runs = append(runs, b.Run)
		}
		return runs, err
	})
	if err := rt.RunOnce(ctx, []string{"w"}); err != nil {
		t.Fatal(err)
	}
	// A person retries d's failed run: the retry is active until a host drives it.
	failed, err := st.Runs(ctx, ledger.RunFilter{Handler: "d"})
	if err != nil || len(failed) != 1 {
		t.Fatalf("d's runs %+v (%v), want one", failed, err)
	}
	if _, err := st.CreateRetryRun(ctx, failed[0].ID, ledger.RetryRun{}); err != nil {
		t.Fatal(err)
	}
	for series, want := range map[string]string{
		// c's run failed (final, so not among the runs gauge); d's retry is active.
		`scripthost_runs{handler="d",status="active",workflow="w"}`:       "1",
		`scripthost_runs{handler="c",status="failed:logic",workflow="w"}`: "",
		`scripthost_handlers_blocked{handler="c",workflow="w"}`:           "1",
		`scripthost_events_pending{topic="t",workflow="w"}`:               "2",
		`scripthost_ledger_up`: "1",
	} {
		if got := scrape(t, o, series); got != want {
			t.Errorf("%s: got %q, want %s", series, got, want)
		}
	}
	publish("e3")
	if got := scrape(t, o, `scripthost_events_pending{topic="t",workflow="w"}`); got != "2" {
		t.Errorf("within the cache time: backlog %q, want the reading before, 2", got)
	}
	clock.add(6 * time.Second)
	if got := scrape(t, o, `scripthost_events_pending{topic="t",workflow="w"}`); got != "3" {
		t.Errorf("after the cache time: backlog %q, want 3", got)
	}
	st.Close()
	clock.add(6 * time.Second)
	if got := scrape(t, o, `scripthost_ledger_up`); got != "0" {
		t.Errorf("with the ledger closed: scripthost_ledger_up %q, want 0", got)
	}
}

func publishTo(ctx context.Context, t *testing.T, st ledger.Store, topic, id string) {
	t.Helper()
	if _, err := st.Publish(ctx, ledger.NewEvent{Workflow: "w", Topic: topic, MessageID: id, Payload: json.RawMessage(`{}`)}); err != nil {
		t.Fatal(err)
	}
}
