// Package ledgertest is the conformance suite every ledger.Store passes. It speaks to
// the store only through the ledger.Store interface, so one suite serves every backend.
package ledgertest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/scripthost/scripthost"
	"github.com/scripthost/scripthost/ledger"
)

// Run runs the suite. open returns a fresh, empty store for each subtest; the suite
// closes it.
func Run(t *testing.T, open func(t *testing.T) ledger.Store) {
	tests := []struct {
		name string
		fn   func(f *fixture)
	}{
		{"Workflows", testWorkflows},
		{"Publish", testPublish},
		{"SkipEvent", testSkipEvent},
		{"CreateRun", testCreateRun},
		{"AdvancePhase", testAdvancePhase},
		{"MarkPrepared", testMarkPrepared},
		{"MarkMutated", testMarkMutated},
		{"BeginMutation", testBeginMutation},
		{"ApplyMutation", testApplyMutation},
		{"FailMutation", testFailMutation},
		{"FailMutationToNext", testFailMutationToNext},
		{"MarkNeedsReconcile", testMarkNeedsReconcile},
		{"MarkIndeterminate", testMarkIndeterminate},
		{"Resolve", testResolve},
		{"PlanStepMutation", testPlanStepMutation},
		{"DispositionBeforeMutation", testDispositionBefore},
		{"DispositionOutcomeUnknown", testDispositionUnknown},
		{"DispositionAfterMutation", testDispositionAfter},
		{"SetRunStatusRefused", testSetRunStatusRefused},
		{"RetryRun", testRetryRun},
		{"Superseded", testSuperseded},
		{"CommitConsumer", testCommitConsumer},
		{"CommitProducer", testCommitProducer},
		{"SkipRun", testSkipRun},
		{"CancelRun", testCancelRun},
		{"CancelAtOutcome", testCancelAtOutcome},
		{"LogTail", testLogTail},
		{"Recover", testRecover},
		{"Snapshots", testSnapshots},
		{"SnapshotsWhole", testSnapshotsWhole},
		{"FoldedTransitions", testFoldedTransitions},
		{"CreatedPrepared", testCreatedPrepared},
		{"MutationCreatesRun", testMutationCreatesRun},
		{"CreatedCommitted", testCreatedCommitted},
		{"CreatedSkipped", testCreatedSkipped},
		{"StateFrom", testStateFrom},
		{"OutcomeMovesOn", testOutcomeMovesOn},
		{"DerivedKey", testDerivedKey},
		{"HandlerStateAndSchedule", testStateAndSchedule},
		{"ExecutionLog", testExecutionLog},
		{"ExecutionIDsUnique", testExecutionIDsUnique},
		{"ReconcileQueries", testReconcileQueries},
		{"Concurrency", testConcurrency},
		{"LifecycleEvents", testLifecycleEvents},
		{"LogNamesRun", testLogNamesRun},
		{"AgentSessions", testAgentSessions},
		{"AgentSessionList", testAgentSessionList},
		{"PagedRuns", testPagedRuns},
		{"PagedMutations", testPagedMutations},
		{"PagedEvents", testPagedEvents},
		{"PagedAgentSessions", testPagedAgentSessions},
		{"ExecutionSummaries", testExecutionSummaries},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := open(t)
			t.Cleanup(func() { s.Close() })
			tc.fn(&fixture{t: t, s: s, ctx: context.Background()})
		})
	}
}

// wf is the workflow the fixtures use.
const wf = "orders"

// fixture is one subtest's store plus helpers that build runs at each stage.
type fixture struct {
	t   *testing.T
	s   ledger.Store
	ctx context.Context
	n   int
}

// with runs fn as a subtest sharing the fixture's store.
func (f *fixture) with(name string, fn func(f *fixture)) {
	f.t.Run(name, func(t *testing.T) {
		g := *f
		g.t = t
		defer func() { f.n = g.n }() // ids stay unique after a failed subtest too
		fn(&g)
	})
}

func (f *fixture) next() int { f.n++; return f.n }

// farFuture and longAgo are fixed times for reconcile schedules.
func (f *fixture) farFuture() time.Time { return time.Date(2200, 1, 2, 3, 4, 5, 6789, time.UTC) }
func (f *fixture) longAgo() time.Time   { return time.Date(2001, 1, 2, 3, 4, 5, 6789, time.UTC) }

// must returns v, failing the test on err: must(s.Run(ctx, id))(t).
func must[T any](v T, err error) func(t testing.TB) T {
	return func(t testing.TB) T {
		t.Helper()
		if err != nil {
			t.Fatalf("unexpected error: %v", err)
		}
		return v
	}
}

func (f *fixture) publish(topic string, ids ...string) []scripthost.Event {
	f.t.Helper()
	var evs []ledger.NewEvent
	for _, id := range ids {
		evs = append(evs, ledger.NewEvent{Workflow: wf, Topic: topic, MessageID: id, Payload: json.RawMessage(`{"id":"` + id + `"}`)})
	}
	return must(f.s.Publish(f.ctx, evs...))(f.t)
}

// Stages a fixture run can be built at.
const (
	stPending        = "pending"
	stPreparing      = "preparing"
	stPrepared       = "prepared"
	stMutating       = "mutating"
	stInFlight       = "in_flight"
	stNeedsReconcile = "needs_reconcile"
	stIndeterminate  = "indeterminate"
	stMutated        = "mutated"
	// stParked is a run in phase mutated with its mutation applied, as versions that
	// did not move a run on to emitting with its outcome left it (see Parker).
	stParked    = "parked"
	stEmitting  = "emitting"
	stCommitted = "committed"
)

var stageOrder = []string{stPending, stPreparing, stPrepared, stMutating, stInFlight, stNeedsReconcile,
	stIndeterminate, stMutated, stParked, stEmitting, stCommitted}

func stageAtLeast(stage, min string) bool {
	idx := func(s string) int {
		for i, x := range stageOrder {
			if x == s {
				return i
			}
		}
		panic("unknown stage " + s)
	}
	return idx(stage) >= idx(min)
}

// built is a consumer run built by the fixture: the run, its mutation (if it got
// one) and the two events its prepare phase reserves.
type built struct {
	run    scripthost.Run
	mut    scripthost.Mutation
	events []scripthost.Event
	key    string
}

// consumer builds a consumer run at stage, with two fresh events reserved from
// prepared on. The mutation (from in_flight on) is applied for the stages after it.
func (f *fixture) consumer(stage string) built {
	f.t.Helper()
	n := f.next()
	b := built{key: fmt.Sprintf("key-%d", n)}
	b.events = f.publish("in", fmt.Sprintf("m%d-a", n), fmt.Sprintf("m%d-b", n))
	b.run = must(f.s.CreateRun(f.ctx, ledger.NewRun{Workflow: wf, Version: 1, Handler: "ship", Kind: scripthost.KindConsumer,
		InputState: json.RawMessage(fmt.Sprintf(`{"n":%d}`, n))}))(f.t)
	id := b.run.ID
	step := func(min string, fn func() (scripthost.Run, error)) {
		f.t.Helper()
		if stageAtLeast(stage, min) {
			b.run = must(fn())(f.t)
		}
	}
	step(stPreparing, func() (scripthost.Run, error) {
		return f.s.AdvancePhase(f.ctx, id, scripthost.RunPending, scripthost.RunPreparing)
	})
	step(stPrepared, func() (scripthost.Run, error) {
		return f.s.MarkPrepared(f.ctx, id, ledger.PrepareResult{
			Data:         json.RawMessage(fmt.Sprintf(`{"prepared":%d}`, n)),
			Reservations: []scripthost.Reservation{{Topic: "in", IDs: []string{b.events[0].MessageID, b.events[1].MessageID}}},
		})
	})
	step(stMutating, func() (scripthost.Run, error) {
		return f.s.AdvancePhase(f.ctx, id, scripthost.RunPrepared, scripthost.RunMutating)
	})
	if stageAtLeast(stage, stInFlight) {
		b.mut = must(f.s.BeginMutation(f.ctx, ledger.NewMutation{
			RunID: id, Namespace: "Shop", Method: "ship", Params: json.RawMessage(`{"order":1}`),
			InputHash: fmt.Sprintf("hash-%d", n), IdempotencyKey: b.key,
		}))(f.t)
	}
	if stage == stNeedsReconcile || stage == stIndeterminate {
		b.mut = must(f.s.MarkNeedsReconcile(f.ctx, b.mut.ID, 1, f.farFuture(), "timeout"))(f.t)
	}
	if stage == stIndeterminate {
		b.mut = must(f.s.MarkIndeterminate(f.ctx, b.mut.ID, "no answer"))(f.t)
	}
	// Applying the mutation moves the run on through mutated to emitting: the two
	// stages are one since then (a run parked at mutated is an older version's).
	if stageAtLeast(stage, stMutated) {
		b.mut = must(f.s.ApplyMutation(f.ctx, b.mut.ID, json.RawMessage(`{"shipped":true}`)))(f.t)
	}
	if stage == stParked {
		f.park(id)
	}
	step(stCommitted, func() (scripthost.Run, error) {
		return f.s.CommitConsumer(f.ctx, id, ledger.Commit{State: json.RawMessage(`{"done":true}`)})
	})
	b.run = must(f.s.Run(f.ctx, id))(f.t)
	return b
}

// producer builds a producer run in phase pending or executing.
func (f *fixture) producer(executing bool) scripthost.Run {
	f.t.Helper()
	r := must(f.s.CreateRun(f.ctx, ledger.NewRun{Workflow: wf, Version: 1, Handler: "poll", Kind: scripthost.KindProducer}))(f.t)
	if executing {
		r = must(f.s.AdvancePhase(f.ctx, r.ID, scripthost.RunPending, scripthost.RunExecuting))(f.t)
	}
	return r
}

// eventsOf returns the current state of the given events.
func (f *fixture) eventsOf(evs []scripthost.Event) []scripthost.Event {
	f.t.Helper()
	all := must(f.s.Events(f.ctx, ledger.EventFilter{}))(f.t)
	var out []scripthost.Event
	for _, e := range evs {
		for _, a := range all {
			if a.Workflow == e.Workflow && a.Topic == e.Topic && a.MessageID == e.MessageID {
				out = append(out, a)
			}
		}
	}
	if len(out) != len(evs) {
		f.t.Fatalf("got %d events, want %d", len(out), len(evs))
	}
	return out
}

// wantEvents checks the status and holder of each event.
func (f *fixture) wantEvents(evs []scripthost.Event, status scripthost.EventStatus, reservedBy string) {
	f.t.Helper()
	for _, e := range f.eventsOf(evs) {
		if e.Status != status || e.ReservedBy != reservedBy {
			f.t.Errorf("event %s/%s: got %s reserved by %q, want %s reserved by %q",
				e.Topic, e.MessageID, e.Status, e.ReservedBy, status, reservedBy)
		}
	}
}

// dump lists everything the store holds, through the interface, as text: two equal
// dumps mean an unchanged store.
func (f *fixture) dump() string {
	f.t.Helper()
	var b strings.Builder
	add := func(label string, v any) {
		j, err := json.Marshal(v)
		if err != nil {
			f.t.Fatalf("dump %s: %v", label, err)
		}
		fmt.Fprintf(&b, "%s %s\n", label, j)
	}
	for _, w := range must(f.s.Workflows(f.ctx))(f.t) {
		add("workflow", w)
		for v := 1; v <= w.LatestVersion; v++ {
			wv := must(f.s.WorkflowVersion(f.ctx, w.Name, v))(f.t)
			add("version", wv)
			add("source", string(wv.Source))
		}
	}
	handlers := map[[2]string]scripthost.HandlerKind{}
	for _, r := range must(f.s.Runs(f.ctx, ledger.RunFilter{}))(f.t) {
		add("run", r)
		for _, sn := range must(f.s.Snapshots(f.ctx, r.ID))(f.t) {
			add("snapshot", sn)
		}
		handlers[[2]string{r.Workflow, r.Handler}] = r.Kind
	}
	for _, m := range must(f.s.Mutations(f.ctx, ledger.MutationFilter{}))(f.t) {
		add("mutation", m)
	}
	for _, e := range must(f.s.Events(f.ctx, ledger.EventFilter{}))(f.t) {
		add("event", e)
	}
	var keys [][2]string
	for k := range handlers {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool { return keys[i][0]+"/"+keys[i][1] < keys[j][0]+"/"+keys[j][1] })
	for _, k := range keys {
		add("state", must(f.s.HandlerState(f.ctx, k[0], k[1]))(f.t))
		if handlers[k] == scripthost.KindProducer {
			add("schedule", must(f.s.Schedule(f.ctx, k[0], k[1]))(f.t))
		}
	}
	for _, x := range must(f.s.Executions(f.ctx, ledger.ExecutionFilter{}))(f.t) {
		add("execution", x)
	}
	return b.String()
}

// unchanged fails when the store differs from the dump before.
func (f *fixture) unchanged(before string) {
	f.t.Helper()
	after := f.dump()
	if after == before {
		return
	}
	bl, al := strings.Split(before, "\n"), strings.Split(after, "\n")
	for i := 0; i < max(len(bl), len(al)); i++ {
		var x, y string
		if i < len(bl) {
			x = bl[i]
		}
		if i < len(al) {
			y = al[i]
		}
		if x != y {
			f.t.Fatalf("store changed by a refused operation; first difference:\n got  %s\n want %s", y, x)
		}
	}
}

// refused checks that err is target (or an illegal transition when target is nil) and
// that the store is as it was.
func (f *fixture) refused(before string, err error, target error) {
	f.t.Helper()
	if target == nil {
		target = ledger.ErrIllegalTransition
	}
	if !errors.Is(err, target) {
		f.t.Fatalf("got error %v, want %v", err, target)
	}
	if errors.Is(target, ledger.ErrIllegalTransition) {
		var te *ledger.TransitionError
		if !errors.As(err, &te) || te.Entity == "" || te.ID == "" {
			f.t.Errorf("got %#v, want a *ledger.TransitionError naming the entity", err)
		}
	}
	f.unchanged(before)
}
