package main

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/scripthost/scripthost"
	"github.com/scripthost/scripthost/internal/fakesvc"
	"github.com/scripthost/scripthost/ledger"
	"github.com/scripthost/scripthost/ledger/sqlite"
)

// shotTo returns an action that saves a screenshot named name into artifacts(t).
func shotTo(t *testing.T, name string) chromedp.Action { return screenshot(artifacts(t), name) }

// uiSteps is uiTab whose steps, on failure, save a screenshot and log the page's text.
func uiSteps(t *testing.T, s *served, operator string) func(what string, actions ...chromedp.Action) {
	ctx, _ := uiTab(t, s, operator)
	// The login lands on the runs page; a navigation before that would be undone by it.
	if err := chromedp.Run(ctx, chromedp.WaitVisible(`#runs`, chromedp.ByQuery)); err != nil {
		t.Fatalf("log in: %v", err)
	}
	return func(what string, actions ...chromedp.Action) {
		t.Helper()
		sctx, scancel := context.WithTimeout(ctx, 30*time.Second)
		defer scancel()
		if err := chromedp.Run(sctx, actions...); err != nil {
			var text string
			fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
			defer cancel()
			_ = chromedp.Run(fctx, chromedp.Evaluate(`document.body.innerText + "\n" + (document.querySelector(".buttons.bulk") || {}).outerHTML + "\n" + location.hash + " " + [...document.querySelectorAll("form.filters select, form.filters input")].map((e) => e.name + "=" + e.value).join(",")`, &text), shotTo(t, "failed-"+strings.ReplaceAll(what, " ", "-")))
			t.Fatalf("%s: %v\npage:\n%s", what, err, text)
		}
	}
}

// pollJS waits until the JavaScript expression is true. The live pages redraw their
// tables every 2 s, so a test reads them with one expression rather than node by node.
func pollJS(expr string) chromedp.Action {
	var ok bool
	return chromedp.Poll(expr, &ok, chromedp.WithPollingInterval(100*time.Millisecond))
}

// runIDsJS lists the run ids the runs table shows.
const runIDsJS = `[...document.querySelectorAll("#runs tbody tr[data-run]")].map((r) => r.dataset.run)`

// TestServeUIPagesRuns shows 250 runs in the web UI: the first page holds the newest
// 200, Older shows the other 50, Newer goes back, and the search box finds one run by
// its id. Between them the pages show every run once.
func TestServeUIPagesRuns(t *testing.T) {
	e := newShopEnv(t, shopWorkflow)
	e.run(0)
	if code, _, errOut := e.cli("pause", "shop"); code != 0 {
		t.Fatalf("pause: %s", errOut)
	}
	seeded := e.seedRuns(250)
	s := startServe(t, e.db, e.wf, "--workspace", e.ws, "--token", testServeToken)
	step := uiSteps(t, s, "dana")
	var first, second, back []string
	step("the newest 200",
		chromedp.Navigate(s.base+"/#/runs"),
		pollJS(`document.querySelectorAll("#runs tbody tr[data-run]").length === 200 && !document.getElementById("older").hidden`),
		chromedp.Evaluate(runIDsJS, &first),
		shotTo(t, "runs-page-1"))
	step("older: the other 50",
		chromedp.Click(`#older`, chromedp.ByQuery),
		pollJS(`document.querySelectorAll("#runs tbody tr[data-run]").length === 50 && document.getElementById("older").hidden && !document.getElementById("newer").hidden`),
		chromedp.Evaluate(runIDsJS, &second),
		shotTo(t, "runs-page-2"))
	step("newer: back to the first page",
		chromedp.Click(`#newer`, chromedp.ByQuery),
		pollJS(`document.querySelectorAll("#runs tbody tr[data-run]").length === 200 && document.getElementById("newer").hidden`),
		chromedp.Evaluate(runIDsJS, &back))
	all := append(slices.Clone(first), second...)
	var want []string
	for i := len(seeded) - 1; i >= 0; i-- {
		want = append(want, seeded[i].ID)
	}
	if !slices.Equal(all, want) {
		t.Errorf("the two pages show %d runs, not every run once newest first", len(all))
	}
	if !slices.Equal(back, first) {
		t.Errorf("Newer shows another page than the first")
	}
	target := seeded[17].ID
	step("search for one run",
		chromedp.SendKeys(`#search`, target[len(target)-12:]+"\n", chromedp.ByQuery),
		pollJS(`document.querySelectorAll("#runs tbody tr[data-run]").length === 1 && document.querySelector('#runs tr[data-run="`+target+`"]') !== null`),
		shotTo(t, "runs-search"))
}

// TestServeUIEvents shows the Events page: the topic with its pending count and
// backlog, the drill-down into its events, and a pending event set aside with Skip
// through a confirmation with a reason; the ledger and the audit trail then say so.
// It also checks that the run page shows each lifecycle event's time and the gap
// since the one before.
func TestServeUIEvents(t *testing.T) {
	e := newShopEnv(t, shopWorkflow)
	publish := func(ids ...string) {
		ctx := context.Background()
		st, err := sqlite.Open(ctx, e.db, sqlite.Options{})
		if err != nil {
			t.Fatal(err)
		}
		defer st.Close()
		for i, id := range ids {
			if _, err := st.Publish(ctx, ledger.NewEvent{Workflow: "shop", Topic: "orders", MessageID: id,
				Payload: json.RawMessage(`{"n":` + string(rune('1'+i)) + `}`)}); err != nil {
				t.Fatal(err)
			}
		}
	}
	e.run(0) // stores the workflow
	publish("o0")
	e.run(0) // takes o0: a committed run with a lifecycle
	committed := e.runs()[len(e.runs())-1]
	if committed.Status != scripthost.StatusCommitted {
		t.Fatalf("run %s: %s, want committed", committed.ID, committed.Status)
	}
	if code, _, errOut := e.cli("pause", "shop"); code != 0 {
		t.Fatalf("pause: %s", errOut)
	}
	publish("o1", "o2", "o3")
	s := startServe(t, e.db, e.wf, "--workspace", e.ws, "--token", testServeToken)
	step := uiSteps(t, s, "dana")
	var pending, backlog string
	step("the topics",
		chromedp.Click(`#nav-events`, chromedp.ByQuery),
		chromedp.WaitVisible(`#topics tr[data-topic="shop/orders"]`, chromedp.ByQuery),
		chromedp.Text(`#topics tr[data-topic="shop/orders"] td.pending`, &pending, chromedp.ByQuery),
		chromedp.Text(`#topics tr[data-topic="shop/orders"] td.backlog`, &backlog, chromedp.ByQuery),
		shotTo(t, "events-topics"))
	if pending != "3" || backlog == "-" || backlog == "" {
		t.Errorf("topic shop/orders: pending %q backlog %q, want 3 and an age", pending, backlog)
	}
	row := `#events tr[data-event="o2"]`
	step("drill down and skip o2",
		chromedp.Click(`#topics tr[data-topic="shop/orders"] a.topic-link`, chromedp.ByQuery),
		chromedp.WaitVisible(row+` button.skip-event`, chromedp.ByQuery),
		pollJS(`document.querySelectorAll("#events tbody tr[data-event]").length === 4`),
		shotTo(t, "events-topic"),
		chromedp.Click(row+` button.skip-event`, chromedp.ByQuery),
		chromedp.WaitVisible(`#skip-reason`, chromedp.ByQuery),
		chromedp.SendKeys(`#skip-reason`, "malformed order", chromedp.ByQuery),
		shotTo(t, "events-skip-confirm"),
		chromedp.Click(`#modal-confirm`, chromedp.ByQuery),
		pollJS(`(() => { const r = document.querySelector('`+row+`'); return !!r && r.textContent.includes("skipped") && !r.querySelector("button"); })()`),
		shotTo(t, "events-skipped"))
	var evs []scripthost.Event
	s.get("/api/v1/events?workflow=shop&topic=orders&q=o2", &evs)
	if len(evs) != 1 || evs[0].Status != scripthost.EventSkipped {
		t.Errorf("event o2 after Skip: %+v, want skipped", evs)
	}
	var acts []struct {
		Action  string          `json:"action"`
		Target  string          `json:"target"`
		By      string          `json:"by"`
		Request json.RawMessage `json:"request"`
	}
	s.get("/api/v1/actions", &acts)
	if last := acts[len(acts)-1]; last.Action != "skip_event" || last.Target != "shop/orders/o2" || last.By != "dana" ||
		!strings.Contains(string(last.Request), "malformed order") {
		t.Errorf("last action: %+v, want skip_event of shop/orders/o2 by dana with the reason", last)
	}

	var at, gaps []string
	step("the run page shows each event's time",
		chromedp.Navigate(s.base+"/#/run/"+committed.ID),
		chromedp.WaitVisible(`#timeline td.at`, chromedp.ByQuery),
		chromedp.Evaluate(`[...document.querySelectorAll("#timeline td.at")].map((e) => e.textContent)`, &at),
		chromedp.Evaluate(`[...document.querySelectorAll("#timeline td.gap")].map((e) => e.textContent)`, &gaps),
		shotTo(t, "run-timeline-times"))
	if len(at) == 0 || len(at) != len(gaps) {
		t.Fatalf("timeline: %d times, %d gaps", len(at), len(gaps))
	}
	day := committed.CreatedAt.UTC().Format("2006-01-02")
	for i := range at {
		if !strings.HasPrefix(at[i], day) || !strings.HasPrefix(gaps[i], "+") {
			t.Errorf("timeline event %d: at %q gap %q; want a time on %s and +gap", i, at[i], gaps[i], day)
		}
	}
}

// TestServeUIBulkCancel cancels every active run of a filter from the Runs page: the
// button counts them, the dialog lists exactly them and asks for a reason, and after
// the confirmation each is cancelled, shown in the result, and in the audit trail
// with the operator and the reason.
func TestServeUIBulkCancel(t *testing.T) {
	e := newShopEnv(t, shopWorkflow)
	e.run(0)
	if code, _, errOut := e.cli("pause", "shop"); code != 0 {
		t.Fatalf("pause: %s", errOut)
	}
	runs := []scripthost.Run{e.preparedRun("o1"), e.preparedRun("o2"), e.preparedRun("o3")}
	s := startServe(t, e.db, e.wf, "--workspace", e.ws, "--token", testServeToken)
	step := uiSteps(t, s, "dana")
	var label string
	var listed []string
	step("the bulk button counts the runs",
		chromedp.Navigate(s.base+"/#/runs?workflow=shop&status=active"),
		pollJS(`(() => { const b = document.getElementById("bulk-cancel"); return !!b && !b.hidden && b.textContent.startsWith("Cancel 3"); })()`),
		chromedp.Text(`#bulk-cancel`, &label, chromedp.ByQuery),
		shotTo(t, "bulk-runs"),
		chromedp.Click(`#bulk-cancel`, chromedp.ByQuery),
		chromedp.WaitVisible(`#bulk-list`, chromedp.ByQuery),
		chromedp.Evaluate(`[...document.querySelectorAll("#bulk-list tr[data-bulk-item]")].map((r) => r.dataset.bulkItem)`, &listed),
		chromedp.SendKeys(`#bulk-reason`, "test orders", chromedp.ByQuery),
		shotTo(t, "bulk-confirm"),
		chromedp.Click(`#modal-confirm`, chromedp.ByQuery),
		chromedp.WaitVisible(`#bulk-result`, chromedp.ByQuery),
		pollJS(`document.querySelectorAll("#bulk-result tr[data-bulk-result]").length === 3`),
		shotTo(t, "bulk-done"))
	if label != "Cancel 3 runs…" {
		t.Errorf("bulk button: %q", label)
	}
	var want []string
	for _, r := range runs {
		want = append(want, r.ID)
	}
	slices.Sort(want)
	slices.Sort(listed)
	if !slices.Equal(listed, want) {
		t.Errorf("the dialog lists %v, want %v", listed, want)
	}
	for _, r := range e.runs() {
		if r.Status != scripthost.StatusCancelled || r.Error != "cancelled by dana: test orders" {
			t.Errorf("run %s: %s %q, want cancelled by dana", r.ID, r.Status, r.Error)
		}
	}
	var acts []struct {
		Action  string          `json:"action"`
		Target  string          `json:"target"`
		By      string          `json:"by"`
		Request json.RawMessage `json:"request"`
	}
	s.get("/api/v1/actions", &acts)
	var got []string
	for _, a := range acts {
		if a.Action == "cancel" && a.By == "dana" && strings.Contains(string(a.Request), "test orders") {
			got = append(got, a.Target)
		}
	}
	slices.Sort(got)
	if !slices.Equal(got, want) {
		t.Errorf("audit trail: cancels by dana %v, want %v", got, want)
	}
}

// TestServeUIBulkResolve resolves the indeterminate mutations of a search from the
// Indeterminate page: the dialog lists them and asks for the outcome and a reason; the
// ledger then has the mutation resolved by the operator, and the audit trail the reason.
func TestServeUIBulkResolve(t *testing.T) {
	t.Setenv(tokenEnv, e2eToken)
	e, _, m := indeterminate(t, fakesvc.ApplyDrop)
	s := startServe(t, e.db, e.wf, "--tools", e.tools, "--workspace", e.dir, "--token", testServeToken)
	step := uiSteps(t, s, "dana")
	var listed []string
	step("resolve from the Indeterminate page",
		chromedp.Navigate(s.base+"/#/queue?q="+m.Tool),
		pollJS(`(() => { const b = document.getElementById("bulk-resolve"); return !!b && !b.hidden && b.textContent === "Resolve 1 mutation…"; })()`),
		shotTo(t, "bulk-resolve-queue"),
		chromedp.Click(`#bulk-resolve`, chromedp.ByQuery),
		chromedp.WaitVisible(`#bulk-list`, chromedp.ByQuery),
		chromedp.Evaluate(`[...document.querySelectorAll("#bulk-list tr[data-bulk-item]")].map((r) => r.dataset.bulkItem)`, &listed),
		chromedp.SetValue(`#bulk-as`, "failed", chromedp.ByQuery),
		chromedp.SendKeys(`#bulk-reason`, "no charge at the bank", chromedp.ByQuery),
		shotTo(t, "bulk-resolve-confirm"),
		chromedp.Click(`#modal-confirm`, chromedp.ByQuery),
		pollJS(`document.querySelectorAll("#bulk-result tr[data-bulk-result]").length === 1`),
		shotTo(t, "bulk-resolve-done"))
	if len(listed) != 1 || listed[0] != m.ID {
		t.Errorf("the dialog lists %v, want %s", listed, m.ID)
	}
	got := e.mutations()[0]
	if got.Status != scripthost.MutationFailed || got.ResolvedBy != "dana" {
		t.Errorf("mutation: %s by %q, want failed by dana", got.Status, got.ResolvedBy)
	}
	var acts []struct {
		Action  string          `json:"action"`
		Target  string          `json:"target"`
		By      string          `json:"by"`
		Request json.RawMessage `json:"request"`
	}
	s.get("/api/v1/actions", &acts)
	if last := acts[len(acts)-1]; last.Action != "resolve" || last.Target != m.ID || last.By != "dana" ||
		!strings.Contains(string(last.Request), "no charge at the bank") {
		t.Errorf("last action: %+v, want resolve of %s by dana with the reason", last, m.ID)
	}
}
