package observe

import (
	"context"
	"log/slog"

	"github.com/scripthost/scripthost"
	"github.com/scripthost/scripthost/ledger"
)

// eventData holds the fields of a lifecycle event's data that the metrics and the log
// lines use (see the event types in ledger/lifecycle.go).
type eventData struct {
	Phase   string `json:"phase"`
	Step    string `json:"step"`
	Class   string `json:"class"`
	Code    string `json:"code"`
	Message string `json:"message"`
	Status  string `json:"status"`
	Outcome string `json:"outcome"`
	Tool    string `json:"tool"`
	As      string `json:"as"`
	By      string `json:"by"`
	Attempt int    `json:"attempt"`
	Reason  string `json:"reason"`
	Next    string `json:"next_attempt_at"`
}

// logEvent writes the log line of a lifecycle event an operator must hear of: a failed
// phase (the run failed), a mutation whose outcome became unknown, and reconciling that
// gave up. Every other event writes nothing.
func logEvent(ctx context.Context, logger *slog.Logger, ev ledger.LifecycleEvent, r scripthost.Run, d eventData) {
	attrs := []any{"run_id", ev.RunID, "workflow", r.Workflow, "handler", r.Handler}
	if ev.MutationID != "" {
		attrs = append(attrs, "mutation_id", ev.MutationID)
	}
	switch {
	case ev.Type == ledger.EventPhaseFailed:
		attrs = append(attrs, "phase", d.Phase, "class", d.Class)
		if d.Step != "" {
			attrs = append(attrs, "step", d.Step)
		}
		if d.Code != "" {
			attrs = append(attrs, "code", d.Code)
		}
		logger.ErrorContext(ctx, "run failed", append(attrs, "err", d.Message)...)
	case ev.Type == ledger.EventMutationOutcome && d.Status == string(scripthost.MutationIndeterminate):
		logger.WarnContext(ctx, "mutation indeterminate: a person must resolve it",
			append(attrs, "tool", d.Tool, "reason", d.Message)...)
	case ev.Type == ledger.EventReconcileAttempt && reconcileGaveUp(d):
		logger.WarnContext(ctx, "reconcile gave up", append(attrs, "tool", d.Tool, "attempt", d.Attempt,
			"outcome", d.Outcome, "reason", d.Reason)...)
	}
}

// reconcileGaveUp reports whether a reconcile attempt was the last one: its tool could
// not tell (indeterminate), the attempts ran out undecided, or a request that never
// reached the service ran out of attempts to send it again (not_sent, no next attempt).
func reconcileGaveUp(d eventData) bool {
	switch d.Outcome {
	case "indeterminate", "undecided":
		return true
	case "not_sent":
		return d.Next == ""
	}
	return false
}
