package ledgertest

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/scripthost/scripthost"
	"github.com/scripthost/scripthost/ledger"
)

// pageThrough lists every page of size n through list, each starting after the
// previous page's last key, and returns the keys of all of them in order.
func pageThrough[T any](f *fixture, n int, list func(p *ledger.Page, limit int) ([]T, error), key func(T) ledger.PageKey) []string {
	f.t.Helper()
	var out []string
	p := &ledger.Page{}
	for range 100 {
		items, err := list(p, n)
		if err != nil {
			f.t.Fatal(err)
		}
		for _, it := range items {
			out = append(out, key(it).ID)
		}
		if len(items) < n {
			return out
		}
		k := key(items[len(items)-1])
		p = &ledger.Page{After: &k}
	}
	f.t.Fatalf("paging did not end after 100 pages")
	return nil
}

func runKey(r scripthost.Run) ledger.PageKey      { return ledger.PageKey{At: r.CreatedAt, ID: r.ID} }
func mutKey(m scripthost.Mutation) ledger.PageKey { return ledger.PageKey{At: m.CreatedAt, ID: m.ID} }
func eventKey(e scripthost.Event) ledger.PageKey {
	return ledger.PageKey{At: e.CreatedAt, ID: fmt.Sprint(e.Seq)}
}

// newestFirst is ids of rows ordered newest first by (time, id).
func newestFirst[T any](items []T, key func(T) ledger.PageKey) []string {
	keys := make([]ledger.PageKey, 0, len(items))
	for _, it := range items {
		keys = append(keys, key(it))
	}
	slices.SortFunc(keys, func(a, b ledger.PageKey) int {
		if c := b.At.Compare(a.At); c != 0 {
			return c
		}
		return strings.Compare(b.ID, a.ID)
	})
	out := make([]string, 0, len(keys))
	for _, k := range keys {
		out = append(out, k.ID)
	}
	return out
}

// testPagedRuns: a paged run listing goes newest first by (created_at, id), each page
// after the last key of the one before, every run once; runs created meanwhile do not
// shift the pages after a key; the filters and the search are applied in the query.
func testPagedRuns(f *fixture) {
	t, s, ctx := f.t, f.s, f.ctx
	var all []scripthost.Run
	for i := range 7 {
		h := "ship"
		if i%2 == 1 {
			h = "bill"
		}
		all = append(all, must(s.CreateRun(ctx, ledger.NewRun{Workflow: wf, Version: 1, Handler: h, Kind: scripthost.KindConsumer,
			InputState: json.RawMessage(`{}`)}))(t))
	}
	failed := must(s.SetRunStatus(ctx, all[2].ID, ledger.StatusChange{Status: scripthost.StatusFailedLogic,
		Error: "card DECLINED by the 100% bank"}))(t)
	b := f.consumer(stInFlight) // its mutation's tool is Shop.ship
	all = append(all, b.run)

	list := func(rf ledger.RunFilter) func(p *ledger.Page, n int) ([]scripthost.Run, error) {
		return func(p *ledger.Page, n int) ([]scripthost.Run, error) {
			rf.Page, rf.Limit = p, n
			return s.Runs(ctx, rf)
		}
	}
	want := newestFirst(all, runKey)
	for _, n := range []int{1, 3, 8, 50} {
		if got := pageThrough(f, n, list(ledger.RunFilter{}), runKey); !slices.Equal(got, want) {
			t.Errorf("pages of %d: got %v, want %v", n, got, want)
		}
	}
	// A page after a key holds the same runs once a newer run exists.
	first := must(s.Runs(ctx, ledger.RunFilter{Page: &ledger.Page{}, Limit: 3}))(t)
	k := runKey(first[2])
	before := must(s.Runs(ctx, ledger.RunFilter{Page: &ledger.Page{After: &k}, Limit: 3}))(t)
	must(s.CreateRun(ctx, ledger.NewRun{Workflow: wf, Version: 1, Handler: "ship", Kind: scripthost.KindConsumer}))(t)
	after := must(s.Runs(ctx, ledger.RunFilter{Page: &ledger.Page{After: &k}, Limit: 3}))(t)
	if runIDs(before) != runIDs(after) || len(after) != 3 {
		t.Errorf("the page after %s changed when a run was added: %s, then %s", k.ID, runIDs(before), runIDs(after))
	}

	for _, c := range []struct {
		name string
		f    ledger.RunFilter
		want []string
	}{
		{"error text, any case", ledger.RunFilter{Search: "declined"}, []string{failed.ID}},
		{"LIKE wildcards are literal", ledger.RunFilter{Search: "100%"}, []string{failed.ID}},
		{"underscore is literal", ledger.RunFilter{Search: "card_declined"}, nil},
		{"status", ledger.RunFilter{Search: "FAILED:LOGIC"}, []string{failed.ID}},
		{"id", ledger.RunFilter{Search: all[4].ID}, []string{all[4].ID}},
		{"tool of the mutation", ledger.RunFilter{Search: "shop.SHIP"}, []string{b.run.ID}},
		{"search and handler", ledger.RunFilter{Search: "ship", Handler: "bill"}, nil},
		{"phase", ledger.RunFilter{Phase: scripthost.RunMutating}, []string{b.run.ID}},
		{"no match", ledger.RunFilter{Search: "nothing like it"}, nil},
	} {
		got := pageThrough(f, 2, list(c.f), runKey)
		if !slices.Equal(got, c.want) {
			t.Errorf("%s: got %v, want %v", c.name, got, c.want)
		}
	}
	// Since and Until bound the creation time, in the query.
	mid := all[3].CreatedAt
	var older, newer int
	for _, r := range must(s.Runs(ctx, ledger.RunFilter{}))(t) {
		if r.CreatedAt.Before(mid) {
			older++
		} else {
			newer++
		}
	}
	if got := must(s.Runs(ctx, ledger.RunFilter{Until: mid}))(t); len(got) != older {
		t.Errorf("until %v: got %d runs, want %d", mid, len(got), older)
	}
	if got := must(s.Runs(ctx, ledger.RunFilter{Since: mid}))(t); len(got) != newer {
		t.Errorf("since %v: got %d runs, want %d", mid, len(got), newer)
	}
	retry := must(s.CreateRetryRun(ctx, failed.ID, ledger.RetryRun{}))(t)
	if got := must(s.Runs(ctx, ledger.RunFilter{Superseded: true}))(t); runIDs(got) != failed.ID {
		t.Errorf("superseded: got %s, want %s (retried by %s)", runIDs(got), failed.ID, retry.ID)
	}
}

func runIDs(runs []scripthost.Run) string {
	var out []string
	for _, r := range runs {
		out = append(out, r.ID)
	}
	return strings.Join(out, ",")
}

// testPagedMutations: mutations page newest first by (created_at, id) and are
// searched by id, key, tool, status and error in the query.
func testPagedMutations(f *fixture) {
	t, s, ctx := f.t, f.s, f.ctx
	var all []scripthost.Mutation
	var bs []built
	for range 5 {
		b := f.consumer(stInFlight)
		bs = append(bs, b)
		all = append(all, b.mut)
	}
	failed := must(s.FailMutation(ctx, all[1].ID, scripthost.LogicError("Insufficient funds")))(t)
	list := func(mf ledger.MutationFilter) func(p *ledger.Page, n int) ([]scripthost.Mutation, error) {
		return func(p *ledger.Page, n int) ([]scripthost.Mutation, error) {
			mf.Page, mf.Limit = p, n
			return s.Mutations(ctx, mf)
		}
	}
	want := newestFirst(all, mutKey)
	for _, n := range []int{1, 2, 5, 9} {
		if got := pageThrough(f, n, list(ledger.MutationFilter{}), mutKey); !slices.Equal(got, want) {
			t.Errorf("pages of %d: got %v, want %v", n, got, want)
		}
	}
	for _, c := range []struct {
		name string
		f    ledger.MutationFilter
		want []string
	}{
		{"error text", ledger.MutationFilter{Search: "insufficient"}, []string{failed.ID}},
		{"idempotency key", ledger.MutationFilter{Search: bs[3].key}, []string{all[3].ID}},
		{"run id", ledger.MutationFilter{Search: bs[2].run.ID}, []string{all[2].ID}},
		{"status and filter", ledger.MutationFilter{Search: "failed", Status: scripthost.MutationFailed}, []string{failed.ID}},
		{"tool", ledger.MutationFilter{Search: "Shop.Ship"}, want},
		{"no match", ledger.MutationFilter{Search: "Shop.refund"}, nil},
	} {
		if got := pageThrough(f, 2, list(c.f), mutKey); !slices.Equal(got, c.want) {
			t.Errorf("%s: got %v, want %v", c.name, got, c.want)
		}
	}
}

// testPagedEvents: events page newest first by sequence number and are searched by
// message id and topic in the query; Topics sums each topic up with its backlog.
func testPagedEvents(f *fixture) {
	t, s, ctx := f.t, f.s, f.ctx
	if got := must(s.Topics(ctx, ""))(t); len(got) != 0 {
		t.Fatalf("empty ledger: got topics %+v", got)
	}
	evs := f.publish("orders", "o-1", "o-2", "o-3", "o-4", "o-5")
	f.publish("refunds", "r-1")
	must(s.Publish(ctx, ledger.NewEvent{Workflow: "billing", Topic: "orders", MessageID: "b-1", Payload: json.RawMessage(`{}`)}))(t)
	must(s.SkipEvent(ctx, wf, "orders", "o-2"))(t)
	list := func(ef ledger.EventFilter) func(p *ledger.Page, n int) ([]scripthost.Event, error) {
		return func(p *ledger.Page, n int) ([]scripthost.Event, error) {
			ef.Page, ef.Limit = p, n
			return s.Events(ctx, ef)
		}
	}
	var want []string
	for i := len(evs) - 1; i >= 0; i-- {
		want = append(want, fmt.Sprint(evs[i].Seq))
	}
	for _, n := range []int{1, 2, 5, 7} {
		if got := pageThrough(f, n, list(ledger.EventFilter{Workflow: wf, Topic: "orders"}), eventKey); !slices.Equal(got, want) {
			t.Errorf("pages of %d: got %v, want %v", n, got, want)
		}
	}
	for _, c := range []struct {
		name string
		f    ledger.EventFilter
		want []string
	}{
		{"message id", ledger.EventFilter{Workflow: wf, Search: "O-3"}, []string{fmt.Sprint(evs[2].Seq)}},
		{"status", ledger.EventFilter{Workflow: wf, Search: "skipped"}, []string{fmt.Sprint(evs[1].Seq)}},
		{"topic across workflows", ledger.EventFilter{Search: "refunds"}, nil},
		{"status filter", ledger.EventFilter{Workflow: wf, Topic: "orders", Status: scripthost.EventPending, Search: "o-"},
			[]string{fmt.Sprint(evs[4].Seq), fmt.Sprint(evs[3].Seq), fmt.Sprint(evs[2].Seq), fmt.Sprint(evs[0].Seq)}},
	} {
		got := pageThrough(f, 3, list(c.f), eventKey)
		if c.name == "topic across workflows" {
			if len(got) != 1 {
				t.Errorf("%s: got %v, want the one refunds event", c.name, got)
			}
			continue
		}
		if !slices.Equal(got, c.want) {
			t.Errorf("%s: got %v, want %v", c.name, got, c.want)
		}
	}
	if _, err := s.Events(ctx, ledger.EventFilter{Page: &ledger.Page{After: &ledger.PageKey{ID: "x"}}}); err == nil {
		t.Error("an event page key that is no sequence number: got nil error")
	}

	topics := must(s.Topics(ctx, ""))(t)
	var got []string
	for _, tp := range topics {
		got = append(got, fmt.Sprintf("%s/%s p%d r%d c%d s%d", tp.Workflow, tp.Topic, tp.Pending, tp.Reserved, tp.Consumed, tp.Skipped))
	}
	wantTopics := []string{"billing/orders p1 r0 c0 s0", wf + "/orders p4 r0 c0 s1", wf + "/refunds p1 r0 c0 s0"}
	if !slices.Equal(got, wantTopics) {
		t.Errorf("topics: got %v, want %v", got, wantTopics)
	}
	if len(topics) == 3 && (!topics[1].OldestPending.Equal(evs[0].CreatedAt) || !topics[1].Last.Equal(evs[4].CreatedAt)) {
		t.Errorf("%s/orders: oldest pending %v, last %v; want %v and %v", wf, topics[1].OldestPending, topics[1].Last,
			evs[0].CreatedAt, evs[4].CreatedAt)
	}
	// Once the oldest pending event is consumed, the backlog starts at the next one.
	b := f.consumer(stCommitted)
	tps := must(s.Topics(ctx, wf))(t)
	if len(tps) != 3 || tps[0].Topic != "in" || tps[0].Consumed != 2 || tps[0].Pending != 0 || !tps[0].OldestPending.IsZero() {
		t.Errorf("topics of %s after run %s consumed two events of in: %+v", wf, b.run.ID, tps)
	}
}

// testPagedAgentSessions: sessions page after a key and are searched by id, task and
// status in the query.
func testPagedAgentSessions(f *fixture) {
	t, ctx := f.t, f.ctx
	as := f.s.(ledger.AgentStore)
	for i, st := range []string{"running", "paused", "completed", "failed", "paused"} {
		if err := as.CreateAgentSession(ctx, ledger.AgentSession{ID: fmt.Sprintf("s%d", i+1), Task: fmt.Sprintf("task-%d.yaml", i+1),
			Spec: json.RawMessage(`{}`), Status: st}); err != nil {
			t.Fatal(err)
		}
	}
	key := func(a ledger.AgentSession) ledger.PageKey { return ledger.PageKey{At: a.CreatedAt, ID: a.ID} }
	list := func(af ledger.AgentSessionFilter) func(p *ledger.Page, n int) ([]ledger.AgentSession, error) {
		return func(p *ledger.Page, n int) ([]ledger.AgentSession, error) {
			af.Page, af.Limit = p, n
			return as.AgentSessions(ctx, af)
		}
	}
	if got := pageThrough(f, 2, list(ledger.AgentSessionFilter{}), key); !slices.Equal(got, []string{"s5", "s4", "s3", "s2", "s1"}) {
		t.Errorf("pages of 2: got %v", got)
	}
	for q, want := range map[string][]string{"PAUSED": {"s5", "s2"}, "task-3": {"s3"}, "s4": {"s4"}, "nope": nil} {
		if got := pageThrough(f, 1, list(ledger.AgentSessionFilter{Search: q}), key); !slices.Equal(got, want) {
			t.Errorf("search %q: got %v, want %v", q, got, want)
		}
	}
}

// testExecutionSummaries: the execution log is summed up per execution in the query,
// newest first by start, paged after a key, searched in its steps, with a plan left out.
func testExecutionSummaries(f *fixture) {
	t, s, ctx := f.t, f.s, f.ctx
	base := time.Date(2026, 5, 6, 7, 8, 9, 0, time.UTC)
	add := func(id, plan, step, tool string, at int, ok bool, errText string) {
		t.Helper()
		if err := s.AppendExecution(ctx, ledger.ExecutionRecord{ExecutionID: id, PlanID: plan, StepID: step, Seq: 1, Tool: tool,
			StartedAt: base.Add(time.Duration(at) * time.Second), EndedAt: base.Add(time.Duration(at+1) * time.Second),
			Success: ok, Error: errText}); err != nil {
			t.Fatal(err)
		}
	}
	add("a/1/build", "a", "build", "Cmd.run", 0, true, "")
	add("a/1/test", "a", "test", "Cmd.run", 5, false, "Tests FAILED")
	add("b/1", "b", "write", "Files.write", 2, true, "")
	add("a/2/build", "a", "build", "Cmd.run", 7, true, "")
	add("_operator/1/cancel", "_operator", "cancel", "operator.cancel", 9, true, "")
	list := func(ef ledger.ExecutionSummaryFilter) func(p *ledger.Page, n int) ([]ledger.ExecutionSummary, error) {
		return func(p *ledger.Page, n int) ([]ledger.ExecutionSummary, error) {
			ef.Page, ef.Limit = p, n
			return s.ExecutionSummaries(ctx, ef)
		}
	}
	key := func(e ledger.ExecutionSummary) ledger.PageKey {
		return ledger.PageKey{At: e.StartedAt, ID: e.ExecutionID}
	}
	for _, n := range []int{1, 2, 9} {
		if got := pageThrough(f, n, list(ledger.ExecutionSummaryFilter{ExcludePlan: "_operator"}), key); !slices.Equal(got, []string{"a/2", "b/1", "a/1"}) {
			t.Errorf("pages of %d: got %v", n, got)
		}
	}
	all := must(s.ExecutionSummaries(ctx, ledger.ExecutionSummaryFilter{PlanID: "a"}))(t)
	if len(all) != 2 || all[1].ExecutionID != "a/1" || all[1].Steps != 2 || all[1].Failed != 1 ||
		!all[1].StartedAt.Equal(base) || !all[1].EndedAt.Equal(base.Add(6*time.Second)) || all[1].PlanID != "a" {
		t.Errorf("plan a: %+v", all)
	}
	for q, want := range map[string][]string{"tests failed": {"a/1"}, "files.WRITE": {"b/1"}, "cmd.run": {"a/2", "a/1"}, "cancel": nil} {
		if got := pageThrough(f, 1, list(ledger.ExecutionSummaryFilter{ExcludePlan: "_operator", Search: q}), key); !slices.Equal(got, want) {
			t.Errorf("search %q: got %v, want %v", q, got, want)
		}
	}
}
