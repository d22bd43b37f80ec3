package runtime

import (
	"context"

	"github.com/scripthost/scripthost"
	"github.com/scripthost/scripthost/ledger"
	"github.com/scripthost/scripthost/sandbox"
)

// recordCalls gives the context of one run's drive a call log when the runtime records
// calls (Config.RecordCalls): the run's reads are logged with its next write.
func (rt *Runtime) recordCalls(ctx context.Context) context.Context {
	if !rt.cfg.RecordCalls {
		return ctx
	}
	return ledger.WithCallLog(ctx)
}

// seed is the seed of run's scripts' randomness: with calls recorded and no
// deterministic mode, the one its id gives (sandbox.SeedOf), so that a replay sees the
// numbers the run saw; otherwise 0 (the engine's own).
func (rt *Runtime) seed(run scripthost.Run) int64 {
	if !rt.cfg.RecordCalls || rt.cfg.Deterministic != nil || run.ID == "" {
		return 0
	}
	return sandbox.SeedOf(run.ID)
}
