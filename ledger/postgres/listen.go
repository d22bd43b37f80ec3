package postgres

import (
	"context"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
)

// listener holds one connection that LISTENs for wake-ups and hands each to the
// subscribers of its workflow. It connects on the first subscription and reconnects
// after the database went away; after a reconnect every subscriber is woken, since
// notifications sent meanwhile are lost.
//
// It also listens for schema migrations: when a newer host migrated the ledger past
// this binary's schema (told at once by its notification, and checked at every
// connect), the store is marked outdated and refuses writes.
type listener struct {
	s *Store

	mu      sync.Mutex
	subs    map[string]map[chan struct{}]struct{}
	started bool
	cancel  context.CancelFunc
	done    chan struct{}
}

func newListener(s *Store) *listener {
	return &listener{s: s, subs: map[string]map[chan struct{}]struct{}{}}
}

// Wakeups returns a channel that receives when work may have arrived for workflow.
func (s *Store) Wakeups(workflow string) (<-chan struct{}, func()) {
	return s.listener.subscribe(workflow)
}

func (l *listener) subscribe(workflow string) (<-chan struct{}, func()) {
	ch := make(chan struct{}, 1)
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.subs[workflow] == nil {
		l.subs[workflow] = map[chan struct{}]struct{}{}
	}
	l.subs[workflow][ch] = struct{}{}
	if !l.started {
		l.started = true
		ctx, cancel := context.WithCancel(context.Background())
		l.cancel, l.done = cancel, make(chan struct{})
		go l.run(ctx)
	}
	return ch, func() {
		l.mu.Lock()
		defer l.mu.Unlock()
		delete(l.subs[workflow], ch)
	}
}

func (l *listener) stop() {
	l.mu.Lock()
	cancel, done := l.cancel, l.done
	l.mu.Unlock()
	if cancel != nil {
		cancel()
		<-done
	}
}

// wake signals the subscribers of workflow, or every subscriber when all is set.
func (l *listener) wake(workflow string, all bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for wf, chans := range l.subs {
		if !all && wf != workflow {
			continue
		}
		for ch := range chans {
			select {
			case ch <- struct{}{}:
			default:
			}
		}
	}
}

func (l *listener) run(ctx context.Context) {
	defer close(l.done)
	wait := 50 * time.Millisecond
	for ctx.Err() == nil {
		err := l.listen(ctx)
		if ctx.Err() != nil {
			return
		}
		if err != nil {
			select {
			case <-ctx.Done():
				return
			case <-time.After(wait):
			}
			wait = min(wait*2, 500*time.Millisecond)
			continue
		}
		wait = 50 * time.Millisecond
	}
}

// listen connects, LISTENs and delivers notifications until the connection fails.
func (l *listener) listen(ctx context.Context) error {
	c, err := pgx.ConnectConfig(ctx, l.s.cfg.Copy())
	if err != nil {
		return err
	}
	defer c.Close(context.WithoutCancel(ctx))
	var schema string
	if err := c.QueryRow(ctx, `SELECT current_schema()`).Scan(&schema); err != nil {
		return err
	}
	migrated := schemaChannelPrefix + schema
	for _, ch := range []string{"scripthost:" + schema, migrated} {
		if _, err := c.Exec(ctx, `LISTEN `+pgx.Identifier{ch}.Sanitize()); err != nil {
			return err
		}
	}
	if err := l.checkSchema(ctx, c); err != nil {
		return err
	}
	// Anything sent while there was no connection is lost: look again everywhere.
	l.wake("", true)
	for {
		n, err := c.WaitForNotification(ctx)
		if err != nil {
			return err
		}
		if n.Channel == migrated {
			if err := l.checkSchema(ctx, c); err != nil {
				return err
			}
			continue
		}
		l.wake(n.Payload, false)
	}
}

// schemaChannelPrefix names, with the ledger's schema, the channel on which a host
// that migrated the ledger announces it.
const schemaChannelPrefix = "scripthost-schema:"

// checkSchema marks the store outdated when the ledger's schema is newer than this
// binary's, and then wakes every subscriber so that their next pass meets the refusal.
func (l *listener) checkSchema(ctx context.Context, c *pgx.Conn) error {
	v, err := schemaVersion(ctx, c)
	if err != nil {
		return err
	}
	if v > SchemaVersion() {
		l.s.markOutdated(v)
		l.wake("", true)
	}
	return nil
}
