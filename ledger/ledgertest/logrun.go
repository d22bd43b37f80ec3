package ledgertest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/scripthost/scripthost"
	"github.com/scripthost/scripthost/ledger"
)

// testLogNamesRun checks that every row of the lifecycle log names a run that exists:
// an event attached to a write (WithEvents, or a read noted in a CallLog) that names
// a run the ledger does not hold refuses the whole write with ErrNotFound naming the
// run, whatever the write is, and nothing of it is stored; an event naming another run
// that exists is logged on it.
func testLogNamesRun(f *fixture) {
	const missing = "no-such-run"
	lost := func() ledger.LifecycleEvent {
		return ledger.NewLifecycleEvent(missing, ledger.EventPaused, map[string]any{"why": "test"})
	}
	// state is everything the store holds, its whole lifecycle log included.
	state := func(f *fixture) string {
		f.t.Helper()
		log := must(f.s.LifecycleEvents(f.ctx, ledger.LifecycleFilter{}))(f.t)
		b, err := json.Marshal(log)
		if err != nil {
			f.t.Fatal(err)
		}
		return f.dump() + "log " + string(b) + "\n"
	}
	refused := func(f *fixture, before string, err error) {
		f.t.Helper()
		if !errors.Is(err, ledger.ErrNotFound) || !strings.Contains(fmt.Sprint(err), `"`+missing+`"`) {
			f.t.Errorf("got %v, want ErrNotFound naming run %q", err, missing)
		}
		if after := state(f); after != before {
			f.t.Errorf("store changed by the refused write:\n got  %s\n want %s", after, before)
		}
		if got := must(f.s.LifecycleEvents(f.ctx, ledger.LifecycleFilter{RunID: missing}))(f.t); len(got) != 0 {
			f.t.Errorf("got %d lifecycle events of run %s, want none", len(got), missing)
		}
		if got := must(f.s.Snapshots(f.ctx, missing))(f.t); len(got) != 0 {
			f.t.Errorf("got %d snapshots of run %s, want none", len(got), missing)
		}
	}

	writes := []struct {
		name string
		// setup builds what the write needs and returns the write, made with ctx.
		setup func(f *fixture) func(ctx context.Context) error
	}{
		{"a transition of another run", func(f *fixture) func(ctx context.Context) error {
			b := f.consumer(stPending)
			return func(ctx context.Context) error {
				return second(f.s.SetRunStatus(ctx, b.run.ID, ledger.StatusChange{Status: scripthost.StatusPausedApproval}))
			}
		}},
		{"the creation of another run", func(f *fixture) func(ctx context.Context) error {
			return func(ctx context.Context) error {
				return second(f.s.CreateRun(ctx, ledger.NewRun{Workflow: wf, Version: 1, Handler: "ship", Kind: scripthost.KindConsumer}))
			}
		}},
		{"the outcome of another run's mutation", func(f *fixture) func(ctx context.Context) error {
			b := f.consumer(stInFlight)
			return func(ctx context.Context) error {
				return second(f.s.ApplyMutation(ctx, b.mut.ID, json.RawMessage(`{}`)))
			}
		}},
		{"a mutation outside a run", func(f *fixture) func(ctx context.Context) error {
			return func(ctx context.Context) error {
				return second(f.s.BeginMutation(ctx, ledger.NewMutation{Namespace: "plan", Method: "file_write",
					Params: json.RawMessage(`{}`), IdempotencyKey: fmt.Sprintf("plan-%d", f.next())}))
			}
		}},
		{"an execution record (a run's warning)", func(f *fixture) func(ctx context.Context) error {
			b := f.consumer(stPending)
			return func(ctx context.Context) error {
				return f.s.AppendExecution(ctx, ledger.ExecutionRecord{ExecutionID: b.run.ID, PlanID: "_warnings/" + wf, StepID: "ship/mutate"})
			}
		}},
		{"a publication", func(f *fixture) func(ctx context.Context) error {
			return func(ctx context.Context) error {
				return second(f.s.Publish(ctx, ledger.NewEvent{Workflow: wf, Topic: "in", MessageID: fmt.Sprintf("p%d", f.next()),
					Payload: json.RawMessage(`{}`)}))
			}
		}},
		{"a schedule", func(f *fixture) func(ctx context.Context) error {
			p := f.producer(false) // so that the store's dump lists its schedule
			return func(ctx context.Context) error {
				return f.s.SetSchedule(ctx, ledger.Schedule{Workflow: p.Workflow, Producer: p.Handler, NextRunAt: f.farFuture()})
			}
		}},
	}
	for _, w := range writes {
		f.with("refused: "+w.name, func(f *fixture) {
			write := w.setup(f)
			before := state(f)
			refused(f, before, write(ledger.WithEvents(f.ctx, lost())))
		})
		f.with("written without it: "+w.name, func(f *fixture) {
			// The same write stores something when no event names a missing run:
			// the refusal above is the event's.
			write := w.setup(f)
			before := state(f)
			if err := write(f.ctx); err != nil {
				f.t.Fatal(err)
			}
			if state(f) == before {
				f.t.Error("the write stored nothing")
			}
		})
	}

	f.with("refused: a read noted in a call log, taken by the next write", func(f *fixture) {
		b := f.consumer(stPending)
		before := state(f)
		ctx := ledger.WithCallLog(f.ctx)
		ledger.NoteCall(ctx, ledger.NewLifecycleEvent(missing, ledger.EventToolCalled, map[string]any{"tool": "Shop.get"}))
		_, err := f.s.AdvancePhase(ctx, b.run.ID, scripthost.RunPending, scripthost.RunPreparing)
		refused(f, before, err)
	})

	f.with("refused: among events of runs that exist", func(f *fixture) {
		a := f.consumer(stPending)
		b := f.consumer(stPending)
		before := state(f)
		other := ledger.NewLifecycleEvent(a.run.ID, ledger.EventPaused, map[string]any{"why": "test"})
		_, err := f.s.SetRunStatus(ledger.WithEvents(f.ctx, other, lost()), b.run.ID,
			ledger.StatusChange{Status: scripthost.StatusPausedApproval})
		refused(f, before, err)
	})

	f.with("logged: an event naming another run that exists", func(f *fixture) {
		a := f.consumer(stPending)
		ev := ledger.NewLifecycleEvent(a.run.ID, ledger.EventToolRefused, map[string]any{"tool": "Shop.ship"})
		if err := f.s.AppendExecution(ledger.WithEvents(f.ctx, ev), ledger.ExecutionRecord{
			ExecutionID: a.run.ID, PlanID: "_warnings/" + wf, StepID: "ship/mutate"}); err != nil {
			f.t.Fatal(err)
		}
		got := must(f.s.LifecycleEvents(f.ctx, ledger.LifecycleFilter{RunID: a.run.ID}))(f.t)
		if len(got) != 1 || got[0].Type != ledger.EventToolRefused {
			f.t.Errorf("got %+v, want the tool_refused event on run %s", got, a.run.ID)
		}
	})
}

// testLogTail: a store that is a ledger.LogTail tells where its lifecycle log ends: a
// number past which the log holds nothing, at or past the last entry LifecycleEvents
// lists, before and after a run's transitions.
func testLogTail(f *fixture) {
	lt, ok := f.s.(ledger.LogTail)
	if !ok {
		f.t.Skip("the store does not tell where its log ends")
	}
	f.with("tail", func(f *fixture) {
		before := must(lt.LastLifecycleSeq(f.ctx))(f.t)
		if evs := must(f.s.LifecycleEvents(f.ctx, ledger.LifecycleFilter{AfterSeq: before}))(f.t); len(evs) != 0 {
			f.t.Fatalf("%d entries after the log's end %d", len(evs), before)
		}
		f.consumer(stInFlight)
		last := must(lt.LastLifecycleSeq(f.ctx))(f.t)
		evs := must(f.s.LifecycleEvents(f.ctx, ledger.LifecycleFilter{AfterSeq: before}))(f.t)
		if len(evs) == 0 || last < evs[len(evs)-1].Seq {
			f.t.Fatalf("log end %d, entries since %d: %v", last, before, evs)
		}
		if after := must(f.s.LifecycleEvents(f.ctx, ledger.LifecycleFilter{AfterSeq: last}))(f.t); len(after) != 0 {
			f.t.Errorf("%d entries after the log's end %d", len(after), last)
		}
	})
}
