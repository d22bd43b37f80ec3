package wasm

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/scripthost/scripthost"
	"github.com/scripthost/scripthost/hostfuncs"
	"github.com/scripthost/scripthost/ledger"
	"github.com/scripthost/scripthost/ledger/sqlite"
	"github.com/scripthost/scripthost/runtime"
	"github.com/scripthost/scripthost/sandbox"
)

// TestLifecycleThroughRuntime runs the phase lifecycle with a Go guest through the
// runtime and a real ledger: onRetry deciding the retry's state after an injected-clock
// delay, a definite mutation failure sent on to next, an error of the mutate phase's
// after hook, a guard that returns no boolean, and __state__ in every phase.
func TestLifecycleThroughRuntime(t *testing.T) {
	code := buildGuest(t, "testdata/guests/lifecycle")
	ctx := context.Background()
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	var mu sync.Mutex
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	store, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "ledger.db"), sqlite.Options{Clock: clock})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()

	var applied []string
	var console []string
	reg := hostfuncs.NewRegistry()
	err = reg.Register(&hostfuncs.Tool{Namespace: "Svc", Method: "apply",
		Execute: func(ctx context.Context, in json.RawMessage) (json.RawMessage, error) {
			mu.Lock()
			defer mu.Unlock()
			applied = append(applied, string(in))
			return json.RawMessage(`{"ok":true}`), nil
		}}, &hostfuncs.Tool{Namespace: "Pay", Method: "charge",
		Execute: func(ctx context.Context, in json.RawMessage) (json.RawMessage, error) {
			return nil, scripthost.Errorf(scripthost.ClassLogic, "card_declined", "card declined")
		}})
	if err != nil {
		t.Fatal(err)
	}
	rt, err := runtime.New(runtime.Config{
		Store: store, Engines: map[string]sandbox.Engine{"wasm": sharedEngine(t)}, Tools: reg, Clock: clock,
		Limits: sandbox.Limits{Timeout: 30 * time.Second},
		OnConsole: func(run scripthost.Run, lines []sandbox.ConsoleLine) {
			mu.Lock()
			defer mu.Unlock()
			for _, l := range lines {
				console = append(console, run.Handler+": "+l.Text)
			}
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close(ctx)
	if _, err := rt.LoadWorkflow(ctx, "lc", "lifecycle.wasm", code); err != nil {
		t.Fatal(err)
	}
	for _, topic := range []string{"r", "n", "a", "g"} {
		if _, err := store.Publish(ctx, ledger.NewEvent{Workflow: "lc", Topic: topic, MessageID: "e", Payload: json.RawMessage(`{}`)}); err != nil {
			t.Fatal(err)
		}
	}
	pass := func() {
		t.Helper()
		if err := rt.RunOnce(ctx, []string{"lc"}); err != nil {
			t.Fatal(err)
		}
	}
	runsOf := func(handler string) []scripthost.Run {
		t.Helper()
		runs, err := store.Runs(ctx, ledger.RunFilter{Workflow: "lc", Handler: handler})
		if err != nil {
			t.Fatal(err)
		}
		return runs
	}
	lifecycle := func(runID string) []ledger.LifecycleEvent {
		t.Helper()
		evs, err := store.LifecycleEvents(ctx, ledger.LifecycleFilter{RunID: runID})
		if err != nil {
			t.Fatal(err)
		}
		return evs
	}
	event := func(evs []ledger.LifecycleEvent, typ ledger.EventType) map[string]any {
		for _, e := range evs {
			if e.Type == typ {
				var m map[string]any
				_ = json.Unmarshal(e.Data, &m)
				return m
			}
		}
		return nil
	}
	eventStatus := func(topic, id string) scripthost.EventStatus {
		evs, err := store.Events(ctx, ledger.EventFilter{Workflow: "lc", Topic: topic})
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range evs {
			if e.MessageID == id {
				return e.Status
			}
		}
		return ""
	}

	pass()
	if runs := runsOf("retry"); len(runs) != 1 {
		t.Fatalf("retry runs before the delay: got %d, want 1", len(runs))
	}
	for range 2 {
		mu.Lock()
		now = now.Add(time.Second)
		mu.Unlock()
		pass()
	}

	t.Run("onRetry", func(t *testing.T) {
		runs := runsOf("retry")
		if len(runs) != 3 || runs[2].Status != scripthost.StatusCommitted {
			t.Fatalf("runs: got %+v, want the third attempt committed", runs)
		}
		if got := string(runs[2].InputState); !strings.HasPrefix(got, `{"tries":2,"last":"logic error: `) || !strings.Contains(got, "not yet") {
			t.Errorf("third attempt's state: got %s, want what onRetry returned", got)
		}
		if d := event(lifecycle(runs[0].ID), ledger.EventRetryScheduled); d == nil || d["delay_ms"] != float64(1000) {
			t.Errorf("retry_scheduled: got %v, want a 1000 ms delay", d)
		}
	})
	t.Run("failure to next", func(t *testing.T) {
		runs := runsOf("tonext")
		if len(runs) != 1 || runs[0].Status != scripthost.StatusCommitted || runs[0].Outcome == nil || runs[0].Outcome.Status != scripthost.OutcomeFailed {
			t.Fatalf("runs: got %+v, want one committed with a failed outcome", runs)
		}
		if got := eventStatus("n", "e"); got != scripthost.EventConsumed {
			t.Errorf("input event: got %s, want consumed", got)
		}
		if got := eventStatus("failed", "n"); got == "" {
			t.Errorf("next's publication of the failure is missing")
		}
	})
	t.Run("after hook in mutate", func(t *testing.T) {
		runs := runsOf("after")
		if len(runs) != 2 || runs[0].Status != scripthost.StatusFailedLogic || runs[1].Status != scripthost.StatusCommitted ||
			!strings.Contains(runs[0].Error, "audit log is down") {
			t.Fatalf("runs: got %+v, want a run failed by the hook and a committed retry", runs)
		}
		if d := event(lifecycle(runs[0].ID), ledger.EventPhaseFailed); d == nil || d["phase"] != "mutate" || d["step"] != "after" {
			t.Errorf("phase_failed: got %v, want phase mutate, step after", d)
		}
	})
	t.Run("guard", func(t *testing.T) {
		runs := runsOf("guard")
		if len(runs) != 1 || runs[0].Status != scripthost.StatusFailedLogic ||
			!strings.Contains(runs[0].Error, `guard of consumer guard must return a boolean (or a promise of one), got "yes"`) {
			t.Fatalf("runs: got %+v, want failed:logic naming the guard", runs)
		}
	})
	t.Run("state in every phase", func(t *testing.T) {
		mu.Lock()
		lines := strings.Join(console, "\n")
		mu.Unlock()
		for _, want := range []string{"tonext: mutate state null", `tonext: next state null prepared "n"`,
			"tonext: next failed logic card_declined card declined", "after: after next applied"} {
			if !strings.Contains(lines, want) {
				t.Errorf("console:\n%s\nwant %q", lines, want)
			}
		}
	})
	mu.Lock()
	defer mu.Unlock()
	if len(applied) != 2 {
		t.Errorf("applies: got %v, want 2 (retry's and after's, once each)", applied)
	}
}
