package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	"github.com/scripthost/scripthost/ledger"
)

// outdatable is a shared ledger that tells when a newer host migrated it past this
// binary's schema (ledger/postgres).
type outdatable interface {
	Outdated() <-chan struct{}
	OutdatedErr() error
}

// stopWhenOutdated returns ctx cancelled, with the ledger's refusal as its cause, once a
// newer host migrated the shared ledger past this binary's schema. The host then stops
// as on SIGTERM (no new work; the phases under way get the grace period, though the
// ledger refuses their writes) and the command exits with the refusal (exit 8). Its
// leases expire and the newer hosts take its workflows over, reconciling what it left
// in flight as after a crash.
func stopWhenOutdated(ctx context.Context, g *globals, store ledger.Store) (context.Context, context.CancelFunc) {
	o, ok := store.(outdatable)
	if !ok {
		return ctx, func() {}
	}
	ctx, cancel := context.WithCancelCause(ctx)
	go func() {
		select {
		case <-o.Outdated():
			err := fmt.Errorf("%w (this is scripthost %s); this host stopped", o.OutdatedErr(), version())
			g.logger(slog.LevelInfo).Error("ledger migrated by a newer host: stopping", "err", err)
			cancel(err)
		case <-ctx.Done():
		}
	}()
	return ctx, func() { cancel(nil) }
}

// outdatedCause returns the refusal that stopped the host (stopWhenOutdated), or nil.
func outdatedCause(ctx context.Context) error {
	if c := context.Cause(ctx); errors.Is(c, ledger.ErrSchemaTooNew) {
		return c
	}
	return nil
}
