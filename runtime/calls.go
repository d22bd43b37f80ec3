package runtime

import (
	"context"

	"github.com/scripthost/scripthost/ledger"
)

// recordCalls gives the context of one run's drive a call log when the runtime records
// calls (Config.RecordCalls): the run's reads are logged with its next write.
func (rt *Runtime) recordCalls(ctx context.Context) context.Context {
	if !rt.cfg.RecordCalls {
		return ctx
	}
	return ledger.WithCallLog(ctx)
}
