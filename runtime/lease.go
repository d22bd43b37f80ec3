package runtime

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
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

// withLease runs pass while holding the workflow's lease, renewing it meanwhile, and
// releases it afterwards so that the next pass may go to another host. Without a
// Leaser the pass just runs. When another host holds the lease the pass is not run
// and nothing happened. When the lease is lost during the pass, its context is
// cancelled: the pass stops where it is (every run is where the ledger says) and the
// new holder carries on.
// held reports whether the pass ran (false: another host holds the lease).
func (rt *Runtime) withLease(ctx context.Context, workflow string, pass func(context.Context) (bool, error)) (did, held bool, err error) {
	if rt.leaser == nil {
		did, err := pass(ctx)
		return did, true, err
	}
	opts := rt.cfg.Lease
	if rt.yielding(workflow) {
		return false, false, nil
	}
	lease, ok, err := rt.leaser.ClaimLease(ctx, workflow, opts.Owner, opts.TTL)
	if err != nil || !ok {
		return false, false, err
	}
	if lease.TakenFrom != "" {
		rt.cfg.Logger.Warn("lease taken over: its holder stopped renewing it", "workflow", workflow, "from", lease.TakenFrom,
			"owner", opts.Owner, "token", lease.Token)
	}
	pctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	var wg sync.WaitGroup
	stop := make(chan struct{})
	wg.Go(func() { rt.heartbeat(pctx, lease, stop, cancel) })
	did, err = pass(pctx)
	close(stop)
	wg.Wait()
	if cause := context.Cause(pctx); ctx.Err() == nil && cause != nil && cause != context.Canceled {
		rt.cfg.Logger.Warn("lease lost: stopped driving the workflow", "workflow", workflow, "owner", opts.Owner, "err", cause)
		return did, true, nil
	}
	rctx, rcancel := context.WithTimeout(context.WithoutCancel(ctx), opts.TTL)
	defer rcancel()
	wanted, rerr := rt.leaser.ReleaseLease(rctx, lease)
	if rerr != nil {
		// It expires on its own; the next pass of any host takes it then.
		rt.cfg.Logger.Warn("lease not released", "workflow", workflow, "err", rt.redact(rerr.Error()))
	}
	if wanted {
		// Another host is waiting for this workflow: let it have the next pass
		// instead of claiming the lease straight back.
		rt.mu.Lock()
		rt.yieldUntil[workflow] = time.Now().Add(leaseYield)
		rt.mu.Unlock()
	}
	return did, true, err
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

// heartbeat renews the lease every TTL/4 until stop; it cancels the pass when the
// lease is lost, or when it could not be renewed for half the TTL by this host's
// clock, well before the database lets another host take it.
func (rt *Runtime) heartbeat(ctx context.Context, lease ledger.Lease, stop <-chan struct{}, cancel context.CancelCauseFunc) {
	ttl := rt.cfg.Lease.TTL
	deadline := time.Now().Add(ttl)
	t := time.NewTicker(max(ttl/4, time.Millisecond))
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-ctx.Done():
			return
		case <-t.C:
		}
		rctx, rcancel := context.WithTimeout(ctx, max(ttl/4, time.Millisecond))
		sent := time.Now()
		l, err := rt.leaser.RenewLease(rctx, lease, ttl)
		rcancel()
		switch {
		case errors.Is(err, ledger.ErrLeaseLost):
			cancel(err)
			return
		case err == nil:
			lease, deadline = l, sent.Add(ttl)
		case time.Now().After(deadline.Add(-ttl / 2)):
			cancel(fmt.Errorf("%w: %v", errLeaseExpiring, err))
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
