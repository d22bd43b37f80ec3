package runtime_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/scripthost/scripthost"
	"github.com/scripthost/scripthost/hostfuncs"
	"github.com/scripthost/scripthost/ledger"
	"github.com/scripthost/scripthost/runtime"
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
			r := h.onlyRun("w")
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

// TestShutdownBeforeTheMutationLeavesNoRun: a host stopped while a run's prepare phase
// runs, or its mutate phase before the mutation, has written nothing for it (the run is
// created with the mutation's in-flight record), so there is no run to recover, and
// the next start runs it again and applies the mutation once.
func TestShutdownBeforeTheMutationLeavesNoRun(t *testing.T) {
	for _, tc := range []struct{ name, prepare, mutate string }{
		{"in prepare", `await Host.stop({});`, ``},
		// The mutate phase may call no read-only tool: its first pass spins until the
		// host stops it, which the prepare phase has the stop tool arrange.
		{"in mutate", `({ spin } = await Host.stopSoon({}));`, `if (spin) { for (;;) {} }`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			var calls, applied atomic.Int32
			stop := stopTool(&calls, cancel, `{}`)
			stopSoon := &hostfuncs.Tool{Namespace: "Host", Method: "stopSoon", ReadOnly: hostfuncs.ReadOnlyAlways,
				Execute: func(context.Context, json.RawMessage) (json.RawMessage, error) {
					if calls.Add(1) == 1 {
						time.AfterFunc(50*time.Millisecond, cancel)
						return json.RawMessage(`{"spin":true}`), nil
					}
					return json.RawMessage(`{"spin":false}`), nil
				}}
			apply := &hostfuncs.Tool{Namespace: "Svc", Method: "apply",
				Execute: func(context.Context, json.RawMessage) (json.RawMessage, error) {
					applied.Add(1)
					return json.RawMessage(`{}`), nil
				}}
			rt, st, _ := countedRuntime(t, nil, stop, stopSoon, apply)
			src := `export default { topics: ['t'], consumers: { c: { subscribe: ['t'],
  async prepare() { let spin = false; ` + tc.prepare + ` const e = await Topics.peek({ topic: 't' });
    return e.length ? { reservations: [{ topic: 't', ids: [e[0].id] }], data: { spin } } : null; },
  async mutate({ spin }) { ` + tc.mutate + ` await Svc.apply({}); },
  next() { return { done: true }; } } } };`
			if _, err := rt.LoadWorkflow(context.Background(), "w", "w.js", []byte(src)); err != nil {
				t.Fatal(err)
			}
			if _, err := st.Publish(context.Background(), ledger.NewEvent{Workflow: "w", Topic: "t", MessageID: "e", Payload: json.RawMessage(`{}`)}); err != nil {
				t.Fatal(err)
			}
			if err := rt.RunOnce(ctx, []string{"w"}); !errors.Is(err, context.Canceled) {
				t.Fatalf("run stopped: got %v, want context.Canceled", err)
			}
			bg := context.Background()
			runs, err := st.Runs(bg, ledger.RunFilter{Workflow: "w"})
			if err != nil || len(runs) != 0 || applied.Load() != 0 {
				t.Fatalf("after the stop: got %d runs (%v) and %d applied, want none", len(runs), err, applied.Load())
			}
			if err := rt.RunOnce(bg, []string{"w"}); err != nil {
				t.Fatal(err)
			}
			runs, err = st.Runs(bg, ledger.RunFilter{Workflow: "w"})
			if err != nil || len(runs) != 1 || runs[0].Status != scripthost.StatusCommitted || applied.Load() != 1 {
				t.Fatalf("after the restart: got %+v (%v) and %d applied, want one committed run, applied once", runs, err, applied.Load())
			}
			evs, err := st.Events(bg, ledger.EventFilter{Workflow: "w", Topic: "t"})
			if err != nil || len(evs) != 1 || evs[0].Status != scripthost.EventConsumed {
				t.Errorf("event: got %+v (%v), want consumed", evs, err)
			}
		})
	}
}

// TestEventsTakenBeforeTheMutation: when the events a run's prepare phase chose are
// taken before its mutation's in-flight record (which creates the run and reserves
// them; here by the mutate phase's before hook), the record is refused, the tool is not
// called, and the run is recorded as one whose prepare result was refused: failed in
// preparing, nothing applied.
func TestEventsTakenBeforeTheMutation(t *testing.T) {
	var st ledger.Store
	var applied atomic.Int32
	take := &hostfuncs.Tool{Namespace: "Other", Method: "take", ReadOnly: hostfuncs.ReadOnlyAlways,
		Execute: func(ctx context.Context, _ json.RawMessage) (json.RawMessage, error) {
			_, err := st.CreateRun(ctx, ledger.NewRun{Workflow: "w", Version: 1, Handler: "other", Kind: scripthost.KindConsumer,
				Start: scripthost.RunPreparing, Prepared: &ledger.PrepareResult{
					Reservations: []scripthost.Reservation{{Topic: "t", IDs: []string{"e"}}}}})
			return json.RawMessage(`{}`), err
		}}
	apply := &hostfuncs.Tool{Namespace: "Svc", Method: "apply",
		Execute: func(context.Context, json.RawMessage) (json.RawMessage, error) {
			applied.Add(1)
			return json.RawMessage(`{}`), nil
		}}
	rt, store, _ := countedRuntime(t, nil, take, apply)
	st = store
	src := `export default { topics: ['t'], consumers: { c: { subscribe: ['t'],
  async before(info) { if (info.phase === 'mutate') await Other.take({}); },
  prepare() { return { reservations: [{ topic: 't', ids: ['e'] }] }; },
  async mutate() { await Svc.apply({}); } } } };`
	ctx := context.Background()
	if _, err := rt.LoadWorkflow(ctx, "w", "w.js", []byte(src)); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Publish(ctx, ledger.NewEvent{Workflow: "w", Topic: "t", MessageID: "e", Payload: json.RawMessage(`{}`)}); err != nil {
		t.Fatal(err)
	}
	if err := rt.RunOnce(ctx, []string{"w"}); err != nil {
		t.Fatal(err)
	}
	runs, err := st.Runs(ctx, ledger.RunFilter{Workflow: "w", Handler: "c"})
	if err != nil || len(runs) != 1 {
		t.Fatalf("got %d runs of c (%v), want 1", len(runs), err)
	}
	r := runs[0]
	if r.Status != scripthost.StatusFailedLogic || r.Phase != scripthost.RunPreparing || !strings.Contains(r.Error, "event not available") {
		t.Errorf("run: got %s/%s %q, want failed:logic in preparing, the event not available", r.Phase, r.Status, r.Error)
	}
	if n := applied.Load(); n != 0 {
		t.Errorf("applied %d times, want never", n)
	}
	if ms, err := st.Mutations(ctx, ledger.MutationFilter{}); err != nil || len(ms) != 0 {
		t.Errorf("got %d mutations (%v), want none", len(ms), err)
	}
}

// TestPhaseTimesBeforeTheFirstWrite: the phases a consumer run goes through before its
// first write keep their own times in the lifecycle log (its timeline), not the write's:
// prepare started before it ran, ended (and mutate started) when it returned; the
// mutation is recorded at its write. A failed prepare's start keeps its time too.
func TestPhaseTimesBeforeTheFirstWrite(t *testing.T) {
	for _, tc := range []struct {
		name, prepare, want string
	}{
		{"committed", `await Clock.tick({}); return { reservations: [{ topic: 't', ids: ['e'] }], data: 1 };`,
			"phase_started(prepare)@0 phase_completed(prepare)@1 phase_started(mutate)@1 mutation_recorded@2"},
		{"failed", `await Clock.tick({}); throw new Error('no');`,
			"phase_started(prepare)@0 phase_failed(prepare)@1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t)
			tick := h.tickTool()
			apply := &hostfuncs.Tool{Namespace: "Slow", Method: "apply",
				Execute: func(context.Context, json.RawMessage) (json.RawMessage, error) { return json.RawMessage(`{}`), nil }}
			if err := h.reg.Register(tick, apply); err != nil {
				t.Fatal(err)
			}
			h.load("w", `export default { topics: ['t'], consumers: { c: { subscribe: ['t'],
  async prepare() { `+tc.prepare+` },
  async before(info) { if (info.phase === 'mutate') await Clock.tick({}); },
  async mutate() { await Slow.apply({}); } } } };`)
			h.publish("w", "t", "e")
			t0 := h.clock.Now()
			h.runOnce("w")
			var got []string
			for _, e := range h.lifecycle(h.onlyRun("w").ID) {
				if e.Type == ledger.EventMutationOutcome || e.Type == ledger.EventCommitted || strings.HasSuffix(e.Label(), "(next)") ||
					e.Label() == "phase_completed(mutate)" {
					continue
				}
				got = append(got, fmt.Sprintf("%s@%d", e.Label(), int(e.At.Sub(t0)/time.Minute)))
			}
			if strings.Join(got, " ") != tc.want {
				t.Errorf("events (minutes after the start):\n got %s\nwant %s", strings.Join(got, " "), tc.want)
			}
		})
	}
}

// onlyRun returns the workflow's one run, failing the test when it has another number.
func (h *harness) onlyRun(wf string) scripthost.Run {
	h.t.Helper()
	runs := h.runs(wf)
	if len(runs) != 1 {
		h.t.Fatalf("got %d runs, want 1", len(runs))
	}
	return runs[0]
}

// TestGuardBeforeTheFirstWrite: a consumer's guard runs before its run is written too.
// A guard that lets the run go on leaves the history and the three writes of a run
// without one; one that says no creates the run skipped in one write; one that fails
// creates the run and records that on it, in two writes, as before; one stopped by the
// host's shutdown leaves no run.
func TestGuardBeforeTheFirstWrite(t *testing.T) {
	for _, tc := range []struct {
		name, guard string
		status      scripthost.RunStatus
		events      string
		writes      int64
	}{
		{"true", `return true;`, scripthost.StatusCommitted,
			"phase_started(prepare) phase_completed(prepare) phase_started(mutate) mutation_recorded mutation_outcome " +
				"phase_completed(mutate) phase_started(next) phase_completed(next) committed", 3},
		{"false", `return false;`, scripthost.StatusSkipped, "guard_skipped", 1}, // created skipped (was 2)
		{"throws", `throw new Error('no guard');`, scripthost.StatusFailedLogic, "phase_failed(guard)", 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t)
			h.load("w", `export default { topics: ['t'], consumers: { c: { subscribe: ['t'],
  guard() { `+tc.guard+` }, `+reserveOne+`,
  async mutate(id) { await Svc.apply({ value: id }); }, next() { return {}; } } } };`)
			h.publish("w", "t", "e")
			before := h.store.WriteStats()
			h.runOnce("w")
			r := h.onlyRun("w")
			if r.Status != tc.status {
				t.Errorf("run: got %s, want %s", r.Status, tc.status)
			}
			if got := types(h.lifecycle(r.ID)); got != tc.events {
				t.Errorf("events:\n got %s\nwant %s", got, tc.events)
			}
			if got := h.store.WriteStats().Writes - before.Writes; got != tc.writes {
				t.Errorf("got %d writes, want %d", got, tc.writes)
			}
		})
	}
	t.Run("shutdown", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		var calls atomic.Int32
		stop := stopTool(&calls, cancel, `true`)
		rt, st, _ := countedRuntime(t, nil, stop)
		src := `export default { topics: ['t'], consumers: { c: { subscribe: ['t'],
  async guard() { return await Host.stop({}); },
  prepare() { return { reservations: [{ topic: 't', ids: ['e'] }] }; } } } };`
		bg := context.Background()
		if _, err := rt.LoadWorkflow(bg, "w", "w.js", []byte(src)); err != nil {
			t.Fatal(err)
		}
		if _, err := st.Publish(bg, ledger.NewEvent{Workflow: "w", Topic: "t", MessageID: "e", Payload: json.RawMessage(`{}`)}); err != nil {
			t.Fatal(err)
		}
		stopThenRestart(t, ctx, rt, st)
	})
}

// TestProducerRunInOneWrite: a producer's guard and phase run before its run is written,
// and the run is created committed in one write, with the history of a run written
// step by step; a guard that says no creates the run skipped with the schedule moved
// on, in one write; a phase that fails creates the run and records that as before; a
// phase stopped by the host's shutdown leaves no run.
func TestProducerRunInOneWrite(t *testing.T) {
	for _, tc := range []struct {
		name, guard, handler string
		status               scripthost.RunStatus
		phase                scripthost.RunPhase
		events               string
		writes               int64
	}{
		{"committed", `return true;`, `await Clock.tick({}); await Topics.publish({ topic: 'ticks', id: 'a', payload: {} }); return { n: 1 };`,
			scripthost.StatusCommitted, scripthost.RunCommitted,
			"phase_started(producer)@0 phase_completed(producer)@1 committed@1", 1},
		// Created skipped with its schedule moved on, in one write (it took three:
		// created, skipped, schedule; a skipped producer left without its schedule moved
		// was due again at once, and every pass made another skipped run).
		{"guard says no", `return false;`, `return { n: 1 };`, scripthost.StatusSkipped, scripthost.RunPending, "guard_skipped@0", 1},
		{"fails", `return true;`, `await Clock.tick({}); throw new Error('no ticks');`, scripthost.StatusFailedLogic, scripthost.RunExecuting,
			"phase_started(producer)@0 phase_failed(producer)@1", 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t)
			tick := h.tickTool()
			if err := h.reg.Register(tick); err != nil {
				t.Fatal(err)
			}
			h.load("w", `export default { topics: ['ticks'], producers: { p: { schedule: { every: '1h' }, publishes: ['ticks'],
  guard() { `+tc.guard+` }, async handler() { `+tc.handler+` } } } };`)
			t0 := h.clock.Now()
			before := h.store.WriteStats()
			h.runOnce("w")
			r := h.onlyRun("w")
			if r.Status != tc.status || r.Phase != tc.phase {
				t.Errorf("run: got %s/%s, want %s/%s", r.Phase, r.Status, tc.phase, tc.status)
			}
			var got []string
			for _, e := range h.lifecycle(r.ID) {
				got = append(got, fmt.Sprintf("%s@%d", e.Label(), int(e.At.Sub(t0)/time.Minute)))
			}
			if strings.Join(got, " ") != tc.events {
				t.Errorf("events (minutes after the start):\n got %s\nwant %s", strings.Join(got, " "), tc.events)
			}
			if got := h.store.WriteStats().Writes - before.Writes; got != tc.writes {
				t.Errorf("got %d writes, want %d", got, tc.writes)
			}
			if sc, err := h.store.Schedule(h.ctx, "w", "p"); err != nil || tc.status != scripthost.StatusFailedLogic &&
				!sc.NextRunAt.Equal(h.clock.Now().Add(time.Hour)) {
				t.Errorf("schedule: got %+v (%v), want the next run an hour after the run", sc, err)
			}
			if tc.status == scripthost.StatusCommitted {
				if got := h.events("w", "ticks")["a"]; got != scripthost.EventPending {
					t.Errorf("published event: got %q, want pending", got)
				}
				if got := h.state("w", "p"); got != `{"n":1}` {
					t.Errorf("state: got %s, want {\"n\":1}", got)
				}
			}
		})
	}
	t.Run("shutdown", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		var calls atomic.Int32
		stop := stopTool(&calls, cancel, `{}`)
		rt, st, _ := countedRuntime(t, nil, stop)
		bg := context.Background()
		src := `export default { topics: ['ticks'], producers: { p: { schedule: { every: '1h' }, publishes: ['ticks'],
  async handler() { await Host.stop({}); await Topics.publish({ topic: 'ticks', id: 'a', payload: {} }); return {}; } } } };`
		if _, err := rt.LoadWorkflow(bg, "w", "w.js", []byte(src)); err != nil {
			t.Fatal(err)
		}
		stopThenRestart(t, ctx, rt, st)
		if evs, err := st.Events(bg, ledger.EventFilter{Workflow: "w", Topic: "ticks"}); err != nil || len(evs) != 1 {
			t.Errorf("published: got %+v (%v), want one event", evs, err)
		}
	})
}

// stopTool is a read-only tool Host.stop whose first call (counted in calls) stops the
// host, as a shutdown would: it cancels the run's context and waits for it to end.
// Later calls answer out.
func stopTool(calls *atomic.Int32, cancel context.CancelFunc, out string) *hostfuncs.Tool {
	return &hostfuncs.Tool{Namespace: "Host", Method: "stop", ReadOnly: hostfuncs.ReadOnlyAlways,
		Execute: func(ctx context.Context, _ json.RawMessage) (json.RawMessage, error) {
			if calls.Add(1) == 1 {
				cancel()
				<-ctx.Done()
				return nil, ctx.Err()
			}
			return json.RawMessage(out), nil
		}}
}

// stopThenRestart runs workflow w with ctx, which a tool of its cancels (a shutdown):
// the pass ends with context.Canceled and leaves no run; a second pass, as a restarted
// host's, commits one run.
func stopThenRestart(t *testing.T, ctx context.Context, rt *runtime.Runtime, st ledger.Store) {
	t.Helper()
	bg := context.Background()
	if err := rt.RunOnce(ctx, []string{"w"}); !errors.Is(err, context.Canceled) {
		t.Fatalf("run stopped: got %v, want context.Canceled", err)
	}
	if runs, err := st.Runs(bg, ledger.RunFilter{Workflow: "w"}); err != nil || len(runs) != 0 {
		t.Fatalf("after the stop: got %d runs (%v), want none", len(runs), err)
	}
	if err := rt.RunOnce(bg, []string{"w"}); err != nil {
		t.Fatal(err)
	}
	if runs, err := st.Runs(bg, ledger.RunFilter{Workflow: "w"}); err != nil || len(runs) != 1 || runs[0].Status != scripthost.StatusCommitted {
		t.Fatalf("after the restart: got %+v (%v), want one committed run", runs, err)
	}
}

// tickTool is a read-only tool Clock.tick that moves the harness's clock a minute on.
func (h *harness) tickTool() *hostfuncs.Tool {
	return &hostfuncs.Tool{Namespace: "Clock", Method: "tick", ReadOnly: hostfuncs.ReadOnlyAlways,
		Execute: func(context.Context, json.RawMessage) (json.RawMessage, error) {
			h.clock.Add(time.Minute)
			return json.RawMessage(`{}`), nil
		}}
}
