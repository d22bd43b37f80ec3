package runtime_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/scripthost/scripthost"
	"github.com/scripthost/scripthost/ledger"
)

// lifecycle returns a run's lifecycle events.
func (h *harness) lifecycle(runID string) []ledger.LifecycleEvent {
	h.t.Helper()
	evs, err := h.store.LifecycleEvents(h.ctx, ledger.LifecycleFilter{RunID: runID})
	if err != nil {
		h.t.Fatal(err)
	}
	return evs
}

// types renders events by their labels, in order.
func types(evs []ledger.LifecycleEvent) string {
	var out []string
	for _, e := range evs {
		out = append(out, e.Label())
	}
	return strings.Join(out, " ")
}

// data returns the first event of type t, decoded.
func data(t *testing.T, evs []ledger.LifecycleEvent, typ ledger.EventType) map[string]any {
	t.Helper()
	for _, e := range evs {
		if e.Type == typ {
			var m map[string]any
			if err := json.Unmarshal(e.Data, &m); err != nil {
				t.Fatal(err)
			}
			return m
		}
	}
	t.Fatalf("no %s event in %s", typ, types(evs))
	return nil
}

const reserveOne = `async prepare() { const e = await Topics.peek({ topic: 't' }); if (!e.length) return null; return { reservations: [{ topic: 't', ids: [e[0].id] }], data: e[0].id }; }`

func TestLifecycleOfACommittedRun(t *testing.T) {
	h := newHarness(t)
	h.load("w", `export default {
  topics: ['t'],
  consumers: { c: { subscribe: ['t'], `+reserveOne+`,
    async mutate(id) { await Svc.apply({ value: id }); },
    next(id, result) { return { last: id }; } } },
};`)
	h.publish("w", "t", "e")
	h.runOnce("w")
	runs := h.runs("w")
	if len(runs) != 1 || runs[0].Status != scripthost.StatusCommitted {
		t.Fatalf("runs: got %+v, want one committed", runs)
	}
	evs := h.lifecycle(runs[0].ID)
	want := "phase_started(prepare) phase_completed(prepare) phase_started(mutate) mutation_recorded mutation_outcome " +
		"phase_completed(mutate) phase_started(next) phase_completed(next) committed"
	if got := types(evs); got != want {
		t.Fatalf("events:\n got %s\nwant %s", got, want)
	}
	m, _ := h.store.RunMutation(h.ctx, runs[0].ID)
	for _, e := range evs {
		if (e.Type == ledger.EventMutationRecorded || e.Type == ledger.EventMutationOutcome) && e.MutationID != m.ID {
			t.Errorf("%s: got mutation %q, want %s", e.Type, e.MutationID, m.ID)
		}
	}
	if d := data(t, evs, ledger.EventMutationRecorded); d["idempotency_key"] != m.IdempotencyKey || d["tool"] != "Svc.apply" {
		t.Errorf("mutation_recorded: got %v, want the key and the tool", d)
	}
	if d := data(t, evs, ledger.EventMutationOutcome); d["status"] != "applied" {
		t.Errorf("mutation_outcome: got %v, want applied", d)
	}
}

// TestHistoryOfACommittedRun: whichever transition records the mutate phase's outcome
// (an applied mutation, a mutate phase that made none, no mutate function) moves the
// run on to next in its own commit, and the run's history reads as one transition per
// phase did: a snapshot of every phase and phase_started(next) with its attempt.
func TestHistoryOfACommittedRun(t *testing.T) {
	for _, tc := range []struct {
		name, mutate, events string
		writes               int64
	}{
		{"applied", `async mutate(id) { await Svc.apply({ value: id }); },`,
			"phase_started(prepare) phase_completed(prepare) phase_started(mutate) mutation_recorded mutation_outcome " +
				"phase_completed(mutate) phase_started(next) phase_completed(next) committed", 3},
		{"no mutation made", `mutate(id) { return 1; },`,
			"phase_started(prepare) phase_completed(prepare) phase_started(mutate) phase_completed(mutate) " +
				"phase_started(next) phase_completed(next) committed", 3},
		{"no mutate function", ``,
			"phase_started(prepare) phase_completed(prepare) phase_started(mutate) phase_completed(mutate) " +
				"phase_started(next) phase_completed(next) committed", 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t)
			h.load("w", `export default {
  topics: ['t'],
  consumers: { c: { subscribe: ['t'], `+reserveOne+`,
    `+tc.mutate+`
    next(id, result) { return { last: id }; } } },
};`)
			h.publish("w", "t", "e")
			before := h.store.WriteStats()
			h.runOnce("w")
			runs := h.runs("w")
			if len(runs) != 1 || runs[0].Status != scripthost.StatusCommitted {
				t.Fatalf("runs: got %+v, want one committed", runs)
			}
			if got := h.store.WriteStats().Writes - before.Writes; got != tc.writes {
				t.Errorf("got %d writes, want %d", got, tc.writes)
			}
			evs := h.lifecycle(runs[0].ID)
			if got := types(evs); got != tc.events {
				t.Errorf("events:\n got %s\nwant %s", got, tc.events)
			}
			for _, e := range evs {
				if e.Label() == "phase_started(next)" && string(e.Data) != `{"attempt":1,"phase":"next"}` {
					t.Errorf("phase_started(next): got %s, want the phase and the attempt", e.Data)
				}
			}
			snaps, err := h.store.Snapshots(h.ctx, runs[0].ID)
			if err != nil {
				t.Fatal(err)
			}
			var phases []string
			for _, sn := range snaps {
				phases = append(phases, string(sn.Phase))
			}
			if got, want := strings.Join(phases, " "), "pending preparing prepared mutating mutated emitting committed"; got != want {
				t.Errorf("snapshots: got %s, want %s", got, want)
			}
		})
	}
}

// An error of the mutate phase's after hook is handled like the same error in any
// other phase: the run does not commit, and a retry resumes at next without
// repeating the mutation.
func TestAfterHookErrorInMutatePhase(t *testing.T) {
	for _, tt := range []struct {
		name    string
		onError string
		runs    int
	}{
		{"fail", `{ strategy: 'fail' }`, 1},
		{"retry", `{ strategy: 'retry', maxRetries: 1, delayMs: 0 }`, 2},
	} {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t)
			h.load("w", `export default {
  topics: ['t'],
  consumers: { c: { subscribe: ['t'], onError: `+tt.onError+`, `+reserveOne+`,
    async mutate(id) { await Svc.apply({ value: id }); },
    after(info) { if (info.phase === 'mutate' && info.attempt === 1) throw new Error('audit log is down'); },
    next(id, result) { console.log('next ' + result.status); } } },
};`)
			h.publish("w", "t", "e")
			h.runOnce("w")
			runs := h.runs("w")
			if len(runs) != tt.runs {
				t.Fatalf("runs: got %d (%+v), want %d", len(runs), runs, tt.runs)
			}
			first := runs[0]
			if first.Status != scripthost.StatusFailedLogic || !strings.Contains(first.Error, "audit log is down") {
				t.Fatalf("first run: got %s %q, want failed:logic with the hook's error", first.Status, first.Error)
			}
			if got := types(h.lifecycle(first.ID)); !strings.Contains(got, "phase_failed(mutate/after)") {
				t.Errorf("events: got %s, want phase_failed(mutate/after)", got)
			}
			if got := h.svc.count(); got != 1 {
				t.Errorf("applies: got %d, want 1", got)
			}
			if tt.runs == 1 {
				if got := h.events("w", "t")["e"]; got != scripthost.EventReserved {
					t.Errorf("event after an applied mutation: got %s, want reserved", got)
				}
				if n := len(h.consoleLines()); n != 0 {
					t.Errorf("console: got %v, want next not run", h.consoleLines())
				}
				return
			}
			retry := runs[1]
			if retry.Status != scripthost.StatusCommitted || retry.RetryOf != first.ID {
				t.Fatalf("retry: got %+v, want committed", retry)
			}
			if got := types(h.lifecycle(retry.ID)); !strings.HasPrefix(got, "retry_started phase_completed(next)") {
				t.Errorf("retry events: got %s, want to resume at next", got)
			}
			if got := h.consoleLines(); len(got) != 1 || got[0] != "c: next applied" {
				t.Errorf("console: got %v, want next once with the applied outcome", got)
			}
		})
	}
}

func TestGuardResult(t *testing.T) {
	tests := []struct {
		name, guard string
		status      scripthost.RunStatus
		event       string
		errWant     string
	}{
		{"true", `return true;`, scripthost.StatusCommitted, "phase_started(prepare)", ""},
		{"false", `return false;`, scripthost.StatusSkipped, "guard_skipped", ""},
		{"promise of false", `return Promise.resolve(false);`, scripthost.StatusSkipped, "guard_skipped", ""},
		{"async true", `await null; return true;`, scripthost.StatusCommitted, "phase_started(prepare)", ""},
		{"not a boolean", `return 'yes';`, scripthost.StatusFailedLogic, "phase_failed(guard)", `guard of consumer c must return a boolean (or a promise of one), got "yes"`},
		{"undefined", `return;`, scripthost.StatusFailedLogic, "phase_failed(guard)", "must return a boolean"},
		{"throws", `throw new Error('guard broke'); // line 4`, scripthost.StatusFailedLogic, "phase_failed(guard)", "guard broke"},
		{"reads", `const r = await Svc.read({}); return r.count === 0;`, scripthost.StatusCommitted, "phase_started(prepare)", ""},
		// The refused call is logged first, in the hook phase guards run in.
		{"mutates", `await Svc.apply({ value: 1 }); return true;`, scripthost.StatusFailedLogic, "tool_refused(hook) phase_failed(guard)", "Operation 'mutate' not allowed in 'hook' phase"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t)
			h.load("w", `export default {
  topics: ['t'],
  consumers: { c: { subscribe: ['t'], async guard(state) {
    `+tt.guard+`
  }, `+reserveOne+` } },
};`)
			h.publish("w", "t", "e")
			h.runOnce("w")
			runs := h.runs("w")
			if len(runs) != 1 || runs[0].Status != tt.status {
				t.Fatalf("runs: got %+v, want one %s", runs, tt.status)
			}
			if !strings.Contains(runs[0].Error, tt.errWant) {
				t.Errorf("error: got %q, want %q", runs[0].Error, tt.errWant)
			}
			evs := h.lifecycle(runs[0].ID)
			if got := types(evs); !strings.HasPrefix(got, tt.event) {
				t.Errorf("events: got %s, want to start with %s", got, tt.event)
			}
			if tt.name == "throws" {
				if d := data(t, evs, ledger.EventPhaseFailed); d["line"] != float64(4) || d["class"] != "logic" || d["file"] == "" {
					t.Errorf("phase_failed: got %v, want class logic, the file and line 4", d)
				}
			}
			if h.svc.count() != 0 {
				t.Errorf("applies: got %d, want none", h.svc.count())
			}
		})
	}
}

func TestHooks(t *testing.T) {
	tests := []struct {
		name, before string
		status       scripthost.RunStatus
		errWant      string
	}{
		{"read", `const r = await Svc.read({}); console.log('read ' + r.count);`, scripthost.StatusCommitted, ""},
		{"throws", `throw new Error('not today');`, scripthost.StatusFailedLogic, "not today"},
		{"mutates", `await Svc.apply({ value: 1 });`, scripthost.StatusFailedLogic, "Operation 'mutate' not allowed in 'hook' phase"},
		{"publishes", `await Topics.publish({ topic: 't', payload: 1 });`, scripthost.StatusFailedLogic, "Operation 'topic_publish' not allowed in 'hook' phase"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t)
			h.load("w", `export default {
  topics: ['t'],
  consumers: { c: { subscribe: ['t'], async before(info) {
    if (info.phase !== 'prepare') return;
    `+tt.before+`
  }, async prepare() { console.log('prepare ran'); return null; } } },
};`)
			h.publish("w", "t", "e")
			h.runOnce("w")
			runs := h.runs("w")
			if len(runs) != 1 || runs[0].Status != tt.status || !strings.Contains(runs[0].Error, tt.errWant) {
				t.Fatalf("runs: got %+v, want one %s with %q", runs, tt.status, tt.errWant)
			}
			ran := strings.Join(h.consoleLines(), "|")
			if tt.status == scripthost.StatusFailedLogic {
				if strings.Contains(ran, "prepare ran") {
					t.Errorf("console %q: prepare ran after its before hook failed", ran)
				}
				if got := types(h.lifecycle(runs[0].ID)); !strings.Contains(got, "phase_failed(prepare/before)") {
					t.Errorf("events: got %s, want phase_failed(prepare/before)", got)
				}
			} else if !strings.Contains(ran, "read 0") || !strings.Contains(ran, "prepare ran") {
				t.Errorf("console %q: want the hook's read and prepare", ran)
			}
		})
	}
}

// onRetry decides the state of each retry; the retry waits for its delay on the
// injected clock.
func TestOnRetry(t *testing.T) {
	h := newHarness(t)
	h.load("w", `export default {
  topics: ['t'],
  consumers: { c: { subscribe: ['t'],
    onError: { strategy: 'retry', maxRetries: 3, delayMs: 5000,
      onRetry(error, state) { return { tries: ((state && state.tries) || 0) + 1, last: error.message, code: error.code || null }; } },
    async prepare(state) {
      if (!state || state.tries < 2) throw new Error('not yet');
      const e = await Topics.peek({ topic: 't' });
      return { reservations: [{ topic: 't', ids: [e[0].id] }], data: state };
    },
    async mutate(d) { await Svc.apply({ value: d.tries }); } } },
};`)
	h.publish("w", "t", "e")
	h.runOnce("w")
	runs := h.runs("w")
	if len(runs) != 1 || runs[0].Status != scripthost.StatusFailedLogic {
		t.Fatalf("runs: got %+v, want one failed run waiting for its retry", runs)
	}
	sched := data(t, h.lifecycle(runs[0].ID), ledger.EventRetryScheduled)
	if sched["attempt"] != float64(2) || sched["delay_ms"] != float64(5000) {
		t.Errorf("retry_scheduled: got %v, want attempt 2 after 5000 ms", sched)
	}
	h.clock.Add(4999 * time.Millisecond)
	h.runOnce("w")
	if got := len(h.runs("w")); got != 1 {
		t.Fatalf("runs before the delay passed: got %d, want 1", got)
	}
	h.clock.Add(time.Millisecond)
	h.runOnce("w")
	runs = h.runs("w")
	if len(runs) != 2 || runs[1].Status != scripthost.StatusFailedLogic {
		t.Fatalf("runs after the first delay: got %+v, want a second failed attempt", runs)
	}
	var st struct {
		Tries int    `json:"tries"`
		Last  string `json:"last"`
	}
	if err := json.Unmarshal(runs[1].InputState, &st); err != nil || st.Tries != 1 || !strings.Contains(st.Last, "not yet") {
		t.Errorf("retry input state: got %s, want onRetry's {tries: 1, last: …not yet…}", runs[1].InputState)
	}
	started := data(t, h.lifecycle(runs[1].ID), ledger.EventRetryStarted)
	if started["retry_of"] != runs[0].ID || started["state"] == nil {
		t.Errorf("retry_started: got %v, want the source run and onRetry's state", started)
	}
	h.clock.Add(5 * time.Second)
	h.runOnce("w")
	runs = h.runs("w")
	if len(runs) != 3 || runs[2].Status != scripthost.StatusCommitted || runs[2].Attempt != 3 {
		t.Fatalf("runs: got %+v, want the third attempt committed", runs)
	}
	if got := string(h.svc.applied[0]); got != `{"value":2}` {
		t.Errorf("applied: got %s, want the state onRetry built", got)
	}
}

func TestOnRetryFails(t *testing.T) {
	h := newHarness(t)
	h.load("w", `export default {
  topics: ['t'],
  consumers: { c: { subscribe: ['t'],
    onError: { strategy: 'retry', maxRetries: 3, delayMs: 0,
      async onRetry(error, state) { await Svc.read({}); return state; } },
    prepare() { throw new Error('bad input'); } } },
};`)
	h.publish("w", "t", "e")
	h.runOnce("w")
	h.runOnce("w")
	// The retry is recorded, failed with onRetry's error, and no retry follows it.
	runs := h.runs("w")
	if len(runs) != 2 || runs[1].Status != scripthost.StatusFailedLogic || runs[1].RetryOf != runs[0].ID {
		t.Fatalf("runs: got %+v, want the first run and one failed retry", runs)
	}
	for _, want := range []string{"onError.onRetry of consumer c failed", "Operation 'read' not allowed outside handler execution", "bad input"} {
		if !strings.Contains(runs[1].Error, want) {
			t.Errorf("error %q: want %q", runs[1].Error, want)
		}
	}
	if got := types(h.lifecycle(runs[1].ID)); got != "retry_started phase_failed(onRetry)" {
		t.Errorf("events: got %s, want retry_started phase_failed(onRetry)", got)
	}
	if got := h.events("w", "t")["e"]; got != scripthost.EventPending {
		t.Errorf("event: got %s, want pending", got)
	}
}

// Each phase sees the handler's state as __state__ and, from mutate on, prepare's data
// as __prepared__; both also as arguments.
func TestInputsInEveryPhase(t *testing.T) {
	h := newHarness(t)
	h.load("w", `export default {
  topics: ['t'],
  consumers: { c: { subscribe: ['t'],
    async prepare(state) {
      console.log('prepare ' + JSON.stringify(__state__) + ' ' + JSON.stringify(state));
      const e = await Topics.peek({ topic: 't' });
      return { reservations: [{ topic: 't', ids: [e[0].id] }], data: { id: e[0].id } };
    },
    async mutate(data) {
      console.log('mutate ' + JSON.stringify(__state__) + ' ' + JSON.stringify(__prepared__) + ' ' + JSON.stringify(data));
      if (__state__) console.log('mutate state frozen ' + Object.isFrozen(__state__));
      await Svc.apply({ value: data.id });
    },
    next(data, result) {
      console.log('next ' + JSON.stringify(__state__) + ' ' + JSON.stringify(__prepared__) + ' ' + __mutationResult__.status);
      return { n: (__state__ ? __state__.n : 0) + 1 };
    } } },
};`)
	h.publish("w", "t", "a")
	h.runOnce("w")
	h.publish("w", "t", "b")
	h.runOnce("w")
	want := []string{
		`c: prepare null null`, `c: mutate null {"id":"a"} {"id":"a"}`, `c: next null {"id":"a"} applied`,
		`c: prepare {"n":1} {"n":1}`, `c: mutate {"n":1} {"id":"b"} {"id":"b"}`, `c: mutate state frozen true`, `c: next {"n":1} {"id":"b"} applied`,
	}
	if got := h.consoleLines(); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("console:\n got %q\nwant %q", got, want)
	}
	if got := h.state("w", "c"); got != `{"n":2}` {
		t.Errorf("state: got %s, want {\"n\":2}", got)
	}
}

// A mutation whose outcome the tool cannot tell yet leaves its run visibly waiting:
// paused:reconciliation with the time of the next attempt.
func TestNeedsReconcileIsPaused(t *testing.T) {
	h := newHarness(t)
	h.load("w", `export default {
  topics: ['t'],
  consumers: { c: { subscribe: ['t'], `+reserveOne+`,
    async mutate(id) { await Svc.apply({ value: id }); } } },
};`)
	h.publish("w", "t", "e")
	h.svc.uncertain = scripthost.Errorf(scripthost.ClassNetwork, "", "connection reset")
	h.runOnce("w")
	runs := h.runs("w")
	if len(runs) != 1 || runs[0].Status != scripthost.StatusPausedReconciliation || runs[0].Phase != scripthost.RunMutating {
		t.Fatalf("runs: got %+v, want one mutating run paused:reconciliation", runs)
	}
	if want := h.clock.Now().Add(time.Second); !runs[0].NotBefore.Equal(want) || !strings.Contains(runs[0].Error, "reconcile attempt 1") {
		t.Errorf("run: not before %v error %q, want %v and the reason", runs[0].NotBefore, runs[0].Error, want)
	}
	h.svc.uncertain = nil
	h.svc.reconcile = &scripthost.Reconciliation{Outcome: scripthost.ReconcileApplied, Result: json.RawMessage(`{"ok":true}`)}
	h.clock.Add(time.Second)
	h.runOnce("w")
	runs = h.runs("w")
	if runs[0].Status != scripthost.StatusCommitted {
		t.Fatalf("run after the reconcile: got %s, want committed", runs[0].Status)
	}
	want := "phase_started(prepare) phase_completed(prepare) phase_started(mutate) mutation_recorded reconcile_attempt paused " +
		"reconcile_attempt mutation_outcome phase_completed(mutate) resumed phase_started(next) phase_completed(next) committed"
	if got := types(h.lifecycle(runs[0].ID)); got != want {
		t.Errorf("events:\n got %s\nwant %s", got, want)
	}
	if got := h.svc.count(); got != 1 {
		t.Errorf("applies: got %d, want 1", got)
	}
}

// A consumer may send a definite mutation failure on to next, which sees it as its
// result; the events are consumed or released as it declares.
func TestMutationFailureToNext(t *testing.T) {
	tests := []struct {
		name, policy string
		runs         int
		event        scripthost.EventStatus
		next         bool
	}{
		{"default fails", `'fail'`, 1, scripthost.EventPending, false},
		{"next consumes", `'next'`, 1, scripthost.EventConsumed, true},
		{"next releases", `{ strategy: 'next', events: 'release' }`, 2, scripthost.EventPending, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t)
			h.load("w", `export default {
  topics: ['t', 'failed'],
  consumers: {
    c: { subscribe: ['t'], publishes: ['failed'], onMutationFailure: `+tt.policy+`,
      async prepare(state) { const e = await Topics.peek({ topic: 't' });
        if (!e.length || (state && state.failed === e[0].id)) return null; // a released event is not tried again
        return { reservations: [{ topic: 't', ids: [e[0].id] }], data: e[0].id }; },
      async mutate(id) { if (id) await Svc.apply({ value: id }); },
      async next(id, result) {
        if (!id) return;
        console.log('next ' + JSON.stringify(result) + ' ' + __mutationResult__.status);
        if (result.status === 'failed') await Topics.publish({ topic: 'failed', id: id, payload: result.error });
        return { failed: id };
      } },
    sink: { subscribe: ['failed'], prepare() { return null; } },
  },
};`)
			h.publish("w", "t", "e")
			h.svc.fail = scripthost.Errorf(scripthost.ClassLogic, "card_declined", "card declined")
			if err := h.rt.RunOnce(h.ctx, []string{"w"}); err != nil {
				t.Fatal(err)
			}
			runs := h.runsOf("w", "c")
			if !tt.next {
				if len(runs) < 1 || runs[0].Status != scripthost.StatusFailedLogic {
					t.Fatalf("runs: got %+v, want the first failed", runs)
				}
				if len(h.consoleLines()) != 0 {
					t.Errorf("console: got %v, want next not run", h.consoleLines())
				}
				return
			}
			if len(runs) != tt.runs || runs[0].Status != scripthost.StatusCommitted || runs[0].Outcome == nil ||
				runs[0].Outcome.Status != scripthost.OutcomeFailed {
				t.Fatalf("runs: got %+v, want one committed with a failed outcome", runs)
			}
			want := `c: next {"status":"failed","error":{"class":"logic","code":"card_declined","message":"card declined"}} failed`
			if got := h.consoleLines(); len(got) != 1 || got[0] != want {
				t.Errorf("console: got %q, want %q", got, want)
			}
			if got := h.events("w", "t")["e"]; got != tt.event {
				t.Errorf("input event: got %s, want %s", got, tt.event)
			}
			if got := h.events("w", "failed")["e"]; got == "" {
				t.Errorf("next's publication of the failure is missing")
			}
			m, err := h.store.RunMutation(h.ctx, runs[0].ID)
			if err != nil || m.Status != scripthost.MutationFailed {
				t.Errorf("mutation: got %+v %v, want failed", m, err)
			}
			want2 := "phase_started(prepare) phase_completed(prepare) phase_started(mutate) mutation_recorded mutation_outcome " +
				"phase_completed(mutate) phase_started(next) phase_completed(next) committed"
			if got := types(h.lifecycle(runs[0].ID)); got != want2 {
				t.Errorf("events:\n got %s\nwant %s", got, want2)
			}
		})
	}
}
