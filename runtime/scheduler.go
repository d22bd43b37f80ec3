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
		if stranded {
			rt.forgetAhead(workflow)
		}
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
		_, moved, err := rt.driveRun(ctx, r, false)
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
	rt.passAhead(workflow, did)
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
		if err := rt.startProducer(ctx, workflow, version, name); rt.stateChanged(workflow, err) {
			return true, nil
		} else if err != nil {
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
			if rt.stateChanged(workflow, res.err) {
				return true, nil
			}
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

// tickConsumer starts a run of consumer name of r if it has pending events newer than
// what it last ignored, or a due wake-up, and reports whether it did. states holds the
// handler's state when the pass knows it (see tick); tickConsumer keeps it up to date.
func (rt *Runtime) tickConsumer(ctx context.Context, r roundInput, name string,
	states map[string]ledger.HandlerState) (scripthost.Run, bool, error) {
	st := rt.cfg.Store
	workflow, c := r.workflow, r.def.Consumers[name]
	last, hasLast := r.latest[name]
	key := workflow + "/" + name
	rt.mu.Lock()
	idleAt, idle := rt.idle[key]
	rt.mu.Unlock()
	newest, peeked, kept, err := rt.peekFor(ctx, r, name, idle)
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
	wake := !hs.WakeAt.IsZero() && !hs.WakeAt.After(r.now)
	if hasLast && !hs.WakeAt.After(last.CreatedAt) {
		wake = false
	}
	if !wake && newest <= idleAt {
		return scripthost.Run{}, false, nil
	}
	run, err := rt.begin(ctx, newRun(r.workflow, r.version, name, scripthost.KindConsumer, hs), peeked, kept)
	rt.settleAhead(workflow, name, run)
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
	// A step dropped because events kept for it were taken meanwhile (see
	// staleKept) is begun again after a read instead.
	if len(run.Reservations) == 0 && (run.ID != "" || !kept) {
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

// peekFor returns the pending events the next run of consumer handler begins with,
// and the highest sequence number among them (0 when none is pending). An idle
// consumer reads up to pendingScan events of each topic, to tell whether something is
// newer than what it last saw. Another one takes the events kept for it from an
// earlier read (kept), or reads readAhead events of each topic and keeps them for its
// next runs (see keptEvents). While a run of the workflow is not settled nothing is
// kept (see keepAhead), and whether anything is pending needs one event.
func (rt *Runtime) peekFor(ctx context.Context, r roundInput, handler string,
	idle bool) (newest int64, peeked *hostfuncs.Peeked, kept bool, err error) {
	topics := r.def.Consumers[handler].Subscribe
	if idle {
		newest, peeked, err = rt.pending(ctx, r.workflow, topics, pendingScan)
		return newest, peeked, false, err
	}
	if peeked, newest, kept = rt.takeAhead(r.workflow, handler); kept {
		return newest, peeked, true, nil
	}
	settled := true
	for name := range r.def.Consumers {
		settled = settled && !r.blocked(name)
	}
	keep := rt.mayKeepAhead(r.workflow, settled)
	limit := 1
	if keep {
		limit = readAhead
	}
	if newest, peeked, err = rt.pending(ctx, r.workflow, topics, limit); err != nil {
		return 0, nil, false, err
	}
	if keep {
		rt.keepAhead(r.workflow, handler, peeked)
	}
	return newest, peeked, false, nil
}

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
		if _, _, err := rt.driveRun(ctx, next, true); err != nil {
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

// startProducer starts a run of producer name with its saved state (see begin).
func (rt *Runtime) startProducer(ctx context.Context, workflow string, version int, name string) error {
	hs, err := rt.cfg.Store.HandlerState(ctx, workflow, name)
	if err != nil {
		return err
	}
	_, err = rt.begin(ctx, newRun(workflow, version, name, scripthost.KindProducer, hs), nil, false)
	return err
}

// newRun is the run of a handler the scheduler starts, from the handler's state: the
// ledger creates it only while that is still the saved state (see stateChanged).
func newRun(workflow string, version int, handler string, kind scripthost.HandlerKind, hs ledger.HandlerState) ledger.NewRun {
	return ledger.NewRun{Workflow: workflow, Version: version, Handler: handler, Kind: kind, InputState: hs.State, StateFrom: &hs}
}

// stateChanged reports whether err refused a run the pass began from a handler state
// that is no longer the saved one (ledger.ErrStateChanged), and if so ends the pass
// as one that did work: what it knows of the workflow (its handlers' states, their
// newest runs) is out of date, and the next pass reads it again. That happens when
// another run committed meanwhile: one this host took for lost (its commit not
// durable when the database crashed) and resumes, or another host's.
func (rt *Runtime) stateChanged(workflow string, err error) bool {
	if !errors.Is(err, ledger.ErrStateChanged) {
		return false
	}
	rt.forgetAhead(workflow)
	rt.cfg.Logger.Warn("handler state changed since the pass read it: the pass ends, the next reads it again",
		"workflow", workflow, "err", rt.redact(err.Error()))
	return true
}

// workflowLock serialises this host's passes over one workflow.
func (rt *Runtime) workflowLock(name string) *sync.Mutex {
	return rt.lockIn(rt.wfLocks, name)
}

// lockIn returns the mutex of key in locks (a map rt.mu guards), made on first use.
func (rt *Runtime) lockIn(locks map[string]*sync.Mutex, key string) *sync.Mutex {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	l, ok := locks[key]
	if !ok {
		l = &sync.Mutex{}
		locks[key] = l
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
