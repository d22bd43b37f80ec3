package ledgertest

import (
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"sync"
	"time"

	"github.com/scripthost/scripthost"
	"github.com/scripthost/scripthost/ledger"
)

func testStateAndSchedule(f *fixture) {
	hs := must(f.s.HandlerState(f.ctx, wf, "nobody"))(f.t)
	if hs.Workflow != wf || hs.Handler != "nobody" || hs.State != nil || !hs.WakeAt.IsZero() {
		f.t.Errorf("got %+v, want a zero state naming the handler", hs)
	}
	sc := must(f.s.Schedule(f.ctx, wf, "nobody"))(f.t)
	if sc.Workflow != wf || sc.Producer != "nobody" || !sc.NextRunAt.IsZero() || !sc.LastRunAt.IsZero() {
		f.t.Errorf("got %+v, want a zero schedule naming the producer", sc)
	}
	loc := time.FixedZone("X", 5*3600)
	set := ledger.Schedule{Workflow: wf, Producer: "poll", NextRunAt: time.Date(2030, 1, 1, 12, 0, 0, 1, loc),
		LastRunAt: time.Date(2029, 12, 31, 23, 59, 59, 999999999, loc)}
	if err := f.s.SetSchedule(f.ctx, set); err != nil {
		f.t.Fatal(err)
	}
	got := must(f.s.Schedule(f.ctx, wf, "poll"))(f.t)
	if !got.NextRunAt.Equal(set.NextRunAt) || !got.LastRunAt.Equal(set.LastRunAt) {
		f.t.Errorf("got %+v, want %+v", got, set)
	}
	set.NextRunAt = set.NextRunAt.Add(time.Hour)
	if err := f.s.SetSchedule(f.ctx, set); err != nil {
		f.t.Fatal(err)
	}
	if got := must(f.s.Schedule(f.ctx, wf, "poll"))(f.t); !got.NextRunAt.Equal(set.NextRunAt) {
		f.t.Errorf("updated: got %v, want %v", got.NextRunAt, set.NextRunAt)
	}
}

func testExecutionLog(f *fixture) {
	loc := time.FixedZone("Y", -7*3600)
	recs := []ledger.ExecutionRecord{
		{ExecutionID: "ex-1", PlanID: "plan-a", StepID: "build", Seq: 1, Tool: "Cmd.run",
			Arguments: json.RawMessage(`{"cmd":"make"}`), StartedAt: time.Date(2026, 1, 2, 3, 4, 5, 123456789, loc),
			EndedAt: time.Date(2026, 1, 2, 3, 4, 6, 987654321, loc), DurationMS: 1864, Success: true, ExitCode: 0,
			Stdout: "ok\n", Stderr: "warn\n", Result: json.RawMessage(`{"artifacts":2}`), Diagnostics: json.RawMessage(`[{"line":3}]`)},
		{ExecutionID: "ex-1", PlanID: "plan-a", StepID: "test", Seq: 2, Tool: "Cmd.run",
			Arguments: json.RawMessage(`{"cmd":"test"}`), StartedAt: time.Date(2026, 1, 2, 3, 4, 7, 1, time.UTC),
			EndedAt: time.Date(2026, 1, 2, 3, 4, 8, 2, time.UTC), DurationMS: 1000, Success: false, ExitCode: 2,
			Error: "tests failed", ErrorCode: "script_error"},
		{ExecutionID: "ex-2", PlanID: "plan-b", StepID: "x", Seq: 1, Tool: "Files.write"},
	}
	for _, r := range recs {
		if err := f.s.AppendExecution(f.ctx, r); err != nil {
			f.t.Fatal(err)
		}
	}
	got := must(f.s.Executions(f.ctx, ledger.ExecutionFilter{ExecutionID: "ex-1"}))(f.t)
	if len(got) != 2 {
		f.t.Fatalf("got %d records, want 2", len(got))
	}
	for i, g := range got {
		w := recs[i]
		if !g.StartedAt.Equal(w.StartedAt) || !g.EndedAt.Equal(w.EndedAt) {
			f.t.Errorf("record %d: got times %v %v, want %v %v", i, g.StartedAt, g.EndedAt, w.StartedAt, w.EndedAt)
		}
		g.StartedAt, g.EndedAt, w.StartedAt, w.EndedAt = time.Time{}, time.Time{}, time.Time{}, time.Time{}
		if gj, wj := fmt.Sprintf("%+v", g), fmt.Sprintf("%+v", w); gj != wj {
			f.t.Errorf("record %d:\n got  %s\n want %s", i, gj, wj)
		}
	}
	if n := len(must(f.s.Executions(f.ctx, ledger.ExecutionFilter{PlanID: "plan-b"}))(f.t)); n != 1 {
		f.t.Errorf("plan-b: got %d records, want 1", n)
	}
	if n := len(must(f.s.Executions(f.ctx, ledger.ExecutionFilter{}))(f.t)); n != 3 {
		f.t.Errorf("all: got %d records, want 3", n)
	}
}

func testReconcileQueries(f *fixture) {
	due := f.consumer(stInFlight)
	must(f.s.MarkNeedsReconcile(f.ctx, due.mut.ID, 1, f.longAgo(), "later"))(f.t)
	later := f.consumer(stNeedsReconcile) // next attempt far in the future
	f.consumer(stInFlight)
	now := time.Date(2100, 1, 1, 0, 0, 0, 0, time.UTC)
	if got := must(f.s.DueReconciles(f.ctx, now))(f.t); len(got) != 1 || got[0].ID != due.mut.ID {
		f.t.Errorf("due now: got %d mutations, want only %s", len(got), due.mut.ID)
	}
	if got := must(f.s.DueReconciles(f.ctx, f.farFuture()))(f.t); len(got) != 2 {
		f.t.Errorf("due at the far future: got %d mutations, want 2 (%s and %s)", len(got), due.mut.ID, later.mut.ID)
	}

	if n := must(f.s.FailureCount(f.ctx, "never-seen"))(f.t); n != 0 {
		f.t.Errorf("unknown hash: got %d failures, want 0", n)
	}
	for i := range 2 {
		b := f.consumer(stMutating)
		m := must(f.s.BeginMutation(f.ctx, ledger.NewMutation{RunID: b.run.ID, Namespace: "Shop", Method: "ship",
			InputHash: "same-inputs", IdempotencyKey: fmt.Sprintf("same-inputs/%d", i)}))(f.t)
		must(f.s.FailMutation(f.ctx, m.ID, scripthost.LogicError("no")))(f.t)
	}
	b := f.consumer(stMutating)
	m := must(f.s.BeginMutation(f.ctx, ledger.NewMutation{RunID: b.run.ID, Namespace: "Shop", Method: "ship",
		InputHash: "same-inputs", IdempotencyKey: "same-inputs/2"}))(f.t)
	if n := must(f.s.FailureCount(f.ctx, "same-inputs"))(f.t); n != 2 {
		f.t.Errorf("got %d failures, want 2", n)
	}
	must(f.s.ApplyMutation(f.ctx, m.ID, nil))(f.t)
	if n := must(f.s.FailureCount(f.ctx, "same-inputs"))(f.t); n != 2 {
		f.t.Errorf("after an applied one: got %d failures, want 2", n)
	}
}

// testConcurrency runs many goroutines beginning and applying mutations on different
// runs, while others read and publish the same message; run it with -race.
func testConcurrency(f *fixture) {
	const runs, workers = 32, 16
	var ids []string
	for range runs {
		ids = append(ids, f.consumer(stMutating).run.ID)
	}
	work := make(chan string)
	errs := make(chan error, runs*3+workers*2)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for id := range work {
				m, err := f.s.BeginMutation(f.ctx, ledger.NewMutation{RunID: id, Namespace: "Shop", Method: "ship",
					Params: json.RawMessage(`{}`), InputHash: "c-" + id, IdempotencyKey: "c-" + id})
				if err == nil {
					_, err = f.s.ApplyMutation(f.ctx, m.ID, json.RawMessage(`{"w":`+fmt.Sprint(w)+`}`))
				}
				if err != nil {
					errs <- err
				}
				// Refused writes interleaved with the good ones must leave nothing.
				if _, err := f.s.BeginMutation(f.ctx, ledger.NewMutation{RunID: id, Namespace: "Shop", Method: "ship",
					InputHash: "again-" + id, IdempotencyKey: "again-" + id}); !ledger.IsIllegalTransition(err) {
					errs <- fmt.Errorf("second mutation of %s: got %v, want an illegal transition", id, err)
				}
				if _, err := f.s.Publish(f.ctx, ledger.NewEvent{Workflow: wf, Topic: "race", MessageID: "ok-" + id, Payload: json.RawMessage(`{}`)},
					ledger.NewEvent{Workflow: wf, Topic: "race", MessageID: "bad-" + id, Payload: json.RawMessage(`{`)}); err == nil {
					errs <- fmt.Errorf("bad publish for %s: got no error", id)
				}
			}
		}()
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := f.s.Publish(f.ctx, ledger.NewEvent{Workflow: wf, Topic: "race", MessageID: "same", Payload: json.RawMessage(`{}`)}); err != nil {
				errs <- err
			}
			if _, err := f.s.Recover(f.ctx); err != nil {
				errs <- err
			}
		}()
	}
	for _, id := range ids {
		work <- id
	}
	close(work)
	wg.Wait()
	close(errs)
	for err := range errs {
		f.t.Error(err)
	}
	for _, id := range ids {
		r := must(f.s.Run(f.ctx, id))(f.t)
		if r.Phase != scripthost.RunEmitting || r.Outcome == nil || r.Outcome.Status != scripthost.OutcomeApplied {
			f.t.Errorf("run %s: got %s %+v, want emitting with an applied outcome", id, r.Phase, r.Outcome)
		}
	}
	if n := len(must(f.s.Mutations(f.ctx, ledger.MutationFilter{Status: scripthost.MutationApplied}))(f.t)); n != runs {
		f.t.Errorf("got %d applied mutations, want %d", n, runs)
	}
	if n := len(must(f.s.Events(f.ctx, ledger.EventFilter{Topic: "race"}))(f.t)); n != 1 {
		f.t.Errorf("same message published concurrently, bad batches refused: got %d events, want 1", n)
	}
	if n := len(must(f.s.Mutations(f.ctx, ledger.MutationFilter{}))(f.t)); n != runs {
		f.t.Errorf("got %d mutations, want %d", n, runs)
	}
}

// testExecutionIDsUnique: a record's (execution id, step) is written once, and
// executors racing on one plan each reserve a number of their own, after every number
// already recorded.
func testExecutionIDsUnique(f *fixture) {
	rec := ledger.ExecutionRecord{ExecutionID: "dup/1/a", PlanID: "dup", StepID: "a", Seq: 1, Tool: "Files.write"}
	if err := f.s.AppendExecution(f.ctx, rec); err != nil {
		f.t.Fatal(err)
	}
	if err := f.s.AppendExecution(f.ctx, rec); !errors.Is(err, ledger.ErrExecutionExists) {
		f.t.Errorf("second record dup/1/a: got %v, want ErrExecutionExists", err)
	}
	if err := f.s.AppendExecution(f.ctx, ledger.ExecutionRecord{ExecutionID: "dup/7/a", PlanID: "dup", StepID: "a"}); err != nil {
		f.t.Fatal(err)
	}
	const racers = 8
	got := make([]int, racers)
	var wg sync.WaitGroup
	for i := range racers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			n, err := f.s.ReserveExecution(f.ctx, "dup")
			if err != nil {
				f.t.Error(err)
			}
			got[i] = n
		}()
	}
	wg.Wait()
	sort.Ints(got)
	for i, n := range got {
		if n != 8+i {
			f.t.Fatalf("got numbers %v, want 8..%d once each", got, 8+racers-1)
		}
	}
	if n := must(f.s.ReserveExecution(f.ctx, "other"))(f.t); n != 1 {
		f.t.Errorf("first number of another plan: got %d, want 1", n)
	}
}
