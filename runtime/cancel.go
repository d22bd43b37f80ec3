package runtime

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/scripthost/scripthost"
	"github.com/scripthost/scripthost/ledger"
)

// honourCancel cancels a run about to run its next phase when an operator asked to
// cancel it while its mutation's outcome was not known (ledger.EventCancelRequested)
// and the transition that recorded the outcome did not cancel it: a ledger written by
// an older version, whose transitions left the request to the runtime. The outcome is
// recorded, so the ledger cancels it keeping the side effect.
//
// A run this process moved to emitting itself (course.recorded) is not looked up: the
// transition that recorded its outcome honoured any request in its own transaction
// (ledger.Store.CancelRun), and when it did, the commit of the next phase is refused
// and cancelledMeanwhile returns the cancelled run. Only a run read from the ledger at
// emitting after its mutation (recovery, or a run an older version left) pays for the
// lookup.
func (rt *Runtime) honourCancel(ctx context.Context, d *course) (scripthost.Run, bool, error) {
	run, recorded := d.run, d.recorded
	d.recorded = false
	if recorded || run.Outcome == nil || run.Outcome.Status == scripthost.OutcomeNone {
		return run, false, nil
	}
	evs, err := rt.cfg.Store.LifecycleEvents(ctx, ledger.LifecycleFilter{RunID: run.ID, Type: ledger.EventCancelRequested})
	if err != nil {
		return run, false, err
	}
	var req ledger.LifecycleEvent
	for _, e := range evs {
		if e.Type == ledger.EventCancelRequested {
			req = e
		}
	}
	if req.Type == "" {
		return run, false, nil
	}
	var c ledger.Cancel // the request's {"by", "reason"}
	if len(req.Data) > 0 {
		if err := json.Unmarshal(req.Data, &c); err != nil {
			return run, false, fmt.Errorf("runtime: run %s: cancel request %d: %w", run.ID, req.Seq, err)
		}
	}
	next, err := rt.cfg.Store.CancelRun(ctx, run.ID, c)
	return next, err == nil, err
}

// cancelledMeanwhile reports whether err, a step's refused transition, is because an
// operator cancelled the run while the step ran (its prepare phase, or its mutate phase
// before the tool call): the ledger refused the step's write, so nothing it did is
// kept, and the run is returned as the ledger holds it.
func (rt *Runtime) cancelledMeanwhile(ctx context.Context, runID string, err error) (scripthost.Run, bool) {
	if !errors.Is(err, ledger.ErrIllegalTransition) {
		return scripthost.Run{}, false
	}
	run, rerr := rt.cfg.Store.Run(ctx, runID)
	if rerr != nil || run.Status != scripthost.StatusCancelled {
		return scripthost.Run{}, false
	}
	return run, true
}
