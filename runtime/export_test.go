package runtime

import (
	"context"

	"github.com/scripthost/scripthost"
	"github.com/scripthost/scripthost/ledger"
)

// Begin lets the tests begin a run the scheduler would not: one for a handler its
// version lacks, or for a version not stored.
func (rt *Runtime) Begin(ctx context.Context, nr ledger.NewRun) (scripthost.Run, error) {
	return rt.begin(ctx, nr, nil)
}
