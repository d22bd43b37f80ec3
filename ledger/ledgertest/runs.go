package ledgertest

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/scripthost/scripthost"
	"github.com/scripthost/scripthost/ledger"
)

func version(name, src string) ledger.WorkflowVersion {
	sum := sha256.Sum256([]byte(src))
	return ledger.WorkflowVersion{Workflow: name, Language: "js", Path: name + "/workflow.js", Source: []byte(src),
		Hash: hex.EncodeToString(sum[:]), Definition: json.RawMessage(`{"handlers":["ship"]}`)}
}

func testWorkflows(f *fixture) {
	t, s, ctx := f.t, f.s, f.ctx
	v1 := must(s.PutWorkflow(ctx, version(wf, "export const a = 1")))(t)
	if v1.Version != 1 || v1.CreatedAt.IsZero() {
		t.Fatalf("got version %d created %v, want 1 and a time", v1.Version, v1.CreatedAt)
	}
	again := must(s.PutWorkflow(ctx, version(wf, "export const a = 1")))(t)
	if again.Version != 1 || !again.CreatedAt.Equal(v1.CreatedAt) {
		t.Errorf("same source: got version %d, want the latest (1) unchanged", again.Version)
	}
	v2 := must(s.PutWorkflow(ctx, version(wf, "export const a = 2")))(t)
	if v2.Version != 2 {
		t.Errorf("new source: got version %d, want 2", v2.Version)
	}
	back := must(s.PutWorkflow(ctx, version(wf, "export const a = 1")))(t)
	if back.Version != 3 {
		t.Errorf("source of an older version: got version %d, want 3", back.Version)
	}
	got := must(s.WorkflowVersion(ctx, wf, 2))(t)
	want := version(wf, "export const a = 2")
	if string(got.Source) != string(want.Source) || got.Hash != want.Hash || got.Language != "js" ||
		got.Path != want.Path || string(got.Definition) != string(want.Definition) || !got.CreatedAt.Equal(v2.CreatedAt) {
		t.Errorf("got %+v, want %+v", got, want)
	}
	w := must(s.Workflow(ctx, wf))(t)
	if w.Name != wf || w.LatestVersion != 3 || w.Paused {
		t.Errorf("got workflow %+v, want latest 3, not paused", w)
	}
	must(s.PutWorkflow(ctx, version("billing", "x")))(t)
	ws := must(s.Workflows(ctx))(t)
	if len(ws) != 2 {
		t.Fatalf("got %d workflows, want 2", len(ws))
	}
	if err := s.SetWorkflowPaused(ctx, wf, true); err != nil {
		t.Fatal(err)
	}
	if w := must(s.Workflow(ctx, wf))(t); !w.Paused {
		t.Errorf("got paused %v, want true", w.Paused)
	}
	before := f.dump()
	for name, err := range map[string]error{
		"version of unknown workflow": second(s.WorkflowVersion(ctx, "nope", 1)),
		"unknown version":             second(s.WorkflowVersion(ctx, wf, 9)),
		"unknown workflow":            second(s.Workflow(ctx, "nope")),
		"pause unknown workflow":      s.SetWorkflowPaused(ctx, "nope", true),
	} {
		if !errors.Is(err, ledger.ErrNotFound) {
			t.Errorf("%s: got %v, want ErrNotFound", name, err)
		}
	}
	f.unchanged(before)

	// A name belongs to one origin: another file claiming it is refused, naming both.
	other := version(wf, "export const a = 4")
	other.Path = "elsewhere/workflow.js"
	before = f.dump()
	_, err := s.PutWorkflow(ctx, other)
	var oe *ledger.OriginError
	if !errors.Is(err, ledger.ErrOriginConflict) || !errors.As(err, &oe) || oe.Have != want.Path || oe.Want != other.Path {
		t.Fatalf("another origin: got %v, want an *OriginError naming %s and %s", err, want.Path, other.Path)
	}
	f.unchanged(before)
	// Same source from another origin is refused too: it would silently share events.
	same := version(wf, "export const a = 1")
	same.Path = other.Path
	if _, err := s.PutWorkflow(ctx, same); !errors.Is(err, ledger.ErrOriginConflict) {
		t.Errorf("same source, another origin: got %v, want ErrOriginConflict", err)
	}
	same.Replace = true
	moved := must(s.PutWorkflow(ctx, same))(t)
	if moved.Version != 4 || moved.Path != other.Path {
		t.Errorf("replace: got version %d at %s, want 4 at %s", moved.Version, moved.Path, other.Path)
	}
	if _, err := s.PutWorkflow(ctx, version(wf, "export const a = 5")); !errors.Is(err, ledger.ErrOriginConflict) {
		t.Errorf("the old origin after a replace: got %v, want ErrOriginConflict", err)
	}
}

func second[T any](_ T, err error) error { return err }

func testPublish(f *fixture) {
	t, s, ctx := f.t, f.s, f.ctx
	evs := must(s.Publish(ctx,
		ledger.NewEvent{Workflow: wf, Topic: "in", MessageID: "a", Payload: json.RawMessage(`{"v":1}`), CausedBy: "run-x"},
		ledger.NewEvent{Workflow: wf, Topic: "in", MessageID: "b", Payload: json.RawMessage(`{"v":2}`)},
		ledger.NewEvent{Workflow: wf, Topic: "other", MessageID: "a", Payload: json.RawMessage(`{"v":3}`)},
	))(t)
	if len(evs) != 3 {
		t.Fatalf("got %d events, want 3", len(evs))
	}
	for i, e := range evs {
		if e.Status != scripthost.EventPending || e.Attempt != 0 || e.ReservedBy != "" || e.CreatedAt.IsZero() {
			t.Errorf("event %d: got %+v, want pending, attempt 0", i, e)
		}
		if i > 0 && e.Seq <= evs[i-1].Seq {
			t.Errorf("event %d: got seq %d after %d, want increasing", i, e.Seq, evs[i-1].Seq)
		}
	}
	if evs[0].CausedBy != "run-x" || string(evs[0].Payload) != `{"v":1}` {
		t.Errorf("got %+v, want caused by run-x with its payload", evs[0])
	}
	again := must(s.Publish(ctx,
		ledger.NewEvent{Workflow: wf, Topic: "in", MessageID: "c", Payload: json.RawMessage(`{"v":4}`)},
		ledger.NewEvent{Workflow: wf, Topic: "in", MessageID: "a", Payload: json.RawMessage(`{"v":99}`)},
	))(t)
	if len(again) != 2 || again[0].MessageID != "c" || again[1].Seq != evs[0].Seq || string(again[1].Payload) != `{"v":1}` {
		t.Errorf("duplicate: got %+v, want the new event then the stored one", again)
	}
	pending := must(s.PendingEvents(ctx, wf, "in", 0))(t)
	if got := ids(pending); got != "a,b,c" {
		t.Errorf("pending: got %s, want a,b,c", got)
	}
	if got := ids(must(s.PendingEvents(ctx, wf, "in", 2))(t)); got != "a,b" {
		t.Errorf("pending limit 2: got %s, want a,b", got)
	}
	if got := ids(must(s.Events(ctx, ledger.EventFilter{Topic: "other"}))(t)); got != "a" {
		t.Errorf("topic other: got %s, want a", got)
	}

	bad := []struct {
		name string
		ev   ledger.NewEvent
	}{
		{"no message id", ledger.NewEvent{Workflow: wf, Topic: "in", Payload: json.RawMessage(`{}`)}},
		{"no topic", ledger.NewEvent{Workflow: wf, MessageID: "z", Payload: json.RawMessage(`{}`)}},
		{"payload not JSON", ledger.NewEvent{Workflow: wf, Topic: "in", MessageID: "z", Payload: json.RawMessage(`{not json`)}},
	}
	for _, tc := range bad {
		f.with(tc.name, func(f *fixture) {
			before := f.dump()
			_, err := f.s.Publish(ctx,
				ledger.NewEvent{Workflow: wf, Topic: "in", MessageID: "first", Payload: json.RawMessage(`{}`)},
				tc.ev,
				ledger.NewEvent{Workflow: wf, Topic: "in", MessageID: "last", Payload: json.RawMessage(`{}`)})
			if err == nil {
				f.t.Fatal("got no error for a batch with a bad element")
			}
			f.unchanged(before)
		})
	}
}

func ids(evs []scripthost.Event) string {
	var s string
	for i, e := range evs {
		if i > 0 {
			s += ","
		}
		s += e.MessageID
	}
	return s
}

func testCreateRun(f *fixture) {
	t, s, ctx := f.t, f.s, f.ctx
	r := must(s.CreateRun(ctx, ledger.NewRun{Workflow: wf, Version: 2, Handler: "ship", Kind: scripthost.KindConsumer,
		InputState: json.RawMessage(`{"cursor":5}`)}))(t)
	if r.ID == "" || r.Phase != scripthost.RunPending || r.Status != scripthost.StatusActive || r.Attempt != 1 ||
		r.Version != 2 || string(r.InputState) != `{"cursor":5}` || r.CreatedAt.IsZero() || r.RetryOf != "" {
		t.Errorf("got %+v, want a pending active first attempt", r)
	}
	got := must(s.Run(ctx, r.ID))(t)
	if mustJSON(t, got) != mustJSON(t, r) {
		t.Errorf("read back: got %s, want %s", mustJSON(t, got), mustJSON(t, r))
	}
	other := must(s.CreateRun(ctx, ledger.NewRun{Workflow: "billing", Version: 1, Handler: "charge", Kind: scripthost.KindConsumer}))(t)
	if other.ID == r.ID {
		t.Fatalf("got the same id %s twice", r.ID)
	}
	if n := len(must(s.Runs(ctx, ledger.RunFilter{Workflow: wf}))(t)); n != 1 {
		t.Errorf("runs of %s: got %d, want 1", wf, n)
	}
	if n := len(must(s.Runs(ctx, ledger.RunFilter{Unfinished: true}))(t)); n != 2 {
		t.Errorf("unfinished runs: got %d, want 2", n)
	}
	// Oldest first by default; Newest with Limit 1 gives a handler's latest run, even
	// when the clock did not move between the two.
	second := must(s.CreateRun(ctx, ledger.NewRun{Workflow: wf, Version: 2, Handler: "ship", Kind: scripthost.KindConsumer}))(t)
	if runs := must(s.Runs(ctx, ledger.RunFilter{Workflow: wf, Handler: "ship"}))(t); len(runs) != 2 || runs[0].ID != r.ID || runs[1].ID != second.ID {
		t.Errorf("runs oldest first: got %v, want %s then %s", runs, r.ID, second.ID)
	}
	if runs := must(s.Runs(ctx, ledger.RunFilter{Workflow: wf, Handler: "ship", Newest: true, Limit: 1}))(t); len(runs) != 1 || runs[0].ID != second.ID {
		t.Errorf("newest run: got %v, want %s", runs, second.ID)
	}
	before := f.dump()
	if _, err := s.CreateRun(ctx, ledger.NewRun{Workflow: wf, Handler: "ship", Kind: "sideways"}); err == nil {
		t.Error("unknown kind: got no error")
	}
	if _, err := s.Run(ctx, "no-such-run"); !errors.Is(err, ledger.ErrNotFound) {
		t.Errorf("unknown run: got %v, want ErrNotFound", err)
	}
	f.unchanged(before)
}

func mustJSON(t interface{ Fatalf(string, ...any) }, v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatalf("marshal: %v", err)
	}
	return string(b)
}

func testAdvancePhase(f *fixture) {
	legal := []struct {
		stage    string
		from, to scripthost.RunPhase
	}{
		{stPending, scripthost.RunPending, scripthost.RunPreparing},
		{stPrepared, scripthost.RunPrepared, scripthost.RunMutating},
		{stParked, scripthost.RunMutated, scripthost.RunEmitting},
	}
	for _, tc := range legal {
		f.with(fmt.Sprintf("%s to %s", tc.from, tc.to), func(f *fixture) {
			b := f.consumer(tc.stage)
			r := must(f.s.AdvancePhase(f.ctx, b.run.ID, tc.from, tc.to))(f.t)
			if r.Phase != tc.to || r.Status != scripthost.StatusActive {
				f.t.Errorf("got %s/%s, want %s/active", r.Phase, r.Status, tc.to)
			}
			if got := must(f.s.Run(f.ctx, b.run.ID))(f.t); got.Phase != tc.to {
				f.t.Errorf("stored: got phase %s, want %s", got.Phase, tc.to)
			}
		})
	}
	f.with("producer pending to executing", func(f *fixture) {
		r := f.producer(true)
		if r.Phase != scripthost.RunExecuting {
			f.t.Errorf("got phase %s, want executing", r.Phase)
		}
	})

	illegal := []struct {
		name     string
		stage    string
		pause    bool
		from, to scripthost.RunPhase
	}{
		{"backward", stPreparing, false, scripthost.RunPreparing, scripthost.RunPending},
		{"same phase", stPending, false, scripthost.RunPending, scripthost.RunPending},
		{"from is not the current phase", stPending, false, scripthost.RunPreparing, scripthost.RunMutating},
		{"to prepared needs MarkPrepared", stPreparing, false, scripthost.RunPreparing, scripthost.RunPrepared},
		{"skipping prepared", stPending, false, scripthost.RunPending, scripthost.RunMutating},
		{"to mutated needs the outcome", stMutating, false, scripthost.RunMutating, scripthost.RunMutated},
		{"skipping mutated", stInFlight, false, scripthost.RunMutating, scripthost.RunEmitting},
		{"to committed needs a commit", stEmitting, false, scripthost.RunEmitting, scripthost.RunCommitted},
		{"producer phase on a consumer", stPending, false, scripthost.RunPending, scripthost.RunExecuting},
		{"unknown phase", stPending, false, scripthost.RunPending, "flying"},
		{"paused run", stPrepared, true, scripthost.RunPrepared, scripthost.RunMutating},
		{"committed run", stCommitted, false, scripthost.RunCommitted, scripthost.RunEmitting},
	}
	for _, tc := range illegal {
		f.with(tc.name, func(f *fixture) {
			b := f.consumer(tc.stage)
			if tc.pause {
				must(f.s.SetRunStatus(f.ctx, b.run.ID, ledger.StatusChange{Status: scripthost.StatusPausedApproval}))(f.t)
			}
			before := f.dump()
			_, err := f.s.AdvancePhase(f.ctx, b.run.ID, tc.from, tc.to)
			f.refused(before, err, nil)
		})
	}
	f.with("producer to committed needs a commit", func(f *fixture) {
		r := f.producer(true)
		before := f.dump()
		_, err := f.s.AdvancePhase(f.ctx, r.ID, scripthost.RunExecuting, scripthost.RunCommitted)
		f.refused(before, err, nil)
	})
	f.with("consumer phase on a producer", func(f *fixture) {
		r := f.producer(false)
		before := f.dump()
		_, err := f.s.AdvancePhase(f.ctx, r.ID, scripthost.RunPending, scripthost.RunPreparing)
		f.refused(before, err, nil)
	})
	f.with("unknown run", func(f *fixture) {
		before := f.dump()
		_, err := f.s.AdvancePhase(f.ctx, "no-such-run", scripthost.RunPending, scripthost.RunPreparing)
		f.refused(before, err, ledger.ErrNotFound)
	})
}

func testMarkPrepared(f *fixture) {
	f.with("reserves every named event", func(f *fixture) {
		b := f.consumer(stPrepared)
		r := b.run
		if r.Phase != scripthost.RunPrepared || string(r.Prepared) == "" || len(r.Reservations) != 1 || len(r.Reservations[0].IDs) != 2 {
			f.t.Fatalf("got %+v, want prepared with data and reservations", r)
		}
		f.wantEvents(b.events, scripthost.EventReserved, r.ID)
		for _, e := range f.eventsOf(b.events) {
			if e.Attempt != 1 {
				f.t.Errorf("event %s: got attempt %d, want 1", e.MessageID, e.Attempt)
			}
		}
	})
	f.with("no reservations", func(f *fixture) {
		b := f.consumer(stPreparing)
		r := must(f.s.MarkPrepared(f.ctx, b.run.ID, ledger.PrepareResult{Data: json.RawMessage(`null`)}))(f.t)
		if r.Phase != scripthost.RunPrepared {
			f.t.Errorf("got phase %s, want prepared", r.Phase)
		}
		f.wantEvents(b.events, scripthost.EventPending, "")
	})

	// The first event is always available; the second is not, in a different way each
	// time. Nothing may be left behind: the first event stays pending, the run preparing.
	unavailable := []struct {
		name   string
		second func(f *fixture, first scripthost.Event) scripthost.Reservation
	}{
		{"missing event", func(f *fixture, first scripthost.Event) scripthost.Reservation {
			return scripthost.Reservation{Topic: "in", IDs: []string{first.MessageID, "does-not-exist"}}
		}},
		{"event reserved by another run", func(f *fixture, first scripthost.Event) scripthost.Reservation {
			other := f.consumer(stPrepared)
			return scripthost.Reservation{Topic: "in", IDs: []string{first.MessageID, other.events[0].MessageID}}
		}},
		{"consumed event", func(f *fixture, first scripthost.Event) scripthost.Reservation {
			other := f.consumer(stCommitted)
			return scripthost.Reservation{Topic: "in", IDs: []string{first.MessageID, other.events[0].MessageID}}
		}},
		{"event of another workflow", func(f *fixture, first scripthost.Event) scripthost.Reservation {
			must(f.s.Publish(f.ctx, ledger.NewEvent{Workflow: "billing", Topic: "in", MessageID: "foreign", Payload: json.RawMessage(`{}`)}))(f.t)
			return scripthost.Reservation{Topic: "in", IDs: []string{first.MessageID, "foreign"}}
		}},
		{"same event twice", func(f *fixture, first scripthost.Event) scripthost.Reservation {
			return scripthost.Reservation{Topic: "in", IDs: []string{first.MessageID, first.MessageID}}
		}},
	}
	for _, tc := range unavailable {
		f.with(tc.name, func(f *fixture) {
			b := f.consumer(stPreparing)
			res := tc.second(f, b.events[0])
			before := f.dump()
			_, err := f.s.MarkPrepared(f.ctx, b.run.ID, ledger.PrepareResult{Data: json.RawMessage(`{}`), Reservations: []scripthost.Reservation{res}})
			f.refused(before, err, ledger.ErrEventUnavailable)
			f.wantEvents(b.events[:1], scripthost.EventPending, "")
			if r := must(f.s.Run(f.ctx, b.run.ID))(f.t); r.Phase != scripthost.RunPreparing {
				f.t.Errorf("got phase %s, want preparing", r.Phase)
			}
		})
	}
	f.with("second topic missing", func(f *fixture) {
		b := f.consumer(stPreparing)
		before := f.dump()
		_, err := f.s.MarkPrepared(f.ctx, b.run.ID, ledger.PrepareResult{Reservations: []scripthost.Reservation{
			{Topic: "in", IDs: []string{b.events[0].MessageID}}, {Topic: "nowhere", IDs: []string{"x"}}}})
		f.refused(before, err, ledger.ErrEventUnavailable)
	})
	for _, stage := range []string{stPending, stPrepared, stMutating} {
		f.with("from "+stage, func(f *fixture) {
			b := f.consumer(stage)
			fresh := f.publish("in", fmt.Sprintf("fresh-%d", f.next()))
			before := f.dump()
			_, err := f.s.MarkPrepared(f.ctx, b.run.ID, ledger.PrepareResult{Reservations: []scripthost.Reservation{{Topic: "in", IDs: []string{fresh[0].MessageID}}}})
			f.refused(before, err, nil)
		})
	}
	f.with("paused run", func(f *fixture) {
		b := f.consumer(stPreparing)
		must(f.s.SetRunStatus(f.ctx, b.run.ID, ledger.StatusChange{Status: scripthost.StatusPausedTransient}))(f.t)
		before := f.dump()
		_, err := f.s.MarkPrepared(f.ctx, b.run.ID, ledger.PrepareResult{Reservations: []scripthost.Reservation{{Topic: "in", IDs: []string{b.events[0].MessageID}}}})
		f.refused(before, err, nil)
	})
}

func testMarkMutated(f *fixture) {
	f.with("no mutation", func(f *fixture) {
		b := f.consumer(stMutating)
		r := must(f.s.MarkMutated(f.ctx, b.run.ID))(f.t)
		if r.Phase != scripthost.RunEmitting || r.Outcome == nil || r.Outcome.Status != scripthost.OutcomeNone {
			f.t.Errorf("got phase %s outcome %+v, want emitting with outcome none", r.Phase, r.Outcome)
		}
		f.wantEvents(b.events, scripthost.EventReserved, b.run.ID)
	})
	for _, stage := range []string{stPrepared, stInFlight, stIndeterminate, stMutated} {
		f.with("refused at "+stage, func(f *fixture) {
			b := f.consumer(stage)
			before := f.dump()
			_, err := f.s.MarkMutated(f.ctx, b.run.ID)
			f.refused(before, err, nil)
		})
	}
}
