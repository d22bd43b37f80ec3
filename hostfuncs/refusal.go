package hostfuncs

import (
	"errors"

	"github.com/scripthost/scripthost"
	"github.com/scripthost/scripthost/ledger"
	"github.com/scripthost/scripthost/sandbox"
)

// Reasons a ToolWrapper refuses a call, as Refusal.Reason and the lifecycle log name
// them.
const (
	// RefusedSecondMutation: the mutate phase had made its one mutation.
	RefusedSecondMutation = "second_mutation"
	// RefusedPhase: the call's operation is not allowed in the phase (a mutation in
	// prepare, a read outside any phase).
	RefusedPhase = "phase"
	// RefusedUnknownTool: the host offers no tool of that name.
	RefusedUnknownTool = "unknown_tool"
	// RefusedInvalidInput: the input is not JSON or not valid against the tool's
	// input schema.
	RefusedInvalidInput = "invalid_input"
	// RefusedOther: any other refusal (a tool's schema that does not compile).
	RefusedOther = "refused"
)

// Refusal is one tool call a ToolWrapper refused: nothing of it ran.
type Refusal struct {
	// Tool is "Namespace.method" as the script called it.
	Tool  string
	Phase scripthost.Phase
	// Reason is one of the Refused* codes.
	Reason string
	// Message is the error the script saw, without secrets.
	Message string
	// Where is the call's place in the script, when the engine tells it.
	Where sandbox.Location
	// Ended reports that the call came after the mutate phase's mutation, and ended
	// the invocation: whatever it was, it did not run because the mutation was made.
	Ended bool
}

// refusalReason names why err refused a call.
func refusalReason(err error) string {
	var se *scripthost.Error
	if !errors.As(err, &se) {
		return RefusedOther
	}
	switch se.Code {
	case scripthost.CodeSecondMutation:
		return RefusedSecondMutation
	case scripthost.CodePhaseViolation:
		return RefusedPhase
	case scripthost.CodeUnknownTool:
		return RefusedUnknownTool
	case scripthost.CodeInvalidInput:
		return RefusedInvalidInput
	}
	return RefusedOther
}

// RefusalEvent is the lifecycle event of a refused call on run runID ({tool, phase,
// reason, message, handler?, file?, line?, column?}).
func RefusalEvent(runID, handler string, r Refusal) ledger.LifecycleEvent {
	d := map[string]any{"tool": r.Tool, "phase": r.Phase.String(), "reason": r.Reason, "message": r.Message}
	if handler != "" {
		d["handler"] = handler
	}
	if r.Where.Known() {
		d["file"], d["line"], d["column"] = r.Where.File, r.Where.Line, r.Where.Column
	}
	return ledger.NewLifecycleEvent(runID, ledger.EventToolRefused, d)
}
