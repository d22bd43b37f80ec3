package main

import (
	"bytes"
	"encoding/json"
	"net/http"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/scripthost/scripthost"
	"github.com/scripthost/scripthost/internal/fakesvc"
	"github.com/scripthost/scripthost/internal/view"
)

// withoutClock drops what depends on the moment the report was made (at, the ages and
// silences),
// so that two reports of the same ledger compare equal.

// agree fetches path from the API of s and runs the CLI with args on db, and fails
// the test unless both answer the same JSON, field for field, but for withoutClock's
// fields. s is closed first when close is set (an SQLite ledger has one host).
func agree(t *testing.T, s *served, path string, close bool, db string, args ...string) {
	t.Helper()
	code, body := s.call(http.MethodGet, path, testServeToken, nil)
	if code != http.StatusOK {
		t.Fatalf("GET %s: %d %s", path, code, body)
	}
	if close {
		s.close()
	}
	exit, out, errOut := cli(t, "", append([]string{"--db", db}, args...)...)
	if exit != 0 {
		t.Fatalf("%s: exit %d: %s", strings.Join(args, " "), exit, errOut)
	}
	var api, got map[string]any
	if err := json.Unmarshal(body, &api); err != nil {
		t.Fatalf("GET %s: %v\n%s", path, err, body)
	}
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatalf("%s: %v\n%s", strings.Join(args, " "), err, out)
	}
	if len(api) == 0 || !reflect.DeepEqual(withoutClock(api), withoutClock(got)) {
		t.Errorf("%s and GET %s differ:\nCLI: %s\nAPI: %s", strings.Join(args, " "), path, out, body)
	}
}
func withoutClock(v any) any {
	switch x := v.(type) {
	case map[string]any:
		for _, k := range []string{"at", "age_seconds", "expired_seconds", "silent_seconds"} {
			delete(x, k)
		}
		for k, e := range x {
			x[k] = withoutClock(e)
		}
	case []any:
		for i, e := range x {
			x[i] = withoutClock(e)
		}
	}
	return v
}

// TestAttentionCLIAndAPIAgree leaves a run blocked on an indeterminate mutation, then
// checks that `overview --json` and GET /api/v1/overview, and `attention --json` and
// GET /api/v1/attention, report the same thing field for field, that the report names the mutation with its params and the resolve
// action, and that the text form says how to resolve it.
func TestAttentionCLIAndAPIAgree(t *testing.T) {
	t.Setenv(tokenEnv, e2eToken)
	e, _, m := indeterminate(t, fakesvc.ApplyDrop)
	s := startServe(t, e.db, e.wf, "--tools", e.tools, "--workspace", e.dir, "--token", testServeToken)
	// The paused run stays as it is: both reports read the same ledger.
	agree(t, s, "/api/v1/overview?window=2h", false, e.db, "overview", "--json", "--window", "2h")
	agree(t, s, "/api/v1/attention", true, e.db, "attention", "--json")
	exit, out, errOut := cli(t, "", "--db", e.db, "attention", "--json")
	if exit != 0 {
		t.Fatalf("attention --json: exit %d: %s", exit, errOut)
	}
	var a struct {
		Indeterminate []struct {
			ID     string          `json:"id"`
			Params json.RawMessage `json:"params"`
		} `json:"indeterminate"`
		Blocked []struct {
			Actions []struct{ Kind, Target string } `json:"actions"`
		} `json:"blocked"`
		Counts struct{ Indeterminate, Blocked int } `json:"counts"`
	}
	if err := json.Unmarshal([]byte(out), &a); err != nil {
		t.Fatal(err)
	}
	if len(a.Indeterminate) != 1 || a.Indeterminate[0].ID != m.ID || string(a.Indeterminate[0].Params) == "" ||
		string(a.Indeterminate[0].Params) == "null" || a.Counts.Indeterminate != 1 {
		t.Errorf("indeterminate: got %+v, want mutation %s with its params", a.Indeterminate, m.ID)
	}
	if len(a.Blocked) != 1 || len(a.Blocked[0].Actions) == 0 || a.Blocked[0].Actions[0].Kind != "resolve" ||
		a.Blocked[0].Actions[0].Target != m.ID {
		t.Errorf("blocked: got %+v, want the handler blocked, unblocked by resolving %s", a.Blocked, m.ID)
	}
	exit, out, errOut = cli(t, "", "--db", e.db, "attention")
	if want := "scripthost resolve " + m.ID + " --as applied|failed|skipped"; exit != 0 || !strings.Contains(out, want) ||
		!strings.Contains(out, "params: ") {
		t.Errorf("attention: exit %d, got\n%s%s\nwant it to show the params and say %q", exit, out, errOut, want)
	}
}

// TestServeUIAttention drives the UI in headless Chromium: the nav counts what needs
// attention, the Overview page counts the paused run, the Needs attention page lists the indeterminate mutation with its params
// and age and the handler it blocks, the Workflows page says the workflow is blocked,
// the Indeterminate page shows the params too, and resolving the mutation from the
// Needs attention page (the dialog shows the params) records it in the ledger and
// empties the page.
func TestServeUIAttention(t *testing.T) {
	browser := chromium(t)
	t.Setenv(tokenEnv, e2eToken)
	e, _, m := indeterminate(t, fakesvc.ApplyDrop)
	s := startServe(t, e.db, e.wf, "--tools", e.tools, "--workspace", e.dir, "--token", testServeToken)
	var compact bytes.Buffer
	if err := json.Compact(&compact, m.Params); err != nil || compact.Len() == 0 {
		t.Fatalf("setup: mutation params %q: %v", m.Params, err)
	}
	wantParams := compact.String()

	ctx := browserTab(t, browser, 90*time.Second)
	dir := artifacts(t)
	shot := func(name string) chromedp.Action { return screenshot(dir, name) }
	step := func(what string, actions ...chromedp.Action) {
		t.Helper()
		if err := chromedp.Run(ctx, actions...); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	}

	var queueCount, attentionCount string
	step("log in; the nav counts",
		chromedp.Navigate(s.base+"/"),
		chromedp.WaitVisible(`#token`, chromedp.ByQuery),
		chromedp.SendKeys(`#token`, testServeToken, chromedp.ByQuery),
		chromedp.SendKeys(`#operator`, "dana", chromedp.ByQuery),
		chromedp.Click(`#login`, chromedp.ByQuery),
		chromedp.WaitVisible(`#nav-queue-count`, chromedp.ByQuery),
		chromedp.Text(`#nav-queue-count`, &queueCount, chromedp.ByQuery),
		chromedp.Text(`#nav-attention-count`, &attentionCount, chromedp.ByQuery))
	if queueCount != "1" || attentionCount != "2" {
		t.Errorf("nav: indeterminate count %q, attention count %q; want 1 and 2 (the mutation and the handler it blocks)", queueCount, attentionCount)
	}

	var pausedRuns, rate string
	pausedRow := `#overview-runs tr[data-status="` + string(scripthost.StatusPausedReconciliation) + `"]`
	step("the Overview page",
		chromedp.Click(`#nav-overview`, chromedp.ByQuery),
		chromedp.WaitVisible(pausedRow, chromedp.ByQuery),
		chromedp.Text(pausedRow+` td:last-child`, &pausedRuns, chromedp.ByQuery),
		chromedp.Text(`#overview-rate`, &rate, chromedp.ByQuery),
		shot("overview"))
	if pausedRuns != "1" || rate == "0.00 /min" {
		t.Errorf("overview: %q runs paused:reconciliation at %q; want 1, and the runs of the last hour counted", pausedRuns, rate)
	}

	mutRow := `#attention-indeterminate tr[data-mutation="` + m.ID + `"]`
	var params, blockedText, wfState, queueParams, dialogParams string
	step("the Needs attention page",
		chromedp.Click(`#nav-attention`, chromedp.ByQuery),
		chromedp.WaitVisible(mutRow, chromedp.ByQuery),
		chromedp.Text(mutRow+` .params`, &params, chromedp.ByQuery),
		chromedp.Text(`#attention-blocked tbody`, &blockedText, chromedp.ByQuery),
		shot("attention"))
	if params != wantParams {
		t.Errorf("attention page params: got %q, want %q", params, wantParams)
	}
	if !strings.Contains(blockedText, "resolve "+m.ID) || !strings.Contains(blockedText, string(scripthost.StatusPausedReconciliation)) {
		t.Errorf("blocked handlers: got %q, want the run paused on the mutation, unblocked by resolving %s", blockedText, m.ID)
	}
	step("the Workflows page says blocked",
		chromedp.Navigate(s.base+"/#/workflows"),
		chromedp.WaitVisible(`tr[data-workflow] .status`, chromedp.ByQuery),
		chromedp.Text(`tr[data-workflow] .status`, &wfState, chromedp.ByQuery))
	if wfState != "blocked" {
		t.Errorf("workflows page state: got %q, want blocked", wfState)
	}
	step("the Indeterminate page shows the params",
		chromedp.Navigate(s.base+"/#/queue"),
		chromedp.WaitVisible(`#queue tr[data-mutation="`+m.ID+`"] .params`, chromedp.ByQuery),
		chromedp.Text(`#queue tr[data-mutation="`+m.ID+`"] .params`, &queueParams, chromedp.ByQuery))
	if queueParams != wantParams {
		t.Errorf("indeterminate page params: got %q, want %q", queueParams, wantParams)
	}
	step("resolve from Needs attention",
		chromedp.Navigate(s.base+"/#/attention"),
		chromedp.WaitVisible(mutRow+` button.resolve-skipped`, chromedp.ByQuery),
		chromedp.Click(mutRow+` button.resolve-skipped`, chromedp.ByQuery),
		chromedp.WaitVisible(`#resolve-params`, chromedp.ByQuery),
		chromedp.Text(`#resolve-params`, &dialogParams, chromedp.ByQuery),
		shot("attention-resolve"),
		chromedp.Click(`#modal-confirm`, chromedp.ByQuery),
		chromedp.WaitNotPresent(mutRow, chromedp.ByQuery))
	if dialogParams != wantParams {
		t.Errorf("resolve dialog params: got %q, want %q", dialogParams, wantParams)
	}
	got := e.mutations()[0]
	if got.Status != scripthost.MutationSkipped || got.ResolvedBy != "dana" {
		t.Errorf("mutation after resolving it from Needs attention: %s by %q, want skipped by dana", got.Status, got.ResolvedBy)
	}
	waitFor(t, func() bool { return e.consumerRuns()[0].Status == scripthost.StatusCommitted })
	step("nothing needs attention",
		chromedp.Navigate(s.base+"/#/attention"),
		chromedp.WaitVisible(`#attention-none`, chromedp.ByQuery),
		shot("attention-none"))
}

// hostsOf runs `hosts --json` on db.
func hostsOf(t *testing.T, db string) view.Hosts {
	t.Helper()
	code, out, errOut := cli(t, "", "--db", db, "hosts", "--json")
	if code != 0 {
		t.Fatalf("hosts --json: exit %d: %s", code, errOut)
	}
	var h view.Hosts
	if err := json.Unmarshal([]byte(out), &h); err != nil {
		t.Fatalf("hosts --json: %v\n%s", err, out)
	}
	return h
}
