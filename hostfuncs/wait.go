package hostfuncs

import (
	"context"
	"time"
)

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
