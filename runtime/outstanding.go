package runtime

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/scripthost/scripthost"
	"github.com/scripthost/scripthost/ledger"
)

// Outstanding is what a set of workflows has left unfinished: the handlers that wait
// for a person, the ones the host will pick up again by itself, and when that is due.
type Outstanding struct {
	// Blocked are the newest runs of handlers that failed or paused and that nothing
	// retries by itself: until a person acts (fixes and retries the run, resolves its
	// mutation) the handler starts no new run.
	Blocked []Stuck
	// Waiting are newest runs the host retries or reconciles by itself at Due.
	Waiting []Stuck
	// NextDue is the earliest time a retry, a reconcile attempt or a consumer's
	// wake-up is due; zero when none is. Producer schedules do not count.
	NextDue time.Time
}

// Stuck is a handler's newest run that has not finished.
type Stuck struct {
	Run scripthost.Run
	// Mutation is the run's mutation when it has one whose outcome is unknown.
	Mutation *scripthost.Mutation
	// Due is when the host picks the run up again (Waiting only).
	Due time.Time
}

// Outstanding looks at the newest run of every handler of the named workflows' newest
// versions and sorts the unfinished ones into blocked and waiting.
func (rt *Runtime) Outstanding(ctx context.Context, workflows []string) (Outstanding, error) {
	return rt.outstanding(ctx, workflows, func(ctx context.Context, wf string) (*Definition, error) {
		def, _, err := rt.Definition(ctx, wf)
		return def, err
	})
}

// OutstandingIn is Outstanding for a reader of the ledger that runs nothing (the
// attention report of the CLI and of scripthost serve): each workflow's definition is
// the one its newest stored version records. transientRetries is the host's cap on
// automatic retries of transient pauses (0: the default, 5).
func OutstandingIn(ctx context.Context, store ledger.Store, clock func() time.Time, transientRetries int, workflows []string) (Outstanding, error) {
	if transientRetries == 0 {
		transientRetries = 5
	}
	rt := &Runtime{cfg: Config{Store: store, Clock: clock, TransientRetries: transientRetries}}
	return rt.outstanding(ctx, workflows, func(ctx context.Context, wf string) (*Definition, error) {
		v, err := store.WorkflowVersion(ctx, wf, 0)
		if err != nil {
			return nil, err
		}
		return ParseDefinition(v.Definition)
	})
}

func (rt *Runtime) outstanding(ctx context.Context, workflows []string,
	definition func(context.Context, string) (*Definition, error)) (Outstanding, error) {
	var out Outstanding
	due := func(t time.Time) {
		if out.NextDue.IsZero() || t.Before(out.NextDue) {
			out.NextDue = t
		}
	}
	now := rt.now()
	for _, wf := range workflows {
		def, err := definition(ctx, wf)
		if err != nil {
			return out, fmt.Errorf("runtime: workflow %s: %w", wf, err)
		}
		latest, err := rt.latestRuns(ctx, wf, def)
		if err != nil {
			return out, err
		}
		for _, name := range slices.Sorted(maps.Keys(def.Consumers)) {
			hs, err := rt.cfg.Store.HandlerState(ctx, wf, name)
			if err != nil {
				return out, err
			}
			last, ran := latest[name]
			if !hs.WakeAt.IsZero() && (!ran || hs.WakeAt.After(last.CreatedAt)) {
				due(hs.WakeAt)
			}
		}
		for _, name := range slices.Sorted(maps.Keys(latest)) {
			r := latest[name]
			if r.Status.Settled() {
				continue
			}
			s := Stuck{Run: r}
			m, err := rt.cfg.Store.RunMutation(ctx, r.ID)
			switch {
			case err == nil && m.Status.Unknown():
				s.Mutation = &m
			case err != nil && !errors.Is(err, ledger.ErrNotFound):
				return out, err
			}
			waiting := false
			switch {
			case s.Mutation != nil && s.Mutation.Status == scripthost.MutationNeedsReconcile:
				waiting, s.Due = true, s.Mutation.NextReconcileAt
			case r.Status == scripthost.StatusActive:
				waiting, s.Due = true, now
			case s.Mutation != nil:
				// in_flight (reconciled at the next start) or indeterminate: a person.
			default:
				if waiting, err = rt.autoRetry(ctx, def, r); err != nil {
					return out, err
				}
				s.Due = r.NotBefore
			}
			if !waiting {
				out.Blocked = append(out.Blocked, s)
				continue
			}
			if s.Due.Before(now) {
				s.Due = now
			}
			out.Waiting = append(out.Waiting, s)
			due(s.Due)
		}
	}
	return out, nil
}
