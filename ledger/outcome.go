package ledger

import (
	"encoding/json"
	"strconv"
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
	// The bytes json.Marshal gives the map {phase, attempt} (keys sorted), built
	// directly: a run logs several of these.
	b := make([]byte, 0, len(`{"attempt":,"phase":""}`)+20+len(phase))
	b = append(b, `{"attempt":`...)
	b = strconv.AppendInt(b, int64(run.Attempt), 10)
	b = append(b, `,"phase":`...)
	b = appendJSONString(b, phase)
	return LifecycleEvent{RunID: run.ID, Type: t, Data: append(b, '}')}
}

// appendJSONString appends s as json.Marshal encodes a string: directly when it is
// printable ASCII that needs no escape (a phase's name), through json.Marshal
// otherwise.
func appendJSONString(b []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c > 0x7e || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			q, _ := json.Marshal(s)
			return append(b, q...)
		}
	}
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"')
}
