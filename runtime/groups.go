package runtime

import (
	"context"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/scripthost/scripthost"
	"github.com/scripthost/scripthost/ledger"
)

// consumerGroups splits a definition's consumers into groups whose runs do not depend
// on another group's: consumers joined by a topic, directly or through others, stay
// in one group and take turns in name order. A topic joins the consumers that
// subscribe to it (they compete for its events) and those that publish on it (what
// one commits, the next one's prepare reads). Groups are in the order of their first
// consumer's name, each sorted by name.
//
// In deterministic mode every consumer is in one group: the runs of a pass then happen
// in the one order that recorded reports compare byte for byte, which runs side by
// side could not promise (the ledger numbers runs and events in commit order).
func (rt *Runtime) consumerGroups(def *Definition) [][]string {
	names := slices.Sorted(maps.Keys(def.Consumers))
	if rt.cfg.Deterministic != nil || rt.cfg.Concurrency < 2 || len(names) < 2 {
		return [][]string{names}
	}
	group := make(map[string]int, len(names)) // consumer → group
	owner := map[string]int{}                 // topic → group
	for i, name := range names {
		group[name] = i
	}
	for _, name := range names {
		c := def.Consumers[name]
		for _, topic := range append(slices.Clone(c.Subscribe), c.Publishes...) {
			g, ok := owner[topic]
			if !ok {
				owner[topic] = group[name]
				continue
			}
			// Merge this consumer's group into the topic's.
			from := group[name]
			for n, x := range group {
				if x == from {
					group[n] = g
				}
			}
			for t, x := range owner {
				if x == from {
					owner[t] = g
				}
			}
		}
	}
	byGroup := map[int][]string{}
	for _, name := range names {
		byGroup[group[name]] = append(byGroup[group[name]], name)
	}
	out := make([][]string, 0, len(byGroup))
	for _, g := range byGroup {
		out = append(out, g)
	}
	slices.SortFunc(out, func(a, b []string) int {
		if a[0] < b[0] {
			return -1
		}
		return 1
	})
	return out
}

// started is what one consumer did in a round.
type started struct {
	run     scripthost.Run
	started bool
	err     error
}

// roundInput is what one round of a workflow's consumers works on: the workflow and
// its version's definition, the consumer groups, which consumers are blocked, each
// consumer's latest run and state, and the time of the pass.
type roundInput struct {
	workflow string
	version  int
	def      *Definition
	groups   [][]string
	blocked  func(string) bool
	latest   map[string]scripthost.Run
	states   map[string]ledger.HandlerState
	now      time.Time
}

// round gives each consumer that is not blocked its turn (see tickConsumer): the
// consumers of one group in name order, the groups side by side, each group past the
// first on a Concurrency slot of its own when one is free (on this goroutine after the
// others otherwise). A group stops at its first error. states is updated as
// tickConsumer keeps it.
func (rt *Runtime) round(ctx context.Context, r roundInput) map[string]started {
	groups, states := r.groups, r.states
	turn := func(group []string, states map[string]ledger.HandlerState, out map[string]started) {
		for _, name := range group {
			if r.blocked(name) {
				continue
			}
			run, ok, err := rt.tickConsumer(ctx, r, name, states)
			out[name] = started{run: run, started: ok, err: err}
			if err != nil {
				return
			}
		}
	}
	results := map[string]started{}
	if len(groups) == 1 {
		turn(groups[0], states, results)
		return results
	}
	// Each group works on maps of its own, merged when every group is done.
	outs := make([]map[string]started, len(groups))
	subs := make([]map[string]ledger.HandlerState, len(groups))
	for i, g := range groups {
		outs[i], subs[i] = map[string]started{}, map[string]ledger.HandlerState{}
		for _, name := range g {
			if hs, ok := states[name]; ok {
				subs[i][name] = hs
			}
		}
	}
	var wg sync.WaitGroup
	var inline []int
	for i := range groups {
		if i == 0 {
			continue
		}
		select {
		case rt.slots <- struct{}{}:
			wg.Go(func() {
				defer func() { <-rt.slots }()
				turn(groups[i], subs[i], outs[i])
			})
		default:
			inline = append(inline, i)
		}
	}
	turn(groups[0], subs[0], outs[0])
	for _, i := range inline {
		turn(groups[i], subs[i], outs[i])
	}
	wg.Wait()
	clear(states)
	for i := range groups {
		maps.Copy(states, subs[i])
		maps.Copy(results, outs[i])
	}
	return results
}
