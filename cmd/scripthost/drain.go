package main

import (
	"context"
	"log/slog"
	"time"
)

// hostLoop is a host's run loop under a context of its own, so that a signal does not
// cut short what is under way: when the command's context is done (SIGINT, SIGTERM),
// drain stops the loop claiming new work, lets the phases under way finish for up to a
// grace period, and only then cancels what is left (which the next start picks up).
// serve and run stop through it alike.
type hostLoop struct {
	// ctx is the loop's context: done only when the grace period is over (or abort).
	ctx    context.Context
	cancel context.CancelFunc
	stop   chan struct{}
	// ran delivers the loop's result once it returned.
	ran chan error
}

// newHostLoop returns a loop whose context outlives ctx's cancellation; start it with
// start once what else uses its context (a log follower) is set up.
func newHostLoop(ctx context.Context) *hostLoop {
	runCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	return &hostLoop{ctx: runCtx, cancel: cancel, stop: make(chan struct{}), ran: make(chan error, 1)}
}

// start runs run (host.Host.RunUntil) in the background with the loop's context and
// stop channel.
func (l *hostLoop) start(run func(ctx context.Context, stop <-chan struct{}) error) {
	go func() { l.ran <- run(l.ctx, l.stop) }()
}

// drain stops the loop claiming work and waits for it to return, for up to grace;
// then it cancels what is left and waits for that. It returns the loop's result.
func (l *hostLoop) drain(logger *slog.Logger, grace time.Duration) error {
	logger.Info("stopping: no new work; waiting for the phases under way", "grace", grace)
	close(l.stop)
	t := time.NewTimer(grace)
	defer t.Stop()
	select {
	case err := <-l.ran:
		return err
	case <-t.C:
		logger.Warn("grace period over: cancelling what is left; the next start picks it up")
		l.cancel()
		return <-l.ran
	}
}

// abort stops the loop at once and waits for it (a failure elsewhere ends the command).
func (l *hostLoop) abort() {
	close(l.stop)
	l.cancel()
	<-l.ran
}
