package runtime

import (
	"errors"

	"github.com/scripthost/scripthost"
)

// peekedError is a prepare phase's failure with the events its Topics.peek calls
// answered with: the phase_failed entry of the run records them, so that an operator
// sees which events the failed run was looking at (and may set one aside).
type peekedError struct {
	err    error
	peeked []scripthost.Reservation
}

func (e *peekedError) Error() string { return e.err.Error() }
func (e *peekedError) Unwrap() error { return e.err }

// withPeeked is err with the events peeked, when there are any.
func withPeeked(err error, peeked []scripthost.Reservation) error {
	if err == nil || len(peeked) == 0 {
		return err
	}
	return &peekedError{err: err, peeked: peeked}
}

// failedEvents are the events a run that failed with cause was working on: those it
// reserved, or those its prepare phase peeked at before it failed, by topic.
func failedEvents(run scripthost.Run, cause error) map[string]any {
	out := map[string]any{}
	if len(run.Reservations) > 0 {
		out["reserved"] = run.Reservations
	}
	var pe *peekedError
	if errors.As(cause, &pe) {
		out["peeked"] = pe.peeked
	}
	return out
}
