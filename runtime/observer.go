package runtime

import (
	"context"

	"github.com/scripthost/scripthost"
)

// Observer watches runs being driven, for metrics and traces. Each method returns the
// context the work runs with (a tracer puts its span there, and the tools called
// inside see it) and a function to call when the work ends, with its error.
type Observer interface {
	// Run is called when Drive starts moving a run.
	Run(ctx context.Context, runID string) (context.Context, func(error))
	// Phase is called around every invocation of a phase or hook function.
	Phase(ctx context.Context, run scripthost.Run, phase scripthost.Phase) (context.Context, func(error))
}

// Reconciler is implemented by an Observer that wants to hear of the reconciles a host
// makes outside a drive of the mutation's run (at start, or of a mutation stranded by
// a host that stopped): what they write is this host's work.
type Reconciler interface {
	Reconciling(runID, mutationID string) func()
}

// observeReconcile tells the Observer, when it is a Reconciler, of a reconcile of m.
func (rt *Runtime) observeReconcile(m scripthost.Mutation) func() {
	if r, ok := rt.cfg.Observer.(Reconciler); ok {
		return r.Reconciling(m.RunID, m.ID)
	}
	return func() {}
}

// observeRun starts a run observation; without an Observer it does nothing. The
// context it returns carries the run's box of refused tool calls (withRefusals).
func (rt *Runtime) observeRun(ctx context.Context, runID string) (context.Context, func(error)) {
	ctx = withRefusals(ctx)
	ctx = rt.recordCalls(ctx)
	if rt.cfg.Observer == nil {
		return ctx, func(error) {}
	}
	return rt.cfg.Observer.Run(ctx, runID)
}

func (rt *Runtime) observePhase(ctx context.Context, run scripthost.Run, phase scripthost.Phase) (context.Context, func(error)) {
	if rt.cfg.Observer == nil {
		return ctx, func(error) {}
	}
	return rt.cfg.Observer.Phase(ctx, run, phase)
}
