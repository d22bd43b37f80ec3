package runtime

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/scripthost/scripthost"
	"github.com/scripthost/scripthost/hostfuncs"
	"github.com/scripthost/scripthost/ledger"
	"github.com/scripthost/scripthost/sandbox"
)

// Drive moves a run forward until it is committed, paused, failed or waiting for a
// reconciliation. It reads the run, dispatches on its phase, and goes on with the run
// each transition returns (reading it again only after a step whose ledger writes
// it cannot see, such as a mutate phase's tool call), so the same code serves a first
// run and a run found after a restart. It returns the run as it left it and whether
// any step made progress. Errors are failures of the ledger; script and tool failures
// are recorded on the run instead.
func (rt *Runtime) Drive(ctx context.Context, runID string) (run scripthost.Run, progress bool, err error) {
	ctx, end := rt.observeRun(ctx, runID)
	defer func() { end(err) }()
	if run, err = rt.cfg.Store.Run(ctx, runID); err != nil {
		return run, false, err
	}
	// Moving a run outside the scheduler may release or take its workflow's events.
	defer rt.forgetAhead(run.Workflow)
	return rt.drive(ctx, &course{run: run})
}

// driveRun is Drive for a run the caller has just written: moved on by the transition
// that returned it (fresh: no mutation can have been recorded for it since).
func (rt *Runtime) driveRun(ctx context.Context, run scripthost.Run, fresh bool) (_ scripthost.Run, progress bool, err error) {
	ctx, end := rt.observeRun(ctx, run.ID)
	defer func() { end(err) }()
	return rt.drive(ctx, &course{run: run, fresh: fresh})
}

// begin creates the run nr describes and drives it, under a fresh id and the run's
// observation: the run is written by the step that first has something to keep (see
// creation). peeked, when set, holds the pending events the scheduler read for a
// consumer's run, for its prepare phase; kept says they were kept from an earlier read
// (see keptEvents).
func (rt *Runtime) begin(ctx context.Context, nr ledger.NewRun, peeked *hostfuncs.Peeked, kept bool) (run scripthost.Run, err error) {
	nr.ID = rt.cfg.Store.NewID()
	run = scripthost.Run{ID: nr.ID, Workflow: nr.Workflow, Version: nr.Version, Handler: nr.Handler,
		Kind: nr.Kind, Phase: scripthost.RunPending, Status: scripthost.StatusActive,
		Attempt: 1, InputState: nr.InputState}
	ctx, end := rt.observeRun(ctx, run.ID)
	defer func() { end(err) }()
	run, _, err = rt.drive(ctx, &course{run: run, fresh: true, peeked: peeked, kept: kept, create: &creation{run: nr}})
	return run, err
}

// course is a run the drive loop moves, with what the loop knows of it besides what
// the run says.
type course struct {
	run scripthost.Run
	// fresh says run is what this process's own transition returned (not what it
	// read), so that, in phase mutating, no mutation exists yet.
	fresh bool
	// recorded says run is at emitting as this process's own write of its mutation's
	// outcome left it (ledger.OutcomeRecorded): that write honoured any cancel request
	// made meanwhile, so honourCancel does not look one up.
	recorded bool
	// peeked, when set, holds the pending events read just before the run was
	// begun, for its first prepare phase (see hostfuncs.Peeked).
	peeked *hostfuncs.Peeked
	// kept says peeked holds events kept from an earlier read (see keptEvents), which
	// may have been taken since: a step of the run not written yet whose reservation
	// is refused is then dropped (staleKept).
	kept bool
	// create is the run's creation while the run is not in the ledger yet (see
	// begin): the steps then move it in memory until one writes it.
	create *creation
	// from is the phase the step that wrote the run first found it in (see created).
	from scripthost.RunPhase
}

// drive runs the steps of d's run, written or not yet (see begin). The failpoints are
// called here only: after each step, from the phase it found the run in up to the one
// it left it in (passed), and when a step writes a run for the first time (created).
// A run not written yet passes none until then: nothing of it is durable.
func (rt *Runtime) drive(ctx context.Context, d *course) (scripthost.Run, bool, error) {
	progress := false
	for {
		run := d.run
		if err := ctx.Err(); err != nil {
			return scripthost.Run{}, progress, err
		}
		if run.Status != scripthost.StatusActive || run.Phase == scripthost.RunCommitted {
			return run, progress, nil
		}
		l, err := rt.program(ctx, run.Workflow, run.Version)
		if d.create != nil && (err != nil || !l.has(run)) {
			// A version that cannot be loaded, or a handler it lacks: the run is
			// written pending, and its next turn reports which.
			if d.run, err = rt.createRun(ctx, d); err != nil {
				return scripthost.Run{}, progress, err
			}
			d.fresh, d.from = true, ""
			continue
		}
		if err != nil {
			return run, progress, err
		}
		if !l.has(run) {
			return run, progress, rt.failMissing(ctx, run)
		}
		var next scripthost.Run
		var moved bool
		if run.Kind == scripthost.KindProducer {
			next, moved, err = rt.stepProducer(ctx, l, l.def.Producers[run.Handler], d)
		} else {
			next, moved, err = rt.stepConsumer(ctx, l, l.def.Consumers[run.Handler], d)
			if run.Phase == scripthost.RunPreparing {
				d.peeked = nil
			}
		}
		switch {
		case d.create != nil && errors.Is(err, errStepDropped):
			return scripthost.Run{}, progress, nil // nothing written: the next pass reads the ledger again
		case d.create != nil && err != nil:
			return scripthost.Run{}, progress, err // nothing written
		case err != nil:
			if stopped, ok := rt.cancelledMeanwhile(ctx, run.ID, err); ok {
				return stopped, true, nil
			}
			return run, progress, err
		case !moved:
			return run, progress, nil
		}
		progress = true
		if d.create != nil { // moved in memory: no boundary of it is durable yet
			d.run = next
			continue
		}
		if d.from == "" {
			rt.passed(run.Kind, run.Phase, next.Phase)
		}
		if d.fresh = next.ID != ""; !d.fresh {
			if next, err = rt.cfg.Store.Run(ctx, run.ID); err != nil {
				return next, progress, err
			}
		}
		if d.from != "" {
			// The step that wrote the run first passed from where it wrote it up to
			// where the ledger holds it after the step.
			rt.passed(run.Kind, d.from, next.Phase)
			d.from = ""
		}
		d.run = next
	}
}

// has reports whether the loaded version defines the handler of run.
func (l *loaded) has(run scripthost.Run) bool {
	if run.Kind == scripthost.KindProducer {
		_, ok := l.def.Producers[run.Handler]
		return ok
	}
	_, ok := l.def.Consumers[run.Handler]
	return ok
}

// passed calls the failpoint after each phase step from phase from up to the phase
// before to: a step that made two transitions in one transaction (see ledger.NewRun
// Start and ledger.PrepareResult Mutate) passed two boundaries at once.
func (rt *Runtime) passed(kind scripthost.HandlerKind, from, to scripthost.RunPhase) {
	rt.failpoint(string(kind) + ":after:" + string(from))
	order := scripthost.PhaseOrder(kind)
	first, last := scripthost.PhaseIndex(kind, from), scripthost.PhaseIndex(kind, to)
	for i := first + 1; first >= 0 && i < last; i++ {
		rt.failpoint(string(kind) + ":after:" + string(order[i]))
	}
}

// created is called by the step of d that has just written d's run for the first
// time, in the phase its creation says (creation.phase): it calls the run's
// kind:created failpoint and the after:PHASE ones of the phases the run went through
// in memory before that one; the drive loop calls the step's own when the step ends.
// From then on the run is written.
func (rt *Runtime) created(d *course) {
	kind, at := d.create.run.Kind, d.create.phase()
	rt.failpoint(string(kind) + ":created")
	for _, p := range scripthost.PhaseOrder(kind)[:max(scripthost.PhaseIndex(kind, at), 0)] {
		rt.failpoint(string(kind) + ":after:" + string(p))
	}
	d.create, d.from = nil, at
}

func (rt *Runtime) failMissing(ctx context.Context, run scripthost.Run) error {
	_, err := rt.cfg.Store.SetRunStatus(ctx, run.ID, ledger.StatusChange{
		Status:     scripthost.StatusFailedLogic,
		Error:      fmt.Sprintf("handler %s no longer exists in workflow %s version %d", run.Handler, run.Workflow, run.Version),
		ErrorClass: scripthost.ClassLogic,
	})
	return err
}

// The steps return the run as the transition they made left it, or a zero run when
// they cannot know it (the drive loop then reads it), whether they moved it, and the
// ledger's errors.

func (rt *Runtime) stepProducer(ctx context.Context, l *loaded, p *Producer, d *course) (scripthost.Run, bool, error) {
	run := d.run
	switch run.Phase {
	case scripthost.RunPending:
		return rt.stepPending(ctx, l, p.Lifecycle, d, scripthost.RunExecuting, scripthost.PhaseProducer)
	case scripthost.RunExecuting:
		commit, ended, err := rt.produce(ctx, l, p, run)
		if d.create != nil {
			return rt.producedFirst(ctx, p, d, commit, ended, err)
		}
		if err != nil {
			return scripthost.Run{}, true, rt.routeError(ctx, run, p.Lifecycle, scripthost.PhaseProducer, err)
		}
		next, err := rt.cfg.Store.CommitProducer(with(ctx, ended...), run.ID, commit)
		return next, true, err
	}
	return scripthost.Run{}, false, fmt.Errorf("runtime: run %s: producer in unexpected phase %s", run.ID, run.Phase)
}

// stepPending runs the handler's guard, if any, in the read-only hook phase, for a run
// in phase pending. A false guard skips the run (guard_skipped); a guard that throws or
// returns anything but a boolean fails it like a phase would; one that lets the run go
// on moves it on to phase first, where its first phase, phase, starts.
func (rt *Runtime) stepPending(ctx context.Context, l *loaded, lc Lifecycle, d *course, first scripthost.RunPhase,
	phase scripthost.Phase) (scripthost.Run, bool, error) {
	run := d.run
	ok, gerr := rt.guard(ctx, l, lc, run)
	if d.create != nil {
		return rt.guardedFirst(ctx, l, lc, d, ok, gerr, first, phase)
	}
	if moved, err := rt.guarded(ctx, l, lc, run, ok, gerr); moved || err != nil {
		return scripthost.Run{}, true, err
	}
	next, err := rt.cfg.Store.AdvancePhase(with(ctx, phaseEvent(run, ledger.EventPhaseStarted, phase)),
		run.ID, scripthost.RunPending, first)
	return next, true, err
}

// produce runs a producer run's phase and returns its commit and the events of the
// transition that stores it (the phase completed, the commit), or the phase's failure.
func (rt *Runtime) produce(ctx context.Context, l *loaded, p *Producer, run scripthost.Run) (ledger.Commit, []ledger.LifecycleEvent, error) {
	w := rt.wrapper(run, nil, p.Publishes)
	res, err := rt.invoke(ctx, phaseCall{l: l, lc: p.Lifecycle, run: run, w: w, phase: scripthost.PhaseProducer, fn: p.Handler,
		g: sandbox.Globals{State: stateOrNull(run.InputState)}, args: []json.RawMessage{stateOrNull(run.InputState)}})
	if err != nil {
		return ledger.Commit{}, nil, err
	}
	return ledger.Commit{
		State:     newState(res, run.InputState),
		Output:    res,
		Publish:   w.Published(),
		NextRunAt: p.Schedule.NextAfter(rt.now()),
	}, rt.commitEvents(run, scripthost.PhaseProducer, w), nil
}

func (rt *Runtime) stepConsumer(ctx context.Context, l *loaded, c *Consumer, d *course) (scripthost.Run, bool, error) {
	st := rt.cfg.Store
	run := d.run
	switch run.Phase {
	case scripthost.RunPending:
		return rt.stepPending(ctx, l, c.Lifecycle, d, scripthost.RunPreparing, scripthost.PhasePrepare)

	case scripthost.RunPreparing:
		pr, err := rt.prepare(ctx, l, c, run, d.peeked)
		if d.create != nil {
			return rt.preparedFirst(ctx, c, d, pr, err)
		}
		if err != nil {
			return scripthost.Run{}, true, rt.routeError(ctx, run, c.Lifecycle, scripthost.PhasePrepare, err)
		}
		next, err := st.MarkPrepared(with(ctx, prepareEnded(run)...), run.ID, pr)
		if errors.Is(err, ledger.ErrEventUnavailable) {
			return scripthost.Run{}, true, rt.routeError(ctx, run, c.Lifecycle, scripthost.PhasePrepare, reservationError(err))
		}
		return next, true, err

	case scripthost.RunPrepared:
		next, err := st.AdvancePhase(with(ctx, phaseEvent(run, ledger.EventPhaseStarted, scripthost.PhaseMutate)),
			run.ID, scripthost.RunPrepared, scripthost.RunMutating)
		return next, true, err

	case scripthost.RunMutating:
		if !d.fresh {
			// A run read from the ledger may have its mutation recorded already: the
			// process stopped between the in-flight write and the outcome, or the
			// outcome is being reconciled. One this process just moved here has none.
			m, err := st.RunMutation(ctx, run.ID)
			switch {
			case err == nil:
				moved, err := rt.settle(ctx, run, m)
				return scripthost.Run{}, moved, err
			case !errors.Is(err, ledger.ErrNotFound):
				return scripthost.Run{}, false, err
			}
		}
		// No mutation is recorded: the mutate phase never reached a tool (or this is
		// its first attempt), so running it again cannot repeat a side effect.
		return rt.mutate(ctx, l, c, d)

	case scripthost.RunMutated:
		// The transitions that record the outcome move the run on to emitting
		// themselves; a run parked here was left by an older version.
		next, err := st.AdvancePhase(with(ctx, phaseEvent(run, ledger.EventPhaseStarted, scripthost.PhaseNext)),
			run.ID, scripthost.RunMutated, scripthost.RunEmitting)
		return next, true, err

	case scripthost.RunEmitting:
		if next, cancelled, err := rt.honourCancel(ctx, d); cancelled || err != nil {
			return next, true, err
		}
		outcome := run.Outcome
		if outcome == nil {
			outcome = &scripthost.Outcome{Status: scripthost.OutcomeNone}
		}
		oj, err := json.Marshal(outcome)
		if err != nil {
			return scripthost.Run{}, false, fmt.Errorf("runtime: run %s: outcome: %w", run.ID, err)
		}
		state := run.InputState
		var publish []ledger.NewEvent
		var output json.RawMessage
		w := rt.wrapper(run, nil, c.Publishes)
		if c.Next != "" {
			res, err := rt.invoke(ctx, phaseCall{l: l, lc: c.Lifecycle, run: run, w: w, phase: scripthost.PhaseNext, fn: c.Next,
				g:    sandbox.Globals{State: stateOrNull(run.InputState), Prepared: stateOrNull(run.Prepared), MutationResult: oj},
				args: []json.RawMessage{stateOrNull(run.Prepared), oj}})
			if err != nil {
				return scripthost.Run{}, true, rt.routeError(ctx, run, c.Lifecycle, scripthost.PhaseNext, err)
			}
			state = newState(res, run.InputState)
			publish = w.Published()
			output = res
		}
		wake := run.WakeAt
		if !wake.After(rt.now()) {
			wake = time.Time{}
		}
		next, err := st.CommitConsumer(with(ctx, rt.commitEvents(run, scripthost.PhaseNext, w)...), run.ID,
			ledger.Commit{State: state, Output: output, Publish: publish, WakeAt: wake})
		return next, true, err
	}
	return scripthost.Run{}, false, fmt.Errorf("runtime: run %s: consumer in unexpected phase %s", run.ID, run.Phase)
}

// mutate runs the mutate phase of a run in phase mutating that has no mutation. When
// the run is not written yet (d.create), the in-flight record of the phase's mutation
// writes it in its transaction (hostfuncs.RunInfo.Create); a phase that makes none
// writes it before its end is recorded, and one stopped by the host's shutdown leaves
// nothing.
func (rt *Runtime) mutate(ctx context.Context, l *loaded, c *Consumer, d *course) (scripthost.Run, bool, error) {
	st := rt.cfg.Store
	run, create := d.run, d.create
	var ierr error
	if c.Mutate != "" {
		w := rt.wrapperFor(run, nil, nil, c.OnMutationFailure, nil, create)
		_, ierr = rt.invoke(ctx, phaseCall{l: l, lc: c.Lifecycle, run: run, w: w, phase: scripthost.PhaseMutate, fn: c.Mutate,
			g:    sandbox.Globals{State: stateOrNull(run.InputState), Prepared: stateOrNull(run.Prepared)},
			args: []json.RawMessage{stateOrNull(run.Prepared)}})
		if m, made := w.Mutation(); made {
			if create != nil {
				rt.created(d)
			}
			// The ledger already holds the outcome (applied, failed or unknown); an
			// error the script raised after it does not change what happened. The
			// after hook is another matter: it failed like in any other phase, and the
			// run goes where its error sends it (a retry resumes at next).
			if ierr != nil && stepOf(ierr) == stepAfter {
				return scripthost.Run{}, true, rt.routeError(ctx, run, c.Lifecycle, scripthost.PhaseMutate, ierr)
			}
			if ierr != nil && !errors.Is(ierr, sandbox.ErrTerminate) {
				rt.cfg.Logger.Warn("error after the mutation", "run", run.ID, "err", rt.redact(ierr.Error()))
			}
			if err := rt.warnRefused(ctx, run); err != nil {
				return scripthost.Run{}, false, err
			}
			// The tool wrapper's outcome write moved the run: an applied mutation moves
			// it on to emitting, as ledger.OutcomeRecorded says (the commit refuses if
			// the ledger disagrees: the write cancelled the run when a cancel was
			// requested meanwhile); elsewhere, read where to.
			if m.Status == scripthost.MutationApplied {
				d.recorded = true
				return ledger.OutcomeRecorded(run, scripthost.Outcome{Status: scripthost.OutcomeApplied, Result: m.Result}, m.UpdatedAt), true, nil
			}
			return scripthost.Run{}, true, nil
		}
	}
	if create != nil {
		if ierr != nil && ctx.Err() != nil {
			return scripthost.Run{}, false, ctx.Err()
		}
		if done, err := rt.createMutating(ctx, c, d); done || err != nil {
			return scripthost.Run{}, true, err
		}
	}
	if ierr != nil {
		return scripthost.Run{}, true, rt.routeError(ctx, run, c.Lifecycle, scripthost.PhaseMutate, ierr)
	}
	next, err := st.MarkMutated(with(ctx, phaseEvent(run, ledger.EventPhaseCompleted, scripthost.PhaseMutate)), run.ID)
	return next, true, err
}

// prepare runs a consumer run's prepare phase and reads its result, moving on to
// mutating (ledger.PrepareResult.Mutate): that loses nothing, as a run found mutating
// without a mutation runs its mutate phase like one found prepared would. Its error is
// the phase's failure, for routeError.
func (rt *Runtime) prepare(ctx context.Context, l *loaded, c *Consumer, run scripthost.Run,
	peeked *hostfuncs.Peeked) (ledger.PrepareResult, error) {
	w := rt.wrapperFor(run, c.Subscribe, nil, MutationFailurePolicy{}, peeked, nil)
	res, err := rt.invoke(ctx, phaseCall{l: l, lc: c.Lifecycle, run: run, w: w, phase: scripthost.PhasePrepare, fn: c.Prepare,
		g: sandbox.Globals{State: stateOrNull(run.InputState)}, args: []json.RawMessage{stateOrNull(run.InputState)}})
	if err != nil {
		return ledger.PrepareResult{}, withPeeked(err, w.Peeks())
	}
	pr, err := parsePrepared(res, c)
	if err != nil {
		return ledger.PrepareResult{}, withPeeked(&stepError{step: stepResult, err: err}, w.Peeks())
	}
	pr.Mutate = true
	return pr, nil
}

// prepareEnded are the events of the transition that stores a prepare phase's result:
// the phase completed, mutate started.
func prepareEnded(run scripthost.Run) []ledger.LifecycleEvent {
	return []ledger.LifecycleEvent{
		phaseEvent(run, ledger.EventPhaseCompleted, scripthost.PhasePrepare),
		phaseEvent(run, ledger.EventPhaseStarted, scripthost.PhaseMutate),
	}
}

// reservationError is the prepare phase's failure when the events its result names
// are no longer pending.
func reservationError(err error) error {
	return &stepError{step: stepResult, err: scripthost.Wrap(scripthost.ClassLogic, "reservation", err)}
}

// settle handles a run found in phase mutating with its mutation already recorded: the
// process stopped between the in-flight write and the outcome, or the outcome is being
// reconciled. The mutate phase is never executed again.
func (rt *Runtime) settle(ctx context.Context, run scripthost.Run, m scripthost.Mutation) (bool, error) {
	switch m.Status {
	case scripthost.MutationInFlight:
		if rt.callMayBeLive(m) {
			return false, nil
		}
		_, err := rt.reconcile(ctx, m)
		return true, err
	case scripthost.MutationNeedsReconcile:
		if m.NextReconcileAt.After(rt.now()) {
			return false, nil
		}
		_, err := rt.reconcile(ctx, m)
		return true, err
	default:
		// applied, failed, skipped and indeterminate each move the run in the same
		// transaction. A person may have resolved the mutation after the run was read:
		// then the run has moved on too, and the next step reads it again. A run still
		// active and mutating means the ledger disagrees with itself.
		if cur, err := rt.cfg.Store.Run(ctx, run.ID); err == nil && (cur.Phase != run.Phase || cur.Status != run.Status) {
			return true, nil
		}
		return false, fmt.Errorf("runtime: run %s is mutating but its mutation %s is %s", run.ID, m.ID, m.Status)
	}
}

// reconcile asks the mutation's tool what became of it.
func (rt *Runtime) reconcile(ctx context.Context, m scripthost.Mutation) (scripthost.Mutation, error) {
	defer rt.observeReconcile(m)()
	return hostfuncs.Reconcile(ctx, rt.cfg.Store, rt.cfg.Tools, m, rt.cfg.Reconcile, rt.now())
}

// guard runs the handler's guard, if any (true when there is none), and reports
// whether the run may go on, or the guard's failure.
func (rt *Runtime) guard(ctx context.Context, l *loaded, lc Lifecycle, run scripthost.Run) (bool, error) {
	if lc.Guard == "" {
		return true, nil
	}
	res, err := rt.call(ctx, l, run, rt.wrapper(run, nil, nil), scripthost.PhaseHook, lc.Guard,
		sandbox.Globals{State: stateOrNull(run.InputState)}, stateOrNull(run.InputState))
	ok := false
	if err == nil {
		ok, err = guardResult(res.Value, handlerName(run))
	}
	if err != nil {
		return false, &stepError{step: stepGuard, err: err}
	}
	return ok, nil
}

// guarded records what the guard said on the run: nothing when it may go on, the run
// skipped when the guard said no, or failed like a phase when the guard failed. A
// producer's skipped run takes its scheduled turn: the producer is due again at its
// next time, as after a commit (without that it was due again at once, and every pass
// made another skipped run). It reports whether it moved the run.
func (rt *Runtime) guarded(ctx context.Context, l *loaded, lc Lifecycle, run scripthost.Run, ok bool, err error) (bool, error) {
	if err != nil {
		return true, rt.routeError(ctx, run, lc, phaseGuard, err)
	}
	if ok {
		return false, nil
	}
	st := rt.cfg.Store
	sk := rt.skip(l, run)
	if _, err = st.SkipRun(with(ctx, skippedEvent(run.ID)), run.ID, sk.Reason); err != nil {
		return true, err
	}
	if sk.Schedule != nil {
		err = st.SetSchedule(ctx, *sk.Schedule)
	}
	return true, err
}

// skipReason is the error text of a run whose guard said no.
const skipReason = "guard returned false"

// skip is what recording run as skipped by its guard takes: the reason and, for a
// producer, its next turn (see guarded).
func (rt *Runtime) skip(l *loaded, run scripthost.Run) *ledger.Skip {
	sk := &ledger.Skip{Reason: skipReason}
	if p, isProducer := l.def.Producers[run.Handler]; isProducer && run.Kind == scripthost.KindProducer {
		now := rt.now()
		sk.Schedule = &ledger.Schedule{Workflow: run.Workflow, Producer: run.Handler,
			NextRunAt: p.Schedule.NextAfter(now), LastRunAt: now}
	}
	return sk
}

// skippedEvent is the lifecycle event of a run whose guard said no.
func skippedEvent(runID string) ledger.LifecycleEvent {
	return ledger.NewLifecycleEvent(runID, ledger.EventGuardSkipped, map[string]any{"reason": skipReason})
}

// commitEvents are the events of a run's commit: its last phase completed, then the
// commit with what it published.
func (rt *Runtime) commitEvents(run scripthost.Run, phase scripthost.Phase, w *hostfuncs.ToolWrapper) []ledger.LifecycleEvent {
	return []ledger.LifecycleEvent{
		phaseEvent(run, ledger.EventPhaseCompleted, phase),
		ledger.NewLifecycleEvent(run.ID, ledger.EventCommitted, map[string]any{"published": len(w.Published())}),
	}
}

// phaseCall is one phase function of a run to invoke: the loaded workflow, the
// handler's lifecycle hooks, the run and its tool wrapper, the phase and its function,
// the globals and the arguments.
type phaseCall struct {
	l     *loaded
	lc    Lifecycle
	run   scripthost.Run
	w     *hostfuncs.ToolWrapper
	phase scripthost.Phase
	fn    string
	g     sandbox.Globals
	args  []json.RawMessage
}

// invoke runs one phase function with the before and after hooks around it.
func (rt *Runtime) invoke(ctx context.Context, pc phaseCall) (json.RawMessage, error) {
	run := pc.run
	if pc.lc.Before != "" {
		info, _ := json.Marshal(map[string]any{"phase": pc.phase, "handler": run.Handler, "workflow": run.Workflow, "run": run.ID, "attempt": run.Attempt})
		if _, err := rt.call(ctx, pc.l, run, rt.wrapper(run, nil, nil), scripthost.PhaseHook, pc.lc.Before, pc.g, info); err != nil {
			return nil, &stepError{step: stepBefore, err: err}
		}
	}
	res, err := rt.call(ctx, pc.l, run, pc.w, pc.phase, pc.fn, pc.g, pc.args...)
	if err != nil {
		return nil, err
	}
	if pc.lc.After != "" {
		after, _ := json.Marshal(map[string]any{"phase": pc.phase, "handler": run.Handler, "workflow": run.Workflow, "run": run.ID, "attempt": run.Attempt, "result": res.Value})
		if _, err := rt.call(ctx, pc.l, run, rt.wrapper(run, nil, nil), scripthost.PhaseHook, pc.lc.After, pc.g, after); err != nil {
			return nil, &stepError{step: stepAfter, err: err}
		}
	}
	return res.Value, nil
}

// call runs one function in a fresh sandbox instance.
func (rt *Runtime) call(ctx context.Context, l *loaded, run scripthost.Run, w *hostfuncs.ToolWrapper,
	phase scripthost.Phase, fn string, g sandbox.Globals, args ...json.RawMessage) (sandbox.Result, error) {
	// The phase stays set after the invocation: SetPhase would forget the mutation
	// the runtime reads next, and the instance is gone, so nothing can call in late.
	w.SetPhase(phase)
	ctx, end := rt.observePhase(ctx, run, phase)
	res, err := l.prog.Invoke(ctx, sandbox.Invocation{
		Function:      fn,
		Phase:         phase,
		Globals:       g,
		Args:          args,
		Tools:         w,
		Limits:        rt.cfg.Limits,
		Deterministic: rt.cfg.Deterministic,
		Seed:          rt.seed(run),
	})
	end(err)
	rt.noteRefusals(ctx, run, w)
	err = rt.namespaceHint(err)
	if rt.cfg.OnConsole != nil && len(res.Console) > 0 {
		rt.cfg.OnConsole(run, res.Console)
	}
	return res, err
}

func (rt *Runtime) wrapper(run scripthost.Run, subscribe, publishes []string) *hostfuncs.ToolWrapper {
	return rt.wrapperFor(run, subscribe, publishes, MutationFailurePolicy{}, nil, nil)
}

// wrapperFor is wrapper for a mutate phase, with where a definite failure goes and the
// run's creation when it is not yet written, or for a prepare phase, with the pending
// events already read.
func (rt *Runtime) wrapperFor(run scripthost.Run, subscribe, publishes []string, failure MutationFailurePolicy,
	peeked *hostfuncs.Peeked, create *creation) *hostfuncs.ToolWrapper {
	info := hostfuncs.RunInfo{
		RunID:      run.ID,
		Workflow:   run.Workflow,
		Handler:    run.Handler,
		Scope:      run.ID,
		Subscribes: subscribe,
		Publishes:  publishes,
		Peeked:     peeked,

		FailureToNext:    failure.Next,
		ReleaseOnFailure: failure.Release,
	}
	if create != nil {
		info.Create, info.CreateEvents = &create.run, create.events()
	}
	for _, r := range run.Reservations {
		for _, id := range r.IDs {
			info.Events = append(info.Events, r.Topic+"/"+id)
		}
	}
	return hostfuncs.NewToolWrapper(rt.cfg.Tools, rt.cfg.Store, info, hostfuncs.WrapperOptions{
		Clock:           rt.cfg.Clock,
		Redactor:        rt.cfg.Redactor,
		ReconcilePolicy: rt.cfg.Reconcile,
		Logger:          rt.cfg.Logger,
	})
}

// routeError records a phase failure on the run: the error's class decides the status
// (network errors pause the run for an automatic retry, the others follow the class
// table), and the handler's onError strategy may turn a failure into a pause or a
// scheduled retry. The ledger applies the event disposition rules.
func (rt *Runtime) routeError(ctx context.Context, run scripthost.Run, lc Lifecycle, phase any, cause error) error {
	if ctx.Err() != nil {
		// The host is shutting down: leave the run active so that the next start
		// resumes it where it is.
		return ctx.Err()
	}
	if rt.movedElsewhere(ctx, run) {
		return nil
	}
	class := scripthost.ClassOf(cause)
	status := class.Info().Status
	var notBefore time.Time
	retry := false
	switch {
	case class == scripthost.ClassNetwork:
		status = scripthost.StatusPausedTransient
		d := rt.cfg.TransientDelay
		for i := 1; i < run.Attempt && d < time.Hour; i++ {
			d *= 2
		}
		notBefore = rt.now().Add(d)
		retry = run.Attempt <= rt.cfg.TransientRetries
	case status.Failed() && lc.OnError.Strategy == "pause":
		status = scripthost.StatusPausedApproval
	case status.Failed() && lc.OnError.Strategy == "retry":
		notBefore = rt.now().Add(lc.OnError.Delay(run.Attempt))
		retry = run.Attempt <= lc.OnError.MaxRetries
	}
	msg := rt.redact(cause.Error())
	data := failure(cause)
	data["phase"], data["step"], data["attempt"] = fmt.Sprint(phase), stepOf(cause), run.Attempt
	for k, v := range failedEvents(run, cause) {
		data[k] = v
	}
	for _, k := range []string{"message", "file"} {
		if s, ok := data[k].(string); ok {
			data[k] = rt.redact(s)
		}
	}
	evs := []ledger.LifecycleEvent{ledger.NewLifecycleEvent(run.ID, ledger.EventPhaseFailed, data)}
	if status.Paused() {
		p := map[string]any{"status": status, "why": msg}
		if !notBefore.IsZero() {
			p["next_attempt_at"] = notBefore
		}
		evs = append(evs, ledger.NewLifecycleEvent(run.ID, ledger.EventPaused, p))
	}
	if retry {
		evs = append(evs, ledger.NewLifecycleEvent(run.ID, ledger.EventRetryScheduled, map[string]any{
			"attempt": run.Attempt + 1, "delay_ms": notBefore.Sub(rt.now()).Milliseconds(), "not_before": notBefore,
		}))
	}
	_, err := rt.cfg.Store.SetRunStatus(with(ctx, evs...), run.ID, ledger.StatusChange{
		Status:     status,
		Error:      msg,
		ErrorClass: class,
		NotBefore:  notBefore,
	})
	return err
}

func (rt *Runtime) redact(s string) string { return rt.cfg.Redactor.Redact(s) }

// parsePrepared reads prepare's return value: {reservations, data, wakeAt}.
func parsePrepared(raw json.RawMessage, c *Consumer) (ledger.PrepareResult, error) {
	var out ledger.PrepareResult
	s := strings.TrimSpace(string(raw))
	if s == "" || s == "null" {
		out.Data = json.RawMessage("null")
		return out, nil
	}
	var v struct {
		Reservations []scripthost.Reservation `json:"reservations"`
		Data         json.RawMessage          `json:"data"`
		WakeAt       json.RawMessage          `json:"wakeAt"`
	}
	if err := json.Unmarshal(raw, &v); err != nil {
		return out, scripthost.LogicError("prepare of %s must return {reservations: [{topic, ids}], data, wakeAt?}: %v", c.Name, err)
	}
	for _, r := range v.Reservations {
		if !contains(c.Subscribe, r.Topic) {
			return out, scripthost.LogicError("prepare of %s reserves events of topic %q, which it does not subscribe to", c.Name, r.Topic)
		}
		if len(r.IDs) == 0 {
			return out, scripthost.LogicError("prepare of %s: reservation of topic %q names no ids", c.Name, r.Topic)
		}
	}
	out.Reservations = v.Reservations
	out.Data = v.Data
	if len(out.Data) == 0 {
		out.Data = json.RawMessage("null")
	}
	if w := strings.TrimSpace(string(v.WakeAt)); w != "" && w != "null" {
		t, err := parseTime(v.WakeAt)
		if err != nil {
			return out, scripthost.LogicError("prepare of %s: wakeAt: %v", c.Name, err)
		}
		out.WakeAt = t
	}
	return out, nil
}

func parseTime(raw json.RawMessage) (time.Time, error) {
	var ms float64
	if err := json.Unmarshal(raw, &ms); err == nil {
		return time.UnixMilli(int64(ms)).UTC(), nil
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		return time.Time{}, fmt.Errorf("want milliseconds since the epoch or an ISO 8601 string, got %s", raw)
	}
	if n, err := strconv.ParseInt(s, 10, 64); err == nil {
		return time.UnixMilli(n).UTC(), nil
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return time.Time{}, fmt.Errorf("want an ISO 8601 time, got %q", s)
	}
	return t.UTC(), nil
}

// newState is what a handler's return value makes of its state: undefined or null
// keeps the old state.
func newState(res, old json.RawMessage) json.RawMessage {
	s := strings.TrimSpace(string(res))
	if s == "" || s == "null" {
		return old
	}
	return res
}

func stateOrNull(s json.RawMessage) json.RawMessage {
	if len(s) == 0 {
		return json.RawMessage("null")
	}
	return s
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
