package ledger

import (
	"context"
	"encoding/json"
	"time"
)

// EventType names one kind of entry in a run's lifecycle log.
type EventType string

// Lifecycle event types. Data holds the details named after each.
const (
	// EventPhaseStarted: a phase begins ({phase}).
	EventPhaseStarted EventType = "phase_started"
	// EventPhaseCompleted: a phase returned and its result is recorded ({phase}).
	EventPhaseCompleted EventType = "phase_completed"
	// EventPhaseFailed: a phase, a hook or onRetry failed ({phase, step, class, code,
	// message, file, line, column}); step is "guard", "before", "after", "onRetry"
	// or the phase function itself.
	EventPhaseFailed EventType = "phase_failed"
	// EventGuardSkipped: the guard returned false and the run was skipped ({reason}).
	EventGuardSkipped EventType = "guard_skipped"
	// EventRetryScheduled: a retry run will follow ({attempt, delay_ms, not_before,
	// state?}); state is what onRetry returned.
	EventRetryScheduled EventType = "retry_scheduled"
	// EventRetryStarted: this run retries another ({retry_of, attempt, state?}); state
	// is what onRetry returned, the retry's input state.
	EventRetryStarted EventType = "retry_started"
	// EventPaused: the run waits ({status, why, next_attempt_at?}).
	EventPaused EventType = "paused"
	// EventResumed: a paused run goes on ({from, by?}).
	EventResumed EventType = "resumed"
	// EventMutationRecorded: the mutation was recorded in_flight before its tool ran
	// ({tool, idempotency_key}).
	EventMutationRecorded EventType = "mutation_recorded"
	// EventMutationOutcome: what became of the mutation ({status, class?, code?,
	// message?}).
	EventMutationOutcome EventType = "mutation_outcome"
	// EventReconcileAttempt: the tool was asked what became of the mutation
	// ({attempt, outcome, reason?, next_attempt_at?}).
	EventReconcileAttempt EventType = "reconcile_attempt"
	// EventResolved: a person resolved the mutation ({by, as}).
	EventResolved EventType = "resolved"
	// EventCommitted: the run committed ({published}).
	EventCommitted EventType = "committed"
	// EventToolRefused: the host refused one of the run's tool calls, which did
	// nothing ({tool, phase, reason, message, handler?, file?, line?, column?});
	// reason is second_mutation, phase, unknown_tool, invalid_input or refused.
	EventToolRefused EventType = "tool_refused"
	// EventCancelRequested: an operator asked to cancel the run while its mutation's
	// outcome was not known; the run is cancelled once it is ({by?, reason?}).
	EventCancelRequested EventType = "cancel_requested"
	// EventCancelled: the run was cancelled ({by?, reason?, events}); events is what
	// became of its reserved events: "released" before its mutation, "consumed" after.
	EventCancelled EventType = "cancelled"
)

// CancelRequested reports whether evs, a run's lifecycle log, holds a request to cancel
// the run.
func CancelRequested(evs []LifecycleEvent) bool {
	for _, e := range evs {
		if e.Type == EventCancelRequested {
			return true
		}
	}
	return false
}

// LifecycleEvent is one entry of a run's lifecycle log. The log is append-only: each
// entry is written in the transaction of the change it describes and never changed.
type LifecycleEvent struct {
	// Seq orders every lifecycle event of the ledger; the store assigns it.
	Seq   int64     `json:"seq"`
	RunID string    `json:"run_id"`
	Type  EventType `json:"type"`
	// MutationID names the mutation the event is about, when there is one.
	MutationID string `json:"mutation_id,omitempty"`
	// Data holds the type's details as a JSON object.
	Data json.RawMessage `json:"data,omitempty"`
	// At is the store's time of the write, or the time an attached event gives: one that
	// happened before the write recording it (a phase that ran before its run was first
	// written, see ledger.NewMutation.Run) keeps its own.
	At time.Time `json:"at"`
}

// LogTail is a Store that tells the sequence number of the last entry of its
// lifecycle log without reading the log (0 when it is empty): a reader that follows
// the log from its end, such as the metrics, starts there. ledger/sqlite and
// ledger/postgres are LogTails.
type LogTail interface {
	LastLifecycleSeq(ctx context.Context) (int64, error)
}

// LifecycleFilter selects lifecycle events. Zero fields match everything.
type LifecycleFilter struct {
	RunID string
	// Type selects the events of one type (all when empty).
	Type EventType
	// AfterSeq selects events with a larger Seq: a reader that remembers the last Seq
	// it saw follows the log without missing or repeating an entry.
	AfterSeq int64
	Limit    int
}

type eventsKey struct{}

// WithEvents attaches lifecycle events to ctx. The next state-changing Store call
// made with the returned context appends them to the log in the same transaction as
// its change, and not at all when the call changes nothing (refused or failed). An
// event without RunID (or MutationID) takes the run (or mutation) the call created or
// changed; an event that still names no run is not stored. Attach events at the call
// they describe: a context carrying events must not be passed on to other calls.
//
// Events ride on the context so that every Store method keeps its signature: a store
// reads them with EventsFrom in the one helper that runs its transactions.
func WithEvents(ctx context.Context, evs ...LifecycleEvent) context.Context {
	if len(evs) == 0 {
		return ctx
	}
	prev, _ := ctx.Value(eventsKey{}).([]LifecycleEvent)
	all := make([]LifecycleEvent, 0, len(prev)+len(evs))
	return context.WithValue(ctx, eventsKey{}, append(append(all, prev...), evs...))
}

// EventsFrom returns the lifecycle events attached to ctx by WithEvents. A store calls
// it once per write, when the write runs: the reads noted in a CallLog of ctx since the
// run's last write come first (see NoteCall).
func EventsFrom(ctx context.Context) []LifecycleEvent {
	evs, _ := ctx.Value(eventsKey{}).([]LifecycleEvent)
	if calls := takeCalls(ctx); len(calls) > 0 {
		return append(calls, evs...)
	}
	return evs
}

// NewLifecycleEvent builds a lifecycle event of type t for run runID with data encoded as
// JSON (nil data gives none).
func NewLifecycleEvent(runID string, t EventType, data any) LifecycleEvent {
	ev := LifecycleEvent{RunID: runID, Type: t}
	if data != nil {
		if b, err := json.Marshal(data); err == nil && string(b) != "null" {
			ev.Data = b
		}
	}
	return ev
}

// Label names the event briefly: its type, with the phase it is about and, for a
// failure outside the phase function itself, the step that failed:
// "phase_started(prepare)", "phase_failed(mutate/after)", "committed".
func (e LifecycleEvent) Label() string {
	var d struct {
		Phase string `json:"phase"`
		Step  string `json:"step"`
	}
	_ = json.Unmarshal(e.Data, &d)
	s := string(e.Type)
	if d.Phase == "" {
		return s
	}
	s += "(" + d.Phase
	if d.Step != "" && d.Step != d.Phase && d.Step != "handler" {
		s += "/" + d.Step
	}
	return s + ")"
}
