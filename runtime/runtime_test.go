package runtime_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/scripthost/scripthost"
	"github.com/scripthost/scripthost/ledger"
)

// orders is the consumer most tests use: one order per run, one Svc.apply per order,
// a `shipped` event from next, and an audit consumer that swallows those.
const orders = `export default {
  topics: ['orders', 'shipped'],
  consumers: {
    ship: {
      subscribe: ['orders'],
      publishes: ['shipped'],
      async prepare(state) {
        const evs = await Topics.peek({ topic: 'orders', limit: 1 });
        if (!evs.length) return { reservations: [], data: null };
        return { reservations: [{ topic: 'orders', ids: [evs[0].id] }],
                 data: { id: evs[0].id, seen: (state && state.count) || 0 } };
      },
      async mutate(p) { if (p) await Svc.apply({ value: p.id }); },
      async next(p, r) {
        if (p) await Topics.publish({ topic: 'shipped', id: p.id, payload: { status: r.status } });
        return { count: p ? p.seen + 1 : 0, last: r.status };
      },
    },
    audit: {
      subscribe: ['shipped'],
      async prepare() {
        const e = await Topics.peek({ topic: 'shipped' });
        return { reservations: e.length ? [{ topic: 'shipped', ids: e.map((x) => x.id) }] : [], data: e.length };
      },
    },
  },
};
`

func TestConsumerEndToEnd(t *testing.T) {
	h := newHarness(t)
	h.load("orders", orders)
	h.publish("orders", "orders", "a", "b", "c")
	h.runOnce("orders")

	if got, want := h.svc.count(), 3; got != want {
		t.Fatalf("applies: got %d, want %d", got, want)
	}
	for id, st := range h.events("orders", "orders") {
		if st != scripthost.EventConsumed {
			t.Errorf("order %s: got %s, want consumed", id, st)
		}
	}
	shipped := h.events("orders", "shipped")
	if len(shipped) != 3 {
		t.Errorf("shipped events: got %v, want 3", shipped)
	}
	for id, st := range shipped {
		if st != scripthost.EventConsumed {
			t.Errorf("shipped %s: got %s, want consumed by audit", id, st)
		}
	}
	if got, want := h.state("orders", "ship"), `{"count":3,"last":"applied"}`; got != want {
		t.Errorf("state: got %s, want %s", got, want)
	}
	for _, r := range h.runs("orders") {
		if r.Status != scripthost.StatusCommitted || r.Phase != scripthost.RunCommitted {
			t.Errorf("run %s %s: got %s/%s, want committed", r.ID, r.Handler, r.Phase, r.Status)
		}
	}
	// Keys are distinct per order.
	seen := map[string]bool{}
	for _, k := range h.svc.keys {
		if k == "" || seen[k] {
			t.Errorf("idempotency key %q empty or repeated", k)
		}
		seen[k] = true
	}

	// Nothing new: a second pass applies nothing.
	n := len(h.runs("orders"))
	h.runOnce("orders")
	if got := h.svc.count(); got != 3 {
		t.Errorf("second pass applies: got %d, want 3", got)
	}
	if got := len(h.runs("orders")); got != n {
		t.Errorf("second pass runs: got %d, want %d", got, n)
	}
}

func TestEmptyReservationsStillRunNext(t *testing.T) {
	h := newHarness(t)
	h.load("idle", `export default {
  topics: ['t'],
  consumers: { c: { subscribe: ['t'],
    prepare() { return { reservations: [], data: { looked: true } }; },
    mutate(p) {},
    next(p, r) { return { next: r.status, prepared: p, global: __mutationResult__.status }; } } },
};`)
	h.publish("idle", "t", "x")
	h.runOnce("idle")
	runs := h.runs("idle")
	if len(runs) != 1 {
		t.Fatalf("runs: got %d, want 1 (no loop on an unreserved event)", len(runs))
	}
	if got, want := h.state("idle", "c"), `{"next":"none","prepared":{"looked":true},"global":"none"}`; got != want {
		t.Errorf("state: got %s, want %s", got, want)
	}
	if got := h.events("idle", "t")["x"]; got != scripthost.EventPending {
		t.Errorf("unreserved event: got %s, want pending", got)
	}
	// A newer event wakes the consumer again.
	h.publish("idle", "t", "y")
	h.runOnce("idle")
	if got := len(h.runs("idle")); got != 2 {
		t.Errorf("runs after a new event: got %d, want 2", got)
	}
}

func TestGuardAndHooks(t *testing.T) {
	h := newHarness(t)
	h.load("guarded", `export default {
  topics: ['t'],
  consumers: {
    no: { subscribe: ['t'], guard(state) { return false; }, prepare() { throw new Error('must not run'); } },
    yes: { subscribe: ['t'], guard(state) { return true; },
      before(info) { console.log('before ' + info.phase); },
      after(info) { console.log('after ' + info.phase + ' ' + JSON.stringify(info.result)); },
      prepare() { return { reservations: [{ topic: 't', ids: ['e'] }], data: 1 }; },
      next() { return { ok: true }; } },
  },
};`)
	h.publish("guarded", "t", "e")
	h.runOnce("guarded")
	no := h.runsOf("guarded", "no")
	if len(no) != 1 || no[0].Status != scripthost.StatusSkipped {
		t.Fatalf("guarded-out runs: got %+v, want one skipped", no)
	}
	yes := h.runsOf("guarded", "yes")
	if len(yes) != 1 || yes[0].Status != scripthost.StatusCommitted {
		t.Fatalf("guarded-in runs: got %+v, want one committed", yes)
	}
	got := strings.Join(h.consoleLines(), "\n")
	for _, want := range []string{"yes: before prepare", `yes: after prepare {"reservations":[{"topic":"t","ids":["e"]}],"data":1}`, "yes: before next", "yes: after next {\"ok\":true}"} {
		if !strings.Contains(got, want) {
			t.Errorf("console %q lacks %q", got, want)
		}
	}
}

func TestOnErrorStrategies(t *testing.T) {
	tests := []struct {
		name     string
		onError  string
		runs     int
		status   scripthost.RunStatus
		released bool
	}{
		{"fail", `{ strategy: 'fail' }`, 1, scripthost.StatusFailedLogic, true},
		{"retry", `{ strategy: 'retry', maxRetries: 2, delayMs: 0 }`, 3, scripthost.StatusFailedLogic, true},
		{"pause", `{ strategy: 'pause' }`, 1, scripthost.StatusPausedApproval, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t)
			h.load("w", `export default {
  topics: ['t'],
  consumers: { c: { subscribe: ['t'], onError: `+tt.onError+`,
    async prepare() {
      await Topics.peek({ topic: 't' });
      throw new Error('bad order'); // line 6
    } } },
};`)
			h.publish("w", "t", "e")
			h.runOnce("w")
			runs := h.runs("w")
			if len(runs) != tt.runs {
				t.Fatalf("runs: got %d, want %d", len(runs), tt.runs)
			}
			last := runs[len(runs)-1]
			if last.Status != tt.status {
				t.Errorf("status: got %s, want %s", last.Status, tt.status)
			}
			if last.Attempt != tt.runs {
				t.Errorf("attempt: got %d, want %d", last.Attempt, tt.runs)
			}
			if !strings.Contains(last.Error, "bad order") || !strings.Contains(last.Error, ":6:") {
				t.Errorf("error %q: want the message and line 6", last.Error)
			}
			if last.ErrorClass != scripthost.ClassLogic {
				t.Errorf("class: got %s, want logic", last.ErrorClass)
			}
			if got := h.events("w", "t")["e"]; (got == scripthost.EventPending) != tt.released {
				t.Errorf("event: got %s, released want %v", got, tt.released)
			}
			// The handler is blocked until a person retries: another pass starts nothing.
			h.runOnce("w")
			if got := len(h.runs("w")); got != tt.runs {
				t.Errorf("runs after another pass: got %d, want %d", got, tt.runs)
			}
		})
	}
}

func TestNetworkErrorPausesAndRetries(t *testing.T) {
	h := newHarness(t)
	h.load("net", `export default {
  topics: ['t'],
  consumers: { c: { subscribe: ['t'],
    async prepare() { const r = await Svc.read({}); const e = await Topics.peek({ topic: 't' });
      return { reservations: [{ topic: 't', ids: [e[0].id] }], data: r }; },
    async mutate(p) { await Svc.apply({ value: 1 }); } } },
};`)
	h.publish("net", "t", "e")
	h.svc.fail = scripthost.Errorf(scripthost.ClassNetwork, "", "connection refused")
	h.runOnce("net")
	runs := h.runs("net")
	if len(runs) != 1 || runs[0].Status != scripthost.StatusPausedTransient {
		t.Fatalf("runs: got %+v, want one paused:transient", runs)
	}
	if got := h.events("net", "t")["e"]; got != scripthost.EventPending {
		t.Errorf("event of a run paused before its mutation: got %s, want pending", got)
	}
	// Not before its backoff.
	h.svc.fail = nil
	h.runOnce("net")
	if got := len(h.runs("net")); got != 1 {
		t.Fatalf("runs before the backoff passed: got %d, want 1", got)
	}
	h.clock.Add(2 * time.Second)
	h.runOnce("net")
	runs = h.runs("net")
	if len(runs) != 2 || runs[1].Status != scripthost.StatusCommitted || runs[1].RetryOf != runs[0].ID {
		t.Fatalf("after backoff: got %+v, want a committed retry", runs)
	}
	if got := h.svc.count(); got != 1 {
		t.Errorf("applies: got %d, want 1", got)
	}
}

func TestFailureAfterMutationResumesAtEmitting(t *testing.T) {
	h := newHarness(t)
	h.load("late", `export default {
  topics: ['t'],
  consumers: { c: { subscribe: ['t'], onError: { strategy: 'retry', maxRetries: 2, delayMs: 0 },
    async prepare() { const e = await Topics.peek({ topic: 't' }); return { reservations: [{ topic: 't', ids: [e[0].id] }], data: e[0].id }; },
    async mutate(id) { await Svc.apply({ value: id }); },
    next() { throw new Error('next is broken'); } } },
};`)
	h.publish("late", "t", "e")
	h.runOnce("late")
	runs := h.runs("late")
	if len(runs) != 3 {
		t.Fatalf("runs: got %d, want 3", len(runs))
	}
	if got := h.svc.count(); got != 1 {
		t.Errorf("applies: got %d, want 1 (a retry never mutates again)", got)
	}
	for i, r := range runs[1:] {
		if r.RetryOf != runs[i].ID || r.Outcome == nil || r.Outcome.Status != scripthost.OutcomeApplied {
			t.Errorf("retry %d: got retry_of %s outcome %+v, want retry of %s with the applied outcome", i+1, r.RetryOf, r.Outcome, runs[i].ID)
		}
	}
	last := runs[2]
	if last.Status != scripthost.StatusFailedLogic || last.Phase != scripthost.RunEmitting {
		t.Errorf("last run: got %s/%s, want emitting/failed:logic", last.Phase, last.Status)
	}
	if got := h.events("late", "t")["e"]; got != scripthost.EventReserved {
		t.Errorf("event after the mutation: got %s, want reserved", got)
	}
}

func TestUncertainMutationAndResolution(t *testing.T) {
	const wf = `export default {
  topics: ['t'],
  consumers: { c: { subscribe: ['t'],
    async prepare() { const e = await Topics.peek({ topic: 't' }); if (!e.length) return null;
      return { reservations: [{ topic: 't', ids: [e[0].id] }], data: e[0].id }; },
    async mutate(id) { if (id) await Svc.apply({ value: id }); },
    next(p, r) { return { last: r.status, result: r.result || null }; } } },
};`
	for _, as := range []scripthost.MutationStatus{scripthost.MutationApplied, scripthost.MutationSkipped, scripthost.MutationFailed} {
		t.Run(string(as), func(t *testing.T) {
			h := newHarness(t)
			h.load("u", wf)
			h.publish("u", "t", "e")
			h.svc.uncertain = scripthost.Errorf(scripthost.ClassNetwork, "", "connection reset")
			h.runOnce("u")
			ms, err := h.store.Mutations(h.ctx, ledger.MutationFilter{Workflow: "u"})
			if err != nil || len(ms) != 1 {
				t.Fatalf("mutations: got %v %v, want 1", ms, err)
			}
			if ms[0].Status != scripthost.MutationNeedsReconcile {
				t.Fatalf("after an uncertain call: got %s, want needs_reconcile", ms[0].Status)
			}
			// The next attempt is not due yet; then it is, and the attempts run out.
			h.runOnce("u")
			h.clock.Add(time.Hour)
			h.runOnce("u")
			m, _ := h.store.Mutation(h.ctx, ms[0].ID)
			run, _ := h.store.Run(h.ctx, m.RunID)
			if m.Status != scripthost.MutationIndeterminate || run.Status != scripthost.StatusPausedReconciliation {
				t.Fatalf("after the attempts: got %s / run %s, want indeterminate / paused:reconciliation", m.Status, run.Status)
			}
			if got := h.events("u", "t")["e"]; got != scripthost.EventReserved {
				t.Fatalf("event while the outcome is unknown: got %s, want reserved", got)
			}
			if got := h.svc.count(); got != 1 {
				t.Fatalf("applies before resolution: got %d, want 1", got)
			}

			h.svc.uncertain = nil
			if _, err := h.store.Resolve(h.ctx, m.ID, ledger.Resolution{As: as, By: "tester", Result: json.RawMessage(`{"manual":true}`)}); err != nil {
				t.Fatal(err)
			}
			h.runOnce("u")
			event := h.events("u", "t")["e"]
			switch as {
			case scripthost.MutationApplied:
				if got, want := h.state("u", "c"), `{"last":"applied","result":{"manual":true}}`; got != want {
					t.Errorf("state: got %s, want %s", got, want)
				}
				if event != scripthost.EventConsumed || h.svc.count() != 1 {
					t.Errorf("got event %s and %d applies, want consumed and 1", event, h.svc.count())
				}
			case scripthost.MutationSkipped:
				if got, want := h.state("u", "c"), `{"last":"skipped","result":null}`; got != want {
					t.Errorf("state: got %s, want %s", got, want)
				}
				if event != scripthost.EventSkipped || h.svc.count() != 1 {
					t.Errorf("got event %s and %d applies, want skipped and 1", event, h.svc.count())
				}
			case scripthost.MutationFailed:
				// The run prepares again by itself and applies with a new key (the
				// first one is known to have failed).
				if event := h.events("u", "t")["e"]; event != scripthost.EventConsumed || h.svc.count() != 2 {
					t.Errorf("got event %s and %d applies, want consumed and 2", event, h.svc.count())
				}
				if h.svc.keys[0] == h.svc.keys[1] {
					t.Errorf("key after a known failure: got the same %s, want a new one", h.svc.keys[0])
				}
			}
		})
	}
}

func TestProducerSchedule(t *testing.T) {
	h := newHarness(t)
	h.load("tick", `export default {
  topics: ['ticks'],
  producers: { p: { schedule: { every: '1m' }, publishes: ['ticks'],
    async handler(state) { const n = ((state && state.n) || 0) + 1;
      await Topics.publish({ topic: 'ticks', id: 'tick-' + n, payload: { n } }); return { n }; } } },
  consumers: { c: { subscribe: ['ticks'], async prepare() { const e = await Topics.peek({ topic: 'ticks' });
      return { reservations: e.length ? [{ topic: 'ticks', ids: e.map((x) => x.id) }] : [] }; } } },
};`)
	h.runOnce("tick")
	h.runOnce("tick")
	if got := len(h.runsOf("tick", "p")); got != 1 {
		t.Fatalf("producer runs before its interval: got %d, want 1", got)
	}
	h.clock.Add(61 * time.Second)
	h.runOnce("tick")
	if got := len(h.runsOf("tick", "p")); got != 2 {
		t.Fatalf("producer runs after its interval: got %d, want 2", got)
	}
	if got, want := h.state("tick", "p"), `{"n":2}`; got != want {
		t.Errorf("producer state: got %s, want %s", got, want)
	}
	evs := h.events("tick", "ticks")
	if len(evs) != 2 || evs["tick-1"] != scripthost.EventConsumed || evs["tick-2"] != scripthost.EventConsumed {
		t.Errorf("ticks: got %v, want tick-1 and tick-2 consumed", evs)
	}
	s, _ := h.store.Schedule(h.ctx, "tick", "p")
	if want := h.clock.Now().Add(time.Minute); !s.NextRunAt.Equal(want) {
		t.Errorf("next run: got %v, want %v", s.NextRunAt, want)
	}
}

func TestPausedWorkflowStartsNothing(t *testing.T) {
	h := newHarness(t)
	h.load("orders", orders)
	h.publish("orders", "orders", "a")
	if err := h.store.SetWorkflowPaused(h.ctx, "orders", true); err != nil {
		t.Fatal(err)
	}
	h.runOnce("orders")
	if got := len(h.runs("orders")); got != 0 {
		t.Fatalf("runs of a paused workflow: got %d, want 0", got)
	}
	if err := h.store.SetWorkflowPaused(h.ctx, "orders", false); err != nil {
		t.Fatal(err)
	}
	h.runOnce("orders")
	if got := h.svc.count(); got != 1 {
		t.Errorf("applies after resume: got %d, want 1", got)
	}
}

func TestWakeAt(t *testing.T) {
	h := newHarness(t)
	h.load("wake", `export default {
  topics: ['t'],
  consumers: { c: { subscribe: ['t'],
    prepare(state) { return { reservations: [], data: null, wakeAt: '2026-03-01T12:01:00Z' }; } } },
};`)
	h.publish("wake", "t", "e")
	h.runOnce("wake")
	hs, _ := h.store.HandlerState(h.ctx, "wake", "c")
	if want := time.Date(2026, 3, 1, 12, 1, 0, 0, time.UTC); !hs.WakeAt.Equal(want) {
		t.Fatalf("wake_at: got %v, want %v", hs.WakeAt, want)
	}
	h.runOnce("wake")
	if got := len(h.runs("wake")); got != 1 {
		t.Fatalf("runs before the wake-up: got %d, want 1", got)
	}
	h.clock.Add(2 * time.Minute)
	h.runOnce("wake")
	if got := len(h.runs("wake")); got != 2 {
		t.Fatalf("runs after the wake-up: got %d, want 2", got)
	}
	// The same (now past) wake-up time is not a new one: no endless loop.
	h.runOnce("wake")
	if got := len(h.runs("wake")); got != 2 {
		t.Errorf("runs after a past wake-up: got %d, want 2", got)
	}
}

func TestInvalidWorkflowWritesNothing(t *testing.T) {
	h := newHarness(t)
	_, err := h.rt.LoadWorkflow(h.ctx, "bad", "bad.js", []byte(`export default { topics: ['a'], consumers: { c: { subscribe: ['b'] } } };`))
	if err == nil || !strings.Contains(err.Error(), `consumer c: subscribes to undeclared topic "b"`) {
		t.Fatalf("got %v, want the definition problem", err)
	}
	_, err = h.rt.LoadWorkflow(h.ctx, "bad", "bad.js", []byte("export default {\n  topics: [,\n"))
	var se *scripthost.Error
	if !errors.As(err, &se) || se.Line == 0 {
		t.Fatalf("syntax error: got %v, want a located logic error", err)
	}
	if wfs, _ := h.store.Workflows(h.ctx); len(wfs) != 0 {
		t.Errorf("workflows stored: got %v, want none", wfs)
	}
}
