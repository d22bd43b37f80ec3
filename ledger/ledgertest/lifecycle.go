package ledgertest

import (
	"encoding/json"
	"errors"
	"sort"
	"strings"
	"time"

	"github.com/scripthost/scripthost"
	"github.com/scripthost/scripthost/ledger"
)

func testRetryRun(f *fixture) {
	for _, tc := range []struct {
		stage string
		stop  scripthost.RunStatus
	}{
		{stEmitting, scripthost.StatusFailedInternal},
		{stEmitting, scripthost.StatusPausedTransient},
		{stParked, scripthost.StatusPausedTransient},
	} {
		f.with("after the mutation: "+tc.stage+" "+string(tc.stop), func(f *fixture) {
			b := f.consumer(tc.stage)
			src := must(f.s.SetRunStatus(f.ctx, b.run.ID, ledger.StatusChange{Status: tc.stop, Error: "next threw"}))(f.t)
			r := must(f.s.CreateRetryRun(f.ctx, src.ID, ledger.RetryRun{}))(f.t)
			if r.ID == src.ID || r.Phase != scripthost.RunEmitting || r.Status != scripthost.StatusActive || r.Attempt != 2 ||
				r.RetryOf != src.ID || r.Workflow != src.Workflow || r.Handler != src.Handler || r.Version != src.Version {
				f.t.Fatalf("got %+v, want attempt 2 of %s at emitting", r, src.ID)
			}
			if string(r.Prepared) != string(src.Prepared) || string(r.InputState) != string(src.InputState) ||
				mustJSON(f.t, r.Reservations) != mustJSON(f.t, src.Reservations) || mustJSON(f.t, r.Outcome) != mustJSON(f.t, src.Outcome) {
				f.t.Errorf("got prepared %s input %s reservations %v outcome %+v, want the source's", r.Prepared, r.InputState, r.Reservations, r.Outcome)
			}
			f.wantEvents(b.events, scripthost.EventReserved, r.ID)
			if got := must(f.s.Run(f.ctx, src.ID))(f.t); got.Status != tc.stop {
				f.t.Errorf("source: got status %s, want %s kept", got.Status, tc.stop)
			}
			before := f.dump()
			_, err := f.s.CreateRetryRun(f.ctx, src.ID, ledger.RetryRun{})
			f.refused(before, err, nil)

			must(f.s.CommitConsumer(f.ctx, r.ID, ledger.Commit{State: json.RawMessage(`{"ok":1}`)}))(f.t)
			f.wantEvents(b.events, scripthost.EventConsumed, r.ID)
		})
	}
	f.with("before the mutation", func(f *fixture) {
		b := f.finished(scripthost.MutationFailed)
		r := must(f.s.CreateRetryRun(f.ctx, b.run.ID, ledger.RetryRun{}))(f.t)
		if r.Phase != scripthost.RunPending || r.Status != scripthost.StatusActive || r.Attempt != 2 || r.RetryOf != b.run.ID ||
			string(r.InputState) != string(b.run.InputState) || len(r.Prepared) != 0 || len(r.Reservations) != 0 || r.Outcome != nil {
			f.t.Fatalf("got %+v, want a fresh pending attempt 2 with the input state", r)
		}
		f.wantEvents(b.events, scripthost.EventPending, "")
		// The retry prepares again and can take the same events.
		must(f.s.AdvancePhase(f.ctx, r.ID, scripthost.RunPending, scripthost.RunPreparing))(f.t)
		must(f.s.MarkPrepared(f.ctx, r.ID, ledger.PrepareResult{Reservations: b.run.Reservations}))(f.t)
		f.wantEvents(b.events, scripthost.EventReserved, r.ID)
		// A retry of the retry counts on.
		must(f.s.SetRunStatus(f.ctx, r.ID, ledger.StatusChange{Status: scripthost.StatusPausedTransient}))(f.t)
		r3 := must(f.s.CreateRetryRun(f.ctx, r.ID, ledger.RetryRun{State: json.RawMessage(`{"tries":2}`)}))(f.t)
		if r3.Attempt != 3 || r3.RetryOf != r.ID {
			f.t.Errorf("got attempt %d of %s, want 3 of %s", r3.Attempt, r3.RetryOf, r.ID)
		}
		// The state onRetry returned is the retry's input state, and it is stored.
		if got := must(f.s.Run(f.ctx, r3.ID))(f.t); string(got.InputState) != `{"tries":2}` {
			f.t.Errorf("got input state %s, want the retry state", got.InputState)
		}
	})
	f.with("created failed", func(f *fixture) {
		b := f.finished(scripthost.MutationFailed)
		fail := &ledger.StatusChange{Status: scripthost.StatusFailedLogic, Error: "onRetry broke", ErrorClass: scripthost.ClassLogic}
		r := must(f.s.CreateRetryRun(f.ctx, b.run.ID, ledger.RetryRun{Failed: fail}))(f.t)
		got := must(f.s.Run(f.ctx, r.ID))(f.t)
		if got.Status != scripthost.StatusFailedLogic || got.Error != "onRetry broke" || got.ErrorClass != scripthost.ClassLogic ||
			got.Attempt != 2 || got.RetryOf != b.run.ID {
			f.t.Errorf("got %+v, want attempt 2 failed:logic with the error", got)
		}
		f.wantEvents(b.events, scripthost.EventPending, "")
		// Only a failed status is accepted.
		c := f.finished(scripthost.MutationFailed)
		before := f.dump()
		_, err := f.s.CreateRetryRun(f.ctx, c.run.ID, ledger.RetryRun{Failed: &ledger.StatusChange{Status: scripthost.StatusActive}})
		f.refused(before, err, nil)
	})
	refusals := []struct {
		name  string
		build func(f *fixture) string
	}{
		{"active run", func(f *fixture) string { return f.consumer(stPrepared).run.ID }},
		{"committed run", func(f *fixture) string { return f.consumer(stCommitted).run.ID }},
		{"skipped run", func(f *fixture) string {
			b := f.consumer(stPending)
			must(f.s.SkipRun(f.ctx, b.run.ID, "no"))(f.t)
			return b.run.ID
		}},
		{"indeterminate mutation", func(f *fixture) string { return f.consumer(stIndeterminate).run.ID }},
		{"in_flight mutation of a failed run", func(f *fixture) string {
			b := f.consumer(stInFlight)
			must(f.s.SetRunStatus(f.ctx, b.run.ID, ledger.StatusChange{Status: scripthost.StatusFailedInternal}))(f.t)
			return b.run.ID
		}},
	}
	for _, tc := range refusals {
		f.with("refused: "+tc.name, func(f *fixture) {
			id := tc.build(f)
			before := f.dump()
			_, err := f.s.CreateRetryRun(f.ctx, id, ledger.RetryRun{})
			f.refused(before, err, nil)
		})
	}
	f.with("unknown run", func(f *fixture) {
		before := f.dump()
		_, err := f.s.CreateRetryRun(f.ctx, "no-such-run", ledger.RetryRun{})
		f.refused(before, err, ledger.ErrNotFound)
	})
	f.with("runs the newest version unless pinned", func(f *fixture) {
		for _, src := range []string{"v1", "v2", "v3"} {
			must(f.s.PutWorkflow(f.ctx, version(wf, src)))(f.t)
		}
		b := f.finished(scripthost.MutationFailed) // a run of version 1
		before := f.dump()
		_, err := f.s.CreateRetryRun(f.ctx, b.run.ID, ledger.RetryRun{Version: 9})
		f.refused(before, err, ledger.ErrNotFound)
		r := must(f.s.CreateRetryRun(f.ctx, b.run.ID, ledger.RetryRun{}))(f.t)
		if r.Version != 3 {
			f.t.Errorf("default: got version %d, want the newest (3)", r.Version)
		}
		must(f.s.SetRunStatus(f.ctx, r.ID, ledger.StatusChange{Status: scripthost.StatusFailedLogic}))(f.t)
		if r2 := must(f.s.CreateRetryRun(f.ctx, r.ID, ledger.RetryRun{Version: 2}))(f.t); r2.Version != 2 {
			f.t.Errorf("pinned: got version %d, want 2", r2.Version)
		}
	})
}

func testCommitConsumer(f *fixture) {
	f.with("commits", func(f *fixture) {
		b := f.consumer(stEmitting)
		wake := time.Date(2030, 5, 6, 7, 8, 9, 123456789, time.UTC)
		old := f.publish("out", "already-there")
		r := must(f.s.CommitConsumer(f.ctx, b.run.ID, ledger.Commit{
			State: json.RawMessage(`{"seen":2}`), Output: json.RawMessage(`{"out":true}`), WakeAt: wake,
			Publish: []ledger.NewEvent{
				{Topic: "out", MessageID: "shipped-1", Payload: json.RawMessage(`{"n":1}`)},
				{Topic: "out", MessageID: "already-there", Payload: json.RawMessage(`{"n":2}`)},
			},
		}))(f.t)
		if r.Phase != scripthost.RunCommitted || r.Status != scripthost.StatusCommitted || string(r.OutputState) != `{"out":true}` {
			f.t.Errorf("got %s/%s output %s, want committed with the output", r.Phase, r.Status, r.OutputState)
		}
		f.wantEvents(b.events, scripthost.EventConsumed, b.run.ID)
		hs := must(f.s.HandlerState(f.ctx, wf, "ship"))(f.t)
		if string(hs.State) != `{"seen":2}` || !hs.WakeAt.Equal(wake) || hs.UpdatedAt.IsZero() {
			f.t.Errorf("state: got %+v, want the committed state waking at %v", hs, wake)
		}
		out := must(f.s.Events(f.ctx, ledger.EventFilter{Topic: "out"}))(f.t)
		if len(out) != 2 || out[0].Seq != old[0].Seq || out[0].CausedBy != "" || out[1].MessageID != "shipped-1" ||
			out[1].CausedBy != b.run.ID || out[1].Workflow != wf || out[1].Status != scripthost.EventPending {
			f.t.Errorf("publications: got %+v, want the old event untouched and shipped-1 caused by the run", out)
		}
	})
	f.with("wake-up from prepare", func(f *fixture) {
		wake := time.Date(2031, 1, 1, 0, 0, 0, 1, time.UTC)
		r := must(f.s.CreateRun(f.ctx, ledger.NewRun{Workflow: wf, Version: 1, Handler: "digest", Kind: scripthost.KindConsumer}))(f.t)
		must(f.s.AdvancePhase(f.ctx, r.ID, scripthost.RunPending, scripthost.RunPreparing))(f.t)
		must(f.s.MarkPrepared(f.ctx, r.ID, ledger.PrepareResult{WakeAt: wake}))(f.t)
		must(f.s.AdvancePhase(f.ctx, r.ID, scripthost.RunPrepared, scripthost.RunMutating))(f.t)
		must(f.s.MarkMutated(f.ctx, r.ID))(f.t)
		must(f.s.CommitConsumer(f.ctx, r.ID, ledger.Commit{State: json.RawMessage(`{"d":1}`)}))(f.t)
		if hs := must(f.s.HandlerState(f.ctx, wf, "digest"))(f.t); !hs.WakeAt.Equal(wake) || string(hs.State) != `{"d":1}` {
			f.t.Errorf("got %+v, want state waking at %v", hs, wake)
		}
	})
	for _, stage := range []string{stPending, stPrepared, stMutating, stInFlight, stParked, stCommitted} {
		f.with("refused at "+stage, func(f *fixture) {
			b := f.consumer(stage)
			before := f.dump()
			_, err := f.s.CommitConsumer(f.ctx, b.run.ID, ledger.Commit{State: json.RawMessage(`{}`)})
			f.refused(before, err, nil)
		})
	}
	f.with("refused when paused", func(f *fixture) {
		b := f.consumer(stEmitting)
		must(f.s.SetRunStatus(f.ctx, b.run.ID, ledger.StatusChange{Status: scripthost.StatusPausedTransient}))(f.t)
		before := f.dump()
		_, err := f.s.CommitConsumer(f.ctx, b.run.ID, ledger.Commit{State: json.RawMessage(`{}`)})
		f.refused(before, err, nil)
	})
	f.with("refused for a producer", func(f *fixture) {
		r := f.producer(true)
		before := f.dump()
		_, err := f.s.CommitConsumer(f.ctx, r.ID, ledger.Commit{State: json.RawMessage(`{}`)})
		f.refused(before, err, nil)
	})
	f.with("bad publication leaves nothing", func(f *fixture) {
		b := f.consumer(stEmitting)
		before := f.dump()
		_, err := f.s.CommitConsumer(f.ctx, b.run.ID, ledger.Commit{State: json.RawMessage(`{"x":1}`), Publish: []ledger.NewEvent{
			{Topic: "out", MessageID: "good", Payload: json.RawMessage(`{}`)},
			{Topic: "out", MessageID: "", Payload: json.RawMessage(`{}`)},
		}})
		if err == nil {
			f.t.Fatal("got no error for a bad publication")
		}
		f.unchanged(before)
	})
}

func testCommitProducer(f *fixture) {
	f.with("commits", func(f *fixture) {
		r := f.producer(true)
		next := time.Date(2030, 1, 2, 3, 4, 5, 987654321, time.UTC)
		c := must(f.s.CommitProducer(f.ctx, r.ID, ledger.Commit{State: json.RawMessage(`{"cursor":9}`), NextRunAt: next,
			Publish: []ledger.NewEvent{{Topic: "in", MessageID: "p1", Payload: json.RawMessage(`{}`)}}}))(f.t)
		if c.Phase != scripthost.RunCommitted || c.Status != scripthost.StatusCommitted || string(c.OutputState) != `{"cursor":9}` {
			f.t.Errorf("got %s/%s output %s, want committed with the state", c.Phase, c.Status, c.OutputState)
		}
		sc := must(f.s.Schedule(f.ctx, wf, "poll"))(f.t)
		if !sc.NextRunAt.Equal(next) || sc.LastRunAt.IsZero() || sc.Producer != "poll" {
			f.t.Errorf("schedule: got %+v, want next %v and a last run", sc, next)
		}
		if hs := must(f.s.HandlerState(f.ctx, wf, "poll"))(f.t); string(hs.State) != `{"cursor":9}` {
			f.t.Errorf("state: got %s, want the committed state", hs.State)
		}
		evs := must(f.s.PendingEvents(f.ctx, wf, "in", 0))(f.t)
		if len(evs) != 1 || evs[0].CausedBy != r.ID {
			f.t.Errorf("publications: got %+v, want p1 caused by the run", evs)
		}
	})
	f.with("refused when pending", func(f *fixture) {
		r := f.producer(false)
		before := f.dump()
		_, err := f.s.CommitProducer(f.ctx, r.ID, ledger.Commit{})
		f.refused(before, err, nil)
	})
	f.with("refused for a consumer", func(f *fixture) {
		b := f.consumer(stEmitting)
		before := f.dump()
		_, err := f.s.CommitProducer(f.ctx, b.run.ID, ledger.Commit{})
		f.refused(before, err, nil)
	})
	f.with("bad publication leaves nothing", func(f *fixture) {
		r := f.producer(true)
		before := f.dump()
		_, err := f.s.CommitProducer(f.ctx, r.ID, ledger.Commit{State: json.RawMessage(`{}`), NextRunAt: time.Now(),
			Publish: []ledger.NewEvent{{Topic: "in", MessageID: "ok", Payload: json.RawMessage(`{}`)}, {Topic: "in", MessageID: "bad", Payload: json.RawMessage(`{`)}}})
		if err == nil {
			f.t.Fatal("got no error for a bad publication")
		}
		f.unchanged(before)
	})
}

func testRecover(f *fixture) {
	want := map[string]bool{}
	for _, stage := range []string{stPending, stPrepared, stInFlight, stMutated, stEmitting} {
		want[f.consumer(stage).run.ID] = true
	}
	if _, ok := f.s.(Parker); ok {
		want[f.consumer(stParked).run.ID] = true
	}
	want[f.producer(true).ID] = true
	inFlight := map[string]bool{f.consumer(stInFlight).mut.ID: true}
	for id := range want {
		if m, err := f.s.RunMutation(f.ctx, id); err == nil && m.Status == scripthost.MutationInFlight {
			inFlight[m.ID] = true
		}
	}
	plan := must(f.s.BeginMutation(f.ctx, ledger.NewMutation{Namespace: "Cmd", Method: "run", IdempotencyKey: "plan-step"}))(f.t)
	inFlight[plan.ID] = true
	// Not to be recovered: paused, failed, skipped, committed runs. A run waiting for
	// its next reconcile attempt is paused; DueReconciles hands its mutation over.
	f.consumer(stNeedsReconcile)
	f.consumer(stIndeterminate)
	f.consumer(stCommitted)
	f.finished(scripthost.MutationFailed)
	p := f.consumer(stPrepared)
	must(f.s.SetRunStatus(f.ctx, p.run.ID, ledger.StatusChange{Status: scripthost.StatusPausedTransient}))(f.t)
	sk := f.consumer(stPending)
	must(f.s.SkipRun(f.ctx, sk.run.ID, "no"))(f.t)
	for id := range inFlight {
		if m := must(f.s.Mutation(f.ctx, id))(f.t); m.RunID != "" {
			want[m.RunID] = true
		}
	}

	rec := must(f.s.Recover(f.ctx))(f.t)
	var gotRuns, gotMuts []string
	for _, r := range rec.Runs {
		gotRuns = append(gotRuns, r.ID)
	}
	for _, m := range rec.InFlight {
		gotMuts = append(gotMuts, m.ID)
	}
	if got, want := sorted(gotRuns), keys(want); got != want {
		f.t.Errorf("runs: got %s, want %s", got, want)
	}
	if got, want := sorted(gotMuts), keys(inFlight); got != want {
		f.t.Errorf("in-flight mutations: got %s, want %s", got, want)
	}
}

func sorted(ss []string) string {
	sort.Strings(ss)
	return strings.Join(ss, ",")
}

func keys(m map[string]bool) string {
	var ss []string
	for k := range m {
		ss = append(ss, k)
	}
	return sorted(ss)
}

func testSnapshots(f *fixture) {
	b := f.consumer(stCommitted)
	snaps := must(f.s.Snapshots(f.ctx, b.run.ID))(f.t)
	want := []scripthost.RunPhase{scripthost.RunPending, scripthost.RunPreparing, scripthost.RunPrepared, scripthost.RunMutating,
		scripthost.RunMutated, scripthost.RunEmitting, scripthost.RunCommitted}
	if len(snaps) != len(want) {
		f.t.Fatalf("got %d snapshots, want %d (one per transition)", len(snaps), len(want))
	}
	for i, sn := range snaps {
		var r scripthost.Run
		if err := json.Unmarshal(sn.Run, &r); err != nil {
			f.t.Fatalf("snapshot %d: %v", i, err)
		}
		if sn.RunID != b.run.ID || sn.Seq != i+1 || sn.Phase != want[i] || r.Phase != want[i] || r.Status != sn.Status || sn.At.IsZero() {
			f.t.Errorf("snapshot %d: got %s seq %d %s/%s (run %s), want seq %d phase %s", i, sn.RunID, sn.Seq, sn.Phase, sn.Status, r.Phase, i+1, want[i])
		}
	}
	var last scripthost.Run
	_ = json.Unmarshal(snaps[len(snaps)-1].Run, &last)
	if mustJSON(f.t, last) != mustJSON(f.t, b.run) {
		f.t.Errorf("last snapshot: got %s, want %s", mustJSON(f.t, last), mustJSON(f.t, b.run))
	}

	p := f.consumer(stPrepared)
	must(f.s.SetRunStatus(f.ctx, p.run.ID, ledger.StatusChange{Status: scripthost.StatusPausedApproval}))(f.t)
	snaps = must(f.s.Snapshots(f.ctx, p.run.ID))(f.t)
	if got := snaps[len(snaps)-1]; got.Status != scripthost.StatusPausedApproval || got.Phase != scripthost.RunPrepared {
		f.t.Errorf("after pause: got %s/%s, want prepared/paused:approval", got.Phase, got.Status)
	}
}

// testSnapshotsWhole: each snapshot of a run reads back, byte for byte, as the JSON of
// the state it was taken of, however the store keeps it (whole, or as what changed
// since the one before): through every phase, a pause with its error and the resume
// that clears it, and the states a transition passes through.
func testSnapshotsWhole(f *fixture) {
	t := f.t
	evs := f.publish("in", "whole-a")
	var want []string
	add := func(r scripthost.Run, via ...scripthost.RunPhase) {
		for _, p := range via {
			v := r
			v.Phase = p
			want = append(want, mustJSON(t, v))
		}
		want = append(want, mustJSON(t, r))
	}
	r := must(f.s.CreateRun(f.ctx, ledger.NewRun{Workflow: wf, Version: 1, Handler: "ship", Kind: scripthost.KindConsumer,
		InputState: json.RawMessage(`{"n":1,"s":"` + strings.Repeat("x", 500) + `"}`), Start: scripthost.RunPreparing}))(t)
	add(r, scripthost.RunPending)
	r = must(f.s.MarkPrepared(f.ctx, r.ID, ledger.PrepareResult{Data: json.RawMessage(`{"order":7}`), Mutate: true,
		Reservations: []scripthost.Reservation{{Topic: "in", IDs: []string{evs[0].MessageID}}}}))(t)
	add(r, scripthost.RunPrepared)
	r = must(f.s.SetRunStatus(f.ctx, r.ID, ledger.StatusChange{Status: scripthost.StatusPausedTransient,
		Error: "try later", ErrorClass: scripthost.ClassNetwork, NotBefore: f.farFuture()}))(t)
	add(r)
	r = must(f.s.SetRunStatus(f.ctx, r.ID, ledger.StatusChange{Status: scripthost.StatusActive}))(t)
	add(r)
	m := must(f.s.BeginMutation(f.ctx, ledger.NewMutation{RunID: r.ID, Namespace: "Shop", Method: "ship",
		Params: json.RawMessage(`{}`), InputHash: "whole", IdempotencyKey: "whole"}))(t)
	must(f.s.ApplyMutation(f.ctx, m.ID, json.RawMessage(`{"ok":true}`)))(t)
	add(must(f.s.Run(f.ctx, r.ID))(t), scripthost.RunMutated)
	r = must(f.s.CommitConsumer(f.ctx, r.ID, ledger.Commit{State: json.RawMessage(`{"n":2}`)}))(t)
	add(r)
	snaps := must(f.s.Snapshots(f.ctx, r.ID))(t)
	if len(snaps) != len(want) {
		t.Fatalf("got %d snapshots, want %d", len(snaps), len(want))
	}
	for i, sn := range snaps {
		if string(sn.Run) != want[i] || sn.Seq != i+1 {
			t.Errorf("snapshot %d (seq %d):\n%s\nwant\n%s", i+1, sn.Seq, sn.Run, want[i])
		}
	}
}

// testFoldedTransitions: CreateRun with Start and MarkPrepared with Mutate make two
// transitions in one transaction, leaving what the two separate transitions leave:
// the same phases, a snapshot of each state and the events attached.
func testFoldedTransitions(f *fixture) {
	t := f.t
	evs := f.publish("in", "fold-a")
	ctx := ledger.WithEvents(f.ctx, ledger.NewLifecycleEvent("", ledger.EventPhaseStarted, map[string]any{"phase": "prepare"}))
	r := must(f.s.CreateRun(ctx, ledger.NewRun{Workflow: wf, Version: 1, Handler: "ship", Kind: scripthost.KindConsumer,
		Start: scripthost.RunPreparing}))(t)
	if r.Phase != scripthost.RunPreparing || r.Status != scripthost.StatusActive {
		t.Fatalf("created: got %s/%s, want preparing/active", r.Phase, r.Status)
	}
	if got := must(f.s.Run(f.ctx, r.ID))(t); mustJSON(t, got) != mustJSON(t, r) {
		t.Errorf("read back: got %s, want %s", mustJSON(t, got), mustJSON(t, r))
	}
	r = must(f.s.MarkPrepared(f.ctx, r.ID, ledger.PrepareResult{Data: json.RawMessage(`1`), Mutate: true,
		Reservations: []scripthost.Reservation{{Topic: "in", IDs: []string{evs[0].MessageID}}}}))(t)
	if r.Phase != scripthost.RunMutating || string(r.Prepared) != "1" || len(r.Reservations) != 1 {
		t.Fatalf("prepared: got %s %s %v, want mutating with the prepared data and reservation", r.Phase, r.Prepared, r.Reservations)
	}
	if got := must(f.s.Run(f.ctx, r.ID))(t); mustJSON(t, got) != mustJSON(t, r) {
		t.Errorf("read back: got %s, want %s", mustJSON(t, got), mustJSON(t, r))
	}
	if got := must(f.s.Events(f.ctx, ledger.EventFilter{Topic: "in"}))(t); len(got) != 1 || got[0].Status != scripthost.EventReserved {
		t.Errorf("event: got %v, want reserved", got)
	}
	must(f.s.BeginMutation(f.ctx, ledger.NewMutation{RunID: r.ID, Namespace: "Shop", Method: "ship",
		Params: json.RawMessage(`{}`), InputHash: "fold", IdempotencyKey: "fold"}))(t)
	f.wantSnapshots(r.ID, scripthost.RunPending, scripthost.RunPreparing, scripthost.RunPrepared, scripthost.RunMutating)
	if got := must(f.s.LifecycleEvents(f.ctx, ledger.LifecycleFilter{RunID: r.ID}))(t); len(got) != 2 ||
		got[0].Type != ledger.EventPhaseStarted || got[1].Type != ledger.EventMutationRecorded {
		t.Errorf("lifecycle events: got %v, want the phase_started attached to the creation, then mutation_recorded", got)
	}

	p := must(f.s.CreateRun(f.ctx, ledger.NewRun{Workflow: wf, Version: 1, Handler: "poll", Kind: scripthost.KindProducer,
		Start: scripthost.RunExecuting}))(t)
	if p.Phase != scripthost.RunExecuting {
		t.Errorf("producer: got phase %s, want executing", p.Phase)
	}
	before := f.dump()
	for _, bad := range []struct {
		kind  scripthost.HandlerKind
		start scripthost.RunPhase
	}{
		{scripthost.KindConsumer, scripthost.RunPrepared},  // entered only through MarkPrepared
		{scripthost.KindConsumer, scripthost.RunExecuting}, // not a consumer phase
		{scripthost.KindProducer, scripthost.RunCommitted},
	} {
		_, err := f.s.CreateRun(f.ctx, ledger.NewRun{Workflow: wf, Version: 1, Handler: "x", Kind: bad.kind, Start: bad.start})
		if !ledger.IsIllegalTransition(err) {
			t.Errorf("%s run started at %s: got %v, want an illegal transition", bad.kind, bad.start, err)
		}
	}
	f.unchanged(before)
}

// testCreatedPrepared: CreateRun with a prepare phase's result creates the run under
// the id given, prepared and moved on to mutating, its events reserved, in one
// transaction that leaves what CreateRun with Start and MarkPrepared with Mutate leave
// (testFoldedTransitions). Events that are not pending refuse the whole creation, and
// so does a result without Start preparing.
func testCreatedPrepared(f *fixture) {
	t := f.t
	evs := f.publish("in", "cp-a", "cp-b")
	id := f.s.NewID()
	if other := f.s.NewID(); other == id || id == "" {
		t.Fatalf("NewID: got %q then %q, want two different ids", id, other)
	}
	ctx := ledger.WithEvents(f.ctx,
		ledger.NewLifecycleEvent("", ledger.EventPhaseStarted, map[string]any{"phase": "prepare"}),
		ledger.NewLifecycleEvent("", ledger.EventPhaseCompleted, map[string]any{"phase": "prepare"}),
		ledger.NewLifecycleEvent("", ledger.EventPhaseStarted, map[string]any{"phase": "mutate"}))
	wake := time.Date(2031, 1, 2, 3, 4, 5, 0, time.UTC)
	r := must(f.s.CreateRun(ctx, ledger.NewRun{Workflow: wf, Version: 1, Handler: "ship", Kind: scripthost.KindConsumer,
		InputState: json.RawMessage(`{"n":1}`), Start: scripthost.RunPreparing, ID: id,
		Prepared: &ledger.PrepareResult{Data: json.RawMessage(`{"p":2}`), Mutate: true, WakeAt: wake,
			Reservations: []scripthost.Reservation{{Topic: "in", IDs: []string{evs[0].MessageID}}}}}))(t)
	if r.ID != id || r.Phase != scripthost.RunMutating || r.Status != scripthost.StatusActive || r.Attempt != 1 ||
		string(r.Prepared) != `{"p":2}` || len(r.Reservations) != 1 || string(r.InputState) != `{"n":1}` {
		t.Fatalf("created: got %s, want run %s mutating with the prepared data and reservation", mustJSON(t, r), id)
	}
	if got := must(f.s.Run(f.ctx, id))(t); mustJSON(t, got) != mustJSON(t, r) {
		t.Errorf("read back: got %s, want %s", mustJSON(t, got), mustJSON(t, r))
	}
	got := map[string]scripthost.EventStatus{}
	for _, e := range must(f.s.Events(f.ctx, ledger.EventFilter{Topic: "in"}))(t) {
		got[e.MessageID] = e.Status
	}
	if got["cp-a"] != scripthost.EventReserved || got["cp-b"] != scripthost.EventPending {
		t.Errorf("events: got %v, want cp-a reserved and cp-b pending", got)
	}
	f.wantSnapshots(id, scripthost.RunPending, scripthost.RunPreparing, scripthost.RunPrepared, scripthost.RunMutating)
	if les := must(f.s.LifecycleEvents(f.ctx, ledger.LifecycleFilter{RunID: id}))(t); len(les) != 3 || les[0].RunID != id ||
		les[0].Label() != "phase_started(prepare)" || les[2].Label() != "phase_started(mutate)" {
		t.Errorf("lifecycle events: got %v, want the three attached, naming the run", les)
	}
	// The run goes on like any other: its mutation, then the commit saves the wake-up.
	m := must(f.s.BeginMutation(f.ctx, ledger.NewMutation{RunID: id, Namespace: "Shop", Method: "ship",
		Params: json.RawMessage(`{}`), InputHash: "cp", IdempotencyKey: "cp"}))(t)
	must(f.s.ApplyMutation(f.ctx, m.ID, json.RawMessage(`{}`)))(t)
	must(f.s.CommitConsumer(f.ctx, id, ledger.Commit{State: json.RawMessage(`{"n":2}`)}))(t)
	if hs := must(f.s.HandlerState(f.ctx, wf, "ship"))(t); !hs.WakeAt.Equal(wake) {
		t.Errorf("wake-up after commit: got %v, want %v", hs.WakeAt, wake)
	}

	before := f.dump()
	_, err := f.s.CreateRun(f.ctx, ledger.NewRun{Workflow: wf, Version: 1, Handler: "ship", Kind: scripthost.KindConsumer,
		Start: scripthost.RunPreparing, ID: f.s.NewID(), Prepared: &ledger.PrepareResult{Mutate: true,
			Reservations: []scripthost.Reservation{{Topic: "in", IDs: []string{"cp-b", evs[0].MessageID}}}}})
	if !errors.Is(err, ledger.ErrEventUnavailable) {
		t.Errorf("an event consumed already: got %v, want ErrEventUnavailable", err)
	}
	for _, start := range []scripthost.RunPhase{"", scripthost.RunPending} {
		_, err := f.s.CreateRun(f.ctx, ledger.NewRun{Workflow: wf, Version: 1, Handler: "ship", Kind: scripthost.KindConsumer,
			Start: start, Prepared: &ledger.PrepareResult{}})
		if !ledger.IsIllegalTransition(err) {
			t.Errorf("prepared result with start %q: got %v, want an illegal transition", start, err)
		}
	}
	_, err = f.s.CreateRun(f.ctx, ledger.NewRun{Workflow: wf, Version: 1, Handler: "poll", Kind: scripthost.KindProducer,
		Start: scripthost.RunExecuting, Prepared: &ledger.PrepareResult{}})
	if !ledger.IsIllegalTransition(err) {
		t.Errorf("producer with a prepared result: got %v, want an illegal transition", err)
	}
	_, err = f.s.CreateRun(f.ctx, ledger.NewRun{Workflow: wf, Version: 1, Handler: "ship", Kind: scripthost.KindConsumer,
		Start: scripthost.RunPreparing, Prepared: &ledger.PrepareResult{Data: json.RawMessage(`{bad`)}})
	if err == nil {
		t.Error("prepared data that is not JSON: accepted")
	}
	f.unchanged(before)
}

// testMutationCreatesRun: BeginMutation with the run to create writes the run (as
// CreateRun with a prepare result would), reserves its events and records the mutation
// in one transaction, the creation's events logged before mutation_recorded. A run that
// is not the mutation's, one that does not reach mutating, one whose events are taken
// and one that exists already refuse the whole write.
func testMutationCreatesRun(f *fixture) {
	t := f.t
	evs := f.publish("in", "mc-a")
	id := f.s.NewID()
	nr := ledger.NewRun{Workflow: wf, Version: 1, Handler: "ship", Kind: scripthost.KindConsumer,
		Start: scripthost.RunPreparing, ID: id, Prepared: &ledger.PrepareResult{Data: json.RawMessage(`"d"`), Mutate: true,
			Reservations: []scripthost.Reservation{{Topic: "in", IDs: []string{evs[0].MessageID}}}}}
	nm := ledger.NewMutation{RunID: id, Namespace: "Shop", Method: "ship", Params: json.RawMessage(`{"n":1}`), InputHash: "mc"}
	// The first event happened before the write and says when; the others take the
	// write's time.
	began := time.Date(2030, 5, 6, 7, 8, 9, 123456789, time.UTC)
	first := ledger.NewLifecycleEvent(id, ledger.EventPhaseStarted, map[string]any{"phase": "prepare"})
	first.At = began
	ctx := ledger.WithEvents(f.ctx, first,
		ledger.NewLifecycleEvent(id, ledger.EventPhaseCompleted, map[string]any{"phase": "prepare"}),
		ledger.NewLifecycleEvent(id, ledger.EventPhaseStarted, map[string]any{"phase": "mutate"}))
	withRun := nm
	withRun.Run = &nr
	m := must(f.s.BeginMutation(ctx, withRun))(t)
	if m.RunID != id || m.Status != scripthost.MutationInFlight || m.IdempotencyKey != scripthost.IdempotencyKey("mc", 0) ||
		m.Workflow != wf || m.Handler != "ship" {
		t.Errorf("mutation: got %s, want in flight for run %s with the derived key", mustJSON(t, m), id)
	}
	r := must(f.s.Run(f.ctx, id))(t)
	if r.Phase != scripthost.RunMutating || r.Status != scripthost.StatusActive || string(r.Prepared) != `"d"` || len(r.Reservations) != 1 {
		t.Errorf("run: got %s, want mutating with the prepared data and reservation", mustJSON(t, r))
	}
	if got := must(f.s.RunMutation(f.ctx, id))(t); got.ID != m.ID {
		t.Errorf("run's mutation: got %s, want %s", got.ID, m.ID)
	}
	if got := must(f.s.Events(f.ctx, ledger.EventFilter{Topic: "in"}))(t); len(got) != 1 || got[0].Status != scripthost.EventReserved {
		t.Errorf("event: got %v, want reserved", got)
	}
	f.wantSnapshots(id, scripthost.RunPending, scripthost.RunPreparing, scripthost.RunPrepared, scripthost.RunMutating)
	var labels []string
	for i, e := range must(f.s.LifecycleEvents(f.ctx, ledger.LifecycleFilter{RunID: id}))(t) {
		labels = append(labels, e.Label())
		if (i == 0) != e.At.Equal(began) {
			t.Errorf("%s at %v: want %v for the event attached with its time, the write's for the others", e.Label(), e.At, began)
		}
		if e.Type == ledger.EventMutationRecorded && e.MutationID != m.ID {
			t.Errorf("mutation_recorded: got mutation %q, want %s", e.MutationID, m.ID)
		}
	}
	if got, want := strings.Join(labels, " "), "phase_started(prepare) phase_completed(prepare) phase_started(mutate) mutation_recorded"; got != want {
		t.Errorf("lifecycle events: got %s, want %s", got, want)
	}

	f.publish("in", "mc-b")
	before := f.dump()
	other := func(change func(nr *ledger.NewRun, nm *ledger.NewMutation)) error {
		nr := nr
		p := *nr.Prepared
		nr.Prepared = &p
		nr.ID = f.s.NewID()
		nr.Prepared.Reservations = []scripthost.Reservation{{Topic: "in", IDs: []string{"mc-b"}}}
		nm := nm
		nm.RunID, nm.InputHash = nr.ID, "mc-other"
		change(&nr, &nm)
		nm.Run = &nr
		_, err := f.s.BeginMutation(f.ctx, nm)
		return err
	}
	if err := other(func(nr *ledger.NewRun, nm *ledger.NewMutation) { nm.RunID = f.s.NewID() }); !ledger.IsIllegalTransition(err) {
		t.Errorf("a run that is not the mutation's: got %v, want an illegal transition", err)
	}
	if err := other(func(nr *ledger.NewRun, nm *ledger.NewMutation) { nr.Prepared.Mutate = false }); !ledger.IsIllegalTransition(err) {
		t.Errorf("a run left prepared: got %v, want an illegal transition", err)
	}
	if err := other(func(nr *ledger.NewRun, nm *ledger.NewMutation) {
		nr.Prepared.Reservations = []scripthost.Reservation{{Topic: "in", IDs: []string{"mc-b", evs[0].MessageID}}}
	}); !errors.Is(err, ledger.ErrEventUnavailable) {
		t.Errorf("an event reserved already: got %v, want ErrEventUnavailable", err)
	}
	if err := other(func(nr *ledger.NewRun, nm *ledger.NewMutation) { nr.ID, nm.RunID = id, id }); err == nil {
		t.Error("a run that exists already: created again")
	}
	f.unchanged(before)
}

// wantSnapshots checks that the run has one snapshot per phase given, in order,
// numbered from 1.
func (f *fixture) wantSnapshots(runID string, want ...scripthost.RunPhase) {
	f.t.Helper()
	snaps := must(f.s.Snapshots(f.ctx, runID))(f.t)
	if len(snaps) != len(want) {
		f.t.Fatalf("got %d snapshots, want %d (one per state)", len(snaps), len(want))
	}
	for i, sn := range snaps {
		if sn.Seq != i+1 || sn.Phase != want[i] {
			f.t.Errorf("snapshot %d: got seq %d phase %s, want seq %d phase %s", i, sn.Seq, sn.Phase, i+1, want[i])
		}
	}
}

// testCreatedCommitted: CreateRun with a producer phase's result creates the run
// committed in one transaction, leaving what CreateRun with Start and CommitProducer
// leave: state, schedule, publications caused by the run, a snapshot of each state and
// the events attached. A result without Start executing, or with a bad publication,
// refuses the whole creation.
func testCreatedCommitted(f *fixture) {
	t := f.t
	id := f.s.NewID()
	next := time.Date(2030, 1, 2, 3, 4, 5, 987654321, time.UTC)
	ctx := ledger.WithEvents(f.ctx,
		ledger.NewLifecycleEvent(id, ledger.EventPhaseStarted, map[string]any{"phase": "producer"}),
		ledger.NewLifecycleEvent(id, ledger.EventPhaseCompleted, map[string]any{"phase": "producer"}),
		ledger.NewLifecycleEvent(id, ledger.EventCommitted, map[string]any{"published": 1}))
	r := must(f.s.CreateRun(ctx, ledger.NewRun{Workflow: wf, Version: 1, Handler: "poll", Kind: scripthost.KindProducer,
		Start: scripthost.RunExecuting, ID: id, InputState: json.RawMessage(`{"cursor":8}`), Commit: &ledger.Commit{
			State: json.RawMessage(`{"cursor":9}`), NextRunAt: next,
			Publish: []ledger.NewEvent{{Topic: "in", MessageID: "cc1", Payload: json.RawMessage(`{}`)}}}}))(t)
	if r.ID != id || r.Phase != scripthost.RunCommitted || r.Status != scripthost.StatusCommitted ||
		string(r.OutputState) != `{"cursor":9}` || string(r.InputState) != `{"cursor":8}` {
		t.Fatalf("created: got %s, want run %s committed with the state", mustJSON(t, r), id)
	}
	if got := must(f.s.Run(f.ctx, id))(t); mustJSON(t, got) != mustJSON(t, r) {
		t.Errorf("read back: got %s, want %s", mustJSON(t, got), mustJSON(t, r))
	}
	if sc := must(f.s.Schedule(f.ctx, wf, "poll"))(t); !sc.NextRunAt.Equal(next) || sc.LastRunAt.IsZero() {
		t.Errorf("schedule: got %+v, want next %v and a last run", sc, next)
	}
	if hs := must(f.s.HandlerState(f.ctx, wf, "poll"))(t); string(hs.State) != `{"cursor":9}` {
		t.Errorf("state: got %s, want the committed state", hs.State)
	}
	if evs := must(f.s.PendingEvents(f.ctx, wf, "in", 0))(t); len(evs) != 1 || evs[0].CausedBy != id {
		t.Errorf("publications: got %+v, want cc1 caused by the run", evs)
	}
	f.wantSnapshots(id, scripthost.RunPending, scripthost.RunExecuting, scripthost.RunCommitted)
	var labels []string
	for _, e := range must(f.s.LifecycleEvents(f.ctx, ledger.LifecycleFilter{RunID: id}))(t) {
		labels = append(labels, e.Label())
	}
	if got, want := strings.Join(labels, " "), "phase_started(producer) phase_completed(producer) committed"; got != want {
		t.Errorf("lifecycle events: got %s, want %s", got, want)
	}

	before := f.dump()
	for _, start := range []scripthost.RunPhase{"", scripthost.RunPending} {
		_, err := f.s.CreateRun(f.ctx, ledger.NewRun{Workflow: wf, Version: 1, Handler: "poll", Kind: scripthost.KindProducer,
			Start: start, Commit: &ledger.Commit{}})
		if !ledger.IsIllegalTransition(err) {
			t.Errorf("commit with start %q: got %v, want an illegal transition", start, err)
		}
	}
	_, err := f.s.CreateRun(f.ctx, ledger.NewRun{Workflow: wf, Version: 1, Handler: "ship", Kind: scripthost.KindConsumer,
		Start: scripthost.RunPreparing, Commit: &ledger.Commit{}})
	if !ledger.IsIllegalTransition(err) {
		t.Errorf("a consumer created committed: got %v, want an illegal transition", err)
	}
	_, err = f.s.CreateRun(f.ctx, ledger.NewRun{Workflow: wf, Version: 1, Handler: "poll", Kind: scripthost.KindProducer,
		Start: scripthost.RunExecuting, Commit: &ledger.Commit{State: json.RawMessage(`{}`),
			Publish: []ledger.NewEvent{{Topic: "in", MessageID: "ok", Payload: json.RawMessage(`{}`)}, {Topic: "in", MessageID: "bad", Payload: json.RawMessage(`{`)}}}})
	if err == nil {
		t.Error("a bad publication: created")
	}
	f.unchanged(before)
}

// testCreatedSkipped: CreateRun with a guard's no creates the run skipped in one
// transaction, leaving what CreateRun and SkipRun (and SetSchedule for a producer)
// leave: the run pending and skipped with the reason, a snapshot of each state, the
// events attached, and the producer's schedule. Skipped with a start, with a commit, or
// with a schedule not the run's own producer's refuses the whole creation.
func testCreatedSkipped(f *fixture) {
	t := f.t
	next := time.Date(2030, 1, 2, 3, 4, 5, 987654321, time.UTC)
	for _, kind := range []scripthost.HandlerKind{scripthost.KindConsumer, scripthost.KindProducer} {
		id := f.s.NewID()
		ctx := ledger.WithEvents(f.ctx, ledger.NewLifecycleEvent(id, ledger.EventGuardSkipped, map[string]any{"reason": "no"}))
		nr := ledger.NewRun{Workflow: wf, Version: 1, Handler: "ship", Kind: kind, ID: id,
			InputState: json.RawMessage(`{"n":1}`), Skipped: &ledger.Skip{Reason: "guard said no"}}
		if kind == scripthost.KindProducer {
			nr.Handler = "poll"
			nr.Skipped.Schedule = &ledger.Schedule{Workflow: wf, Producer: "poll", NextRunAt: next, LastRunAt: next.Add(-time.Hour)}
		}
		r := must(f.s.CreateRun(ctx, nr))(t)
		if r.ID != id || r.Phase != scripthost.RunPending || r.Status != scripthost.StatusSkipped ||
			r.Error != "guard said no" || string(r.InputState) != `{"n":1}` {
			t.Fatalf("%s: got %s, want run %s pending, skipped with the reason", kind, mustJSON(t, r), id)
		}
		if got := must(f.s.Run(f.ctx, id))(t); mustJSON(t, got) != mustJSON(t, r) {
			t.Errorf("%s: read back: got %s, want %s", kind, mustJSON(t, got), mustJSON(t, r))
		}
		snaps := must(f.s.Snapshots(f.ctx, id))(t)
		if len(snaps) != 2 || snaps[0].Status != scripthost.StatusActive || snaps[1].Status != scripthost.StatusSkipped ||
			snaps[0].Phase != scripthost.RunPending || snaps[1].Phase != scripthost.RunPending {
			t.Errorf("%s: got %d snapshots (%s), want two: active, then skipped", kind, len(snaps), mustJSON(t, snaps))
		}
		var labels []string
		for _, e := range must(f.s.LifecycleEvents(f.ctx, ledger.LifecycleFilter{RunID: id}))(t) {
			labels = append(labels, e.Label())
		}
		if got := strings.Join(labels, " "); got != "guard_skipped" {
			t.Errorf("%s: lifecycle events: got %s, want guard_skipped", kind, got)
		}
		if kind == scripthost.KindProducer {
			if sc := must(f.s.Schedule(f.ctx, wf, "poll"))(t); !sc.NextRunAt.Equal(next) || !sc.LastRunAt.Equal(next.Add(-time.Hour)) {
				t.Errorf("schedule: got %+v, want next %v", sc, next)
			}
		}
	}

	before := f.dump()
	skip := func() *ledger.Skip { return &ledger.Skip{Reason: "no"} }
	other := &ledger.Skip{Reason: "no", Schedule: &ledger.Schedule{Workflow: wf, Producer: "other", NextRunAt: next}}
	for name, nr := range map[string]ledger.NewRun{
		"started":               {Workflow: wf, Version: 1, Handler: "ship", Kind: scripthost.KindConsumer, Start: scripthost.RunPreparing, Skipped: skip()},
		"committed":             {Workflow: wf, Version: 1, Handler: "poll", Kind: scripthost.KindProducer, Start: scripthost.RunExecuting, Commit: &ledger.Commit{}, Skipped: skip()},
		"another producer's":    {Workflow: wf, Version: 1, Handler: "poll", Kind: scripthost.KindProducer, Skipped: other},
		"a consumer's schedule": {Workflow: wf, Version: 1, Handler: "other", Kind: scripthost.KindConsumer, Skipped: other},
	} {
		if _, err := f.s.CreateRun(f.ctx, nr); err == nil {
			t.Errorf("skipped, %s: created", name)
		}
	}
	f.unchanged(before)
}
