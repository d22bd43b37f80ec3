package main

import (
	"context"
	"log/slog"
	"time"

	"github.com/scripthost/scripthost/ledger"
	"github.com/scripthost/scripthost/observe"
)

// runObserver gives run the observer serve makes, so that both commands log failed
// runs, indeterminate mutations and reconciles given up from the same place: the
// ledger's lifecycle log (observe.Observer.Follow). It keeps an observer already set.
func runObserver(g *globals, verbose bool) {
	if g.observer.Load() != nil {
		return
	}
	level := slog.LevelWarn
	if verbose {
		level = slog.LevelDebug
	}
	g.observer.Store(observe.New(observe.Options{Logger: g.logger(level), SlowCall: -1}))
}

// followLifecycle starts the observer following store's lifecycle log; the function it
// returns reads the log to its end, for the lines of the last runs before run exits.
func followLifecycle(ctx context.Context, g *globals, store ledger.Store, poll time.Duration) (func(), error) {
	obs := g.observer.Load()
	if obs == nil {
		return func() {}, nil
	}
	fctx, stop := context.WithCancel(ctx)
	if err := obs.Follow(fctx, store, poll); err != nil {
		stop()
		return nil, err
	}
	return func() {
		stop()
		obs.Wait()
		fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		if err := obs.Flush(fctx); err != nil {
			g.logger(slog.LevelWarn).Warn("reading the lifecycle log", "err", err)
		}
	}, nil
}
