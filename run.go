package scripthost

import (
	"encoding/json"
	"time"
)

// HandlerKind says whether a run belongs to a producer or a consumer.
type HandlerKind string

// Handler kinds.
const (
	KindProducer HandlerKind = "producer"
	KindConsumer HandlerKind = "consumer"
)

// RunPhase is where a run is in its lifecycle. Phase only moves forward.
type RunPhase string

// Run phases. Consumers go pending → preparing → prepared → mutating → mutated →
// emitting → committed; producers go pending → executing → committed.
const (
	RunPending   RunPhase = "pending"
	RunPreparing RunPhase = "preparing"
	RunPrepared  RunPhase = "prepared"
	RunMutating  RunPhase = "mutating"
	RunMutated   RunPhase = "mutated"
	RunEmitting  RunPhase = "emitting"
	RunExecuting RunPhase = "executing"
	RunCommitted RunPhase = "committed"
)

var consumerOrder = []RunPhase{RunPending, RunPreparing, RunPrepared, RunMutating, RunMutated, RunEmitting, RunCommitted}
var producerOrder = []RunPhase{RunPending, RunExecuting, RunCommitted}

// PhaseOrder returns the phases of kind k in order.
func PhaseOrder(k HandlerKind) []RunPhase {
	if k == KindProducer {
		return producerOrder
	}
	return consumerOrder
}

// PhaseIndex returns the position of p in kind k's order, or -1 when p is not a phase
// of that kind.
func PhaseIndex(k HandlerKind, p RunPhase) int {
	for i, q := range PhaseOrder(k) {
		if q == p {
			return i
		}
	}
	return -1
}

// CanAdvance reports whether a run of kind k may move from phase from to phase to:
// both must be phases of k and to must come after from.
func CanAdvance(k HandlerKind, from, to RunPhase) bool {
	i, j := PhaseIndex(k, from), PhaseIndex(k, to)
	return i >= 0 && j > i
}

// RunStatus is separate from phase: whether the run is moving, waiting or done.
type RunStatus string

// Run statuses.
const (
	StatusActive               RunStatus = "active"
	StatusPausedTransient      RunStatus = "paused:transient"
	StatusPausedApproval       RunStatus = "paused:approval"
	StatusPausedReconciliation RunStatus = "paused:reconciliation"
	StatusFailedLogic          RunStatus = "failed:logic"
	StatusFailedInternal       RunStatus = "failed:internal"
	StatusCommitted            RunStatus = "committed"
	StatusSkipped              RunStatus = "skipped"
	// StatusCancelled: an operator stopped the run (ledger.Store.CancelRun); final.
	StatusCancelled RunStatus = "cancelled"
)

// Paused reports whether s is one of the paused statuses.
func (s RunStatus) Paused() bool {
	return s == StatusPausedTransient || s == StatusPausedApproval || s == StatusPausedReconciliation
}

// Failed reports whether s is one of the failed statuses.
func (s RunStatus) Failed() bool { return s == StatusFailedLogic || s == StatusFailedInternal }

// Final reports whether a run in status s will never move again.
func (s RunStatus) Final() bool {
	return s == StatusCommitted || s == StatusSkipped || s == StatusCancelled || s.Failed()
}

// Settled reports whether a run in status s is done without holding its handler back:
// committed, skipped or cancelled (a failed or paused run waits for a person).
func (s RunStatus) Settled() bool {
	return s == StatusCommitted || s == StatusSkipped || s == StatusCancelled
}

// Valid reports whether s is a known status.
func (s RunStatus) Valid() bool {
	switch s {
	case StatusActive, StatusPausedTransient, StatusPausedApproval, StatusPausedReconciliation,
		StatusFailedLogic, StatusFailedInternal, StatusCommitted, StatusSkipped, StatusCancelled:
		return true
	}
	return false
}

// MutationStatus is the lifecycle of one recorded side effect.
type MutationStatus string

// Mutation statuses. in_flight is written durably before the tool is called.
const (
	MutationInFlight       MutationStatus = "in_flight"
	MutationApplied        MutationStatus = "applied"
	MutationFailed         MutationStatus = "failed"
	MutationNeedsReconcile MutationStatus = "needs_reconcile"
	MutationIndeterminate  MutationStatus = "indeterminate"
	MutationSkipped        MutationStatus = "skipped"
)

// Unknown reports whether the outcome of a mutation in status s is not known yet.
func (s MutationStatus) Unknown() bool {
	return s == MutationInFlight || s == MutationNeedsReconcile || s == MutationIndeterminate
}

// EventStatus is the lifecycle of one event on a topic.
type EventStatus string

// Event statuses.
const (
	EventPending  EventStatus = "pending"
	EventReserved EventStatus = "reserved"
	EventConsumed EventStatus = "consumed"
	EventSkipped  EventStatus = "skipped"
)

// Outcome is what `next` receives as __mutationResult__.
type Outcome struct {
	// Status is "applied", "skipped", "failed" or "none".
	Status string          `json:"status"`
	Result json.RawMessage `json:"result,omitempty"`
	// Error is set for a failed mutation that the handler sends on to next
	// (onMutationFailure: 'next').
	Error *OutcomeError `json:"error,omitempty"`
}

// OutcomeError is a definite mutation failure as next sees it.
type OutcomeError struct {
	Class   ErrorClass `json:"class"`
	Code    string     `json:"code,omitempty"`
	Message string     `json:"message"`
}

// Outcome statuses.
const (
	OutcomeApplied = "applied"
	OutcomeSkipped = "skipped"
	OutcomeFailed  = "failed"
	OutcomeNone    = "none"
)

// Reservation names events of one topic that a prepare phase reserves.
type Reservation struct {
	Topic string   `json:"topic"`
	IDs   []string `json:"ids"`
}

// Run is one execution of one handler.
type Run struct {
	ID       string `json:"id"`
	Workflow string `json:"workflow"`
	// Version is the workflow version the run executes.
	Version int         `json:"version"`
	Handler string      `json:"handler"`
	Kind    HandlerKind `json:"kind"`
	Phase   RunPhase    `json:"phase"`
	Status  RunStatus   `json:"status"`
	// RetryOf is the run this one retries, if any.
	RetryOf string `json:"retry_of,omitempty"`
	// SupersededBy is the run that retries this one, if any: this run keeps the
	// status it had, but it never moves again (see Shown).
	SupersededBy string `json:"superseded_by,omitempty"`
	// Attempt counts runs in a retry chain, starting at 1.
	Attempt int `json:"attempt"`
	// RetryFromEmitting marks a run that failed after its mutation: its retry resumes
	// at the emitting phase and never mutates again.
	RetryFromEmitting bool `json:"retry_from_emitting,omitempty"`
	// Prepared is the prepare phase's result (data handed to mutate and next).
	Prepared     json.RawMessage `json:"prepared,omitempty"`
	Reservations []Reservation   `json:"reservations,omitempty"`
	// WakeAt is the wake-up time the prepare phase asked for; it is saved with the
	// handler state when the run commits.
	WakeAt      time.Time       `json:"wake_at,omitzero"`
	InputState  json.RawMessage `json:"input_state,omitempty"`
	OutputState json.RawMessage `json:"output_state,omitempty"`
	// Outcome is the mutate phase's outcome once known.
	Outcome    *Outcome   `json:"outcome,omitempty"`
	Error      string     `json:"error,omitempty"`
	ErrorClass ErrorClass `json:"error_class,omitempty"`
	// NotBefore holds a paused or retried run back until the time passes.
	NotBefore time.Time `json:"not_before,omitzero"`
	CreatedAt time.Time `json:"created_at"`
	UpdatedAt time.Time `json:"updated_at"`
}

// StatusSuperseded is how a run that a retry superseded is shown to operators (Shown);
// it is never a stored status.
const StatusSuperseded = "superseded"

// Shown is the run's status as operators see it: "superseded" for a run a retry
// took over (its stored status, kept for the record, no longer says what happens
// next), else its status.
func (r Run) Shown() string {
	if r.SupersededBy != "" {
		return StatusSuperseded
	}
	return string(r.Status)
}

// Mutation is one side effect recorded in the ledger.
type Mutation struct {
	ID string `json:"id"`
	// RunID is empty for a mutation that belongs to no run (a plan step).
	RunID     string `json:"run_id,omitempty"`
	Workflow  string `json:"workflow,omitempty"`
	Handler   string `json:"handler,omitempty"`
	Namespace string `json:"namespace"`
	Method    string `json:"method"`
	// Params are the canonical, redacted parameters.
	Params json.RawMessage `json:"params"`
	// InputHash identifies the logical inputs of the mutation without the failure
	// count; IdempotencyKey adds the count of earlier definite failures to it.
	InputHash         string          `json:"input_hash"`
	IdempotencyKey    string          `json:"idempotency_key"`
	Status            MutationStatus  `json:"status"`
	Result            json.RawMessage `json:"result,omitempty"`
	Error             string          `json:"error,omitempty"`
	ErrorClass        ErrorClass      `json:"error_class,omitempty"`
	ReconcileAttempts int             `json:"reconcile_attempts"`
	NextReconcileAt   time.Time       `json:"next_reconcile_at,omitzero"`
	ResolvedBy        string          `json:"resolved_by,omitempty"`
	ResolvedAt        time.Time       `json:"resolved_at,omitzero"`
	CreatedAt         time.Time       `json:"created_at"`
	UpdatedAt         time.Time       `json:"updated_at"`
}

// Tool returns "Namespace.method".
func (m Mutation) Tool() string { return m.Namespace + "." + m.Method }

// Event is one message on a topic of a workflow.
type Event struct {
	Seq       int64           `json:"seq"`
	Workflow  string          `json:"workflow"`
	Topic     string          `json:"topic"`
	MessageID string          `json:"id"`
	Payload   json.RawMessage `json:"payload"`
	Status    EventStatus     `json:"status"`
	// ReservedBy is the run holding the event, while reserved.
	ReservedBy string `json:"reserved_by,omitempty"`
	// Attempt counts the reservations the event has had.
	Attempt int `json:"attempt"`
	// CausedBy is the run that published the event.
	CausedBy  string    `json:"caused_by,omitempty"`
	CreatedAt time.Time `json:"created_at"`
}

// ReconcileOutcome is a tool's answer about a mutation whose outcome was uncertain.
type ReconcileOutcome string

// Reconcile outcomes.
const (
	ReconcileApplied    ReconcileOutcome = "applied"
	ReconcileFailed     ReconcileOutcome = "failed"
	ReconcileRetryLater ReconcileOutcome = "retry_later"
	// ReconcileIndeterminate says the tool will never be able to tell (the service
	// refuses to answer for the key): the mutation goes to a person at once.
	ReconcileIndeterminate ReconcileOutcome = "indeterminate"
)

// Reconciliation is the result of asking a tool what became of a mutation.
type Reconciliation struct {
	Outcome ReconcileOutcome
	// Result is the mutation's result when Outcome is applied.
	Result json.RawMessage
	// Reason explains a failed, retry-later or indeterminate answer.
	Reason string
	// RetryAfter, for retry_later, is the least wait the service asked for before
	// the next attempt (its Retry-After); a longer backoff still applies.
	RetryAfter time.Duration
}
