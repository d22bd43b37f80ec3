package runtime

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/scripthost/scripthost"
	"github.com/scripthost/scripthost/hostfuncs"
	"github.com/scripthost/scripthost/ledger"
)

// Recover picks up what a previous process left: every mutation found in_flight is
// reconciled exactly like an uncertain outcome (none is left stranded). Active runs are
// resumed by the next Tick of their workflow. On a ledger shared by several hosts it
// does nothing: an in-flight mutation may be a live host's call in progress, so it is
// reconciled by whoever holds its workflow's lease when it drives the run.
func (rt *Runtime) Recover(ctx context.Context) error {
	if rt.leaser != nil {
		return nil
	}
	rec, err := rt.cfg.Store.Recover(ctx)
	if err != nil {
		return fmt.Errorf("runtime: recover: %w", err)
	}
	for _, m := range rec.InFlight {
		if _, err := rt.reconcile(ctx, m); err != nil {
			return fmt.Errorf("runtime: recover mutation %s: %w", m.ID, err)
		}
	}
	return nil
}

// Tick makes one scheduling pass over a workflow and reports whether anything
// happened. In order: due reconciliations, active runs (resumed where they stopped),
// retries whose time has come, due producers, and consumers with pending events or a
// due wake-up. A handler whose newest run failed or is paused is not started again
// until that run is retried. Only one Tick per workflow runs at a time, and a pass
// holds one of the runtime's Concurrency slots, shared by every workflow, plus one for
// each group of its consumers it runs side by side when slots are free (see
// consumerGroups). On a ledger
// shared by several hosts, Tick runs only on the host holding the workflow's lease
// (elsewhere it does nothing).
func (rt *Runtime) Tick(ctx context.Context, workflow string) (bool, error) {
	did, _, err := rt.leasedTick(ctx, workflow, false)
	return did, err
}

// leasedTick is Tick that also reports whether this host held the lease; with keep
// (the loops of Run and RunOnce) the lease is kept for the next pass while the
// workflow has work (see withLease).
func (rt *Runtime) leasedTick(ctx context.Context, workflow string, keep bool) (did, held bool, err error) {
	return rt.withLease(ctx, workflow, keep, func(ctx context.Context) (bool, error) {
		stranded, err := rt.reconcileStranded(ctx, workflow)
		if err != nil {
			return stranded, err
		}
		did, err := rt.tick(ctx, workflow)
		return stranded || did, err
	})
}

func (rt *Runtime) tick(ctx context.Context, workflow string) (bool, error) {
	lock := rt.workflowLock(workflow)
	lock.Lock()
	defer lock.Unlock()
	release, err := rt.acquire(ctx)
	if err != nil {
		return false, err
	}
	defer release()

	st := rt.cfg.Store
	wf, err := st.Workflow(ctx, workflow)
	if err != nil {
		return false, err
	}
	if wf.Paused {
		return false, nil
	}
	version := wf.LatestVersion
	l, err := rt.program(ctx, workflow, version)
	if err != nil {
		return false, err
	}
	def := l.def
	did := false

	due, err := st.DueReconciles(ctx, rt.now())
	if err != nil {
		return false, err
	}
	for _, m := range due {
		if m.Workflow != workflow {
			continue
		}
		if _, err := rt.reconcile(ctx, m); err != nil {
			return did, err
		}
		did = true
	}

	active, err := st.Runs(ctx, ledger.RunFilter{Workflow: workflow, Status: scripthost.StatusActive})
	if err != nil {
		return did, err
	}
	for _, r := range active {
		_, moved, err := rt.driveRun(ctx, r, false, nil)
		if err != nil {
			return did, err
		}
		did = did || moved
	}

	latest, err := rt.latestRuns(ctx, workflow, def)
	if err != nil {
		return did, err
	}
	retriedAny, err := rt.retries(ctx, def, latest)
	if err != nil {
		return did, err
	}
	did = did || retriedAny
	if retriedAny {
		if latest, err = rt.latestRuns(ctx, workflow, def); err != nil {
			return did, err
		}
	}
	blocked := func(handler string) bool {
		r, ok := latest[handler]
		return ok && !r.Status.Settled()
	}

	now := rt.now()
	// nextProducer is when the earliest producer that did not run becomes due.
	var nextProducer time.Time
	producersRan := false
	for _, name := range slices.Sorted(maps.Keys(def.Producers)) {
		if blocked(name) {
			continue
		}
		s, err := st.Schedule(ctx, workflow, name)
		if err != nil {
			return did, err
		}
		if !s.NextRunAt.IsZero() && s.NextRunAt.After(now) {
			if nextProducer.IsZero() || s.NextRunAt.Before(nextProducer) {
				nextProducer = s.NextRunAt
			}
			continue
		}
		if err := rt.start(ctx, workflow, version, name, scripthost.KindProducer); err != nil {
			return did, err
		}
		did, producersRan = true, true
	}
	// The consumers go round in name order, one run each per round, for as long as
	// every run a round started ended committed or skipped and nothing else came due:
	// the next pass would then find nothing to reconcile, resume or retry and no
	// producer due, and run the same consumers in the same order, so a round is that
	// pass without its reads. The number of rounds is bounded, so that a workflow
	// paused or a version loaded meanwhile is seen soon. states holds each consumer's
	// state as the pass last read or committed it: only a commit of the handler's own
	// run changes it, and the pass makes those.
	states := map[string]ledger.HandlerState{}
	groups := rt.consumerGroups(def)
	for round := 1; ; round++ {
		ran, settled := false, true
		results := rt.round(ctx, roundInput{workflow: workflow, version: version, def: def, groups: groups,
			blocked: blocked, latest: latest, states: states, now: now})
		for _, name := range slices.Sorted(maps.Keys(def.Consumers)) {
			res, ok := results[name]
			if !ok {
				continue
			}
			did = did || res.started
			if res.err != nil {
				return did, res.err
			}
			if res.started {
				ran, latest[name] = true, res.run
				settled = settled && res.run.Status.Settled()
			}
		}
		if !ran || !settled || producersRan || round >= maxRounds || rt.leaseWanted(ctx, workflow) {
			return did, nil
		}
		if now = rt.now(); !nextProducer.IsZero() && !nextProducer.After(now) {
			return did, nil
		}
	}
}

// maxRounds bounds the consumer rounds of one scheduling pass. Hosts sharing a ledger
// take the same bound: a host keeps a workflow's lease across passes while it has
// work and hands it over between passes (see handOver); a pass whose lease another
// host asked for ends after its round (leaseWanted).
const maxRounds = 16

// tickConsumer starts a run of consumer c if it has pending events newer than what it
// last ignored, or a due wake-up, and reports whether it did. last is the handler's
// newest run, if it has one. states holds the handler's state when the pass knows it
// (see tick); tickConsumer keeps it up to date.
func (rt *Runtime) tickConsumer(ctx context.Context, workflow string, version int, c *Consumer,
	last scripthost.Run, hasLast bool, now time.Time, states map[string]ledger.HandlerState) (scripthost.Run, bool, error) {
	st := rt.cfg.Store
	name := c.Name
	key := workflow + "/" + name
	rt.mu.Lock()
	idleAt, idle := rt.idle[key]
	rt.mu.Unlock()
	// Whether anything is pending needs one event; whether something is newer
	// than what an idle consumer last saw needs the newest.
	scan := 1
	if idle {
		scan = pendingScan
	}
	newest, peeked, err := rt.pending(ctx, workflow, c.Subscribe, scan)
	if err != nil {
		return scripthost.Run{}, false, err
	}
	hs, known := states[name]
	if !known {
		if hs, err = st.HandlerState(ctx, workflow, name); err != nil {
			return scripthost.Run{}, false, err
		}
		states[name] = hs
	}
	// A wake-up is due once its time has come, unless a run started since then
	// (a wake-up time in the past that a commit kept is not a new request).
	wake := !hs.WakeAt.IsZero() && !hs.WakeAt.After(now)
	if hasLast && !hs.WakeAt.After(last.CreatedAt) {
		wake = false
	}
	if !wake && newest <= idleAt {
		return scripthost.Run{}, false, nil
	}
	run, err := rt.startRunWith(ctx, workflow, version, name, scripthost.KindConsumer, hs, peeked)
	switch {
	case err != nil:
		delete(states, name)
		return run, true, err
	case run.Status == scripthost.StatusCommitted:
		states[name] = committedState(hs, run)
	case run.Status != scripthost.StatusSkipped: // a skipped run leaves the state as it was
		delete(states, name)
	}
	// A run that reserved nothing (or was skipped by its guard) leaves the pending
	// events as they were: wait for a newer event or a wake-up before trying again.
	if len(run.Reservations) == 0 {
		if newest, _, err = rt.pending(ctx, workflow, c.Subscribe, pendingScan); err != nil {
			return run, true, err
		}
		rt.mu.Lock()
		rt.idle[key] = newest
		rt.mu.Unlock()
	} else {
		rt.mu.Lock()
		delete(rt.idle, key)
		rt.mu.Unlock()
	}
	return run, true, nil
}

// committedState is the handler state a consumer's committed run left: the commit saves
// the state the run returned (its output state, or its input state when next returned
// nothing; see the emitting step), and the wake-up time the run asked for.
func committedState(before ledger.HandlerState, run scripthost.Run) ledger.HandlerState {
	return ledger.HandlerState{
		Workflow:  before.Workflow,
		Handler:   before.Handler,
		State:     newState(run.OutputState, run.InputState),
		WakeAt:    run.WakeAt,
		UpdatedAt: run.UpdatedAt,
	}
}

// acquire takes one of the Concurrency slots, waiting for one to be free.
func (rt *Runtime) acquire(ctx context.Context) (func(), error) {
	select {
	case rt.slots <- struct{}{}:
		return func() { <-rt.slots }, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// pendingScan bounds how many pending events per topic are read to find the newest.
const pendingScan = 1000

// pending reads the first limit pending events of each topic and returns the highest
// sequence number among them (0 when none is pending) and the events read, which the
// run started next answers its prepare phase's Topics.peek from.
func (rt *Runtime) pending(ctx context.Context, workflow string, topics []string, limit int) (int64, *hostfuncs.Peeked, error) {
	newest := int64(0)
	peeked := &hostfuncs.Peeked{Limit: limit, Events: make(map[string][]scripthost.Event, len(topics))}
	for _, topic := range topics {
		evs, err := rt.cfg.Store.PendingEvents(ctx, workflow, topic, limit)
		if err != nil {
			return 0, nil, err
		}
		for _, e := range evs {
			newest = max(newest, e.Seq)
		}
		peeked.Events[topic] = evs
	}
	return newest, peeked, nil
}

// retries creates the retry runs whose time has come (see autoRetry).
func (rt *Runtime) retries(ctx context.Context, def *Definition, latest map[string]scripthost.Run) (bool, error) {
	did := false
	now := rt.now()
	for _, handler := range slices.Sorted(maps.Keys(latest)) {
		r := latest[handler]
		// The newest run of a handler has no retry yet: a retry would be newer.
		if r.NotBefore.After(now) {
			continue
		}
		ok, byPolicy, err := rt.retryPlan(ctx, def, r)
		if err != nil {
			return did, err
		}
		if !ok {
			continue
		}
		next, err := rt.createRetry(ctx, r, byPolicy)
		if ledger.IsIllegalTransition(err) {
			continue
		}
		if err != nil {
			return did, err
		}
		if _, _, err := rt.driveRun(ctx, next, true, nil); err != nil {
			return true, err
		}
		did = true
	}
	return did, nil
}

// autoRetry reports whether the host retries a handler's newest run by itself, once
// its NotBefore has come: runs paused by a network error (up to TransientRetries),
// runs whose mutation was found not to have happened by reconciliation or a person,
// and failed runs of handlers whose onError strategy is retry (up to maxRetries). A
// run whose mutation outcome is unknown is never retried, and neither is a retry whose
// onRetry failed.
func (rt *Runtime) autoRetry(ctx context.Context, def *Definition, r scripthost.Run) (bool, error) {
	ok, _, err := rt.retryPlan(ctx, def, r)
	return ok, err
}

// retryPlan is autoRetry that also reports whether the retry is the onError policy's
// (and so runs onRetry first).
func (rt *Runtime) retryPlan(ctx context.Context, def *Definition, r scripthost.Run) (retry, byPolicy bool, err error) {
	if r.Status != scripthost.StatusPausedTransient && !r.Status.Failed() {
		return false, false, nil
	}
	lc, ok := lifecycleOf(def, r.Handler)
	if !ok {
		return false, false, nil
	}
	m, err := rt.cfg.Store.RunMutation(ctx, r.ID)
	hasMutation := err == nil
	if err != nil && !errors.Is(err, ledger.ErrNotFound) {
		return false, false, err
	}
	if hasMutation && m.Status.Unknown() {
		return false, false, nil // reconciled or resolved by a person
	}
	switch {
	case r.Status == scripthost.StatusPausedTransient && r.Attempt <= rt.cfg.TransientRetries:
	case r.Status.Failed() && hasMutation && failedOutsideScript(m) && r.Attempt <= rt.cfg.TransientRetries:
		// The side effect is known not to have happened, and the handler did
		// nothing wrong: prepare again with the released events.
	case r.Status.Failed() && lc.OnError.Strategy == "retry" && r.Attempt <= lc.OnError.MaxRetries:
		failed, err := rt.onRetryFailed(ctx, r.ID)
		return !failed && err == nil, true, err
	default:
		return false, false, nil
	}
	return true, false, nil
}

// failedOutsideScript reports whether a failed mutation was settled by reconciliation
// or by a person rather than by the tool's own definite answer to the script.
func failedOutsideScript(m scripthost.Mutation) bool {
	return m.Status == scripthost.MutationFailed &&
		(m.ResolvedBy != "" || strings.Contains(m.Error, hostfuncs.ReconciledFailed))
}

func lifecycleOf(def *Definition, handler string) (Lifecycle, bool) {
	if p, ok := def.Producers[handler]; ok {
		return p.Lifecycle, true
	}
	if c, ok := def.Consumers[handler]; ok {
		return c.Lifecycle, true
	}
	return Lifecycle{}, false
}

// latestRuns returns the newest run of each handler of the definition that has run:
// one indexed lookup per handler, whatever the length of the workflow's history.
func (rt *Runtime) latestRuns(ctx context.Context, workflow string, def *Definition) (map[string]scripthost.Run, error) {
	latest := map[string]scripthost.Run{}
	names := append(slices.Sorted(maps.Keys(def.Producers)), slices.Sorted(maps.Keys(def.Consumers))...)
	for _, name := range names {
		runs, err := rt.cfg.Store.Runs(ctx, ledger.RunFilter{Workflow: workflow, Handler: name, Newest: true, Limit: 1})
		if err != nil {
			return nil, err
		}
		if len(runs) == 1 {
			latest[name] = runs[0]
		}
	}
	return latest, nil
}

func (rt *Runtime) start(ctx context.Context, workflow string, version int, handler string, kind scripthost.HandlerKind) error {
	_, err := rt.startRun(ctx, workflow, version, handler, kind)
	return err
}

// startRun creates a run with the handler's saved state and drives it.
func (rt *Runtime) startRun(ctx context.Context, workflow string, version int, handler string, kind scripthost.HandlerKind) (scripthost.Run, error) {
	hs, err := rt.cfg.Store.HandlerState(ctx, workflow, handler)
	if err != nil {
		return scripthost.Run{}, err
	}
	return rt.startRunWith(ctx, workflow, version, handler, kind, hs, nil)
}

// startRunWith is startRun with the handler's state already read, and for a consumer
// the pending events it was started for (nil when not read).
func (rt *Runtime) startRunWith(ctx context.Context, workflow string, version int, handler string, kind scripthost.HandlerKind,
	hs ledger.HandlerState, peeked *hostfuncs.Peeked) (scripthost.Run, error) {
	nr := ledger.NewRun{Workflow: workflow, Version: version, Handler: handler, Kind: kind, InputState: hs.State}
	if l, err := rt.program(ctx, workflow, version); err == nil {
		if c, ok := l.def.Consumers[handler]; ok && kind == scripthost.KindConsumer {
			return rt.startUnwritten(ctx, l, c.Lifecycle, nr, func(ctx context.Context, nr ledger.NewRun, run scripthost.Run) (scripthost.Run, error) {
				return rt.startConsumer(ctx, l, c, nr, run, peeked)
			})
		}
		if p, ok := l.def.Producers[handler]; ok && kind == scripthost.KindProducer {
			return rt.startUnwritten(ctx, l, p.Lifecycle, nr, func(ctx context.Context, nr ledger.NewRun, run scripthost.Run) (scripthost.Run, error) {
				return rt.startProducer(ctx, l, p, nr, run)
			})
		}
	}
	// A version that cannot be loaded, or a handler it lacks: the run is created
	// pending, and driving it reports which.
	run, err := rt.cfg.Store.CreateRun(ctx, nr)
	if err != nil {
		return run, err
	}
	rt.failpoint(string(kind) + ":created")
	run, _, err = rt.driveRun(ctx, run, true, peeked)
	return run, err
}

// newRunOf is the run nr will create, before it is written, under a fresh id.
func (rt *Runtime) newRunOf(nr *ledger.NewRun) scripthost.Run {
	nr.ID = rt.cfg.Store.NewID()
	return scripthost.Run{ID: nr.ID, Workflow: nr.Workflow, Version: nr.Version, Handler: nr.Handler,
		Kind: nr.Kind, Phase: scripthost.RunPending, Status: scripthost.StatusActive,
		Attempt: 1, InputState: nr.InputState}
}

// startUnwritten starts the run nr creates without writing it first: under the id it
// will have and the run's observation, it runs the handler's guard (guardFirst), then,
// when the guard lets the run go on, the handler's first phases (phases, which writes
// the run where it first matters).
func (rt *Runtime) startUnwritten(ctx context.Context, l *loaded, lc Lifecycle, nr ledger.NewRun,
	phases func(ctx context.Context, nr ledger.NewRun, run scripthost.Run) (scripthost.Run, error)) (run scripthost.Run, err error) {
	run = rt.newRunOf(&nr)
	ctx, end := rt.observeRun(ctx, run.ID)
	defer func() { end(err) }()
	if guarded, done, err := rt.guardFirst(ctx, l, lc, nr, run); done {
		return guarded, err
	}
	return phases(ctx, nr, run)
}

// guardFirst runs the handler's guard before its run is written. A guard that lets the
// run go on leaves nothing written (done is false); one that says no creates the run
// skipped (and moves a producer's schedule) in one write (ledger.NewRun.Skipped); one
// that fails creates the run pending and records the failure on it, as the step of a
// run created first does. Either returns the run; a guard stopped by the host's
// shutdown leaves no run.
func (rt *Runtime) guardFirst(ctx context.Context, l *loaded, lc Lifecycle, nr ledger.NewRun,
	run scripthost.Run) (_ scripthost.Run, done bool, err error) {
	ok, gerr := rt.guard(ctx, l, lc, run)
	if gerr == nil && ok {
		return scripthost.Run{}, false, nil
	}
	if err := ctx.Err(); err != nil {
		return scripthost.Run{}, true, err
	}
	st := rt.cfg.Store
	if gerr == nil { // the guard said no: the run is created skipped, in one write
		nr.Skipped = rt.skip(l, run)
		ctx = with(ctx, skippedEvent(run.ID))
	}
	created, err := st.CreateRun(ctx, nr)
	if err != nil {
		return scripthost.Run{}, true, err
	}
	if nr.Skipped != nil {
		rt.created(nr.Kind, scripthost.RunPending)
		return created, true, nil
	}
	rt.failpoint(string(nr.Kind) + ":created")
	if err := rt.routeError(ctx, created, lc, phaseGuard, gerr); err != nil {
		return created, true, err
	}
	rt.passed(nr.Kind, scripthost.RunPending, scripthost.RunPending)
	run, err = st.Run(ctx, created.ID)
	return run, true, err
}

// startProducer starts a producer run whose guard let it go on (see startUnwritten).
// Its producer phase runs before anything is written: it may only read, and what it
// publishes is stored at its commit. The run is then created committed, in one
// transaction (ledger.NewRun.Commit). A phase that fails creates the run in executing
// and records that on it, as a run created first would have it; a phase stopped by the
// host's shutdown leaves no run.
func (rt *Runtime) startProducer(ctx context.Context, l *loaded, p *Producer, nr ledger.NewRun, run scripthost.Run) (scripthost.Run, error) {
	nr.Start, run.Phase = scripthost.RunExecuting, scripthost.RunExecuting
	started := stamped(rt.now(), phaseEvent(run, ledger.EventPhaseStarted, scripthost.PhaseProducer))
	commit, ended, failed := rt.produce(ctx, l, p, run)
	st := rt.cfg.Store
	if failed != nil {
		if err := ctx.Err(); err != nil {
			return scripthost.Run{}, err
		}
		// The phase's refused calls are logged with its failure (routeError).
		created, err := st.CreateRun(ledger.WithEvents(ctx, started...), nr)
		if err != nil {
			return scripthost.Run{}, err
		}
		rt.created(scripthost.KindProducer, scripthost.RunExecuting)
		if err := rt.routeError(ctx, created, p.Lifecycle, scripthost.PhaseProducer, failed); err != nil {
			return created, err
		}
		rt.passed(scripthost.KindProducer, scripthost.RunExecuting, scripthost.RunExecuting)
		return st.Run(ctx, created.ID)
	}
	nr.Commit = &commit
	evs := append(append(started, refusedEvents(ctx)...), stamped(rt.now(), ended...)...)
	committed, err := st.CreateRun(ledger.WithEvents(ctx, evs...), nr)
	if err != nil {
		return scripthost.Run{}, err
	}
	rt.created(scripthost.KindProducer, scripthost.RunCommitted)
	return committed, nil
}

// startConsumer starts a consumer run whose guard let it go on (see startUnwritten).
// Its prepare phase and then its mutate phase run before anything is written: prepare
// may only read, and no tool of mutate's has been called before its in-flight record.
// That record creates the run, prepared and moved on to mutating, in its one durable
// transaction (ledger.NewMutation.Run); a run whose mutate phase makes no mutation is
// created when the phase ends. A process that stops before then leaves nothing to
// recover, and the next pass starts again. A prepare phase that fails (or whose events
// were taken meanwhile) creates the run in preparing and records that on it, as a run
// created first would have it; a phase stopped by the host's shutdown leaves no run.
func (rt *Runtime) startConsumer(ctx context.Context, l *loaded, c *Consumer, nr ledger.NewRun, run scripthost.Run,
	peeked *hostfuncs.Peeked) (scripthost.Run, error) {
	st := rt.cfg.Store
	nr.Start, run.Phase = scripthost.RunPreparing, scripthost.RunPreparing
	started := stamped(rt.now(), phaseEvent(run, ledger.EventPhaseStarted, scripthost.PhasePrepare))[0]
	pr, failed := rt.prepare(ctx, l, c, run, peeked)
	var next scripthost.Run
	var err error
	if failed != nil {
		if err := ctx.Err(); err != nil {
			return scripthost.Run{}, err
		}
		next, _, err = rt.prepareFailed(ctx, c, nr, started, failed)
	} else {
		nr.Prepared = &pr
		passed := append(refusedEvents(ctx), stamped(rt.now(), prepareEnded(run)...)...)
		create := &creation{run: nr, started: started, passed: passed}
		run.Phase, run.Prepared, run.Reservations = scripthost.RunMutating, pr.Data, pr.Reservations
		next, _, err = rt.mutate(ctx, l, c, run, create)
	}
	if errors.Is(err, errStepDropped) {
		return scripthost.Run{}, nil // nothing written: the next pass reads the ledger again
	}
	if err != nil {
		return scripthost.Run{}, err
	}
	fresh := next.ID != ""
	if !fresh {
		if next, err = st.Run(ctx, run.ID); err != nil {
			return next, err
		}
	}
	// The step's failpoints, as the drive loop calls them after a step: the mutate
	// phase's, or prepare's when the run was recorded failing there.
	from := scripthost.RunMutating
	if failed != nil || next.Phase == scripthost.RunPreparing {
		from = scripthost.RunPreparing
	}
	rt.passed(scripthost.KindConsumer, from, next.Phase)
	run, _, err = rt.drive(ctx, next, fresh, nil)
	return run, err
}

// prepareFailed creates the run of nr in preparing, which startConsumer had not written
// yet, with the phase's started event, and records its prepare phase's failure on it,
// as the step of a run created first does.
func (rt *Runtime) prepareFailed(ctx context.Context, c *Consumer, nr ledger.NewRun, started ledger.LifecycleEvent,
	cause error) (scripthost.Run, bool, error) {
	nr.Start, nr.Prepared = scripthost.RunPreparing, nil
	// The phase's refused calls are logged with its failure (routeError).
	created, err := rt.cfg.Store.CreateRun(ledger.WithEvents(ctx, started), nr)
	if err != nil {
		return scripthost.Run{}, false, err
	}
	rt.created(scripthost.KindConsumer, created.Phase)
	return scripthost.Run{}, true, rt.routeError(ctx, created, c.Lifecycle, scripthost.PhasePrepare, cause)
}

// created calls the failpoints of a run of kind just written, in phase phase, by a
// step that passed from its creation up to there.
func (rt *Runtime) created(kind scripthost.HandlerKind, phase scripthost.RunPhase) {
	rt.failpoint(string(kind) + ":created")
	rt.passed(kind, scripthost.RunPending, phase)
}

// stamped returns evs with their time set to at: events a run's first write records
// keep the times their steps happened (the lifecycle log's timeline), not the write's.
func stamped(at time.Time, evs ...ledger.LifecycleEvent) []ledger.LifecycleEvent {
	for i := range evs {
		evs[i].At = at
	}
	return evs
}

func (rt *Runtime) workflowLock(name string) *sync.Mutex {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	l, ok := rt.wfLocks[name]
	if !ok {
		l = &sync.Mutex{}
		rt.wfLocks[name] = l
	}
	return l
}

// RunOnce recovers, then runs every named workflow (each in its own goroutine) until a
// pass finds no work left. On a shared ledger the pass may be another host's: one
// under a lease claimed after RunOnce began that found the workflow idle
// (idleElsewhere).
func (rt *Runtime) RunOnce(ctx context.Context, workflows []string) error {
	return rt.RunOnceUntil(ctx, nil, workflows)
}

// RunOnceUntil is RunOnce that also stops when stop is closed, without cancelling what
// it is doing: the scheduling pass under way (and the phases it drives) finishes with
// ctx, and no new pass starts (as RunUntil).
func (rt *Runtime) RunOnceUntil(ctx context.Context, stop <-chan struct{}, workflows []string) error {
	if err := rt.Recover(ctx); err != nil {
		return err
	}
	tokens := rt.leaseTokens(ctx)
	return rt.each(workflows, func(wf string) error {
		wake, unsubscribe := rt.wakeups(wf)
		defer unsubscribe()
		defer rt.releaseHeld(ctx, wf)
		for {
			select {
			case <-stop:
				return nil
			default:
			}
			if idle, err := rt.idleElsewhere(ctx, wf, tokens); err != nil || idle {
				return err
			}
			did, held, err := rt.leasedTick(ctx, wf, true)
			if err != nil {
				return fmt.Errorf("runtime: workflow %s: %w", wf, err)
			}
			if held && !did {
				waiting, err := rt.liveCallsLeft(ctx, wf)
				if err != nil {
					return fmt.Errorf("runtime: workflow %s: %w", wf, err)
				}
				if !waiting {
					return nil
				}
			}
			if !held {
				// Another host holds the workflow: whether work is left is known only
				// after a pass of this host's own.
				if err := rt.waitLease(ctx, wake); err != nil {
					return err
				}
			}
		}
	})
}

// maxPassBackoff caps the wait after failed scheduling passes.
const maxPassBackoff = 30 * time.Second

// Run recovers, then keeps running the named workflows until ctx is done, polling
// every poll interval when there is nothing to do. A failed pass is logged and tried
// again with backoff; only a failed recovery at start is returned.
func (rt *Runtime) Run(ctx context.Context, workflows []string, poll time.Duration) error {
	return rt.RunUntil(ctx, nil, workflows, poll)
}

// RunUntil is Run that also stops when stop is closed, without cancelling what it is
// doing: the scheduling pass under way (and the phases it drives) finishes with ctx,
// and no new pass starts. A graceful shutdown closes stop, then cancels ctx after a
// grace period.
func (rt *Runtime) RunUntil(ctx context.Context, stop <-chan struct{}, workflows []string, poll time.Duration) error {
	if poll <= 0 {
		poll = 250 * time.Millisecond
	}
	if err := rt.Recover(ctx); err != nil {
		return err
	}
	err := rt.each(workflows, func(wf string) error {
		t := time.NewTimer(0)
		defer t.Stop()
		wake := rt.wakeChan(wf)
		shared, unsubscribe := rt.wakeups(wf)
		defer unsubscribe()
		defer rt.releaseHeld(ctx, wf)
		failures := 0
		for {
			select {
			case <-stop: // before any other ready case: no new pass once stopped
				return nil
			default:
			}
			select {
			case <-ctx.Done():
				return nil
			case <-stop:
				return nil
			case <-t.C:
			case <-wake:
				if failures > 0 {
					continue // a failing ledger is given its backoff
				}
				t.Stop()
			case <-shared: // another host's news, through the shared ledger
				if failures > 0 {
					continue
				}
				t.Stop()
			}
			did, _, err := rt.leasedTick(ctx, wf, true)
			switch {
			case ctx.Err() != nil:
				return nil
			case err != nil:
				// A pass that fails (the ledger locked by another process, a disk
				// hiccup) must not stop the host: every run is where the ledger says it
				// is, so the next pass picks up from there. Back off while it lasts.
				failures++
				wait := poll << min(failures, 8)
				wait = min(wait, rt.passBackoffCap())
				rt.cfg.Logger.Error("scheduling pass failed", "workflow", wf, "failures", failures,
					"retry_in", wait, "err", rt.redact(err.Error()))
				t.Reset(wait)
			case did:
				failures = 0
				t.Reset(0)
			default:
				failures = 0
				t.Reset(poll)
			}
		}
	})
	if ctx.Err() != nil {
		return nil
	}
	return err
}

// Wake makes Run look at the named workflows at once instead of at their next poll.
func (rt *Runtime) Wake(workflows ...string) {
	for _, wf := range workflows {
		select {
		case rt.wakeChan(wf) <- struct{}{}:
		default: // a wake-up is already waiting
		}
	}
}

func (rt *Runtime) wakeChan(workflow string) chan struct{} {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	c, ok := rt.wake[workflow]
	if !ok {
		c = make(chan struct{}, 1)
		rt.wake[workflow] = c
	}
	return c
}

// Publish stores events from outside any run, like ledger.Store.Publish, and wakes the
// workflows they belong to.
func (rt *Runtime) Publish(ctx context.Context, events ...ledger.NewEvent) ([]scripthost.Event, error) {
	out, err := rt.cfg.Store.Publish(ctx, events...)
	if err != nil {
		return nil, err
	}
	for _, e := range events {
		rt.Wake(e.Workflow)
	}
	return out, nil
}

func (rt *Runtime) each(workflows []string, f func(string) error) error {
	wfs := append([]string(nil), workflows...)
	sort.Strings(wfs)
	errs := make([]error, len(wfs))
	var wg sync.WaitGroup
	for i, wf := range wfs {
		wg.Go(func() { errs[i] = f(wf) })
	}
	wg.Wait()
	return errors.Join(errs...)
}
