package view_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"path/filepath"
	"testing"
	"time"

	"github.com/scripthost/scripthost"
	"github.com/scripthost/scripthost/internal/view"
	"github.com/scripthost/scripthost/ledger"
	"github.com/scripthost/scripthost/ledger/sqlite"
)

// TestOverview writes runs at chosen times into a real SQLite ledger (its clock is
// the test's) and checks the counts by status, the rates over the last hour (a run
// created before it does not count) and the phase percentiles taken from the
// lifecycle log.
func TestOverview(t *testing.T) {
	ctx := context.Background()
	base := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	now := base.Add(-2 * time.Hour)
	clock := func() time.Time { return now }
	s := must(sqlite.Open(ctx, filepath.Join(t.TempDir(), "ledger.db"), sqlite.Options{Clock: clock}))(t)
	t.Cleanup(func() { s.Close() })
	sum := sha256.Sum256([]byte("src"))
	must(s.PutWorkflow(ctx, ledger.WorkflowVersion{Workflow: "orders", Language: "js", Path: "/w/orders.js", Source: []byte("src"),
		Hash: hex.EncodeToString(sum[:]), Definition: json.RawMessage(definition)}))(t)

	// prepare runs one prepare phase that takes took, starting at now.
	prepare := func(took time.Duration) scripthost.Run {
		r := must(s.CreateRun(ctx, ledger.NewRun{Workflow: "orders", Version: 1, Handler: "bill", Kind: scripthost.KindConsumer}))(t)
		r = must(s.AdvancePhase(ledger.WithEvents(ctx, ledger.NewPhaseEvent(r, ledger.EventPhaseStarted, "prepare")),
			r.ID, scripthost.RunPending, scripthost.RunPreparing))(t)
		now = now.Add(took)
		return must(s.MarkPrepared(ledger.WithEvents(ctx, ledger.NewPhaseEvent(r, ledger.EventPhaseCompleted, "prepare")),
			r.ID, ledger.PrepareResult{Data: json.RawMessage(`{}`)}))(t)
	}
	prepare(5 * time.Second) // two hours ago: outside the window
	now = base.Add(-30 * time.Minute)
	prepare(100 * time.Millisecond)
	prepare(900 * time.Millisecond)
	d := prepare(300 * time.Millisecond)
	must(s.SetRunStatus(ctx, d.ID, ledger.StatusChange{Status: scripthost.StatusFailedLogic, Error: "boom"}))(t)

	o, err := view.OverviewOf(ctx, s, func() time.Time { return base }, 0)
	if err != nil {
		t.Fatal(err)
	}
	if o.WindowSeconds != 3600 || !o.At.Equal(base) {
		t.Errorf("window: got %ds at %v, want 3600s at %v", o.WindowSeconds, o.At, base)
	}
	if len(o.Runs) != 2 || o.Runs[string(scripthost.StatusActive)] != 3 || o.Runs[string(scripthost.StatusFailedLogic)] != 1 {
		t.Errorf("runs by status: got %v, want 3 active and 1 failed:logic", o.Runs)
	}
	if o.RunsPerSecond != 3.0/3600 || o.FailuresPerSecond != 1.0/3600 {
		t.Errorf("rates: got %g runs/s and %g failures/s, want %g and %g", o.RunsPerSecond, o.FailuresPerSecond, 3.0/3600, 1.0/3600)
	}
	want := []view.PhaseTime{{Phase: "prepare", Count: 3, P50MS: 300, P99MS: 900}}
	if len(o.Phases) != 1 || o.Phases[0] != want[0] {
		t.Errorf("phases: got %+v, want %+v", o.Phases, want)
	}
}
