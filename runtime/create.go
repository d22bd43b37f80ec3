package runtime

import (
	"context"
	"errors"
	"time"

	"github.com/scripthost/scripthost"
	"github.com/scripthost/scripthost/ledger"
)

// A run the scheduler starts is not written when it begins: the drive loop moves it
// in memory, through its guard and the phases that only read, and the step that first
// has something to keep writes it, with what it passed, in that step's one write.
// So a consumer run that makes a mutation is written by the mutation's in-flight
// record (ledger.NewMutation.Run), a guard's no is one write (ledger.NewRun.Skipped),
// and a producer run is created committed (ledger.NewRun.Commit). A process that
// stops before that write leaves nothing to recover, and the next pass starts again.
// A phase stopped by the host's shutdown leaves no run; one that fails writes the run
// where it failed and records the failure on it, as for a run read from the ledger.
//
// creation is such a run, with the lifecycle events of its creation: its first phase
// started, and the events of the steps it passed since.
type creation struct {
	run     ledger.NewRun
	started ledger.LifecycleEvent
	passed  []ledger.LifecycleEvent
}

// events are the creation's lifecycle events in order.
func (c *creation) events() []ledger.LifecycleEvent {
	return append([]ledger.LifecycleEvent{c.started}, c.passed...)
}

// phase is the phase the run is in when its creation is written, before the writing
// step's own transition (a commit, a skip, a mutation) in the same write.
func (c *creation) phase() scripthost.RunPhase {
	switch {
	case c.run.Start == "":
		return scripthost.RunPending
	case c.run.Prepared != nil:
		return scripthost.RunMutating
	}
	return c.run.Start
}

// createRun writes the run of d, as its creation says, with the lifecycle events ctx
// carries.
func (rt *Runtime) createRun(ctx context.Context, d *course) (scripthost.Run, error) {
	created, err := rt.cfg.Store.CreateRun(ctx, d.create.run)
	if err != nil {
		return scripthost.Run{}, err
	}
	rt.created(d)
	return created, nil
}

// guardedFirst is stepPending's end for a run not written yet: a guard that lets the
// run go on starts its first phase in memory; one that says no creates the run
// skipped (and moves a producer's schedule) in one write; one that fails creates the
// run pending and records the failure on it.
func (rt *Runtime) guardedFirst(ctx context.Context, l *loaded, lc Lifecycle, d *course, ok bool, gerr error,
	first scripthost.RunPhase, phase scripthost.Phase) (scripthost.Run, bool, error) {
	run, nr := d.run, &d.create.run
	if gerr == nil && ok {
		nr.Start, run.Phase = first, first
		d.create.started = stamped(rt.now(), phaseEvent(run, ledger.EventPhaseStarted, phase))[0]
		return run, true, nil
	}
	if err := ctx.Err(); err != nil {
		return scripthost.Run{}, false, err
	}
	if gerr == nil { // the guard said no: the run is created skipped, in one write
		nr.Skipped = rt.skip(l, run)
		ctx = with(ctx, skippedEvent(run.ID))
	}
	created, err := rt.createRun(ctx, d)
	if err != nil || nr.Skipped != nil {
		return created, true, err
	}
	return scripthost.Run{}, true, rt.routeError(ctx, created, lc, phaseGuard, gerr)
}

// producedFirst is the producer step's end for a run not written yet: its phase could
// only read, and what it publishes is stored at its commit, so the run is created
// committed, in one transaction (ledger.NewRun.Commit); a phase that failed creates
// it in executing and records the failure on it.
func (rt *Runtime) producedFirst(ctx context.Context, p *Producer, d *course, commit ledger.Commit,
	ended []ledger.LifecycleEvent, failed error) (scripthost.Run, bool, error) {
	cr := d.create
	if failed != nil {
		if err := ctx.Err(); err != nil {
			return scripthost.Run{}, false, err
		}
		return rt.failedFirst(ctx, d, p.Lifecycle, scripthost.PhaseProducer, failed)
	}
	cr.run.Commit = &commit
	evs := append(append([]ledger.LifecycleEvent{cr.started}, refusedEvents(ctx)...), stamped(rt.now(), ended...)...)
	committed, err := rt.createRun(ledger.WithEvents(ctx, evs...), d)
	return committed, true, err
}

// preparedFirst is the prepare step's end for a consumer run not written yet: its
// phase could only read, so its result moves the run on to mutating in memory, to be
// written with the run (see mutate); a phase that failed creates the run in preparing
// and records the failure on it.
func (rt *Runtime) preparedFirst(ctx context.Context, c *Consumer, d *course, pr ledger.PrepareResult,
	failed error) (scripthost.Run, bool, error) {
	run := d.run
	if failed != nil {
		if err := ctx.Err(); err != nil {
			return scripthost.Run{}, false, err
		}
		return rt.prepareFailed(ctx, c, d, failed)
	}
	d.create.run.Prepared = &pr
	d.create.passed = append(refusedEvents(ctx), stamped(rt.now(), prepareEnded(run)...)...)
	run.Phase, run.Prepared, run.Reservations = scripthost.RunMutating, pr.Data, pr.Reservations
	return run, true, nil
}

// createMutating writes a consumer run not written yet whose mutate phase made no
// mutation, prepared and moved on to mutating, before the phase's end is recorded. It
// reports whether that ended the step: when the events prepare reserved were taken
// since it looked, the run is created in preparing with its prepare phase's failure
// (as storing the result would have been refused), or, on a shared ledger where
// another host's run took them, or when the run began with events kept from an
// earlier read (staleKept), nothing is written (errStepDropped).
func (rt *Runtime) createMutating(ctx context.Context, c *Consumer, d *course) (bool, error) {
	cr := d.create
	// The phase's refused calls, if any, follow the events of its creation.
	_, err := rt.createRun(ledger.WithEvents(ctx, append(cr.events(), refusedEvents(ctx)...)...), d)
	if !errors.Is(err, ledger.ErrEventUnavailable) {
		return false, err
	}
	if d.kept {
		return true, rt.staleKept(cr.run)
	}
	if cr.run.Prepared != nil && rt.takenElsewhere(ctx, cr.run.Workflow, cr.run.Prepared.Reservations) {
		return true, errStepDropped
	}
	_, _, err = rt.prepareFailed(ctx, c, d, reservationError(err))
	return true, err
}

// prepareFailed is failedFirst for a consumer run's prepare phase: the run is created
// in preparing, without the phase's result.
func (rt *Runtime) prepareFailed(ctx context.Context, c *Consumer, d *course, cause error) (scripthost.Run, bool, error) {
	d.create.run.Start, d.create.run.Prepared = scripthost.RunPreparing, nil
	return rt.failedFirst(ctx, d, c.Lifecycle, scripthost.PhasePrepare, cause)
}

// failedFirst creates the run of d, not written yet, in the phase that failed, with
// the phase's started event, and records the phase's failure on it, as the step of a
// written run does.
func (rt *Runtime) failedFirst(ctx context.Context, d *course, lc Lifecycle, phase scripthost.Phase,
	cause error) (scripthost.Run, bool, error) {
	// The phase's refused calls are logged with its failure (routeError).
	created, err := rt.createRun(ledger.WithEvents(ctx, d.create.started), d)
	if err != nil {
		return scripthost.Run{}, false, err
	}
	return scripthost.Run{}, true, rt.routeError(ctx, created, lc, phase, cause)
}

// stamped returns evs with their time set to at: events a run's first write records
// keep the times their steps happened (the lifecycle log's timeline), not the write's.
func stamped(at time.Time, evs ...ledger.LifecycleEvent) []ledger.LifecycleEvent {
	for i := range evs {
		evs[i].At = at
	}
	return evs
}
