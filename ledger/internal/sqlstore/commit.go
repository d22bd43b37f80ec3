package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/scripthost/scripthost"
	"github.com/scripthost/scripthost/ledger"
)

func checkCommit(c ledger.Commit) error {
	if err := checkJSON("commit state", c.State); err != nil {
		return err
	}
	return checkJSON("commit output", c.Output)
}

// commitRun is the common part of both commits: checks, state, publications, run
// committed. The run's output state is Output, or State when Output is empty.
func (s *Store) commitRun(ctx context.Context, tx Tx, runID string, kind scripthost.HandlerKind,
	from scripthost.RunPhase, c ledger.Commit, wakeAt time.Time, now time.Time) (runRec, error) {
	rec, err := s.getRun(ctx, tx, runID)
	if err != nil {
		return rec, err
	}
	if rec.Kind != kind {
		return rec, refuse("run", runID, rec.Phase, scripthost.RunCommitted, "run is a %s, not a %s", rec.Kind, kind)
	}
	if err := checkPhaseMove(rec, from, scripthost.RunCommitted); err != nil {
		return rec, err
	}
	if wakeAt.IsZero() {
		wakeAt = rec.WakeAt
	}
	if err := s.putState(ctx, tx, rec.Workflow, rec.Handler, c.State, wakeAt, now); err != nil {
		return rec, err
	}
	if _, err := s.insertEvents(ctx, tx, c.Publish, rec.Workflow, rec.ID); err != nil {
		return rec, err
	}
	rec.Phase, rec.Status = scripthost.RunCommitted, scripthost.StatusCommitted
	rec.OutputState = c.Output
	if len(rec.OutputState) == 0 {
		rec.OutputState = c.State
	}
	rec.Error, rec.ErrorClass, rec.NotBefore, rec.UpdatedAt = "", "", time.Time{}, now
	return rec, nil
}

// CommitConsumer consumes the run's events, saves state and publications, and marks
// the run committed (emitting → committed). The handler's wake-up time is the commit's
// WakeAt, or the one the prepare phase asked for.
func (s *Store) CommitConsumer(ctx context.Context, runID string, c ledger.Commit) (scripthost.Run, error) {
	if err := checkCommit(c); err != nil {
		return scripthost.Run{}, err
	}
	var out runRec
	err := s.mustWriteRedo(ctx, func(ctx context.Context, tx Tx) error {
		now := s.now()
		rec, err := s.commitRun(ctx, tx, runID, scripthost.KindConsumer, scripthost.RunEmitting, c, norm(c.WakeAt), now)
		if err != nil {
			return err
		}
		if err := s.setRunEvents(ctx, tx, runID, scripthost.EventConsumed); err != nil {
			return err
		}
		out = rec
		return s.saveRun(ctx, tx, rec)
	})
	return out.Run, err
}

// CommitProducer saves state, publications and the schedule, and marks the run
// committed (executing → committed).
func (s *Store) CommitProducer(ctx context.Context, runID string, c ledger.Commit) (scripthost.Run, error) {
	if err := checkCommit(c); err != nil {
		return scripthost.Run{}, err
	}
	var out runRec
	err := s.mustWriteRedo(ctx, func(ctx context.Context, tx Tx) error {
		var err error
		out, err = s.commitProducer(ctx, tx, runID, c)
		return err
	})
	return out.Run, err
}

// commitProducer is CommitProducer's work inside its transaction.
func (s *Store) commitProducer(ctx context.Context, tx Tx, runID string, c ledger.Commit) (runRec, error) {
	now := s.now()
	rec, err := s.commitRun(ctx, tx, runID, scripthost.KindProducer, scripthost.RunExecuting, c, norm(c.WakeAt), now)
	if err != nil {
		return rec, err
	}
	if err := s.putSchedule(ctx, tx, ledger.Schedule{
		Workflow: rec.Workflow, Producer: rec.Handler, NextRunAt: c.NextRunAt, LastRunAt: now,
	}); err != nil {
		return rec, err
	}
	return rec, s.saveRun(ctx, tx, rec)
}

func (s *Store) putState(ctx context.Context, tx Tx, workflow, handler string, state []byte, wakeAt, now time.Time) error {
	return s.execLater(ctx, tx, "save state", `INSERT INTO handler_state (workflow, handler, state, wake_at, updated_at)
		VALUES (?, ?, ?, ?, ?) ON CONFLICT (workflow, handler) DO UPDATE SET
		state = excluded.state, wake_at = excluded.wake_at, updated_at = excluded.updated_at`,
		[]any{workflow, handler, rawJSON(state), nanos(wakeAt), nanos(now)}, -1, nil)
}

func (s *Store) putSchedule(ctx context.Context, tx Tx, sc ledger.Schedule) error {
	_, err := tx.ExecContext(ctx, `INSERT INTO schedules (workflow, producer, next_run_at, last_run_at)
		VALUES (?, ?, ?, ?) ON CONFLICT (workflow, producer) DO UPDATE SET
		next_run_at = excluded.next_run_at, last_run_at = excluded.last_run_at`,
		sc.Workflow, sc.Producer, nanos(norm(sc.NextRunAt)), nanos(norm(sc.LastRunAt)))
	if err != nil {
		return s.dbErr("save schedule", err)
	}
	return nil
}

// HandlerState returns the saved state of a handler; a handler with none has a zero
// state with Workflow and Handler filled in.
func (s *Store) HandlerState(ctx context.Context, workflow, handler string) (ledger.HandlerState, error) {
	var row struct {
		State     rawJSON `db:"state"`
		WakeAt    nanos   `db:"wake_at"`
		UpdatedAt nanos   `db:"updated_at"`
	}
	hs := ledger.HandlerState{Workflow: workflow, Handler: handler}
	err := s.r.GetContext(ctx, &row, `SELECT state, wake_at, updated_at FROM handler_state WHERE workflow = ? AND handler = ?`,
		workflow, handler)
	if errors.Is(err, sql.ErrNoRows) {
		return hs, nil
	}
	if err != nil {
		return hs, s.dbErr("read state", err)
	}
	hs.State, hs.WakeAt, hs.UpdatedAt = row.State.msg(), row.WakeAt.Time(), row.UpdatedAt.Time()
	return hs, nil
}

// Schedule returns a producer's schedule; one never set is zero with Workflow and
// Producer filled in.
func (s *Store) Schedule(ctx context.Context, workflow, producer string) (ledger.Schedule, error) {
	var row struct {
		NextRunAt nanos `db:"next_run_at"`
		LastRunAt nanos `db:"last_run_at"`
	}
	sc := ledger.Schedule{Workflow: workflow, Producer: producer}
	err := s.r.GetContext(ctx, &row, `SELECT next_run_at, last_run_at FROM schedules WHERE workflow = ? AND producer = ?`,
		workflow, producer)
	if errors.Is(err, sql.ErrNoRows) {
		return sc, nil
	}
	if err != nil {
		return sc, s.dbErr("read schedule", err)
	}
	sc.NextRunAt, sc.LastRunAt = row.NextRunAt.Time(), row.LastRunAt.Time()
	return sc, nil
}

// SetSchedule stores a producer's schedule.
func (s *Store) SetSchedule(ctx context.Context, sc ledger.Schedule) error {
	if sc.Workflow == "" || sc.Producer == "" {
		return fmt.Errorf("%s: set schedule: workflow and producer are required", s.name)
	}
	return s.write(ctx, func(ctx context.Context, tx Tx) error { return s.putSchedule(ctx, tx, sc) })
}
