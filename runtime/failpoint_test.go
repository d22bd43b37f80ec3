package runtime_test

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/scripthost/scripthost"
	"github.com/scripthost/scripthost/ledger"
)

// failpointTrace runs src's workflow once, with events published on topic t, and
// returns each failpoint the runtime called with what the ledger held then: every run
// of the workflow as handler:phase/status and its mutation's status, sorted. A
// crash test kills the process at any of these points, so what is durable at each is
// what a restart finds.
func failpointTrace(t *testing.T, src string, events ...string) []string {
	t.Helper()
	return traceFailpoints(t, src, events, func(h *harness) {
		if err := h.rt.RunOnce(h.ctx, []string{"fp"}); err != nil && !isRunError(err) {
			t.Fatal(err)
		}
	})
}

// traceFailpoints is failpointTrace with what runs the workflow given.
func traceFailpoints(t *testing.T, src string, events []string, run func(h *harness)) []string {
	t.Helper()
	h := newHarness(t)
	var trace []string
	h.failpoint = func(name string) {
		runs, err := h.store.Runs(h.ctx, ledger.RunFilter{Workflow: "fp"})
		if err != nil {
			t.Errorf("failpoint %s: %v", name, err)
			return
		}
		var held []string
		for _, r := range runs {
			s := fmt.Sprintf("%s:%s/%s", r.Handler, r.Phase, r.Status)
			if m, err := h.store.RunMutation(h.ctx, r.ID); err == nil {
				s += "+" + string(m.Status)
			}
			held = append(held, s)
		}
		slices.Sort(held)
		trace = append(trace, name+" ["+strings.Join(held, " ")+"]")
	}
	h.restart()
	h.load("fp", src)
	h.publish("fp", "t", events...)
	run(h)
	return trace
}

// TestFailpointsOfFirstRuns pins the failpoints a run started by the scheduler passes,
// in order, and what the ledger holds at each: a run not written yet passes none until
// its first write, which calls kind:created and the after:PHASE points of the phases
// it went through before it, and from there every step calls its own.
func TestFailpointsOfFirstRuns(t *testing.T) {
	const reserve = `async prepare() { const [e] = await Topics.peek({ topic: 't' });
      return e ? { reservations: [{ topic: 't', ids: [e.id] }], data: e.id } : null },`
	// createdMutating is the start of the trace of a consumer run first written in
	// phase mutating, with what the ledger then holds.
	createdMutating := func(held string) []string {
		var out []string
		for _, fp := range []string{"created", "after:pending", "after:preparing", "after:prepared"} {
			out = append(out, "consumer:"+fp+" ["+held+"]")
		}
		return out
	}
	noMutation := append(createdMutating("c:mutating/active"),
		"consumer:after:mutating [c:emitting/active]",
		"consumer:after:mutated [c:emitting/active]",
		"consumer:after:emitting [c:committed/committed]")
	for _, tt := range []struct {
		name, src string
		events    []string
		want      []string
	}{
		{"consumer applies", `export default { topics: ['t'], consumers: { c: { subscribe: ['t'], ` + reserve + `
      async mutate(d) { await Svc.apply({ value: d }) }, next() {} } } }`, []string{"e1"},
			append(createdMutating("c:emitting/active+applied"),
				"consumer:after:mutating [c:emitting/active+applied]",
				"consumer:after:mutated [c:emitting/active+applied]",
				"consumer:after:emitting [c:committed/committed+applied]")},
		{"consumer mutates nothing", `export default { topics: ['t'], consumers: { c: { subscribe: ['t'], ` + reserve + `
      mutate() {}, next() {} } } }`, []string{"e1"},
			noMutation},
		{"consumer without mutate", `export default { topics: ['t'], consumers: { c: { subscribe: ['t'], ` + reserve + ` } } }`,
			[]string{"e1"},
			noMutation},
		{"consumer mutate phase throws", `export default { topics: ['t'], consumers: { c: { subscribe: ['t'], ` + reserve + `
      async mutate(d) { await Svc.apply({ value: 'x', bad: Svc.nope() }) } } } }`, []string{"e1"},
			append(createdMutating("c:mutating/active"),
				"consumer:after:mutating [c:mutating/failed:logic]")},
		{"consumer after hook fails", `export default { topics: ['t'], consumers: { c: { subscribe: ['t'], ` + reserve + `
      async mutate(d) { await Svc.apply({ value: d }) },
      after(info) { if (info.phase === 'mutate') throw new Error('audit down') } } } }`, []string{"e1"},
			append(createdMutating("c:emitting/active+applied"),
				"consumer:after:mutating [c:emitting/failed:logic+applied]",
				"consumer:after:mutated [c:emitting/failed:logic+applied]")},
		{"consumer prepare fails", `export default { topics: ['t'], consumers: { c: { subscribe: ['t'],
      prepare() { throw new Error('no') } } } }`, []string{"e1"},
			[]string{
				"consumer:created [c:preparing/active]",
				"consumer:after:pending [c:preparing/active]",
				"consumer:after:preparing [c:preparing/failed:logic]",
			}},
		{"consumer guard says no", `export default { topics: ['t'], consumers: { c: { subscribe: ['t'], guard() { return false }, ` + reserve + ` } } }`,
			[]string{"e1"},
			[]string{
				"consumer:created [c:pending/skipped]",
				"consumer:after:pending [c:pending/skipped]",
			}},
		{"consumer guard fails", `export default { topics: ['t'], consumers: { c: { subscribe: ['t'], guard() { throw new Error('g') }, ` + reserve + ` } } }`,
			[]string{"e1"},
			[]string{
				"consumer:created [c:pending/active]",
				"consumer:after:pending [c:pending/failed:logic]",
			}},
		{"producer commits", `export default { topics: ['t'], producers: { p: { schedule: { every: '1m' }, publishes: ['t'],
      async handler() { await Topics.publish({ topic: 't', id: 'x', payload: {} }); return { n: 1 } } } } }`, nil,
			[]string{
				"producer:created [p:committed/committed]",
				"producer:after:pending [p:committed/committed]",
				"producer:after:executing [p:committed/committed]",
			}},
		{"producer fails", `export default { topics: ['t'], producers: { p: { schedule: { every: '1m' },
      handler() { throw new Error('p') } } } }`, nil,
			[]string{
				"producer:created [p:executing/active]",
				"producer:after:pending [p:executing/active]",
				"producer:after:executing [p:executing/failed:logic]",
			}},
		{"producer guard says no", `export default { topics: ['t'], producers: { p: { schedule: { every: '1m' },
      guard() { return false }, handler() {} } } }`, nil,
			[]string{
				"producer:created [p:pending/skipped]",
				"producer:after:pending [p:pending/skipped]",
			}},
		{"producer guard fails", `export default { topics: ['t'], producers: { p: { schedule: { every: '1m' },
      guard() { throw new Error('g') }, handler() {} } } }`, nil,
			[]string{
				"producer:created [p:pending/active]",
				"producer:after:pending [p:pending/failed:logic]",
			}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got := failpointTrace(t, tt.src, tt.events...)
			if !slices.Equal(got, tt.want) {
				t.Errorf("failpoints:\n  %s\nwant:\n  %s", strings.Join(got, "\n  "), strings.Join(tt.want, "\n  "))
			}
		})
	}
}

// TestFailpointsOfWrittenRuns pins the failpoints of runs the ledger holds before they
// are driven: one created pending and driven by Drive, as after a restart, and
// retries, which are written when they are created.
func TestFailpointsOfWrittenRuns(t *testing.T) {
	const reserve = `async prepare() { const [e] = await Topics.peek({ topic: 't' });
      return e ? { reservations: [{ topic: 't', ids: [e.id] }], data: e.id } : null },`
	drive := func(kind scripthost.HandlerKind, handler string) func(h *harness) {
		return func(h *harness) {
			run, err := h.store.CreateRun(h.ctx, ledger.NewRun{Workflow: "fp", Version: 1, Handler: handler, Kind: kind,
				InputState: json.RawMessage(`{}`)})
			if err != nil {
				t.Fatal(err)
			}
			if _, _, err := h.rt.Drive(h.ctx, run.ID); err != nil {
				t.Fatal(err)
			}
		}
	}
	retried := func(h *harness) {
		h.runOnce("fp")
		h.clock.Add(time.Minute)
		h.runOnce("fp")
	}
	for _, tt := range []struct {
		name, src string
		events    []string
		run       func(h *harness)
		want      []string
	}{
		{"consumer applies", `export default { topics: ['t'], consumers: { c: { subscribe: ['t'], ` + reserve + `
      async mutate(d) { await Svc.apply({ value: d }) }, next() {} } } }`, []string{"e1"}, drive(scripthost.KindConsumer, "c"),
			[]string{
				"consumer:after:pending [c:preparing/active]",
				"consumer:after:preparing [c:mutating/active]",
				"consumer:after:prepared [c:mutating/active]",
				"consumer:after:mutating [c:emitting/active+applied]",
				"consumer:after:mutated [c:emitting/active+applied]",
				"consumer:after:emitting [c:committed/committed+applied]",
			}},
		{"consumer after hook fails", `export default { topics: ['t'], consumers: { c: { subscribe: ['t'], ` + reserve + `
      async mutate(d) { await Svc.apply({ value: d }) },
      after(info) { if (info.phase === 'mutate') throw new Error('audit down') } } } }`, []string{"e1"}, drive(scripthost.KindConsumer, "c"),
			[]string{
				"consumer:after:pending [c:preparing/active]",
				"consumer:after:preparing [c:mutating/active]",
				"consumer:after:prepared [c:mutating/active]",
				"consumer:after:mutating [c:emitting/failed:logic+applied]",
			}},
		{"consumer guard says no", `export default { topics: ['t'], consumers: { c: { subscribe: ['t'], guard() { return false }, ` + reserve + ` } } }`,
			[]string{"e1"}, drive(scripthost.KindConsumer, "c"),
			[]string{
				"consumer:after:pending [c:pending/skipped]",
			}},
		{"producer commits", `export default { topics: ['t'], producers: { p: { schedule: { every: '1h' }, publishes: ['t'],
      async handler() { await Topics.publish({ topic: 't', id: 'x', payload: {} }); return { n: 1 } } } } }`, nil,
			drive(scripthost.KindProducer, "p"),
			[]string{
				"producer:after:pending [p:executing/active]",
				"producer:after:executing [p:committed/committed]",
			}},
		{"consumer retried", `export default { topics: ['t'], consumers: { c: { subscribe: ['t'], ` + reserve + `
      async mutate(d) { await Svc.apply({ value: d }) }, next() {},
      onError: { strategy: 'retry', maxRetries: 1, delayMs: 1000 },
      after(info) { if (info.phase === 'next' && info.attempt === 1) throw new Error('once') } } } }`, []string{"e1"}, retried,
			[]string{
				"consumer:created [c:emitting/active+applied]",
				"consumer:after:pending [c:emitting/active+applied]",
				"consumer:after:preparing [c:emitting/active+applied]",
				"consumer:after:prepared [c:emitting/active+applied]",
				"consumer:after:mutating [c:emitting/active+applied]",
				"consumer:after:mutated [c:emitting/active+applied]",
				"consumer:after:emitting [c:emitting/failed:logic+applied]",
				"consumer:after:emitting [c:committed/committed c:emitting/failed:logic+applied]",
			}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got := traceFailpoints(t, tt.src, tt.events, tt.run)
			if !slices.Equal(got, tt.want) {
				t.Errorf("failpoints:\n  %s\nwant:\n  %s", strings.Join(got, "\n  "), strings.Join(tt.want, "\n  "))
			}
		})
	}
}

// TestBeginWithoutHandler: a run begun for a handler its version lacks, or for a
// version that cannot be loaded, is written pending (kind:created, and nothing passed
// yet), then driven as any written run: the missing handler fails it, the version's
// error is returned.
func TestBeginWithoutHandler(t *testing.T) {
	const src = `export default { topics: ['t'], consumers: { c: { subscribe: ['t'], prepare() { return null } } } }`
	got := traceFailpoints(t, src, nil, func(h *harness) {
		begun, err := h.rt.Begin(h.ctx, ledger.NewRun{Workflow: "fp", Version: 1, Handler: "gone", Kind: scripthost.KindConsumer})
		if err != nil {
			t.Fatal(err)
		}
		run, err := h.store.Run(h.ctx, begun.ID)
		if err != nil {
			t.Fatal(err)
		}
		if run.Phase != scripthost.RunPending || run.Status != scripthost.StatusFailedLogic || !strings.Contains(run.Error, "handler gone no longer exists") {
			t.Errorf("run of a missing handler: %s/%s %q, want pending/failed:logic, handler gone no longer exists", run.Phase, run.Status, run.Error)
		}
		_, err = h.rt.Begin(h.ctx, ledger.NewRun{Workflow: "fp", Version: 7, Handler: "c", Kind: scripthost.KindConsumer})
		if err == nil || !strings.Contains(err.Error(), "workflow fp version 7") {
			t.Errorf("run of a version not stored: err %v, want one naming workflow fp version 7", err)
		}
	})
	want := []string{"consumer:created [gone:pending/active]", "consumer:created [c:pending/active gone:pending/failed:logic]"}
	if !slices.Equal(got, want) {
		t.Errorf("failpoints:\n  %s\nwant:\n  %s", strings.Join(got, "\n  "), strings.Join(want, "\n  "))
	}
}
