package ledger

import (
	"time"

	"github.com/scripthost/scripthost"
)

// OutcomeRecorded is run as the transition that records its mutate phase's outcome
// leaves it (ApplyMutation, FailMutationToNext, MarkMutated, Resolve as applied or
// skipped): active, passed through mutated on to emitting, with the outcome and no
// error, updated at at. Stores build the run with it, and a caller that knows the
// outcome it recorded (the runtime after an applied mutation) has the run without
// reading it back.
func OutcomeRecorded(run scripthost.Run, o scripthost.Outcome, at time.Time) scripthost.Run {
	run.Phase = scripthost.RunEmitting
	run.Status = scripthost.StatusActive
	run.Outcome = &o
	run.Error, run.ErrorClass, run.NotBefore = "", "", time.Time{}
	run.UpdatedAt = at
	return run
}

// NewPhaseEvent is the lifecycle event of type t (phase_started, phase_completed)
// about a phase of run: {phase, attempt}.
func NewPhaseEvent(run scripthost.Run, t EventType, phase string) LifecycleEvent {
	return NewLifecycleEvent(run.ID, t, map[string]any{"phase": phase, "attempt": run.Attempt})
}
