package runtime

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"maps"
	"os"
	"slices"
	"sync"
	"time"

	"github.com/scripthost/scripthost"
	"github.com/scripthost/scripthost/ledger"
)

// LeaseOptions configure how a host shares its ledger with other hosts. They apply
// when the store is a ledger.Leaser (PostgreSQL): a host then schedules and drives a
// workflow only while it holds the workflow's lease.
type LeaseOptions struct {
	// Owner names this host in the leases; default hostname/pid/random, unique per
	// process.
	Owner string
	// TTL is how long a lease outlives its holder's last heartbeat, so how long a dead
	// host's workflows wait before another host takes them over; default 15s. The
	// holder renews it every TTL/4 and gives the workflow up (cancels its work) when it
	// could not renew it for half the TTL.
	TTL time.Duration
}

// DefaultOwner returns a new name for this host in the leases: hostname/pid/random,
// unique per call. A host that names itself elsewhere (its traces' resource) before it
// starts passes the same name as LeaseOptions.Owner.
func DefaultOwner() string {
	name, _ := os.Hostname()
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	return fmt.Sprintf("%s/%d/%s", name, os.Getpid(), hex.EncodeToString(b))
}

func (o LeaseOptions) withDefaults() LeaseOptions {
	if o.Owner == "" {
		o.Owner = DefaultOwner()
	}
	if o.TTL <= 0 {
		o.TTL = 15 * time.Second
	}
	return o
}

// Owner returns the name this runtime holds leases under ("" when its store has none).
func (rt *Runtime) Owner() string {
	if rt.leaser == nil {
		return ""
	}
	return rt.cfg.Lease.Owner
}

// errLeaseExpiring cancels the work of a holder that could not renew in time.
var errLeaseExpiring = errors.New("runtime: lease not renewed before it expired")

// heldLease is a workflow's lease this host holds. The loops of Run and RunOnce keep
// it across passes while the workflow has work (see handOver), its heartbeat renewing
// it meanwhile, and give it back when the workflow is idle or the loop stops.
type heldLease struct {
	// ctx is cancelled, with the cause, when the lease is lost or given back.
	ctx    context.Context
	cancel context.CancelCauseFunc
	stop   chan struct{} // closed to end the heartbeat
	done   chan struct{} // closed when the heartbeat has ended
	users  int           // passes under way under the lease (rt.mu)

	mu    sync.Mutex
	lease ledger.Lease // as last claimed or renewed
	// idle: the last pass under the lease to end found nothing to do (rt.mu).
	idle bool
}

func (h *heldLease) current() ledger.Lease {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.lease
}

// withLease runs pass while holding the workflow's lease. Without a Leaser the pass
// just runs. When another host holds the lease the pass is not run and nothing
// happened (held is false). When the lease is lost during the pass, its context is
// cancelled: the pass stops where it is (every run is where the ledger says) and the
// new holder carries on. With keep (the loops of Run and RunOnce) a lease is kept for
// the next pass while the workflow has work (handOver); otherwise a lease this call
// claimed is given back after the pass, and one the host already held is left to its
// loop.
func (rt *Runtime) withLease(ctx context.Context, workflow string, keep bool, pass func(context.Context) (bool, error)) (did, held bool, err error) {
	if rt.leaser == nil {
		did, err := pass(ctx)
		return did, true, err
	}
	h, claimed, err := rt.hold(ctx, workflow)
	if err != nil || h == nil {
		return false, false, err
	}
	// The pass's writes are fenced by the lease: once another host took it over (or it
	// expired), the ledger refuses them even before the heartbeat finds out.
	pctx, cancel := context.WithCancelCause(ledger.WithFence(ctx, h.current()))
	stopLost := context.AfterFunc(h.ctx, func() { cancel(context.Cause(h.ctx)) })
	did, err = pass(pctx)
	stopLost()
	cancel(nil)
	if errors.Is(err, ledger.ErrLeaseLost) {
		h.cancel(err)
	}
	if h.ctx.Err() != nil && ctx.Err() == nil {
		rt.cfg.Logger.Warn("lease lost: stopped driving the workflow", "workflow", workflow, "owner", rt.cfg.Lease.Owner,
			"err", context.Cause(h.ctx))
		rt.letGo(ctx, workflow, h, false, 0)
		return did, true, nil
	}
	rt.mu.Lock()
	h.idle = err == nil && !did
	rt.mu.Unlock()
	switch {
	case !keep:
		rt.letGo(ctx, workflow, h, claimed, 0)
	case err != nil || !did:
		rt.letGo(ctx, workflow, h, true, 0)
	default:
		rt.letGo(ctx, workflow, h, false, rt.handOver(ctx, h))
	}
	return did, true, err
}

// hold returns the workflow's lease this host holds, one more pass counted under it,
// or claims it (claimed) unless another live host holds it and this host has work of
// its own (leftToOthers); nil when it did not get it, having asked for it when this
// host has no work of its own (asking).
func (rt *Runtime) hold(ctx context.Context, workflow string) (h *heldLease, claimed bool, err error) {
	lock := rt.claimLock(workflow)
	lock.Lock()
	defer lock.Unlock()
	rt.mu.Lock()
	if h, ok := rt.held[workflow]; ok {
		if h.ctx.Err() == nil {
			h.users++
			rt.mu.Unlock()
			return h, false, nil
		}
		delete(rt.held, workflow) // lost between passes: its heartbeat has ended
		delete(rt.ahead, workflow)
	}
	rt.mu.Unlock()
	if rt.yielding(workflow) || rt.leftToOthers(ctx, workflow) {
		return nil, false, nil
	}
	opts := rt.cfg.Lease
	lease, ok, err := rt.leaser.ClaimLease(ctx, workflow, opts.Owner, opts.TTL)
	if err != nil {
		return nil, false, err
	}
	if !ok {
		if rt.asking(workflow) {
			err = rt.leaser.AskLease(ctx, workflow, opts.Owner)
		}
		return nil, false, err
	}
	if lease.TakenFrom != "" {
		rt.cfg.Logger.Warn("lease taken over: its holder stopped renewing it", "workflow", workflow, "from", lease.TakenFrom,
			"owner", opts.Owner, "token", lease.Token)
	}
	hctx, cancel := context.WithCancelCause(context.Background())
	h = &heldLease{ctx: hctx, cancel: cancel, stop: make(chan struct{}), done: make(chan struct{}), users: 1, lease: lease}
	go func() {
		defer close(h.done)
		rt.heartbeat(h)
	}()
	rt.mu.Lock()
	rt.held[workflow] = h
	rt.mu.Unlock()
	return h, true, nil
}

// claimLock serialises this host's claims of one workflow's lease, so that two passes
// of the host do not claim it twice (the second claim would void the first's token).
func (rt *Runtime) claimLock(workflow string) *sync.Mutex {
	return rt.lockIn(rt.claimLocks, workflow)
}

// letGo ends a pass under h. The lease is given back when release (or dropped when it
// was lost) once no other pass of the host runs under it; a lease given back leaves the
// workflow to other hosts for yield.
func (rt *Runtime) letGo(ctx context.Context, workflow string, h *heldLease, release bool, yield time.Duration) {
	release = release || yield > 0
	rt.mu.Lock()
	h.users--
	lost := h.ctx.Err() != nil
	drop := (release || lost) && h.users == 0 && rt.held[workflow] == h
	idle := h.idle
	if drop || lost {
		// Another host may drive the workflow from now on: what this one read ahead
		// of its runs is stale (see keptEvents).
		delete(rt.ahead, workflow)
	}
	if drop {
		delete(rt.held, workflow)
		if len(rt.held) == 0 {
			rt.leaseless = time.Now()
		}
	}
	rt.mu.Unlock()
	if !drop {
		return
	}
	close(h.stop)
	<-h.done
	h.cancel(nil)
	if lost {
		return
	}
	rctx, rcancel := context.WithTimeout(context.WithoutCancel(ctx), rt.cfg.Lease.TTL)
	defer rcancel()
	l := h.current()
	l.Idle = idle
	wanted, err := rt.leaser.ReleaseLease(rctx, l)
	if err != nil {
		// It expires on its own; the next pass of any host takes it then.
		rt.cfg.Logger.Warn("lease not released", "workflow", workflow, "err", rt.redact(err.Error()))
	}
	if wanted {
		// Another host is waiting for this workflow: let it have the next pass
		// instead of claiming the lease straight back.
		yield = max(yield, leaseYield)
	}
	if yield > 0 {
		rt.mu.Lock()
		rt.yieldUntil[workflow] = time.Now().Add(yield)
		rt.mu.Unlock()
	}
}

// releaseHeld gives back the workflow's lease when the host holds it between passes:
// its loop stops.
func (rt *Runtime) releaseHeld(ctx context.Context, workflow string) {
	rt.mu.Lock()
	h, ok := rt.held[workflow]
	if ok {
		h.users++
	}
	rt.mu.Unlock()
	if ok {
		rt.letGo(ctx, workflow, h, true, 0)
	}
}

// releaseAll gives back every lease the host holds between passes (Close).
func (rt *Runtime) releaseAll(ctx context.Context) {
	rt.mu.Lock()
	workflows := slices.Collect(maps.Keys(rt.held))
	rt.mu.Unlock()
	for _, wf := range workflows {
		rt.releaseHeld(ctx, wf)
	}
}

// handOver decides, after a pass that did work under h, whether the host gives the
// lease back anyway, and for how long it then leaves the workflow to the other hosts
// (0: it keeps the lease). It does when another host with no lease of its own asked
// for it (seen at the last renewal or in the host's view of the leases, at most
// leaseViewAge old), and when the host holds more than its share of the leases held
// (leaseShare).
func (rt *Runtime) handOver(ctx context.Context, h *heldLease) time.Duration {
	if rt.wanted(ctx, h.current()) {
		return leaseYield
	}
	if rt.heldCount() > rt.leaseShare(ctx) {
		return rt.shareYield()
	}
	return 0
}

// wanted reports whether another host asked for the held lease l: at its last
// renewal, or in the host's view of the leases (leaseView).
func (rt *Runtime) wanted(ctx context.Context, l ledger.Lease) bool {
	v, ok := rt.leaseView(ctx)[l.Workflow]
	return l.Wanted || ok && v.Wanted && v.Token == l.Token
}

// leaseWanted reports whether another host asked for the workflow's lease this host
// holds (false without a Leaser, or when the host does not hold it).
func (rt *Runtime) leaseWanted(ctx context.Context, workflow string) bool {
	if rt.leaser == nil {
		return false
	}
	rt.mu.Lock()
	h, ok := rt.held[workflow]
	rt.mu.Unlock()
	return ok && rt.wanted(ctx, h.current())
}

// shareYield is how long a host that gave a lease back for being over its share leaves
// the workflow to hosts below theirs before claiming it again: long enough for their
// loops to find it free, short enough that a workflow no other host runs waits little.
func (rt *Runtime) shareYield() time.Duration {
	return min(time.Second, max(rt.cfg.Lease.TTL/4, time.Millisecond))
}

// leaselessSince is when this host last held no lease: its start, or when it gave its
// last one back.
func (rt *Runtime) leaselessSince() time.Time {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	return rt.leaseless
}

// heldCount is the number of leases this host holds and has not lost.
func (rt *Runtime) heldCount() int {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	n := 0
	for _, h := range rt.held {
		if h.ctx.Err() == nil {
			n++
		}
	}
	return n
}

// leaseShare is this host's share of the leases held: the leases held by live hosts
// (unexpired) divided by the number of those hosts, this one included, rounded up.
// Workflows without work have their leases given back, so the leases held are the
// workflows with work, and each host drives about as many of them.
func (rt *Runtime) leaseShare(ctx context.Context) int {
	v := rt.leaseView(ctx)
	now := time.Now()
	owner := rt.cfg.Lease.Owner
	busy := rt.heldCount()
	hosts := map[string]bool{owner: true}
	for _, l := range v {
		if l.Owner != "" && l.Owner != owner && now.Before(l.ExpiresAt) {
			busy++
			hosts[l.Owner] = true
		}
	}
	return (busy + len(hosts) - 1) / len(hosts)
}

// leftToOthers reports whether this host leaves the workflow alone for now without
// asking the ledger: another host held its lease, unexpired, when this host last
// looked at the leases, and this host does not ask for it (asking). A lease past its
// expiry is claimed, which is how a dead host's workflows are taken over.
func (rt *Runtime) leftToOthers(ctx context.Context, workflow string) bool {
	l, ok := rt.leaseView(ctx)[workflow]
	if !ok || l.Owner == "" || l.Owner == rt.cfg.Lease.Owner || !time.Now().Before(l.ExpiresAt) {
		return false
	}
	return !rt.asking(workflow)
}

// asking reports whether this host asks for the workflow's lease when another host
// holds it: it holds no lease, has held none for shareYield (it started, or gave its
// last lease back, longer ago: free leases went to it first), and asks for this
// workflow's (ask).
func (rt *Runtime) asking(workflow string) bool {
	return rt.heldCount() == 0 && time.Since(rt.leaselessSince()) >= rt.shareYield() && rt.ask(workflow)
}

// ask reports whether this host, holding no lease, asks for the workflow's lease,
// which another host holds. It asks for one at a time: the holder hands the workflow
// over after its round, and the host, holding a lease again, asks for no other; all at
// once would take every busy workflow from its host, for each to be handed on again
// (leaseShare). It asks for another when askEvery has passed since it asked for the
// last, which its holder has then seen at its renewal at the latest.
func (rt *Runtime) ask(workflow string) bool {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	now := time.Now()
	if rt.asked != workflow && rt.asked != "" && now.Sub(rt.askedAt) < rt.askEvery() {
		return false
	}
	if rt.asked != workflow {
		rt.asked, rt.askedAt = workflow, now
	}
	return true
}

// askEvery is how long a host holding no lease asks for the same workflow's lease
// before it asks for another's (ask): the interval at which the holder renews it.
func (rt *Runtime) askEvery() time.Duration {
	return max(rt.cfg.Lease.TTL/4, time.Millisecond)
}

// leaseViewAge bounds how old the host's view of the leases may be: about the interval
// at which a host without a workflow's lease looks for it again.
const leaseViewAge = 4 * leaseYield

// leaseView returns the ledger's leases by workflow, as read at most leaseViewAge ago
// (one read of the leases for all of the host's workflows). When they cannot be read
// the view is empty, and the host claims as it would without one.
func (rt *Runtime) leaseView(ctx context.Context) map[string]ledger.Lease {
	rt.viewMu.Lock()
	defer rt.viewMu.Unlock()
	if rt.view != nil && time.Since(rt.viewAt) < min(leaseViewAge, max(rt.cfg.Lease.TTL/4, time.Millisecond)) {
		return rt.view
	}
	ls, err := rt.leaser.Leases(ctx)
	if err != nil {
		return map[string]ledger.Lease{}
	}
	rt.view, rt.viewAt = make(map[string]ledger.Lease, len(ls)), time.Now()
	for _, l := range ls {
		rt.view[l.Workflow] = l
	}
	return rt.view
}

// leaseTokens reads the ledger's leases afresh and returns each workflow's claim count
// (its token), for idleElsewhere to tell the claims made after this moment; nil
// without a Leaser or when the leases cannot be read. The read becomes the host's
// view of the leases.
func (rt *Runtime) leaseTokens(ctx context.Context) map[string]int64 {
	if rt.leaser == nil {
		return nil
	}
	ls, err := rt.leaser.Leases(ctx)
	if err != nil {
		return nil
	}
	tokens, view := make(map[string]int64, len(ls)), make(map[string]ledger.Lease, len(ls))
	for _, l := range ls {
		tokens[l.Workflow], view[l.Workflow] = l.Token, l
	}
	rt.viewMu.Lock()
	rt.view, rt.viewAt = view, time.Now()
	rt.viewMu.Unlock()
	return tokens
}

// idleElsewhere reports whether the workflow's lease, in the host's view of the
// leases, was given back by a pass that found nothing to do under a claim made after
// tokens were read (leaseTokens), and no live call of another host is left in it: a
// pass that began after that moment found the workflow idle, as this host's own
// would, so its run-once loop ends without claiming the lease for one more pass.
func (rt *Runtime) idleElsewhere(ctx context.Context, workflow string, tokens map[string]int64) (bool, error) {
	if tokens == nil {
		return false, nil
	}
	l, ok := rt.leaseView(ctx)[workflow]
	if !ok || !l.Idle || l.Token <= tokens[workflow] {
		return false, nil
	}
	waiting, err := rt.liveCallsLeft(ctx, workflow)
	return !waiting, err
}

// leaseYield is how long a host that released a lease another host asked for waits
// before claiming it again: long enough for the waiting host, woken by the release, to
// take it.
const leaseYield = 50 * time.Millisecond

// yielding reports whether this host is leaving the workflow's next pass to another.
func (rt *Runtime) yielding(workflow string) bool {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	until, ok := rt.yieldUntil[workflow]
	if ok && time.Now().After(until) {
		delete(rt.yieldUntil, workflow)
		return false
	}
	return ok
}

// heartbeat renews h's lease every TTL/4 until h.stop; it cancels h.ctx when the
// lease is lost, or when it could not be renewed for half the TTL by this host's
// clock, well before the database lets another host take it.
func (rt *Runtime) heartbeat(h *heldLease) {
	ttl := rt.cfg.Lease.TTL
	deadline := time.Now().Add(ttl)
	t := time.NewTicker(max(ttl/4, time.Millisecond))
	defer t.Stop()
	for {
		select {
		case <-h.stop:
			return
		case <-t.C:
		}
		rctx, rcancel := context.WithTimeout(h.ctx, max(ttl/4, time.Millisecond))
		sent := time.Now()
		l, err := rt.leaser.RenewLease(rctx, h.current(), ttl)
		rcancel()
		switch {
		case errors.Is(err, ledger.ErrLeaseLost):
			h.cancel(err)
			return
		case err == nil:
			h.mu.Lock()
			h.lease, deadline = l, sent.Add(ttl)
			h.mu.Unlock()
		case time.Now().After(deadline.Add(-ttl / 2)):
			h.cancel(fmt.Errorf("%w: %v", errLeaseExpiring, err))
			return
		}
	}
}

// callMayBeLive reports whether an in-flight mutation found while driving a run may
// still be its former lease holder's call in progress. On a shared ledger the host
// that took a workflow over reconciles an in-flight mutation only once it is older
// than the lease TTL: asking the service earlier could hear "not found" for a request
// still on its way, and the charge would then be made twice. Tool calls must
// therefore end (time out) within the TTL.
func (rt *Runtime) callMayBeLive(m scripthost.Mutation) bool {
	return rt.leaser != nil && rt.now().Before(m.UpdatedAt.Add(rt.cfg.Lease.TTL))
}

// reconcileStranded reconciles the workflow's in-flight mutations whose run is no
// longer driven to them (paused or failed while the outcome was being recorded, or a
// mutation outside a run), once no live call can be behind them. On a shared ledger
// this replaces the reconciliation Recover does at start on SQLite: none is left
// stranded.
func (rt *Runtime) reconcileStranded(ctx context.Context, workflow string) (bool, error) {
	if rt.leaser == nil {
		return false, nil
	}
	ms, err := rt.cfg.Store.Mutations(ctx, ledger.MutationFilter{Workflow: workflow, Status: scripthost.MutationInFlight})
	if err != nil {
		return false, err
	}
	did := false
	for _, m := range ms {
		if rt.callMayBeLive(m) {
			continue
		}
		if m.RunID != "" {
			run, err := rt.cfg.Store.Run(ctx, m.RunID)
			if err != nil {
				return did, err
			}
			if run.Status == scripthost.StatusActive {
				continue // its run's next step settles it
			}
		}
		if _, err := rt.reconcile(ctx, m); err != nil {
			return did, err
		}
		did = true
	}
	return did, nil
}

// liveCallsLeft reports whether the workflow has an in-flight mutation that this host
// leaves alone for now (callMayBeLive); it waits a moment first, so that a caller
// can loop on it.
func (rt *Runtime) liveCallsLeft(ctx context.Context, workflow string) (bool, error) {
	if rt.leaser == nil {
		return false, nil
	}
	ms, err := rt.cfg.Store.Mutations(ctx, ledger.MutationFilter{Workflow: workflow, Status: scripthost.MutationInFlight})
	if err != nil {
		return false, err
	}
	for _, m := range ms {
		if m.RunID != "" && rt.callMayBeLive(m) {
			return true, rt.waitLease(ctx, nil)
		}
	}
	return false, nil
}

// waitLease waits for a wake-up (a release among them) or a while before trying a
// lease held elsewhere again.
func (rt *Runtime) waitLease(ctx context.Context, wake <-chan struct{}) error {
	t := time.NewTimer(4 * leaseYield)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-wake:
	case <-t.C:
	}
	return nil
}

// movedElsewhere reports whether, on a shared ledger, the run is no longer where this
// step found it: another host drove it meanwhile (this one lost the workflow's lease
// while it waited for the database), so this step's failure is not the run's.
func (rt *Runtime) movedElsewhere(ctx context.Context, run scripthost.Run) bool {
	if rt.leaser == nil {
		return false
	}
	cur, err := rt.cfg.Store.Run(ctx, run.ID)
	if err != nil {
		return false // the status write that follows reports the trouble
	}
	if cur.Status != run.Status || cur.Phase != run.Phase {
		rt.cfg.Logger.Warn("run moved on elsewhere: this host's step is dropped", "run", run.ID,
			"found", string(run.Phase)+"/"+string(run.Status), "now", string(cur.Phase)+"/"+string(cur.Status))
		return true
	}
	return false
}

// errStepDropped: the step of a run not written yet was dropped, and nothing written,
// because another host took its events (takenElsewhere).
var errStepDropped = errors.New("runtime: step dropped: its events were taken by another host's run")

// takenElsewhere reports whether, on a shared ledger, an event that the prepare result
// of a run not written yet reserves was taken by another run since the phase looked:
// another host drove the workflow meanwhile (this one lost the lease while its write
// waited for the database, or the other host's write did). The refused reservation is
// then not a failure of the run this host was about to write: the step is dropped
// (logged), nothing is written, and the next pass drives the other run. An event set
// aside (skipped) is not taken by a run: the run fails as on one host.
func (rt *Runtime) takenElsewhere(ctx context.Context, workflow string, res []scripthost.Reservation) bool {
	if rt.leaser == nil {
		return false
	}
	for _, r := range res {
		for _, id := range r.IDs {
			evs, err := rt.cfg.Store.Events(ctx, ledger.EventFilter{Workflow: workflow, Topic: r.Topic, MessageID: id})
			if err != nil || len(evs) != 1 {
				continue
			}
			ev := evs[0]
			if ev.ReservedBy != "" && (ev.Status == scripthost.EventReserved || ev.Status == scripthost.EventConsumed) {
				rt.cfg.Logger.Warn("event taken by another host's run: this host's step is dropped", "workflow", workflow,
					"event", r.Topic+"/"+id, "taken_by", ev.ReservedBy)
				return true
			}
		}
	}
	return false
}

// passBackoffCap bounds the wait after failed scheduling passes. On a shared ledger it
// is half the lease TTL, so that a host whose database came back is at work again
// before its leases run out.
func (rt *Runtime) passBackoffCap() time.Duration {
	if rt.leaser != nil {
		return min(maxPassBackoff, max(rt.cfg.Lease.TTL/2, time.Millisecond))
	}
	return maxPassBackoff
}

// wakeups returns the channel on which the store announces new work for workflow (nil,
// never ready, without a Leaser) and the function that stops it.
func (rt *Runtime) wakeups(workflow string) (<-chan struct{}, func()) {
	if rt.leaser == nil {
		return nil, func() {}
	}
	return rt.leaser.Wakeups(workflow)
}
