package sqlstore

import (
	"context"
	"fmt"
	"time"

	"github.com/scripthost/scripthost"
	"github.com/scripthost/scripthost/ledger"
)

// stage is where a run stands relative to its mutation; it decides what happens to the
// run's reserved events when its status changes.
type stage int

const (
	// beforeMutation: no mutation yet, or it definitely failed: events are released.
	beforeMutation stage = iota
	// outcomeUnknown: the mutation is in_flight, needs_reconcile or indeterminate: the
	// events stay reserved whatever happens to the run.
	outcomeUnknown
	// afterMutation: the outcome is recorded: the events stay reserved and a failed or
	// paused run is marked to retry from emitting.
	afterMutation
)

func (s *Store) stageOf(ctx context.Context, tx Tx, rec runRec) (stage, scripthost.Mutation, error) {
	m, found, err := s.runMutation(ctx, tx, rec.ID)
	if err != nil {
		return 0, m, err
	}
	if found && m.Status.Unknown() {
		return outcomeUnknown, m, nil
	}
	if rec.Kind == scripthost.KindConsumer &&
		scripthost.PhaseIndex(rec.Kind, rec.Phase) >= scripthost.PhaseIndex(rec.Kind, scripthost.RunMutated) {
		return afterMutation, m, nil
	}
	if found && (m.Status == scripthost.MutationApplied || m.Status == scripthost.MutationSkipped) {
		return afterMutation, m, nil
	}
	return beforeMutation, m, nil
}

// checkMovable refuses a status change of a run that will never move again.
func checkMovable(rec runRec, to any) error {
	if rec.Status.Final() {
		return refuse("run", rec.ID, rec.Status, to, "status %s is final", rec.Status)
	}
	if rec.SupersededBy != "" {
		return refuse("run", rec.ID, rec.Status, to, "run was retried by run %s", rec.SupersededBy)
	}
	return nil
}

// SetRunStatus changes a run's status with the event disposition rules. It accepts
// active (resuming a paused run), paused:* and failed:*; committed and skipped have
// methods of their own.
func (s *Store) SetRunStatus(ctx context.Context, runID string, ch ledger.StatusChange) (scripthost.Run, error) {
	var out runRec
	err := s.mustWriteRedo(ctx, func(ctx context.Context, tx Tx) error {
		rec, err := s.getRun(ctx, tx, runID)
		if err != nil {
			return err
		}
		to := ch.Status
		if to != scripthost.StatusActive && !to.Paused() && !to.Failed() {
			return refuse("run", runID, rec.Status, to, "SetRunStatus sets active, paused or failed statuses")
		}
		if err := checkMovable(rec, to); err != nil {
			return err
		}
		st, m, err := s.stageOf(ctx, tx, rec)
		if err != nil {
			return err
		}
		switch {
		case to == scripthost.StatusActive && rec.Status.Paused():
			// Resuming.
			switch {
			case st == outcomeUnknown && m.Status == scripthost.MutationIndeterminate:
				return refuse("run", runID, rec.Status, to, "mutation %s is indeterminate: resolve it", m.ID)
			case st == beforeMutation && m.Status == scripthost.MutationFailed:
				return refuse("run", runID, rec.Status, to, "mutation %s failed: create a retry run", m.ID)
			case st == beforeMutation:
				// The pause released the events: take them back, all or nothing.
				if err := s.reserve(ctx, tx, rec); err != nil {
					return err
				}
			}
		case to != scripthost.StatusActive:
			switch st {
			case beforeMutation:
				if err := s.setRunEvents(ctx, tx, runID, scripthost.EventPending); err != nil {
					return err
				}
			case afterMutation:
				rec.RetryFromEmitting = true
			}
		}
		rec.Status, rec.Error, rec.ErrorClass, rec.NotBefore = to, ch.Error, ch.ErrorClass, norm(ch.NotBefore)
		rec.UpdatedAt = s.now()
		out = rec
		return s.saveRun(ctx, tx, rec)
	})
	return out.Run, err
}

// SkipRun records a run whose guard said no: status skipped, events released. Only a
// run before its mutation can be skipped.
func (s *Store) SkipRun(ctx context.Context, runID string, reason string) (scripthost.Run, error) {
	var out runRec
	err := s.mustWriteRedo(ctx, func(ctx context.Context, tx Tx) error {
		rec, err := s.getRun(ctx, tx, runID)
		if err != nil {
			return err
		}
		if err := checkMovable(rec, scripthost.StatusSkipped); err != nil {
			return err
		}
		st, m, err := s.stageOf(ctx, tx, rec)
		if err != nil {
			return err
		}
		if st != beforeMutation {
			return refuse("run", runID, rec.Status, scripthost.StatusSkipped,
				"run is past its mutation (phase %s, mutation %s %s)", rec.Phase, m.ID, m.Status)
		}
		if err := s.setRunEvents(ctx, tx, runID, scripthost.EventPending); err != nil {
			return err
		}
		rec.Status, rec.Error, rec.ErrorClass = scripthost.StatusSkipped, reason, ""
		rec.UpdatedAt = s.now()
		out = rec
		return s.saveRun(ctx, tx, rec)
	})
	return out.Run, err
}

// CreateRetryRun creates the run that retries a failed or paused run. A run past its
// mutation hands its reservations, prepared data and outcome to the new run, which
// starts at emitting; any other retry starts at pending with the same input state. The
// source keeps its status and is marked superseded: it cannot be retried or resumed
// again. A run whose mutation outcome is unknown cannot be retried. The retry runs the
// given version of the workflow (0: the newest), so a fix stored since is the code that
// runs.
func (s *Store) CreateRetryRun(ctx context.Context, runID string, retry ledger.RetryRun) (scripthost.Run, error) {
	if err := checkJSON("retry state", retry.State); err != nil {
		return scripthost.Run{}, err
	}
	var version int
	var out runRec
	err := s.mustWrite(ctx, func(ctx context.Context, tx Tx) error {
		src, err := s.getRun(ctx, tx, runID)
		if err != nil {
			return err
		}
		if !src.Status.Failed() && !src.Status.Paused() {
			return refuse("run", runID, src.Status, "retry", "only a failed or paused run is retried")
		}
		if src.SupersededBy != "" {
			return refuse("run", runID, src.Status, "retry", "already retried by run %s", src.SupersededBy)
		}
		st, m, err := s.stageOf(ctx, tx, src)
		if err != nil {
			return err
		}
		if st == outcomeUnknown {
			return refuse("run", runID, src.Status, "retry", "mutation %s is %s: reconcile or resolve it first", m.ID, m.Status)
		}
		// From the caller's version at each attempt: a backend may run this again.
		if version, err = s.retryVersion(ctx, tx, src, retry.Version); err != nil {
			return err
		}
		now := s.now()
		rec := runRec{Run: scripthost.Run{
			ID: s.opts.NewID(), Workflow: src.Workflow, Version: version, Handler: src.Handler,
			Kind: src.Kind, Phase: scripthost.RunPending, Status: scripthost.StatusActive,
			RetryOf: src.ID, Attempt: src.Attempt + 1, InputState: src.InputState,
			CreatedAt: now, UpdatedAt: now,
		}}
		if len(retry.State) > 0 {
			rec.InputState = retry.State
		}
		if f := retry.Failed; f != nil {
			if !f.Status.Failed() {
				return refuse("run", runID, src.Status, "retry", "a retry is created failed, not %s", f.Status)
			}
			rec.Status, rec.Error, rec.ErrorClass = f.Status, f.Error, f.ErrorClass
		}
		fromEmitting := src.Kind == scripthost.KindConsumer && (src.RetryFromEmitting || st == afterMutation)
		if fromEmitting {
			rec.Phase = scripthost.RunEmitting
			rec.Prepared, rec.Reservations, rec.Outcome, rec.WakeAt = src.Prepared, src.Reservations, src.Outcome, src.WakeAt
			rec.RetryFromEmitting = retry.Failed != nil
		}
		if err := s.insertRun(ctx, tx, rec); err != nil {
			return err
		}
		if fromEmitting {
			if _, err := tx.ExecContext(ctx, `UPDATE events SET reserved_by = ? WHERE reserved_by = ? AND status = 'reserved'`,
				rec.ID, src.ID); err != nil {
				return s.dbErr("retry run", err)
			}
		}
		src.SupersededBy = rec.ID
		src.UpdatedAt = now
		if err := s.saveRun(ctx, tx, src); err != nil {
			return err
		}
		out = rec
		return nil
	})
	return out.Run, err
}

// retryVersion returns the version a retry runs: the given one, which must be stored,
// or for 0 the newest stored version (the source's when none is stored).
func (s *Store) retryVersion(ctx context.Context, tx Tx, src runRec, version int) (int, error) {
	var got int
	var err error
	if version == 0 {
		err = tx.GetContext(ctx, &got, `SELECT COALESCE(MAX(version), ?) FROM workflow_versions WHERE workflow = ?`, src.Version, src.Workflow)
	} else {
		err = tx.GetContext(ctx, &got, `SELECT COUNT(*) FROM workflow_versions WHERE workflow = ? AND version = ?`, src.Workflow, version)
		if got == 1 {
			got = version
		}
	}
	if err != nil {
		return 0, s.dbErr("retry run", err)
	}
	if got == 0 {
		return 0, fmt.Errorf("%w: workflow %q version %d", ledger.ErrNotFound, src.Workflow, version)
	}
	return got, nil
}

// CancelRun stops a run as an operator asked (see ledger.Store.CancelRun). A run
// whose mutation's outcome is unknown keeps the request in its row (runRec.cancel),
// written with a new updated_at, so that the transition that records the outcome
// cancels it (saveOutcome): on PostgreSQL a host whose cached copy of the row predates
// the request fails its guarded write of the outcome and runs it again on the fresh row.
func (s *Store) CancelRun(ctx context.Context, runID string, c ledger.Cancel) (scripthost.Run, error) {
	var out runRec
	err := s.mustWriteRedo(ctx, func(ctx context.Context, tx Tx) error {
		rec, err := s.getRun(ctx, tx, runID)
		if err != nil {
			return err
		}
		if err := checkMovable(rec, scripthost.StatusCancelled); err != nil {
			return err
		}
		st, _, err := s.stageOf(ctx, tx, rec)
		if err != nil {
			return err
		}
		req := cancelRequest{By: c.By, Reason: c.Reason}
		if st != outcomeUnknown {
			out, err = s.cancel(ctx, tx, rec, st, req, s.now(), nil)
			return err
		}
		rec.cancel, rec.UpdatedAt = &req, s.now()
		out = rec
		if err := s.saveRun(ctx, tx, rec); err != nil {
			return err
		}
		return s.logOwn(ctx, tx, ledger.NewLifecycleEvent(runID, ledger.EventCancelRequested, req.data()))
	})
	return out.Run, err
}

// cancelRequest is a request to cancel a run, as runs.cancel_request and the data of
// its cancel_requested event hold it.
type cancelRequest struct {
	By     string `json:"by,omitempty"`
	Reason string `json:"reason,omitempty"`
}

// data is the data of the request's lifecycle events: by and reason when given.
func (req cancelRequest) data() map[string]any {
	data := map[string]any{}
	if req.By != "" {
		data["by"] = req.By
	}
	if req.Reason != "" {
		data["reason"] = req.Reason
	}
	return data
}

// cancel cancels rec, at stage st, as req asks: its events released before its
// mutation's outcome or after a definite failure, consumed after the side effect
// (the cancelled event says which), status cancelled with who and why, any pending
// request cleared. via are the states the run passed through in the same transaction
// (see saveRun), and logged the transition's own events, logged before the cancelled
// one. It is CancelRun's cancellation and the one of a transition that records the
// outcome of a run whose cancel was requested meanwhile (saveOutcome).
func (s *Store) cancel(ctx context.Context, tx Tx, rec runRec, st stage, req cancelRequest, now time.Time,
	via []scripthost.Run, logged ...ledger.LifecycleEvent) (runRec, error) {
	data := req.data()
	events := scripthost.EventPending
	data["events"] = "released"
	if st == afterMutation && !definitelyFailed(rec) {
		events, data["events"] = scripthost.EventConsumed, "consumed"
	}
	if err := s.setRunEvents(ctx, tx, rec.ID, events); err != nil {
		return rec, err
	}
	rec.Status, rec.Error, rec.ErrorClass, rec.NotBefore = scripthost.StatusCancelled, req.text(), "", time.Time{}
	rec.cancel, rec.UpdatedAt = nil, now
	if err := s.saveRun(ctx, tx, rec, via...); err != nil {
		return rec, err
	}
	for _, ev := range append(logged, ledger.NewLifecycleEvent(rec.ID, ledger.EventCancelled, data)) {
		if err := s.logOwn(ctx, tx, ev); err != nil {
			return rec, err
		}
	}
	return rec, nil
}

// definitelyFailed reports whether the run's outcome is a mutation that definitely
// did not happen: cancelled, it releases its events like a run before its mutation.
func definitelyFailed(rec runRec) bool {
	return rec.Outcome != nil && rec.Outcome.Status == scripthost.OutcomeFailed
}

// text is a cancelled run's error text: who cancelled it and why.
func (req cancelRequest) text() string {
	s := "cancelled"
	if req.By != "" {
		s += " by " + req.By
	}
	if req.Reason != "" {
		s += ": " + req.Reason
	}
	return s
}
