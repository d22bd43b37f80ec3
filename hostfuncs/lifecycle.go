package hostfuncs

import (
	"context"
	"fmt"

	"github.com/scripthost/scripthost"
	"github.com/scripthost/scripthost/ledger"
)

// The lifecycle events of a mutation, attached to the ledger call that records each
// change (ledger.WithEvents); a mutation outside a run (a plan step) has none.

func outcomeEvent(runID string, m scripthost.Mutation) ledger.LifecycleEvent {
	d := map[string]any{"status": m.Status, "tool": m.Tool()}
	if m.Error != "" {
		d["message"] = m.Error
	}
	if m.ErrorClass != "" {
		d["class"] = m.ErrorClass
	}
	return ledger.NewLifecycleEvent(runID, ledger.EventMutationOutcome, d)
}

func mutateEvent(runID string, t ledger.EventType, extra map[string]any) ledger.LifecycleEvent {
	d := map[string]any{"phase": scripthost.PhaseMutate}
	for k, v := range extra {
		d[k] = v
	}
	return ledger.NewLifecycleEvent(runID, t, d)
}

// appliedEvents: the mutation applied, and with it the mutate phase completed.
func appliedEvents(m scripthost.Mutation) []ledger.LifecycleEvent {
	m.Status = scripthost.MutationApplied
	return []ledger.LifecycleEvent{outcomeEvent(m.RunID, m), mutateEvent(m.RunID, ledger.EventPhaseCompleted, nil)}
}

func failedMutation(m scripthost.Mutation, cause *scripthost.Error) scripthost.Mutation {
	m.Status, m.Error, m.ErrorClass = scripthost.MutationFailed, cause.Error(), cause.Class
	return m
}

// failedEvents: the mutation definitely failed, and with it the mutate phase.
func failedEvents(m scripthost.Mutation, cause *scripthost.Error) []ledger.LifecycleEvent {
	m = failedMutation(m, cause)
	return []ledger.LifecycleEvent{outcomeEvent(m.RunID, m), mutateEvent(m.RunID, ledger.EventPhaseFailed, map[string]any{
		"step": "mutation", "class": cause.Class, "code": cause.Code, "message": cause.Error(),
	})}
}

// waitingEvents: the outcome is unknown and the run waits for reconciliation.
func waitingEvents(m scripthost.Mutation, status scripthost.MutationStatus, reason string, next any) []ledger.LifecycleEvent {
	p := map[string]any{"status": scripthost.StatusPausedReconciliation, "why": reason}
	if next != nil {
		p["next_attempt_at"] = next
	}
	var evs []ledger.LifecycleEvent
	if status == scripthost.MutationIndeterminate {
		m.Status, m.Error = status, reason
		evs = append(evs, outcomeEvent(m.RunID, m))
	}
	return append(evs, ledger.NewLifecycleEvent(m.RunID, ledger.EventPaused, p))
}

func attemptEvent(m scripthost.Mutation, attempt int, outcome string, reason string, next any) ledger.LifecycleEvent {
	d := map[string]any{"attempt": attempt, "outcome": outcome, "tool": m.Tool()}
	if reason != "" {
		d["reason"] = reason
	}
	if next != nil {
		d["next_attempt_at"] = next
	}
	return ledger.NewLifecycleEvent(m.RunID, ledger.EventReconcileAttempt, d)
}

// resumedEvent: a run that waited for reconciliation goes on.
func resumedEvent(m scripthost.Mutation, by string) ledger.LifecycleEvent {
	d := map[string]any{"from": scripthost.StatusPausedReconciliation}
	if by != "" {
		d["by"] = by
	}
	return ledger.NewLifecycleEvent(m.RunID, ledger.EventResumed, d)
}

// Resolve applies a person's resolution of a mutation whose outcome is unknown
// (Store.Resolve) and logs it on the run: resolved (by whom, as what), the mutation's
// outcome, and the run resuming when it goes on to next.
func Resolve(ctx context.Context, store ledger.Store, mutationID string, r ledger.Resolution) (scripthost.Mutation, error) {
	m, err := store.Mutation(ctx, mutationID)
	if err != nil {
		return m, err
	}
	by := r.By
	if by == "" {
		by = "unknown"
	}
	evs := []ledger.LifecycleEvent{ledger.NewLifecycleEvent(m.RunID, ledger.EventResolved, map[string]any{
		"by": by, "as": r.As, "tool": m.Tool(), "was": m.Status,
	})}
	after := m
	after.Status = r.As
	if r.As == scripthost.MutationFailed {
		after.Error = fmt.Sprintf("resolved as failed by %s", by)
	}
	evs = append(evs, outcomeEvent(m.RunID, after))
	if r.As == scripthost.MutationApplied || r.As == scripthost.MutationSkipped {
		evs = append(evs, resumedEvent(m, by))
	}
	return store.Resolve(ledger.WithEvents(ctx, evs...), mutationID, r)
}
