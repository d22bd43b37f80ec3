package runtime

import (
	"context"
	"fmt"
	"regexp"
	"sort"
	"strings"
	"sync"

	"github.com/scripthost/scripthost"
	"github.com/scripthost/scripthost/hostfuncs"
	"github.com/scripthost/scripthost/ledger"
)

// Refused tool calls reach the run's lifecycle log (ledger.EventToolRefused) with the
// write that follows the phase that made them: its completion, its failure, its
// commit, or the run's creation. A phase's invocation leaves its wrapper's refusals in
// a box the run's context carries (withRefusals, made where a run starts being driven),
// and with takes them out into the next write. A mutate phase that made its mutation
// has no such write of its own (the tool wrapper wrote the outcome): its refusals are
// recorded as warnings on the run, each carrying its event (warnRefused).

type refusalsKey struct{}

// refusalBox holds the refused calls of a run not yet written to its log.
type refusalBox struct {
	mu    sync.Mutex
	items []refused
}

// refused is one refused call and its lifecycle event.
type refused struct {
	r  hostfuncs.Refusal
	ev ledger.LifecycleEvent
}

// withRefusals returns ctx with an empty refusal box.
func withRefusals(ctx context.Context) context.Context {
	return context.WithValue(ctx, refusalsKey{}, &refusalBox{})
}

// noteRefusals puts the refusals w made since it was last asked into ctx's box as
// lifecycle events of run, at the time they are noted.
func (rt *Runtime) noteRefusals(ctx context.Context, run scripthost.Run, w *hostfuncs.ToolWrapper) {
	rs := w.TakeRefusals()
	if len(rs) == 0 {
		return
	}
	box, _ := ctx.Value(refusalsKey{}).(*refusalBox)
	now := rt.now()
	items := make([]refused, 0, len(rs))
	for _, r := range rs {
		r.Message = rt.redact(r.Message)
		ev := hostfuncs.RefusalEvent(run.ID, run.Handler, r)
		ev.At = now
		items = append(items, refused{r: r, ev: ev})
	}
	if box == nil {
		// Not driven through observeRun: nowhere to keep them, so say so.
		for _, r := range rs {
			rt.cfg.Logger.Warn("refused tool call not recorded on the run", "run", run.ID, "tool", r.Tool, "reason", r.Reason)
		}
		return
	}
	box.mu.Lock()
	box.items = append(box.items, items...)
	box.mu.Unlock()
}

// takeRefused empties ctx's box.
func takeRefused(ctx context.Context) []refused {
	box, _ := ctx.Value(refusalsKey{}).(*refusalBox)
	if box == nil {
		return nil
	}
	box.mu.Lock()
	defer box.mu.Unlock()
	items := box.items
	box.items = nil
	return items
}

// refusedEvents empties ctx's box and returns its events.
func refusedEvents(ctx context.Context) []ledger.LifecycleEvent {
	items := takeRefused(ctx)
	if len(items) == 0 {
		return nil
	}
	evs := make([]ledger.LifecycleEvent, len(items))
	for i, it := range items {
		evs[i] = it.ev
	}
	return evs
}

// warnRefused records the refused calls of a mutate phase that made its mutation as
// warnings on the run, each carrying its lifecycle event. A call that ended the phase
// after its mutation (hostfuncs.Refusal.Ended) was not executed because of it,
// and its warning says so.
func (rt *Runtime) warnRefused(ctx context.Context, run scripthost.Run) error {
	for _, it := range takeRefused(ctx) {
		what := refusedWarning
		if it.r.Ended {
			what = droppedWarning
		}
		cause := &scripthost.Error{Class: scripthost.ClassLogic, Code: it.r.Reason, Op: it.r.Tool, Message: it.r.Message,
			File: it.r.Where.File, Line: it.r.Where.Line, Column: it.r.Where.Column}
		if err := rt.warn(ledger.WithEvents(ctx, it.ev), run, scripthost.PhaseMutate, what, cause); err != nil {
			return err
		}
	}
	return nil
}

// undefinedName matches the error of a script that used a name nothing defines.
var undefinedName = regexp.MustCompile(`^ReferenceError: ([A-Z][A-Za-z0-9_$]*) is not defined$`)

// namespaceHint adds to a script's error that a capitalized name it used but nothing
// defines is not a tool namespace of the host, naming the ones it offers: the usual
// cause is a tool missing from the host's configuration (an HTTP tool not in the
// --tools file), which the script reaches only as Namespace.method. Other errors are
// returned as they are.
func (rt *Runtime) namespaceHint(err error) error {
	se, ok := err.(*scripthost.Error)
	if !ok || se.Code != scripthost.CodeScript {
		return err
	}
	m := undefinedName.FindStringSubmatch(se.Message)
	if m == nil {
		return err
	}
	var offered []string
	seen := map[string]bool{}
	for _, t := range append(rt.cfg.Tools.Tools(), hostfuncs.TopicTools()...) {
		if t.Namespace == m[1] {
			return err
		}
		if !seen[t.Namespace] {
			seen[t.Namespace] = true
			offered = append(offered, t.Namespace+".*")
		}
	}
	sort.Strings(offered)
	hinted := *se
	hinted.Message = fmt.Sprintf("%s (the host offers no tool %s.*: is it missing from the host's tools, such as the --tools file? It offers %s)",
		se.Message, m[1], strings.Join(offered, ", "))
	return &hinted
}
