// Package scripthost owns the domain of the host: execution phases, operations and the
// table of which operation each phase allows, run and mutation lifecycles, events, and
// the classified errors that every other package reports. It depends on the standard
// library only; engines, stores and tools live in subpackages and point here.
package scripthost

import "fmt"

// Phase is the execution phase a handler function runs in. The zero value means "no
// phase": every operation is refused outside a phase.
type Phase string

// Execution phases.
const (
	PhaseNone     Phase = ""
	PhaseProducer Phase = "producer"
	PhasePrepare  Phase = "prepare"
	PhaseMutate   Phase = "mutate"
	PhaseNext     Phase = "next"
	// PhaseHook is the read-only phase of a handler's guard and its before and after
	// hooks: they may call read tools, nothing else.
	PhaseHook Phase = "hook"
)

// Valid reports whether p is one of the four execution phases or the hook phase.
func (p Phase) Valid() bool {
	switch p {
	case PhaseProducer, PhasePrepare, PhaseMutate, PhaseNext, PhaseHook:
		return true
	}
	return false
}

// String returns the phase name, or "none" for PhaseNone.
func (p Phase) String() string {
	if p == PhaseNone {
		return "none"
	}
	return string(p)
}

// Operation classifies one tool call.
type Operation string

// Operations a tool call can be classified as.
const (
	OpRead         Operation = "read"
	OpMutate       Operation = "mutate"
	OpTopicPeek    Operation = "topic_peek"
	OpTopicPublish Operation = "topic_publish"
)

// Valid reports whether o is a known operation.
func (o Operation) Valid() bool {
	switch o {
	case OpRead, OpMutate, OpTopicPeek, OpTopicPublish:
		return true
	}
	return false
}

// allowed is the phase table of docs/architecture.md. A mutate phase allows one
// mutation; the count is enforced by the ToolWrapper, not by this table.
var allowed = map[Phase]map[Operation]bool{
	PhaseProducer: {OpTopicPublish: true, OpRead: true},
	PhasePrepare:  {OpTopicPeek: true, OpRead: true},
	PhaseMutate:   {OpMutate: true},
	PhaseNext:     {OpTopicPublish: true},
	PhaseHook:     {OpRead: true},
}

// Allowed reports whether op may run in phase p. Outside a phase nothing is allowed.
func Allowed(p Phase, op Operation) bool {
	return allowed[p][op]
}

// CheckAllowed returns nil when op may run in phase p and a LogicError naming both
// otherwise, in the specification's words: "Operation 'mutate' not allowed in
// 'prepare' phase", or "Operation 'read' not allowed outside handler execution" when
// no phase is set.
func CheckAllowed(p Phase, op Operation) error {
	if Allowed(p, op) {
		return nil
	}
	if p == PhaseNone {
		return &Error{
			Class:   ClassLogic,
			Code:    CodePhaseViolation,
			Message: fmt.Sprintf("Operation '%s' not allowed outside handler execution", op),
		}
	}
	return &Error{
		Class:   ClassLogic,
		Code:    CodePhaseViolation,
		Message: fmt.Sprintf("Operation '%s' not allowed in '%s' phase", op, p),
	}
}
