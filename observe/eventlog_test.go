package observe

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/scripthost/scripthost"
	"github.com/scripthost/scripthost/ledger"
)

// TestReconcileGiveUpIsLogged: the last reconcile attempt, whether its tool could not
// tell, the attempts ran out, or a never-sent request ran out of resends, writes a line
// with the run, mutation and tool; an attempt that will be tried again writes none.
func TestReconcileGiveUpIsLogged(t *testing.T) {
	for _, tc := range []struct {
		data map[string]any
		want bool
	}{
		{map[string]any{"attempt": 3, "outcome": "undecided", "tool": "Svc.apply"}, true},
		{map[string]any{"attempt": 1, "outcome": "indeterminate", "tool": "Svc.apply"}, true},
		{map[string]any{"attempt": 5, "outcome": "not_sent", "tool": "Svc.apply"}, true},
		{map[string]any{"attempt": 2, "outcome": "not_sent", "tool": "Svc.apply", "next_attempt_at": "2026-01-01T00:00:00Z"}, false},
		{map[string]any{"attempt": 1, "outcome": "retry_later", "tool": "Svc.apply", "next_attempt_at": "2026-01-01T00:00:00Z"}, false},
		{map[string]any{"attempt": 1, "outcome": "applied", "tool": "Svc.apply"}, false},
	} {
		var buf bytes.Buffer
		ev := ledger.NewLifecycleEvent("run-1", ledger.EventReconcileAttempt, tc.data)
		ev.MutationID = "mut-1"
		f := &follower{logger: slog.New(slog.NewTextHandler(&buf, nil)), m: newMetrics(prometheus.NewRegistry(), func() float64 { return 0 }),
			runs: map[string]scripthost.Run{"run-1": {ID: "run-1", Workflow: "w", Handler: "h"}}}
		f.count(context.Background(), ev)
		got := buf.String()
		logged := strings.Contains(got, `msg="reconcile gave up" run_id=run-1 workflow=w handler=h mutation_id=mut-1 tool=Svc.apply`)
		if logged != tc.want {
			t.Errorf("%v: logged %q, want a give-up line: %v", tc.data, got, tc.want)
		}
	}
}
