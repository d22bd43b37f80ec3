package hostfuncs

import (
	"context"
	"time"
)

// Sleep waits d and returns nil, or returns ctx.Err() as soon as ctx ends. It is the
// default of every injected sleep (plan and agent executors, the HTTP tool's retry
// wait).
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
