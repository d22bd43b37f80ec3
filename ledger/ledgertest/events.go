package ledgertest

import (
	"encoding/json"
	"fmt"

	"github.com/scripthost/scripthost"
	"github.com/scripthost/scripthost/ledger"
)

// testLifecycleEvents checks the lifecycle log: events attached with WithEvents are
// appended in the transaction of the call they ride on, name the run or mutation the
// call created or changed when they name none, and are dropped with a refused call.
func testLifecycleEvents(f *fixture) {
	ev := func(t ledger.EventType, data string) ledger.LifecycleEvent {
		e := ledger.LifecycleEvent{Type: t}
		if data != "" {
			e.Data = json.RawMessage(data)
		}
		return e
	}
	list := func(filter ledger.LifecycleFilter) []ledger.LifecycleEvent {
		f.t.Helper()
		return must(f.s.LifecycleEvents(f.ctx, filter))(f.t)
	}
	types := func(evs []ledger.LifecycleEvent) string {
		var out []string
		for _, e := range evs {
			out = append(out, string(e.Type))
		}
		return fmt.Sprint(out)
	}

	f.with("written with the call, naming the run it created", func(f *fixture) {
		r := must(f.s.CreateRun(ledger.WithEvents(f.ctx, ev("created_for_test", `{"why":"test"}`)),
			ledger.NewRun{Workflow: wf, Version: 1, Handler: "ship", Kind: scripthost.KindConsumer}))(f.t)
		must(f.s.AdvancePhase(ledger.WithEvents(f.ctx, ledger.NewLifecycleEvent(r.ID, ledger.EventPhaseStarted, map[string]string{"phase": "prepare"})),
			r.ID, scripthost.RunPending, scripthost.RunPreparing))(f.t)
		got := list(ledger.LifecycleFilter{RunID: r.ID})
		if types(got) != "[created_for_test phase_started]" {
			f.t.Fatalf("got %s, want [created_for_test phase_started]", types(got))
		}
		if got[0].RunID != r.ID || string(got[0].Data) != `{"why":"test"}` || got[0].At.IsZero() {
			f.t.Errorf("got %+v, want run %s, its data and a time", got[0], r.ID)
		}
		if got[1].Seq <= got[0].Seq || string(got[1].Data) != `{"phase":"prepare"}` {
			f.t.Errorf("got %+v after %+v, want a larger seq and the phase", got[1], got[0])
		}
	})

	f.with("a snapshot cannot be logged by a caller", func(f *fixture) {
		// "snapshot" names the store's own entries where the log holds a run's
		// snapshots: an event of that type would read back as one.
		b := f.consumer(stPending)
		_, err := f.s.AdvancePhase(ledger.WithEvents(f.ctx, ev("snapshot", `{"phase":"committed"}`)),
			b.run.ID, scripthost.RunPending, scripthost.RunPreparing)
		if err == nil {
			f.t.Fatal("got no error for an event of type snapshot")
		}
		if got := must(f.s.Run(f.ctx, b.run.ID))(f.t); got.Phase != scripthost.RunPending {
			f.t.Errorf("got phase %s after the refused call, want pending", got.Phase)
		}
		if got := must(f.s.Snapshots(f.ctx, b.run.ID))(f.t); len(got) != 1 {
			f.t.Errorf("got %d snapshots, want the run's 1", len(got))
		}
		if got := list(ledger.LifecycleFilter{RunID: b.run.ID}); len(got) != 0 {
			f.t.Errorf("got %s, want no events", types(got))
		}
	})

	f.with("refused call appends nothing", func(f *fixture) {
		b := f.consumer(stPending)
		_, err := f.s.AdvancePhase(ledger.WithEvents(f.ctx, ev(ledger.EventPhaseStarted, "")),
			b.run.ID, scripthost.RunPrepared, scripthost.RunMutating)
		if !ledger.IsIllegalTransition(err) {
			f.t.Fatalf("got %v, want an illegal transition", err)
		}
		if got := list(ledger.LifecycleFilter{RunID: b.run.ID}); len(got) != 0 {
			f.t.Errorf("got %s, want no events", types(got))
		}
	})

	f.with("mutation calls name the mutation and its run", func(f *fixture) {
		b := f.consumer(stMutating)
		m := must(f.s.BeginMutation(ledger.WithEvents(f.ctx, ev("attached_for_test", "")), ledger.NewMutation{
			RunID: b.run.ID, Namespace: "Shop", Method: "ship", Params: json.RawMessage(`{}`), IdempotencyKey: b.key,
		}))(f.t)
		must(f.s.ApplyMutation(ledger.WithEvents(f.ctx, ev(ledger.EventMutationOutcome, `{"status":"applied"}`)), m.ID, json.RawMessage(`{}`)))(f.t)
		got := list(ledger.LifecycleFilter{RunID: b.run.ID})
		// The store logs two events of its own after the attached ones: the key it
		// recorded, and next starting when the outcome moves the run on.
		if types(got) != "[attached_for_test mutation_recorded mutation_outcome phase_started]" {
			f.t.Fatalf("got %s, want [attached_for_test mutation_recorded mutation_outcome phase_started]", types(got))
		}
		for _, e := range got[:3] {
			if e.MutationID != m.ID || e.RunID != b.run.ID {
				f.t.Errorf("got %+v, want mutation %s of run %s", e, m.ID, b.run.ID)
			}
		}
		if d := string(got[1].Data); d != `{"idempotency_key":"`+b.key+`","tool":"Shop.ship"}` {
			f.t.Errorf("mutation_recorded: got %s, want the key and the tool", d)
		}
		if e := got[3]; e.RunID != b.run.ID || e.MutationID != "" || string(e.Data) != `{"attempt":1,"phase":"next"}` {
			f.t.Errorf("phase_started: got %+v, want next of run %s", e, b.run.ID)
		}
	})

	f.with("a mutation outside a run has no log", func(f *fixture) {
		before := list(ledger.LifecycleFilter{})
		must(f.s.BeginMutation(ledger.WithEvents(f.ctx, ev(ledger.EventMutationRecorded, "")), ledger.NewMutation{
			Namespace: "plan", Method: "file_write", Params: json.RawMessage(`{}`), IdempotencyKey: fmt.Sprintf("plan-%d", f.next()),
		}))(f.t)
		if after := list(ledger.LifecycleFilter{}); len(after) != len(before) {
			f.t.Errorf("got %d events, want %d", len(after), len(before))
		}
	})

	f.with("followed by seq", func(f *fixture) {
		a := f.consumer(stPending)
		b := f.consumer(stPending)
		var start int64
		if prev := list(ledger.LifecycleFilter{}); len(prev) > 0 {
			start = prev[len(prev)-1].Seq
		}
		for i := 0; i < 3; i++ {
			for _, r := range []scripthost.Run{a.run, b.run} {
				must(f.s.SetRunStatus(ledger.WithEvents(f.ctx, ev(ledger.EventPaused, fmt.Sprintf(`{"i":%d}`, i))), r.ID,
					ledger.StatusChange{Status: scripthost.StatusPausedApproval}))(f.t)
			}
		}
		all := list(ledger.LifecycleFilter{AfterSeq: start})
		if len(all) != 6 {
			f.t.Fatalf("got %d events, want 6", len(all))
		}
		page := list(ledger.LifecycleFilter{AfterSeq: all[1].Seq, Limit: 2})
		if len(page) != 2 || page[0].Seq != all[2].Seq || page[1].Seq != all[3].Seq {
			f.t.Errorf("got %+v, want events 3 and 4", page)
		}
		if got := list(ledger.LifecycleFilter{RunID: b.run.ID, AfterSeq: all[1].Seq}); len(got) != 2 || got[0].RunID != b.run.ID {
			f.t.Errorf("got %+v, want the last two events of run %s", got, b.run.ID)
		}
	})
}
