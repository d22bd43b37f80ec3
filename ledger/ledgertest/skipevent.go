package ledgertest

import (
	"encoding/json"
	"errors"

	"github.com/scripthost/scripthost"
	"github.com/scripthost/scripthost/ledger"
)

// testSkipEvent checks that a pending event can be set aside: it stays listed as
// skipped, no run can reserve it, skipping it again changes nothing, and an event a
// run holds or consumed is refused.
func testSkipEvent(f *fixture) {
	f.with("pending becomes skipped and stays listed", func(f *fixture) {
		evs := f.publish("in", "poison", "good")
		got := must(f.s.SkipEvent(f.ctx, wf, "in", "poison"))(f.t)
		if got.Status != scripthost.EventSkipped || got.MessageID != "poison" || got.Seq != evs[0].Seq {
			f.t.Fatalf("got %+v, want event poison skipped", got)
		}
		f.wantEvents(evs[:1], scripthost.EventSkipped, "")
		pending := must(f.s.PendingEvents(f.ctx, wf, "in", 0))(f.t)
		if len(pending) != 1 || pending[0].MessageID != "good" {
			f.t.Errorf("got pending %+v, want only good", pending)
		}
		listed := must(f.s.Events(f.ctx, ledger.EventFilter{Workflow: wf, Topic: "in", Status: scripthost.EventSkipped}))(f.t)
		if len(listed) != 1 || listed[0].MessageID != "poison" {
			f.t.Errorf("got skipped %+v, want poison", listed)
		}
		byID := must(f.s.Events(f.ctx, ledger.EventFilter{Workflow: wf, Topic: "in", MessageID: "poison"}))(f.t)
		if len(byID) != 1 || byID[0].Status != scripthost.EventSkipped {
			f.t.Errorf("got %+v by message id, want the skipped event", byID)
		}
	})

	f.with("skipping again changes nothing", func(f *fixture) {
		f.publish("in", "twice")
		must(f.s.SkipEvent(f.ctx, wf, "in", "twice"))(f.t)
		before := f.dump()
		got := must(f.s.SkipEvent(f.ctx, wf, "in", "twice"))(f.t)
		if got.Status != scripthost.EventSkipped {
			f.t.Errorf("got %s, want skipped", got.Status)
		}
		f.unchanged(before)
	})

	f.with("a skipped event cannot be reserved", func(f *fixture) {
		evs := f.publish("in", "aside")
		must(f.s.SkipEvent(f.ctx, wf, "in", "aside"))(f.t)
		r := must(f.s.CreateRun(f.ctx, ledger.NewRun{Workflow: wf, Version: 1, Handler: "ship", Kind: scripthost.KindConsumer}))(f.t)
		must(f.s.AdvancePhase(f.ctx, r.ID, scripthost.RunPending, scripthost.RunPreparing))(f.t)
		_, err := f.s.MarkPrepared(f.ctx, r.ID, ledger.PrepareResult{
			Reservations: []scripthost.Reservation{{Topic: "in", IDs: []string{"aside"}}}})
		if !errors.Is(err, ledger.ErrEventUnavailable) {
			f.t.Fatalf("got %v, want ErrEventUnavailable", err)
		}
		f.wantEvents(evs, scripthost.EventSkipped, "")
	})

	f.with("reserved and consumed events are refused", func(f *fixture) {
		held := f.consumer(stPrepared)
		before := f.dump()
		_, err := f.s.SkipEvent(f.ctx, wf, "in", held.events[0].MessageID)
		f.refused(before, err, nil)

		done := f.consumer(stCommitted)
		before = f.dump()
		_, err = f.s.SkipEvent(f.ctx, wf, "in", done.events[0].MessageID)
		f.refused(before, err, nil)
	})

	f.with("an unknown event is not found", func(f *fixture) {
		before := f.dump()
		_, err := f.s.SkipEvent(f.ctx, wf, "in", "no-such-event")
		f.refused(before, err, ledger.ErrNotFound)
	})
}

// testSuperseded checks that a run a retry took over names its retry, read back alone
// or listed, and that its snapshot of that moment says so too.
func testSuperseded(f *fixture) {
	b := f.consumer(stPreparing)
	must(f.s.SetRunStatus(f.ctx, b.run.ID, ledger.StatusChange{Status: scripthost.StatusPausedTransient,
		Error: "timeout", ErrorClass: scripthost.ClassNetwork, NotBefore: f.longAgo()}))(f.t)
	if got := must(f.s.Run(f.ctx, b.run.ID))(f.t); got.SupersededBy != "" || got.Shown() != string(scripthost.StatusPausedTransient) {
		f.t.Fatalf("got superseded_by %q shown %s before the retry, want none", got.SupersededBy, got.Shown())
	}
	retry := must(f.s.CreateRetryRun(f.ctx, b.run.ID, ledger.RetryRun{}))(f.t)
	got := must(f.s.Run(f.ctx, b.run.ID))(f.t)
	if got.SupersededBy != retry.ID || got.Status != scripthost.StatusPausedTransient || got.Shown() != scripthost.StatusSuperseded {
		f.t.Errorf("got superseded_by %q status %s shown %s, want %s, paused:transient, superseded",
			got.SupersededBy, got.Status, got.Shown(), retry.ID)
	}
	listed := must(f.s.Runs(f.ctx, ledger.RunFilter{Workflow: wf, Status: scripthost.StatusPausedTransient}))(f.t)
	if len(listed) != 1 || listed[0].SupersededBy != retry.ID {
		f.t.Errorf("got %+v listed, want the source naming its retry", listed)
	}
	snaps := must(f.s.Snapshots(f.ctx, b.run.ID))(f.t)
	var last scripthost.Run
	if err := json.Unmarshal(snaps[len(snaps)-1].Run, &last); err != nil {
		f.t.Fatal(err)
	}
	if last.SupersededBy != retry.ID {
		f.t.Errorf("got last snapshot superseded_by %q, want %s", last.SupersededBy, retry.ID)
	}
}
