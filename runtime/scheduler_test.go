package runtime_test

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/scripthost/scripthost"
	"github.com/scripthost/scripthost/hostfuncs"
	"github.com/scripthost/scripthost/ledger"
	"github.com/scripthost/scripthost/ledger/sqlite"
	"github.com/scripthost/scripthost/runtime"
	"github.com/scripthost/scripthost/sandbox"
	"github.com/scripthost/scripthost/sandbox/js"
)

// gate is a read tool that counts the calls inside it at once: each call waits until
// want calls are inside together, or until patience runs out when they never will be.
type gate struct {
	want     int
	patience time.Duration

	mu      sync.Mutex
	cond    *sync.Cond
	inside  int
	maxSeen int
}

func newGate(want int, patience time.Duration) *gate {
	g := &gate{want: want, patience: patience}
	g.cond = sync.NewCond(&g.mu)
	return g
}

func (g *gate) tool() *hostfuncs.Tool {
	return &hostfuncs.Tool{Namespace: "Gate", Method: "enter", ReadOnly: hostfuncs.ReadOnlyAlways,
		Execute: func(ctx context.Context, _ json.RawMessage) (json.RawMessage, error) {
			g.mu.Lock()
			defer g.mu.Unlock()
			g.inside++
			g.maxSeen = max(g.maxSeen, g.inside)
			g.cond.Broadcast()
			// start is taken before the timer is set, so that when the timer fires the
			// loop below sees the patience run out (the other way round it could wait on
			// for ever, woken a moment too early).
			start := time.Now()
			deadline := time.AfterFunc(g.patience, func() { g.mu.Lock(); g.cond.Broadcast(); g.mu.Unlock() })
			defer deadline.Stop()
			for g.maxSeen < g.want && time.Since(start) < g.patience {
				g.cond.Wait()
			}
			g.inside--
			return json.RawMessage(`{}`), nil
		}}
}

func (g *gate) max() int { g.mu.Lock(); defer g.mu.Unlock(); return g.maxSeen }

// gatedWorkflow has one consumer whose prepare takes one event of topic "a" and
// passes the gate.
const gatedWorkflow = `export default { topics: ['a'], consumers: {
  c: { subscribe: ['a'], async prepare() {
    const e = await Topics.peek({ topic: 'a', limit: 1 });
    if (!e.length) return null;
    await Gate.enter({});
    return { reservations: [{ topic: 'a', ids: [e[0].id] }] };
  } },
} };
`

// gatedRuntime stores the workflows w0, w1, … and one event for each, on a runtime
// bounded to concurrency runs at once.
func gatedRuntime(t *testing.T, concurrency int, g *gate, workflows int) (*runtime.Runtime, *sqlite.Store, []string) {
	t.Helper()
	ctx := context.Background()
	st, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "ledger.db"), sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	reg := hostfuncs.NewRegistry()
	if err := reg.Register(g.tool()); err != nil {
		t.Fatal(err)
	}
	rt, err := runtime.New(runtime.Config{Store: st, Engines: map[string]sandbox.Engine{"js": js.New(js.Options{})},
		Tools: reg, Concurrency: concurrency})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rt.Close(ctx) })
	var names []string
	for i := range workflows {
		name := fmt.Sprintf("w%d", i)
		names = append(names, name)
		if _, err := rt.LoadWorkflow(ctx, name, name+".js", []byte(gatedWorkflow)); err != nil {
			t.Fatal(err)
		}
		if _, err := st.Publish(ctx, ledger.NewEvent{Workflow: name, Topic: "a", MessageID: "0", Payload: json.RawMessage(`{}`)}); err != nil {
			t.Fatal(err)
		}
	}
	return rt, st, names
}

func TestRunsInParallel(t *testing.T) {
	for _, tc := range []struct {
		name        string
		concurrency int
		workflows   int
		want        int // most runs inside the gate at once
	}{
		{"workflows run at once", 0, 3, 3},
		{"Concurrency bounds the runs at once", 2, 4, 2},
		{"Concurrency 1 runs one at a time", 1, 2, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			patience := 5 * time.Second
			if tc.want < tc.workflows {
				// The gate can never fill: wait long enough for a run beyond the bound
				// to arrive, then let each call go.
				patience = 300 * time.Millisecond
			}
			g := newGate(tc.workflows, patience)
			rt, st, names := gatedRuntime(t, tc.concurrency, g, tc.workflows)
			if err := rt.RunOnce(context.Background(), names); err != nil {
				t.Fatal(err)
			}
			if got := g.max(); got != tc.want {
				t.Errorf("got %d runs inside the gate at once, want %d", got, tc.want)
			}
			pending, err := st.Events(context.Background(), ledger.EventFilter{Status: scripthost.EventPending})
			if err != nil || len(pending) != 0 {
				t.Errorf("got %d events pending (err %v), want none", len(pending), err)
			}
		})
	}
}

// TestPublishWakesRun: with a poll interval of an hour, an event published through the
// runtime is consumed at once.
func TestPublishWakesRun(t *testing.T) {
	g := newGate(1, time.Second)
	rt, st, _ := gatedRuntime(t, 0, g, 1)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- rt.Run(ctx, []string{"w0"}, time.Hour) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	}()
	waitConsumed := func(id string) {
		t.Helper()
		for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
			evs, err := st.Events(context.Background(), ledger.EventFilter{Workflow: "w0", Topic: "a"})
			if err != nil {
				t.Fatal(err)
			}
			for _, e := range evs {
				if e.MessageID == id && e.Status == scripthost.EventConsumed {
					return
				}
			}
		}
		t.Fatalf("event %s was not consumed: nothing woke the loop", id)
	}
	waitConsumed("0") // the first pass
	// Let the loop go idle for its hour-long poll, then publish.
	time.Sleep(200 * time.Millisecond)
	if _, err := rt.Publish(ctx, ledger.NewEvent{Workflow: "w0", Topic: "a", MessageID: "late", Payload: json.RawMessage(`{}`)}); err != nil {
		t.Fatal(err)
	}
	waitConsumed("late")
}

func TestConcurrencyRefusesNegative(t *testing.T) {
	st, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "ledger.db"), sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	_, err = runtime.New(runtime.Config{Store: st, Tools: hostfuncs.NewRegistry(),
		Engines: map[string]sandbox.Engine{"js": js.New(js.Options{})}, Concurrency: -1})
	if err == nil || !strings.Contains(err.Error(), "Concurrency is -1") {
		t.Fatalf("got %v, want an error naming Concurrency -1", err)
	}
}
