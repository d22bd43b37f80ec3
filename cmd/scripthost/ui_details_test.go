package main

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/inspector"
	cdpruntime "github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"

	"github.com/scripthost/scripthost/agent"
	"github.com/scripthost/scripthost/internal/fakemodel"
	"github.com/scripthost/scripthost/internal/fakesvc"
)

// uiSession logs in to the UI that s serves in a fresh headless Chromium tab and
// returns the tab, a step runner that fails the test, and a screenshot action.
func uiSession(t *testing.T, s *served) (context.Context, func(string, ...chromedp.Action), func(string) chromedp.Action) {
	t.Helper()
	ctx := browserTab(t, chromium(t), 5*time.Minute) // a bound, not a measure
	// What the page threw or logged as an error, for a failed step to show.
	console := &lockedBuffer{}
	chromedp.ListenTarget(ctx, func(ev any) {
		switch e := ev.(type) {
		case *cdpruntime.EventExceptionThrown:
			fmt.Fprintf(console, "exception: %s\n", e.ExceptionDetails.Error())
		case *inspector.EventTargetCrashed:
			fmt.Fprintln(console, "the page crashed")
		}
	})
	// The first Run starts the browser and the tab for the life of its context: give
	// it the tab's own, not a step's shorter one.
	if err := chromedp.Run(ctx); err != nil {
		t.Fatalf("start the browser: %v", err)
	}
	dir := artifacts(t)
	shot := func(name string) chromedp.Action { return screenshot(dir, name) }
	step := func(what string, actions ...chromedp.Action) {
		t.Helper()
		sctx, cancel := context.WithTimeout(ctx, 90*time.Second) // a bound, not a measure
		defer cancel()
		if err := chromedp.Run(sctx, actions...); err != nil {
			// The tab outlives the step: say what the page showed.
			var text string
			dctx, dcancel := context.WithTimeout(ctx, 10*time.Second)
			_ = chromedp.Run(dctx, chromedp.Evaluate(`location.href + "\n" + document.body.innerText`, &text))
			dcancel()
			t.Fatalf("%s: %v\nthe page:\n%s\nits errors:\n%s", what, err, text, console.String())
		}
	}
	step("log in",
		chromedp.Navigate(s.base+"/"),
		chromedp.WaitVisible(`#token`, chromedp.ByQuery),
		chromedp.SendKeys(`#token`, testServeToken, chromedp.ByQuery),
		chromedp.SendKeys(`#operator`, "dana", chromedp.ByQuery),
		chromedp.Click(`#login`, chromedp.ByQuery),
		chromedp.WaitVisible(`#nav-attention`, chromedp.ByQuery))
	return ctx, step, shot
}

// TestServeUIAgentCommandExit: an agent's run_terminal call whose command exits with
// code 2 is shown on the session page as a failure with the code ("exit 2"), not as
// done like a command that succeeded.
func TestServeUIAgentCommandExit(t *testing.T) {
	chromium(t)
	t.Setenv(tokenEnv, e2eToken)
	a := newAgentCLI(t,
		fakemodel.Answer{Calls: []fakemodel.Call{agentCall("run_terminal", map[string]any{"program": "sh", "args": []string{"-c", "echo no >&2; exit 2"}})}},
		fakemodel.Answer{Calls: []fakemodel.Call{agentCall("run_terminal", map[string]any{"program": "sh", "args": []string{"-c", "echo yes"}})}},
		fakemodel.Answer{Calls: []fakemodel.Call{agentCall(agent.CompleteTool, map[string]string{"summary": "tried"})}},
	)
	task := a.task("goal: try\nsteps: [{id: try, title: Try}]\n")
	code, out := a.run("", "run", task, "--workspace", a.ws, "--allow", "sh", "--terminal", "auto")
	if code != 0 {
		t.Fatalf("agent run: exit %d: %s", code, out)
	}
	sess := a.session(out)
	s := startServe(t, a.db, "--token", testServeToken)
	_, step, shot := uiSession(t, s)
	var failed, ok string
	step("the session page",
		chromedp.Navigate(s.base+"/#/agent/"+sess),
		chromedp.WaitVisible(`tr[data-call="try/1/1"] .call-status`, chromedp.ByQuery),
		chromedp.Text(`tr[data-call="try/1/1"] .call-status`, &failed, chromedp.ByQuery),
		chromedp.Text(`tr[data-call="try/2/1"] .call-status`, &ok, chromedp.ByQuery),
		shot("agent-command-exit"))
	if failed != "exit 2" {
		t.Errorf("the call whose command exited 2: status %q, want exit 2", failed)
	}
	if ok == "" || strings.Contains(ok, "exit") {
		t.Errorf("the call whose command succeeded: status %q, want its call status", ok)
	}
}

// TestServeUIPlanDiagnostics: the plan execution page shows a failed check step's
// compiler diagnostic as `plan show` prints it (file:line:column: level code: message
// (checker)), not as JSON.
func TestServeUIPlanDiagnostics(t *testing.T) {
	chromium(t)
	t.Setenv(tokenEnv, e2eToken)
	ws, db := codeWorkspace(t)
	if code, out, errOut := cli(t, "", "--db", db, "plan", "run", "../../scripts/plans/code-fix-bad.json", "--approve", "--by", "ci",
		"--workspace", ws, "--non-interactive=approve"); code != 30 {
		t.Fatalf("plan run: exit %d, want 30\n%s%s", code, out, errOut)
	}
	code, out, errOut := cli(t, "", "--db", db, "plan", "show", "code-fix-bad/1")
	// plan show prints each diagnostic as STEP: FILE:LINE:COLUMN: LEVEL CODE: MESSAGE (CHECKER).
	var want []string
	for _, l := range strings.Split(out, "\n") {
		if step, rest, ok := strings.Cut(l, ": "); ok && !strings.Contains(step, " ") && strings.HasSuffix(rest, ")") &&
			regexpMatch(`^\S+:\d+:\d+: `, rest) {
			want = append(want, rest)
		}
	}
	if code != 0 || !slices.ContainsFunc(want, func(l string) bool { return strings.Contains(l, "IncompatibleAssign") }) {
		t.Fatalf("plan show: exit %d, no diagnostic line for the check step:\n%s%s", code, out, errOut)
	}
	s := startServe(t, db, "--token", testServeToken)
	_, step, shot := uiSession(t, s)
	var got []string
	var page string
	step("the plan execution page",
		chromedp.Navigate(s.base+"/#/plan/code-fix-bad/1"),
		chromedp.WaitVisible(`.diagnostics li`, chromedp.ByQuery),
		chromedp.Evaluate(`[...document.querySelectorAll(".diagnostics li")].map((li) => li.textContent)`, &got),
		chromedp.Text(`#main`, &page, chromedp.ByQuery),
		shot("plan-diagnostics"))
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("diagnostics on the page:\n%s\nwant them as plan show prints them:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if strings.Contains(page, `"artifacts"`) {
		t.Errorf("the page still shows the diagnostics as JSON:\n%s", page)
	}
}

// TestServeUIApproveLeavesNoNull: approving an agent call from its session page takes
// the "Waiting for approval" card away without leaving the text "null" in its place.
func TestServeUIApproveLeavesNoNull(t *testing.T) {
	chromium(t)
	t.Setenv(tokenEnv, e2eToken)
	p := newPendingAgent(t, filepath.Join(t.TempDir(), "ledger.db"))
	s := startServe(t, p.db, "--token", testServeToken)
	_, step, shot := uiSession(t, s)
	callRow := `#pending tr[data-call="` + p.call + `"]`
	var text string
	step("approve the pending call",
		chromedp.Navigate(s.base+"/#/agent/"+p.session),
		chromedp.WaitVisible(callRow+` button.approve`, chromedp.ByQuery),
		chromedp.Click(callRow+` button.approve`, chromedp.ByQuery),
		chromedp.WaitVisible(`#modal-confirm`, chromedp.ByQuery),
		chromedp.Click(`#modal-confirm`, chromedp.ByQuery),
		chromedp.WaitNotPresent(`#pending`, chromedp.ByQuery),
		chromedp.Text(`#main`, &text, chromedp.ByQuery),
		shot("agent-approved-no-null"))
	for _, l := range strings.Split(text, "\n") {
		if strings.TrimSpace(l) == "null" {
			t.Errorf("the session page shows a stray null after the approval:\n%s", text)
		}
	}
}

// TestServeUIRunOffersResolve: the page of a run paused on an indeterminate mutation
// offers to resolve the mutation, not a Retry the ledger refuses; and when the
// resolution is refused (here: the mutation was resolved meanwhile from the CLI) the
// refusal is shown beside the buttons that asked for it.
func TestServeUIRunOffersResolve(t *testing.T) {
	chromium(t)
	t.Setenv(tokenEnv, e2eToken)
	e, _, m := indeterminate(t, fakesvc.ApplyDrop)
	run := e.consumerRuns()[0]
	s := startServe(t, e.db, "--token", testServeToken)
	_, step, shot := uiSession(t, s)
	var retries []*cdp.Node
	step("the run page",
		chromedp.Navigate(s.base+"/#/run/"+run.ID),
		chromedp.WaitVisible(`#resolve button.resolve-skipped`, chromedp.ByQuery),
		chromedp.Nodes(`#retry`, &retries, chromedp.ByQueryAll, chromedp.AtLeast(0)),
		shot("run-resolve"))
	if len(retries) != 0 {
		t.Errorf("the run page offers Retry for a run paused on indeterminate mutation %s", m.ID)
	}
	if code, _, errOut := cli(t, "", "--db", e.db, "resolve", m.ID, "--as", "failed", "--by", "erin"); code != 0 {
		t.Fatalf("resolve from the CLI: exit %d: %s", code, errOut)
	}
	var refusal string
	step("resolve again from the page",
		chromedp.Click(`#resolve button.resolve-skipped`, chromedp.ByQuery),
		chromedp.WaitVisible(`#modal-confirm`, chromedp.ByQuery),
		chromedp.Click(`#modal-confirm`, chromedp.ByQuery),
		chromedp.WaitVisible(`#resolve .refusal`, chromedp.ByQuery),
		chromedp.Text(`#resolve .refusal`, &refusal, chromedp.ByQuery),
		shot("run-resolve-refused"))
	if !strings.Contains(refusal, m.ID) && !strings.Contains(refusal, "resolved") {
		t.Errorf("refusal beside the buttons: got %q, want why resolving %s again was refused", refusal, m.ID)
	}
}

// TestServeUISlowPageDoesNotDrawOver: a page whose answer arrives after the operator
// moved on to another page draws nothing, neither its content nor its error, over the
// page shown now. The Workflows page's answers are held back in the browser for a while;
// the operator opens Workflows and, before its answer comes, Hosts.
func TestServeUISlowPageDoesNotDrawOver(t *testing.T) {
	chromium(t)
	t.Setenv(tokenEnv, e2eToken)
	s := startServe(t, filepath.Join(t.TempDir(), "ledger.db"), "--token", testServeToken)
	_, step, shot := uiSession(t, s)
	// Once the held answers are in, one more second lets a page that still took
	// them draw (a bound on the wait, not a measure of anything).
	const hold = `(() => {
	  window.heldDone = false;
	  const f = window.fetch;
	  window.fetch = (u, o) => {
	    if (!String(u).includes("/api/v1/workflows")) return f(u, o);
	    return new Promise((r) => setTimeout(() => r(f(u, o).finally(() => setTimeout(() => { window.heldDone = true; }, 1000))), 1500));
	  };
	})()`
	var title, main string
	step("open Workflows, then Hosts before Workflows' answer",
		chromedp.Evaluate(hold, nil),
		chromedp.Evaluate(`location.hash = "#/workflows"`, nil),
		chromedp.Poll(`document.querySelector("nav a.active").getAttribute("href") === "#/workflows"`, nil),
		chromedp.Evaluate(`location.hash = "#/hosts"`, nil),
		chromedp.WaitVisible(`#hosts p`, chromedp.ByQuery),
		chromedp.Poll(`window.heldDone`, nil),
		chromedp.Text(`#main h1`, &title, chromedp.ByQuery),
		chromedp.Text(`#main`, &main, chromedp.ByQuery),
		shot("slow-page-not-drawn"))
	if title != "Hosts" || !strings.Contains(main, "not shared") {
		t.Errorf("the Hosts page was drawn over by the slow Workflows page: title %q, page:\n%s", title, main)
	}
}
