package runtime_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
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

// clock is a settable test clock.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) Now() time.Time      { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) Add(d time.Duration) { c.mu.Lock(); c.t = c.t.Add(d); c.mu.Unlock() }

// service is the outside world of the tests: a mutation tool that counts what it
// applied, and that can be told to fail.
type service struct {
	mu      sync.Mutex
	applied []json.RawMessage
	keys    []string
	// fail, when set, is returned by the next mutation calls (before applying).
	fail error
	// uncertain, when set, makes the next call apply and then report this error.
	uncertain error
	// reconcile answers Reconcile; nil means the tool has no reconciler.
	reconcile *scripthost.Reconciliation
	// during, when set, runs inside each mutation call while it is in flight.
	during func(ctx context.Context)
	// duringRead, when set, runs inside each read call.
	duringRead func(ctx context.Context)
}

func (s *service) count() int { s.mu.Lock(); defer s.mu.Unlock(); return len(s.applied) }

func (s *service) tools() []*hostfuncs.Tool {
	apply := &hostfuncs.Tool{
		Namespace: "Svc", Method: "apply",
		InputSchema: json.RawMessage(`{"type":"object","required":["value"],"properties":{"value":{}}}`),
		Execute: func(ctx context.Context, in json.RawMessage) (json.RawMessage, error) {
			s.mu.Lock()
			during := s.during
			s.mu.Unlock()
			if during != nil {
				during(ctx)
			}
			s.mu.Lock()
			defer s.mu.Unlock()
			if s.fail != nil {
				return nil, s.fail
			}
			s.applied = append(s.applied, in)
			s.keys = append(s.keys, hostfuncs.IdempotencyKey(ctx))
			if s.uncertain != nil {
				return nil, s.uncertain
			}
			return json.RawMessage(`{"ok":true,"n":` + itoa(len(s.applied)) + `}`), nil
		},
	}
	apply.Reconcile = func(ctx context.Context, m scripthost.Mutation) (scripthost.Reconciliation, error) {
		s.mu.Lock()
		defer s.mu.Unlock()
		if s.reconcile == nil {
			return scripthost.Reconciliation{Outcome: scripthost.ReconcileRetryLater, Reason: "no answer"}, nil
		}
		return *s.reconcile, nil
	}
	read := &hostfuncs.Tool{
		Namespace: "Svc", Method: "read", ReadOnly: hostfuncs.ReadOnlyAlways,
		Execute: func(ctx context.Context, in json.RawMessage) (json.RawMessage, error) {
			s.mu.Lock()
			during := s.duringRead
			s.mu.Unlock()
			if during != nil {
				during(ctx)
			}
			s.mu.Lock()
			defer s.mu.Unlock()
			if s.fail != nil {
				return nil, s.fail
			}
			return json.RawMessage(`{"count":` + itoa(len(s.applied)) + `}`), nil
		},
	}
	return []*hostfuncs.Tool{apply, read}
}

func itoa(n int) string { b, _ := json.Marshal(n); return string(b) }

type harness struct {
	t     *testing.T
	ctx   context.Context
	dir   string
	db    string
	store *sqlite.Store
	clock *clock
	svc   *service
	reg   *hostfuncs.Registry
	rt    *runtime.Runtime
	// console collects console lines of every invocation.
	mu      sync.Mutex
	console []string
	// failpoint, when set before open, is the runtime's Failpoint.
	failpoint func(name string)
}

func newHarness(t *testing.T) *harness {
	t.Helper()
	h := &harness{t: t, ctx: context.Background(), dir: t.TempDir(),
		clock: &clock{t: time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)}, svc: &service{}}
	h.db = filepath.Join(h.dir, "ledger.db")
	h.reg = hostfuncs.NewRegistry()
	if err := h.reg.Register(h.svc.tools()...); err != nil {
		t.Fatal(err)
	}
	h.open()
	t.Cleanup(func() { h.close() })
	return h
}

// open (re)opens the store and builds a fresh runtime, as a restarted process would.
func (h *harness) open() {
	h.t.Helper()
	st, err := sqlite.Open(h.ctx, h.db, sqlite.Options{Clock: h.clock.Now})
	if err != nil {
		h.t.Fatal(err)
	}
	h.store = st
	eng := js.New(js.Options{})
	rt, err := runtime.New(runtime.Config{
		Store:            st,
		Engines:          map[string]sandbox.Engine{"js": eng, "ts": eng},
		Tools:            h.reg,
		Clock:            h.clock.Now,
		Limits:           sandbox.Limits{Timeout: 2 * time.Second},
		Reconcile:        hostfuncs.ReconcilePolicy{MaxAttempts: 2, BaseDelay: time.Second, MaxDelay: time.Minute},
		TransientRetries: 2,
		TransientDelay:   time.Second,
		Failpoint:        h.failpoint,
		OnConsole: func(run scripthost.Run, lines []sandbox.ConsoleLine) {
			h.mu.Lock()
			defer h.mu.Unlock()
			for _, l := range lines {
				h.console = append(h.console, run.Handler+": "+l.Text)
			}
		},
	})
	if err != nil {
		h.t.Fatal(err)
	}
	h.rt = rt
}

func (h *harness) close() {
	if h.rt != nil {
		h.rt.Close(h.ctx)
		h.rt = nil
	}
	if h.store != nil {
		h.store.Close()
		h.store = nil
	}
}

func (h *harness) restart() { h.close(); h.open() }

// load writes a workflow file and stores it under name.
func (h *harness) load(name, src string) {
	h.t.Helper()
	path := filepath.Join(h.dir, name+".js")
	if err := os.WriteFile(path, []byte(src), 0o644); err != nil {
		h.t.Fatal(err)
	}
	if _, err := h.rt.LoadWorkflow(h.ctx, name, path, []byte(src)); err != nil {
		h.t.Fatal(err)
	}
}

func (h *harness) publish(wf, topic string, ids ...string) {
	h.t.Helper()
	for _, id := range ids {
		if _, err := h.store.Publish(h.ctx, ledger.NewEvent{Workflow: wf, Topic: topic, MessageID: id, Payload: json.RawMessage(`{"id":"` + id + `"}`)}); err != nil {
			h.t.Fatal(err)
		}
	}
}

func (h *harness) runOnce(wf ...string) {
	h.t.Helper()
	if err := h.rt.RunOnce(h.ctx, wf); err != nil {
		h.t.Fatal(err)
	}
}

func (h *harness) runs(wf string) []scripthost.Run {
	h.t.Helper()
	runs, err := h.store.Runs(h.ctx, ledger.RunFilter{Workflow: wf})
	if err != nil {
		h.t.Fatal(err)
	}
	return runs
}

func (h *harness) runsOf(wf, handler string) []scripthost.Run {
	var out []scripthost.Run
	for _, r := range h.runs(wf) {
		if r.Handler == handler {
			out = append(out, r)
		}
	}
	return out
}

func (h *harness) events(wf, topic string) map[string]scripthost.EventStatus {
	h.t.Helper()
	evs, err := h.store.Events(h.ctx, ledger.EventFilter{Workflow: wf, Topic: topic})
	if err != nil {
		h.t.Fatal(err)
	}
	out := map[string]scripthost.EventStatus{}
	for _, e := range evs {
		out[e.MessageID] = e.Status
	}
	return out
}

func (h *harness) state(wf, handler string) string {
	h.t.Helper()
	hs, err := h.store.HandlerState(h.ctx, wf, handler)
	if err != nil {
		h.t.Fatal(err)
	}
	return string(hs.State)
}

func (h *harness) consoleLines() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]string(nil), h.console...)
}
