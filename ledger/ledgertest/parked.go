package ledgertest

import (
	"context"

	"github.com/scripthost/scripthost"
)

// Parker is implemented by a store under test that can put a consumer run back in
// phase mutated, where versions that did not yet move a run on to emitting with its
// outcome left runs. The suite then checks that the transitions still move such a
// run on (AdvancePhase to emitting, a pause or failure that retries from emitting,
// recovery). Subtests that need it are skipped for a store without it.
type Parker interface {
	ParkAtMutated(ctx context.Context, runID string) error
}

// park moves a run whose outcome is recorded back to phase mutated.
func (f *fixture) park(runID string) {
	f.t.Helper()
	p, ok := f.s.(Parker)
	if !ok {
		f.t.Skip("the store cannot park a run at mutated (ledgertest.Parker)")
	}
	if err := p.ParkAtMutated(f.ctx, runID); err != nil {
		f.t.Fatalf("park run %s at mutated: %v", runID, err)
	}
	if r := must(f.s.Run(f.ctx, runID))(f.t); r.Phase != scripthost.RunMutated || r.Outcome == nil {
		f.t.Fatalf("parked run: got phase %s outcome %+v, want mutated with its outcome", r.Phase, r.Outcome)
	}
}
