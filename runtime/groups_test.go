package runtime_test

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/scripthost/scripthost"
	"github.com/scripthost/scripthost/hostfuncs"
	"github.com/scripthost/scripthost/ledger"
	"github.com/scripthost/scripthost/runtime"
	"github.com/scripthost/scripthost/sandbox"
)

// rendezvous is a tool whose calls wait for each other: a call returns together:true
// once as many calls as parties are in it at the same time, or together:false after
// the wait.
type rendezvous struct {
	parties int
	wait    time.Duration
	mu      sync.Mutex
	in      int
	met     chan struct{}
}

func (r *rendezvous) tool() *hostfuncs.Tool {
	return &hostfuncs.Tool{Namespace: "Meet", Method: "here", ReadOnly: hostfuncs.ReadOnlyAlways,
		Execute: func(ctx context.Context, _ json.RawMessage) (json.RawMessage, error) {
			r.mu.Lock()
			if r.in++; r.in == r.parties {
				close(r.met)
			}
			met := r.met
			r.mu.Unlock()
			select {
			case <-met:
				return json.RawMessage(`{"together":true}`), nil
			case <-time.After(r.wait):
				return json.RawMessage(`{"together":false}`), nil
			}
		}}
}

// meeting has three consumers: a and b on topics of their own, c sharing b's topic.
// Each run's prepare waits at the rendezvous and keeps what it saw in its state.
const meeting = `const take = (topic) => async () => {
  const e = await Topics.peek({ topic, limit: 1 });
  if (!e.length) return null;
  const m = await Meet.here({});
  return { reservations: [{ topic, ids: [e[0].id] }], data: m.together };
};
export default { topics: ['ta', 'tb'], consumers: {
  a: { subscribe: ['ta'], prepare: take('ta'), next(together) { return { together }; } },
  b: { subscribe: ['tb'], prepare: take('tb'), next(together) { return { together }; } },
  c: { subscribe: ['tb'], async prepare() { return null; } },
} };
`

// TestHandlersSideBySide: outside deterministic mode, the runs of consumers with no
// topic in common go at the same time (each waits at a rendezvous that only both
// together pass); in deterministic mode they take turns.
func TestHandlersSideBySide(t *testing.T) {
	cases := []struct {
		name          string
		deterministic bool
		together      bool
	}{
		{"side by side", false, true},
		{"deterministic, in turn", true, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ctx := context.Background()
			r := &rendezvous{parties: 2, wait: 10 * time.Second, met: make(chan struct{})}
			if !c.together {
				r.wait = 50 * time.Millisecond
			}
			rt, st, _ := countedRuntime(t, func(cfg *runtime.Config) {
				if c.deterministic {
					cfg.Deterministic = &sandbox.Determinism{Now: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), Seed: 1}
				}
			}, r.tool())
			if _, err := rt.LoadWorkflow(ctx, "meet", "meet.js", []byte(meeting)); err != nil {
				t.Fatal(err)
			}
			for _, topic := range []string{"ta", "tb"} {
				if _, err := st.Publish(ctx, ledger.NewEvent{Workflow: "meet", Topic: topic, MessageID: "1", Payload: json.RawMessage(`{}`)}); err != nil {
					t.Fatal(err)
				}
			}
			if err := rt.RunOnce(ctx, []string{"meet"}); err != nil {
				t.Fatal(err)
			}
			// b comes second when they take turns, and finds a's call gone by.
			for _, h := range []string{"a", "b"} {
				hs, err := st.HandlerState(ctx, "meet", h)
				if err != nil {
					t.Fatal(err)
				}
				if want := fmt.Sprintf(`{"together":%v}`, c.together || h == "b"); string(hs.State) != want {
					t.Errorf("%s: got state %s, want %s", h, hs.State, want)
				}
			}
			runs, err := st.Runs(ctx, ledger.RunFilter{Workflow: "meet"})
			if err != nil {
				t.Fatal(err)
			}
			for _, run := range runs {
				if run.Status != scripthost.StatusCommitted {
					t.Errorf("run %s of %s: got %s, want committed", run.ID, run.Handler, run.Status)
				}
			}
		})
	}
}
