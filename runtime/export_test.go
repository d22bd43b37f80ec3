package runtime

import (
	"context"

	"github.com/scripthost/scripthost"
	"github.com/scripthost/scripthost/ledger"
)

// Begin lets the tests begin a run the scheduler would not: one for a handler its
// version lacks, or for a version not stored.
func (rt *Runtime) Begin(ctx context.Context, nr ledger.NewRun) (scripthost.Run, error) {
	return rt.begin(ctx, nr, nil, false)
}

// HoldLease lets the tests take a pass's hold of a workflow's lease as the scheduler
// does (hold): held reports whether the host holds it now, and release ends the pass,
// giving the lease back.
func (rt *Runtime) HoldLease(ctx context.Context, workflow string) (release func(), held bool, err error) {
	h, _, err := rt.hold(ctx, workflow)
	if h == nil || err != nil {
		return func() {}, false, err
	}
	return func() { rt.letGo(ctx, workflow, h, true, 0) }, true, nil
}
