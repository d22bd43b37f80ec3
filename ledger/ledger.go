// Package ledger owns the Store contract: the durable record of workflows, runs,
// mutations, events, handler state, schedules and the execution log, and the atomic
// transitions between their states. Concrete stores live in subpackages (sqlite,
// postgres); every one of them passes the suite in ledgertest.
//
// Every method that changes state runs in one transaction and either applies the whole
// transition or none of it, together with the lifecycle events attached to its context
// (WithEvents). A transition that is not legal from the current state is
// refused with a *TransitionError and changes nothing. Every transition of a run also
// writes a Snapshot of the run in its transaction.
//
// Times are kept to the nanosecond and returned in UTC: compare them with Equal.
package ledger

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/scripthost/scripthost"
)

// Sentinel errors callers branch on with errors.Is.
var (
	// ErrNotFound: the named workflow, run, mutation or execution does not exist.
	ErrNotFound = errors.New("ledger: not found")
	// ErrIllegalTransition: the move is not allowed from the current state. Returned
	// wrapped in a *TransitionError.
	ErrIllegalTransition = errors.New("ledger: illegal transition")
	// ErrEventUnavailable: a reservation names an event that does not exist or is not
	// pending.
	ErrEventUnavailable = errors.New("ledger: event not available")
	// ErrStateChanged: a run was to begin from a handler state that is no longer the
	// saved one (NewRun.StateFrom): another run of the handler committed since it was
	// read. Nothing was written.
	ErrStateChanged = errors.New("ledger: handler state changed since it was read")
	// ErrMutationExists: the run already has a mutation.
	ErrMutationExists = errors.New("ledger: run already has a mutation")
	// ErrDuplicateKey: another mutation already carries this idempotency key.
	ErrDuplicateKey = errors.New("ledger: duplicate idempotency key")
	// ErrSchemaTooNew: the database was written by a newer binary.
	ErrSchemaTooNew = errors.New("ledger: database schema is newer than this binary")
	// ErrNotLedger: the file is not a database or not a scripthost ledger.
	ErrNotLedger = errors.New("ledger: not a scripthost ledger")
	// ErrLocked: another process holds the database.
	ErrLocked = errors.New("ledger: database is locked")
	// ErrNoSpace: the ledger's file system is full; nothing of the refused write was
	// stored, and writes succeed again once space is freed.
	ErrNoSpace = errors.New("ledger: no space left for the ledger")
	// ErrReadOnly: the ledger file or its directory cannot be written.
	ErrReadOnly = errors.New("ledger: ledger is read-only")
	// ErrExecutionExists: the execution log already has a record with this execution
	// id and step.
	ErrExecutionExists = errors.New("ledger: execution record already exists")
	// ErrOriginConflict: a workflow name already belongs to another source file.
	// Returned wrapped in an *OriginError.
	ErrOriginConflict = errors.New("ledger: workflow name belongs to another source")
)

// OriginError refuses a workflow version whose origin differs from the one the name
// belongs to: two files that would otherwise silently become versions of one workflow.
type OriginError struct {
	Workflow string
	// Have is the origin the name belongs to; Want the one that claimed it.
	Have, Want string
}

func (e *OriginError) Error() string {
	return fmt.Sprintf("ledger: workflow %q belongs to %s, not %s", e.Workflow, e.Have, e.Want)
}

// Unwrap lets errors.Is(err, ErrOriginConflict) match.
func (e *OriginError) Unwrap() error { return ErrOriginConflict }

// TransitionError describes a refused transition.
type TransitionError struct {
	Entity string // "run", "mutation", "event"
	ID     string
	From   string // current state
	To     string // requested state or action
	Reason string
}

func (e *TransitionError) Error() string {
	msg := fmt.Sprintf("ledger: %s %s: cannot move from %s to %s", e.Entity, e.ID, e.From, e.To)
	if e.Reason != "" {
		msg += ": " + e.Reason
	}
	return msg
}

// Unwrap lets errors.Is(err, ErrIllegalTransition) match.
func (e *TransitionError) Unwrap() error { return ErrIllegalTransition }

// IsIllegalTransition reports whether err is a refused transition.
func IsIllegalTransition(err error) bool { return errors.Is(err, ErrIllegalTransition) }

// WorkflowVersion is one stored version of a workflow's source.
type WorkflowVersion struct {
	Workflow string `json:"workflow"`
	Version  int    `json:"version"`
	// Language is "js", "ts" or "wasm".
	Language string `json:"language"`
	// Path is the origin of the source: the absolute path of the file it was loaded
	// from (or another stable origin for sources that have no file). A name belongs to
	// one origin: PutWorkflow refuses a version from another origin with an
	// *OriginError unless Replace is set. An empty Path matches any origin.
	Path string `json:"path"`
	// Replace, on PutWorkflow, moves the name to this version's origin on purpose.
	Replace bool   `json:"-"`
	Source  []byte `json:"-"`
	// Hash is the hex SHA-256 of Source.
	Hash string `json:"hash"`
	// Definition is the validated workflow definition as JSON.
	Definition json.RawMessage `json:"definition"`
	// Manifest lists the files Source was built from (a JavaScript or TypeScript
	// workflow bundled with its modules and packages), by path relative to the entry
	// file's directory; empty for a version stored before manifests were kept, and
	// for a Wasm module.
	Manifest  []SourceFile `json:"manifest,omitempty"`
	CreatedAt time.Time    `json:"created_at"`
}

// SourceFile is one file a workflow version was built from.
type SourceFile struct {
	// Path is relative to the entry file's directory, with forward slashes.
	Path string `json:"path"`
	// SHA256 is the hex SHA-256 of the file's content when it was loaded.
	SHA256 string `json:"sha256"`
	Size   int64  `json:"size"`
}

// Workflow is the current state of a workflow.
type Workflow struct {
	Name          string    `json:"name"`
	LatestVersion int       `json:"latest_version"`
	Paused        bool      `json:"paused"`
	CreatedAt     time.Time `json:"created_at"`
}

// NewEvent is an event to publish. Publishing a message id that the topic already has
// is a no-op.
type NewEvent struct {
	Workflow  string
	Topic     string
	MessageID string
	Payload   json.RawMessage
	CausedBy  string
}

// NewRun is a run to create, in phase pending and status active.
type NewRun struct {
	Workflow   string
	Version    int
	Handler    string
	Kind       scripthost.HandlerKind
	InputState json.RawMessage
	// StateFrom, when set, is the handler state InputState was read from (the
	// scheduler's runs): the run is created only while that is still the handler's
	// saved state (the same UpdatedAt; none saved when it is zero), else
	// ErrStateChanged and nothing is written. A run begun from a state another run
	// has committed over since would commit over that run's state in turn.
	StateFrom *HandlerState
	// Start, when set, moves the new run on from pending to this phase in the same
	// transaction, as AdvancePhase would (with a snapshot of each state): preparing for
	// a consumer, executing for a producer. Nothing happens outside the ledger between
	// the two, so recovery finds the run in either phase and runs the same code.
	Start scripthost.RunPhase
	// ID, when set, is the new run's id (from Store.NewID): a caller that ran the
	// run's first phase before creating it gave the phase this id. Empty: a fresh one.
	ID string
	// Prepared, with Start preparing, is the result of the prepare phase the caller
	// already ran for the run: the run is created prepared in the same transaction, as
	// MarkPrepared would move it, its events reserved (ErrEventUnavailable, and no run,
	// when one of them is not pending), and with Prepared.Mutate on to mutating. A
	// prepare phase changes nothing outside the ledger, so a crash before this commit
	// loses only work that the next pass does again.
	Prepared *PrepareResult
	// Commit, with Start executing, is the result of the producer phase the caller
	// already ran for the run: the run is created committed in the same transaction, as
	// CommitProducer would commit it (state, publications, schedule). A producer phase
	// changes nothing outside the ledger (its tools only read; it publishes at commit),
	// so a crash before this commit loses only work that the next pass does again.
	Commit *Commit
	// Skipped, with no Start, is why the run's guard said no: the caller ran the guard
	// before creating the run, and the run is created skipped in the same transaction,
	// as SkipRun would record it (a snapshot of each state), with Skip.Schedule (a
	// producer's next turn) stored as SetSchedule would. A guard changes nothing
	// outside the ledger, so a crash before this commit loses only work that the next
	// pass does again.
	Skipped *Skip
}

// Cancel is why and by whom a run is cancelled, for Store.CancelRun.
type Cancel struct {
	Reason string
	By     string
}

// Skip is a run whose guard said no, for NewRun.Skipped.
type Skip struct {
	// Reason is the run's error text, as SkipRun's reason.
	Reason string
	// Schedule, when set, is the producer's schedule to store with the run.
	Schedule *Schedule
}

// PrepareResult is what a prepare phase returned; MarkPrepared stores it and reserves
// the events it names in one transaction.
type PrepareResult struct {
	Data         json.RawMessage
	Reservations []scripthost.Reservation
	// WakeAt, when set, asks for the consumer to run again at that time even without
	// new events. It is saved with the handler state at commit.
	WakeAt time.Time
	// Mutate moves the prepared run on to mutating in the same transaction, as
	// AdvancePhase would (with a snapshot of each state). A run found mutating without
	// a mutation runs its mutate phase, like one found prepared.
	Mutate bool
}

// NewMutation is a mutation to record in_flight before its tool is called.
type NewMutation struct {
	// RunID is empty for a mutation outside a run (a plan step).
	RunID     string
	Workflow  string
	Handler   string
	Namespace string
	Method    string
	Params    json.RawMessage
	InputHash string
	// IdempotencyKey, when empty, is derived by BeginMutation in its transaction from
	// InputHash and the count of earlier definite failures of that hash
	// (scripthost.IdempotencyKey), so that the count and the in-flight record see one
	// ledger and the caller reads nothing first.
	IdempotencyKey string
	// Run, when set, is the mutation's run, not yet in the ledger: it is created (as
	// CreateRun would, its events reserved) in the transaction that records the
	// mutation, before it. It must be run RunID and reach phase mutating (Start
	// preparing, Prepared.Mutate). A run whose phases before the first tool call changed
	// nothing outside the ledger is then written once, durably, where it first matters.
	Run *NewRun
}

// Resolution is a person's answer about a mutation whose outcome is unknown.
type Resolution struct {
	// As is applied, failed or skipped.
	As     scripthost.MutationStatus
	Result json.RawMessage
	By     string
	// Force allows resolving a needs_reconcile mutation; without it only indeterminate
	// mutations may be resolved.
	Force bool
}

// Commit is the end of a run: the state to save, the events the run published (stored
// in the same transaction as the commit), and for producers the next scheduled time.
type Commit struct {
	State json.RawMessage
	// Output becomes the run's OutputState; when empty, State does.
	Output json.RawMessage
	// Publish is stored like Publish: an empty Workflow means the run's workflow, an
	// empty CausedBy the run's id.
	Publish   []NewEvent
	NextRunAt time.Time
	// WakeAt is the consumer's requested wake-up time (zero: none).
	WakeAt time.Time
}

// StatusChange sets a run's status. The store applies the event disposition rules:
// before the mutation the run's reserved events are released; while the mutation's
// outcome is unknown they stay reserved; after the mutation they stay reserved and a
// failed run is marked to retry from emitting.
type StatusChange struct {
	Status     scripthost.RunStatus
	Error      string
	ErrorClass scripthost.ErrorClass
	NotBefore  time.Time
}

// RetryRun says how a retry run differs from the run it retries.
type RetryRun struct {
	// Version is the stored version of the workflow the retry runs (0: the newest).
	Version int
	// State, when set, replaces the source's input state (what the handler's
	// onError.onRetry returned); empty keeps the source's.
	State json.RawMessage
	// Failed, when set, creates the retry already failed with this status and error
	// (its onRetry failed): the attempt is recorded, and it runs nothing.
	Failed *StatusChange
}

// HandlerState is the saved state of one handler of a workflow.
type HandlerState struct {
	Workflow  string          `json:"workflow"`
	Handler   string          `json:"handler"`
	State     json.RawMessage `json:"state,omitempty"`
	WakeAt    time.Time       `json:"wake_at,omitzero"`
	UpdatedAt time.Time       `json:"updated_at,omitzero"`
}

// Schedule is a producer's schedule.
type Schedule struct {
	Workflow  string    `json:"workflow"`
	Producer  string    `json:"producer"`
	NextRunAt time.Time `json:"next_run_at,omitzero"`
	LastRunAt time.Time `json:"last_run_at,omitzero"`
}

// Snapshot is the state of a run at the end of a phase or before a pause. Stores write
// one inside every run transition's transaction.
type Snapshot struct {
	RunID  string               `json:"run_id"`
	Seq    int                  `json:"seq"`
	Phase  scripthost.RunPhase  `json:"phase"`
	Status scripthost.RunStatus `json:"status"`
	// Run is the whole run as JSON at that moment.
	Run json.RawMessage `json:"run"`
	At  time.Time       `json:"at"`
}

// ExecutionRecord is the evidence of one executed plan step (or any audited action).
type ExecutionRecord struct {
	ExecutionID string          `json:"execution_id"`
	PlanID      string          `json:"plan_id"`
	StepID      string          `json:"step_id"`
	Seq         int             `json:"seq"`
	Tool        string          `json:"tool"`
	Arguments   json.RawMessage `json:"arguments,omitempty"`
	StartedAt   time.Time       `json:"started_at"`
	EndedAt     time.Time       `json:"ended_at"`
	DurationMS  int64           `json:"duration_ms"`
	Success     bool            `json:"success"`
	ExitCode    int             `json:"exit_code"`
	Stdout      string          `json:"stdout,omitempty"`
	Stderr      string          `json:"stderr,omitempty"`
	Error       string          `json:"error,omitempty"`
	ErrorCode   string          `json:"error_code,omitempty"`
	Result      json.RawMessage `json:"result,omitempty"`
	Diagnostics json.RawMessage `json:"diagnostics,omitempty"`
}

// Filters for listings. Zero fields match everything.
type (
	RunFilter struct {
		Workflow string
		Handler  string
		Status   scripthost.RunStatus
		// Unfinished selects runs whose status is not final.
		Unfinished bool
		// Newest lists newest first (runs are otherwise oldest first); with Limit 1 it
		// gives a handler's latest run.
		Newest bool
		Limit  int
		// Phase selects runs in this phase.
		Phase scripthost.RunPhase
		// Since and Until select runs created at or after Since and before Until.
		Since, Until time.Time
		// Superseded selects runs a retry took over.
		Superseded bool
		// Search selects runs whose id, workflow, handler, status or error, or whose
		// mutation's tool, contains it (ignoring case).
		Search string
		// Page, when set, lists newest first by (created_at, id) from Page.After on;
		// Newest is then implied.
		Page *Page
	}
	MutationFilter struct {
		RunID    string
		Workflow string
		Status   scripthost.MutationStatus
		Limit    int
		// Search selects mutations whose id, run, workflow, handler, tool, status,
		// idempotency key or error contains it (ignoring case).
		Search string
		// Page, when set, lists newest first by (created_at, id) from Page.After on.
		Page *Page
	}
	EventFilter struct {
		Workflow string
		Topic    string
		// MessageID selects the event with this message id (with Workflow and Topic,
		// at most one).
		MessageID string
		Status    scripthost.EventStatus
		Limit     int
		// Search selects events whose message id, topic, status, publishing run or
		// reserving run contains it (ignoring case).
		Search string
		// Page, when set, lists newest first by sequence number from Page.After on.
		Page *Page
	}
	ExecutionFilter struct {
		ExecutionID string
		PlanID      string
	}
)

// Recovery is what a restarting host must pick up.
type Recovery struct {
	// Runs are all runs whose status is active (any phase but committed).
	Runs []scripthost.Run
	// InFlight are all mutations in status in_flight.
	InFlight []scripthost.Mutation
}

// Store is the ledger. Implementations are safe for concurrent use.
type Store interface {
	// Workflows.
	// PutWorkflow stores v as the workflow's newest version unless its hash and origin
	// equal the latest version's (which is then returned unchanged). A version whose
	// origin differs from the latest's is refused with an *OriginError unless
	// v.Replace is set.
	PutWorkflow(ctx context.Context, v WorkflowVersion) (WorkflowVersion, error)
	// WorkflowVersion returns one version; version 0 means the latest.
	WorkflowVersion(ctx context.Context, workflow string, version int) (WorkflowVersion, error)
	Workflow(ctx context.Context, name string) (Workflow, error)
	Workflows(ctx context.Context) ([]Workflow, error)
	SetWorkflowPaused(ctx context.Context, name string, paused bool) error

	// Events.
	Publish(ctx context.Context, events ...NewEvent) ([]scripthost.Event, error)
	// PendingEvents lists pending events in publication order; an empty topic means
	// every topic, a limit of 0 no limit.
	PendingEvents(ctx context.Context, workflow, topic string, limit int) ([]scripthost.Event, error)
	Events(ctx context.Context, f EventFilter) ([]scripthost.Event, error)
	// SkipEvent sets a pending event aside: its status becomes skipped, so no run
	// peeks at or reserves it again, and it stays listed. An event already skipped is
	// returned unchanged; a reserved or consumed one is refused with a
	// *TransitionError; an unknown one is ErrNotFound.
	SkipEvent(ctx context.Context, workflow, topic, messageID string) (scripthost.Event, error)
	// Topics sums up every topic that has events (TopicStats), ordered by workflow then
	// topic; an empty workflow means every workflow.
	Topics(ctx context.Context, workflow string) ([]TopicStats, error)

	// Runs.
	// NewID returns a fresh id for a run or a mutation, unique in this ledger.
	NewID() string
	CreateRun(ctx context.Context, r NewRun) (scripthost.Run, error)
	Run(ctx context.Context, id string) (scripthost.Run, error)
	Runs(ctx context.Context, f RunFilter) ([]scripthost.Run, error)
	Snapshots(ctx context.Context, runID string) ([]Snapshot, error)
	// AdvancePhase moves an active run from phase from to phase to (forward only).
	// Moves with their own method (to prepared, mutated, committed) are refused here,
	// and so is a move that would pass over one of those phases; what is left is
	// pending → preparing, prepared → mutating and mutated → emitting for consumers,
	// pending → executing for producers. (The transitions that make a run mutated move
	// it on to emitting themselves; a run is found mutated only in a ledger written by
	// an older version.)
	AdvancePhase(ctx context.Context, runID string, from, to scripthost.RunPhase) (scripthost.Run, error)
	// MarkPrepared moves preparing → prepared, stores the result and reserves its
	// events for the run; with res.Mutate it moves on to mutating.
	MarkPrepared(ctx context.Context, runID string, res PrepareResult) (scripthost.Run, error)
	// MarkMutated moves mutating → mutated without a mutation (the mutate phase made
	// none, or the consumer has no mutate function): the outcome is "none". Like every
	// transition that records the outcome, it moves the run on to emitting in the same
	// transaction (ledger.OutcomeRecorded), with a snapshot of each phase, and logs
	// phase_started(next) after the caller's events.
	MarkMutated(ctx context.Context, runID string) (scripthost.Run, error)
	// SetRunStatus changes a run's status with the event disposition rules. It sets
	// active, paused:* or failed:* (committed and skipped have their own methods) on a
	// run whose status is not final and that has not been retried. Setting active on a
	// paused run resumes it: a run paused before its mutation takes its events back (all
	// or nothing, ErrEventUnavailable); resuming is refused while the run's mutation is
	// indeterminate (resolve it) or after it failed (retry the run instead).
	SetRunStatus(ctx context.Context, runID string, ch StatusChange) (scripthost.Run, error)
	// CommitConsumer consumes the run's events, saves state, stores its publications,
	// and marks it committed (phase emitting → committed).
	CommitConsumer(ctx context.Context, runID string, c Commit) (scripthost.Run, error)
	// CommitProducer saves state, stores publications and the next run time, and marks
	// it committed (phase executing → committed).
	CommitProducer(ctx context.Context, runID string, c Commit) (scripthost.Run, error)
	// SkipRun records a run whose guard said no: status skipped, events released. Only
	// a run before its mutation can be skipped.
	SkipRun(ctx context.Context, runID string, reason string) (scripthost.Run, error)
	// CancelRun stops a run for good, as an operator asked. A run before its mutation
	// (or whose mutation definitely failed) is cancelled with its events released; a run
	// past its mutation's known outcome is cancelled with its events consumed, so the
	// side effect is neither lost nor repeated, and its next phase does not run. A run
	// whose mutation outcome is not known yet (in_flight, needs_reconcile,
	// indeterminate) keeps its status and phase, with the request stored on its row and
	// cancel_requested logged: the transition that records the outcome (ApplyMutation,
	// FailMutationToNext, Resolve as applied or skipped) cancels the run in its own
	// transaction, its events consumed after the side effect and released after a
	// definite failure, and its next phase's commit is then refused. It returns the run
	// as it left it; its status says which happened. A final or retried run is refused.
	CancelRun(ctx context.Context, runID string, c Cancel) (scripthost.Run, error)
	// CreateRetryRun creates the run that retries a failed or paused one, running the
	// stored version r.Version of its workflow (0: the newest stored, or the source's
	// when the store holds no version; ErrNotFound for an unknown version). A run marked
	// to retry from emitting hands its reservations, prepared data and outcome to the
	// new run, which starts at emitting; any other retry starts at pending. The source
	// keeps its status and is superseded: a second retry of it, or resuming it, is
	// refused. A run whose mutation outcome is unknown is not retried (refused).
	// r.State, when set, is the new run's input state instead of the source's.
	CreateRetryRun(ctx context.Context, runID string, r RetryRun) (scripthost.Run, error)
	// Recover lists what a restarting host must pick up.
	Recover(ctx context.Context) (Recovery, error)

	// Mutations.
	// BeginMutation durably records an in_flight mutation. The run must be active and
	// in phase mutating, with no mutation yet. Without an idempotency key it derives
	// one (NewMutation); a run's mutation is logged as mutation_recorded with its key.
	BeginMutation(ctx context.Context, m NewMutation) (scripthost.Mutation, error)
	// ApplyMutation marks it applied with its result; for a run mutation it also sets
	// the run's outcome and moves the run mutating → mutated → emitting, in one
	// transaction (see MarkMutated).
	ApplyMutation(ctx context.Context, mutationID string, result json.RawMessage) (scripthost.Mutation, error)
	// FailMutation marks it failed (definitely did not happen); the run's events are
	// released and the run takes the status of the error's class.
	FailMutation(ctx context.Context, mutationID string, cause *scripthost.Error) (scripthost.Mutation, error)
	// FailMutationToNext marks it failed (definitely did not happen) like FailMutation,
	// but a run mutation's run goes on: it moves mutating → mutated → emitting with the
	// outcome {status: failed, error}, so that next runs. With release the run's events
	// are released at once; otherwise they stay reserved and are consumed at commit.
	FailMutationToNext(ctx context.Context, mutationID string, cause *scripthost.Error, release bool) (scripthost.Mutation, error)
	// MarkNeedsReconcile records a reconcile attempt that could not decide. For a run
	// mutation the run waits in status paused:reconciliation with the reason as its
	// error and the next attempt as its NotBefore; it keeps its events, and the
	// mutation's outcome (applied, failed, indeterminate) moves it on as before.
	MarkNeedsReconcile(ctx context.Context, mutationID string, attempts int, next time.Time, reason string) (scripthost.Mutation, error)
	// MarkIndeterminate hands the mutation to a person; the run is paused for
	// reconciliation and keeps its events.
	MarkIndeterminate(ctx context.Context, mutationID string, reason string) (scripthost.Mutation, error)
	// Resolve applies a person's resolution: applied (run continues to next with the
	// result), failed (events released, run failed so a fresh run prepares again) or
	// skipped (events marked skipped, run continues to next with status skipped).
	Resolve(ctx context.Context, mutationID string, r Resolution) (scripthost.Mutation, error)
	Mutation(ctx context.Context, id string) (scripthost.Mutation, error)
	// RunMutation returns the run's mutation, or ErrNotFound.
	RunMutation(ctx context.Context, runID string) (scripthost.Mutation, error)
	Mutations(ctx context.Context, f MutationFilter) ([]scripthost.Mutation, error)
	// DueReconciles lists needs_reconcile mutations whose next attempt is due at now.
	DueReconciles(ctx context.Context, now time.Time) ([]scripthost.Mutation, error)
	// FailureCount counts definitely failed mutations with this input hash.
	FailureCount(ctx context.Context, inputHash string) (int, error)

	// Handler state and schedules.
	HandlerState(ctx context.Context, workflow, handler string) (HandlerState, error)
	Schedule(ctx context.Context, workflow, producer string) (Schedule, error)
	SetSchedule(ctx context.Context, s Schedule) error

	// Lifecycle log (see WithEvents for how entries are written).
	// LifecycleEvents lists lifecycle events in Seq order.
	LifecycleEvents(ctx context.Context, f LifecycleFilter) ([]LifecycleEvent, error)

	// Execution log.
	AppendExecution(ctx context.Context, r ExecutionRecord) error
	// ReserveExecution reserves the next execution number of a plan (1, 2, …) in one
	// transaction, so that executors racing on one plan never share a number.
	ReserveExecution(ctx context.Context, planID string) (int, error)
	Executions(ctx context.Context, f ExecutionFilter) ([]ExecutionRecord, error)
	// ExecutionSummaries sums up the executions in the log (ExecutionSummary), newest
	// first by (started_at, execution id).
	ExecutionSummaries(ctx context.Context, f ExecutionSummaryFilter) ([]ExecutionSummary, error)

	Close() error
}
