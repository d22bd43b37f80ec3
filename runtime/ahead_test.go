package runtime_test

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/scripthost/scripthost"
	"github.com/scripthost/scripthost/hostfuncs"
	"github.com/scripthost/scripthost/ledger"
	"github.com/scripthost/scripthost/ledger/sqlite"
	"github.com/scripthost/scripthost/runtime"
	"github.com/scripthost/scripthost/sandbox"
	"github.com/scripthost/scripthost/sandbox/js"
)

// pendingCounter counts the reads of pending events made through a ledger.Store, by
// their limit.
type pendingCounter struct {
	ledger.Store
	mu      sync.Mutex
	byLimit map[int]int
}

func (s *pendingCounter) PendingEvents(ctx context.Context, wf, topic string, limit int) ([]scripthost.Event, error) {
	s.mu.Lock()
	s.byLimit[limit]++
	s.mu.Unlock()
	return s.Store.PendingEvents(ctx, wf, topic, limit)
}

func (s *pendingCounter) reads() (n int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, c := range s.byLimit {
		n += c
	}
	return n
}

// aheadRig is a runtime on a fresh SQLite ledger whose reads of pending events are
// counted, with the tools Gate.check({ id, n }), a mutation, and Gate.ask, the same
// read-only, which call check.
type aheadRig struct {
	t       *testing.T
	ctx     context.Context
	st      *sqlite.Store
	counted *pendingCounter
	rt      *runtime.Runtime
}

func newAheadRig(t *testing.T, src string, check func(id string, n int) (json.RawMessage, error)) *aheadRig {
	t.Helper()
	ctx := context.Background()
	st, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "ledger.db"), sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	execute := func(ctx context.Context, in json.RawMessage) (json.RawMessage, error) {
		var args struct {
			ID string `json:"id"`
			N  int    `json:"n"`
		}
		if err := json.Unmarshal(in, &args); err != nil {
			return nil, err
		}
		return check(args.ID, args.N)
	}
	reg := hostfuncs.NewRegistry()
	if err := reg.Register(&hostfuncs.Tool{Namespace: "Gate", Method: "check", Execute: execute},
		&hostfuncs.Tool{Namespace: "Gate", Method: "ask", ReadOnly: hostfuncs.ReadOnlyAlways, Execute: execute}); err != nil {
		t.Fatal(err)
	}
	counted := &pendingCounter{Store: st, byLimit: map[int]int{}}
	rt, err := runtime.New(runtime.Config{Store: counted, Engines: map[string]sandbox.Engine{"js": js.New(js.Options{})}, Tools: reg})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rt.Close(ctx) })
	if _, err := rt.LoadWorkflow(ctx, "w", "w.js", []byte(src)); err != nil {
		t.Fatal(err)
	}
	return &aheadRig{t: t, ctx: ctx, st: st, counted: counted, rt: rt}
}

// publish publishes events id(from) … id(to-1) on topic in, ids e00, e01, …
func (r *aheadRig) publish(from, to int) {
	r.t.Helper()
	var evs []ledger.NewEvent
	for i := from; i < to; i++ {
		evs = append(evs, ledger.NewEvent{Workflow: "w", Topic: "in", MessageID: eventID(i), Payload: json.RawMessage(`{}`)})
	}
	if _, err := r.st.Publish(r.ctx, evs...); err != nil {
		r.t.Fatal(err)
	}
}

func eventID(i int) string { return fmt.Sprintf("e%02d", i) }

func (r *aheadRig) runOnce() {
	r.t.Helper()
	if err := r.rt.RunOnce(r.ctx, []string{"w"}); err != nil {
		r.t.Fatal(err)
	}
}

// seen is the ids the consumer c recorded in its state, in the order its runs
// committed them.
func (r *aheadRig) seen() []string {
	r.t.Helper()
	hs, err := r.st.HandlerState(r.ctx, "w", "c")
	if err != nil {
		r.t.Fatal(err)
	}
	var s struct {
		Seen []string `json:"seen"`
	}
	if len(hs.State) > 0 {
		if err := json.Unmarshal(hs.State, &s); err != nil {
			r.t.Fatal(err)
		}
	}
	return s.Seen
}

// checkOrder checks that c committed exactly the ids want, in that order, and that
// each of them is consumed.
func (r *aheadRig) checkOrder(want []string) {
	r.t.Helper()
	if got := r.seen(); strings.Join(got, ",") != strings.Join(want, ",") {
		r.t.Errorf("consumed in order\n  %v\nwant\n  %v", got, want)
	}
	evs, err := r.st.Events(r.ctx, ledger.EventFilter{Workflow: "w", Topic: "in"})
	if err != nil {
		r.t.Fatal(err)
	}
	consumed := map[string]bool{}
	for _, e := range evs {
		if e.Status == scripthost.EventConsumed {
			consumed[e.MessageID] = true
		}
	}
	for _, id := range want {
		if !consumed[id] {
			r.t.Errorf("event %s: not consumed", id)
		}
	}
	if len(consumed) != len(want) {
		r.t.Errorf("%d events consumed, want %d", len(consumed), len(want))
	}
}

func (r *aheadRig) runsByStatus() map[scripthost.RunStatus]int {
	r.t.Helper()
	runs, err := r.st.Runs(r.ctx, ledger.RunFilter{Workflow: "w"})
	if err != nil {
		r.t.Fatal(err)
	}
	out := map[scripthost.RunStatus]int{}
	for _, run := range runs {
		out[run.Status]++
	}
	return out
}

func ids(from, to int, except ...int) []string {
	var out []string
	for i := from; i < to; i++ {
		if !containsInt(except, i) {
			out = append(out, eventID(i))
		}
	}
	return out
}

func containsInt(list []int, n int) bool {
	for _, x := range list {
		if x == n {
			return true
		}
	}
	return false
}

// oneByOne is a consumer that peeks the oldest pending event, makes the mutation
// Gate.check with its id and the number of events consumed before, and records the
// ids it consumed in its state.
const oneByOne = `export default { topics: ['in'], consumers: { c: { subscribe: ['in'],
  onError: { strategy: 'retry', maxRetries: 3, delayMs: 0 },
  async prepare(state) { const e = await Topics.peek({ topic: 'in', limit: 1 });
    return e.length ? { reservations: [{ topic: 'in', ids: [e[0].id] }], data: e[0].id } : null; },
  async mutate(id) { await Gate.check({ id, n: ((__state__ && __state__.seen) || []).length }); },
  next(id) { return { seen: ((__state__ && __state__.seen) || []).concat([id]) }; } } } };`

var okJSON = json.RawMessage(`{}`)

// TestReadAheadServesBacklog: a consumer working through a backlog reads the pending
// events about once per readAhead runs instead of before every run, and consumes
// every event once, oldest first.
func TestReadAheadServesBacklog(t *testing.T) {
	r := newAheadRig(t, oneByOne, func(string, int) (json.RawMessage, error) { return okJSON, nil })
	const n = 40
	r.publish(0, n)
	r.runOnce()
	r.checkOrder(ids(0, n))
	if got := r.runsByStatus(); got[scripthost.StatusCommitted] != n || len(got) != 1 {
		t.Errorf("runs by status %v, want %d committed", got, n)
	}
	if got := r.counted.reads(); got > n/8+3 {
		t.Errorf("%d reads of pending events for %d runs (by limit %v), want at most %d", got, n, r.counted.byLimit, n/8+3)
	}
	t.Logf("%d reads of pending events for %d runs, by limit %v", r.counted.reads(), n, r.counted.byLimit)
}

// TestReadAheadAfterReleasedEvent: a run whose mutation definitely failed (nothing
// happened) releases its event; the consumer's next run (its retry) takes it again before the events read
// ahead of it, and nothing is consumed twice or out of order.
func TestReadAheadAfterReleasedEvent(t *testing.T) {
	var failed atomic.Bool
	r := newAheadRig(t, oneByOne, func(id string, _ int) (json.RawMessage, error) {
		if id == "e03" && failed.CompareAndSwap(false, true) {
			return nil, scripthost.LogicError("not now")
		}
		return okJSON, nil
	})
	r.publish(0, 20)
	r.runOnce()
	r.checkOrder(ids(0, 20))
	if got := r.runsByStatus(); got[scripthost.StatusCommitted] != 20 || got[scripthost.StatusFailedLogic] != 1 || len(got) != 2 {
		t.Errorf("runs by status %v, want 20 committed and the one failed", got)
	}
}

// TestReadAheadSkippedEvent: an operator sets aside a pending event that the
// consumer read ahead: no run fails for it (the run that would have reserved it is
// begun again after a read), and the others are consumed once, in order.
func TestReadAheadSkippedEvent(t *testing.T) {
	var r *aheadRig
	r = newAheadRig(t, oneByOne, func(id string, _ int) (json.RawMessage, error) {
		if id == "e02" {
			if _, err := r.st.SkipEvent(context.Background(), "w", "in", "e05"); err != nil {
				return nil, err
			}
		}
		return okJSON, nil
	})
	r.publish(0, 20)
	r.runOnce()
	r.checkOrder(ids(0, 20, 5))
	if got := r.runsByStatus(); got[scripthost.StatusCommitted] != 19 || len(got) != 1 {
		t.Errorf("runs by status %v, want 19 committed and nothing else", got)
	}
	evs, err := r.st.Events(r.ctx, ledger.EventFilter{Workflow: "w", Topic: "in", MessageID: "e05"})
	if err != nil || len(evs) != 1 || evs[0].Status != scripthost.EventSkipped {
		t.Errorf("e05: got %+v (%v), want skipped", evs, err)
	}
}

// guarded is oneByOne without a mutation, with a guard that asks Gate.ask whether to run (any answer
// but {"no":true}).
const guarded = `export default { topics: ['in'], consumers: { c: { subscribe: ['in'],
  async guard(state) { const a = await Gate.ask({ id: 'guard', n: ((state && state.seen) || []).length }); return !a.no; },
  async prepare(state) { const e = await Topics.peek({ topic: 'in', limit: 1 });
    return e.length ? { reservations: [{ topic: 'in', ids: [e[0].id] }], data: e[0].id } : null; },
  next(id) { return { seen: ((__state__ && __state__.seen) || []).concat([id]) }; } } } };`

// TestReadAheadGuardSkip: a run whose guard says no leaves the consumer waiting for a
// newer event, as before; after one, the consumer goes on with the oldest pending
// event, in order.
func TestReadAheadGuardSkip(t *testing.T) {
	var said atomic.Bool
	r := newAheadRig(t, guarded, func(id string, n int) (json.RawMessage, error) {
		if id == "guard" && n == 5 && said.CompareAndSwap(false, true) {
			return json.RawMessage(`{"no":true}`), nil
		}
		return okJSON, nil
	})
	r.publish(0, 20)
	r.runOnce()
	if got := r.seen(); strings.Join(got, ",") != strings.Join(ids(0, 5), ",") {
		t.Fatalf("before a newer event: consumed %v, want %v (the consumer waits after the skip)", got, ids(0, 5))
	}
	r.publish(20, 21)
	r.runOnce()
	r.checkOrder(ids(0, 21))
	if got := r.runsByStatus(); got[scripthost.StatusCommitted] != 21 || got[scripthost.StatusSkipped] != 1 || len(got) != 2 {
		t.Errorf("runs by status %v, want 21 committed and 1 skipped", got)
	}
}

// peekMore is oneByOne whose run after the third commit peeks up to 20 events and
// records how many it got, in its state.
const peekMore = `export default { topics: ['in'], consumers: { c: { subscribe: ['in'],
  async prepare(state) { const n = ((state && state.seen) || []).length;
    const e = await Topics.peek({ topic: 'in', limit: n === 3 ? 20 : 1 });
    return e.length ? { reservations: [{ topic: 'in', ids: [e[0].id] }], data: { id: e[0].id, peeked: e.map(x => x.id) } } : null; },
  next(p) { const s = __state__ || {};
    return { seen: (s.seen || []).concat([p.id]), peeked: p.peeked.length > 1 ? p.peeked : s.peeked }; } } } };`

// TestReadAheadPeekBeyondKept: a prepare phase peeking more events than are kept for
// it gets the ledger's pending events (a read), not the shorter list kept.
func TestReadAheadPeekBeyondKept(t *testing.T) {
	r := newAheadRig(t, peekMore, func(string, int) (json.RawMessage, error) { return okJSON, nil })
	r.publish(0, 20)
	r.runOnce()
	r.checkOrder(ids(0, 20))
	hs, err := r.st.HandlerState(r.ctx, "w", "c")
	if err != nil {
		t.Fatal(err)
	}
	var s struct {
		Peeked []string `json:"peeked"`
	}
	if err := json.Unmarshal(hs.State, &s); err != nil {
		t.Fatal(err)
	}
	if want := ids(3, 20); strings.Join(s.Peeked, ",") != strings.Join(want, ",") {
		t.Errorf("the peek of 20 after 3 runs got %v, want %v", s.Peeked, want)
	}
	if r.counted.byLimit[20] != 1 {
		t.Errorf("reads by limit %v, want the peek of 20 read once", r.counted.byLimit)
	}
}

// competing has two consumers taking turns at the events of one topic, each the
// oldest pending one, with the mutation Gate.check.
const competing = `const take = { subscribe: ['in'],
  async prepare() { const e = await Topics.peek({ topic: 'in', limit: 1 });
    return e.length ? { reservations: [{ topic: 'in', ids: [e[0].id] }], data: e[0].id } : null; },
  async mutate(id) { await Gate.check({ id, n: 0 }); } };
export default { topics: ['in'], consumers: { a: { ...take }, b: { ...take } } };`

// TestReadAheadEventReleasedBehindKept: a run of one consumer holds the oldest event
// while its mutation's outcome is not known (paused for a person); the other consumer works through the
// backlog meanwhile. When an operator resolves that mutation as failed (the event
// pending again, released in the ledger, not by a run of the scheduler), the next run
// takes that event, not the next of a list read ahead while it was reserved.
func TestReadAheadEventReleasedBehindKept(t *testing.T) {
	var r *aheadRig
	var mu sync.Mutex
	var order []string
	var uncertain atomic.Bool
	r = newAheadRig(t, competing, func(id string, _ int) (json.RawMessage, error) {
		if id == "e00" && uncertain.CompareAndSwap(false, true) {
			return nil, scripthost.Errorf(scripthost.ClassNetwork, "", "connection reset")
		}
		if id == "e05" {
			// Gate.check has no reconciler: the outcome waits for a person.
			ms, err := r.st.Mutations(context.Background(), ledger.MutationFilter{Workflow: "w", Status: scripthost.MutationIndeterminate})
			if err != nil || len(ms) != 1 {
				return nil, scripthost.LogicError("the mutation of e00: got %d (%v), want 1 indeterminate", len(ms), err)
			}
			if _, err := r.st.Resolve(context.Background(), ms[0].ID, ledger.Resolution{
				As: scripthost.MutationFailed, By: "operator"}); err != nil {
				return nil, err
			}
		}
		mu.Lock()
		order = append(order, id)
		mu.Unlock()
		return okJSON, nil
	})
	r.publish(0, 20)
	r.runOnce()
	want := append(append(ids(1, 6), "e00"), ids(6, 20)...)
	if strings.Join(order, ",") != strings.Join(want, ",") {
		t.Errorf("mutations made in order\n  %v\nwant\n  %v", order, want)
	}
	evs, err := r.st.Events(r.ctx, ledger.EventFilter{Workflow: "w", Topic: "in", Status: scripthost.EventConsumed})
	if err != nil || len(evs) != 20 {
		t.Errorf("%d events consumed (%v), want 20", len(evs), err)
	}
}
