package hostfuncs

import (
	"context"
	"time"
)

// LedgerWriteTimeout bounds one ledger write that must complete even when the caller's
// context is already cancelled: the outcome of a call that was made, and its evidence.
// Such writes run on context.WithoutCancel(ctx) with this timeout.
const LedgerWriteTimeout = 30 * time.Second

// Sleep waits d, or until ctx ends, and then returns ctx.Err(). It is the default of
// every injected sleep (plan and agent executors, the HTTP tool's retry wait).
func Sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
