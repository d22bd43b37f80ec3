package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/scripthost/scripthost"
	"github.com/scripthost/scripthost/agent"
	"github.com/scripthost/scripthost/internal/fakesvc"
)

// chromium finds the browser the UI tests drive: $CHROMIUM, else chromium on PATH.
func chromium(t *testing.T) string {
	t.Helper()
	if p := os.Getenv("CHROMIUM"); p != "" {
		return p
	}
	for _, name := range []string{"chromium", "chromium-browser"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Getenv("SCRIPTHOST_REQUIRE_BROWSER") != "" {
		t.Fatal("no chromium on PATH, and SCRIPTHOST_REQUIRE_BROWSER is set")
	}
	t.Skip("skipped: no chromium on PATH (apt-get install chromium; .ci/run installs it)")
	return ""
}

// screenshot saves the whole page as dir/name.png.
func screenshot(dir, name string) chromedp.Action {
	return chromedp.ActionFunc(func(ctx context.Context) error {
		var png []byte
		if err := chromedp.FullScreenshot(&png, 100).Do(ctx); err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dir, name+".png"), png, 0o644)
	})
}

// artifacts is where the UI tests write their screenshots: $SCRIPTHOST_ARTIFACTS, else
// a directory under the system's temporary directory.
func artifacts(t *testing.T) string {
	t.Helper()
	dir := os.Getenv("SCRIPTHOST_ARTIFACTS")
	if dir == "" {
		dir = filepath.Join(os.TempDir(), "scripthost-ui-artifacts")
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

// TestServeUI drives the web UI in headless Chromium: log in with the token, find the
// paused run in the runs list, open its timeline, resolve its indeterminate mutation as
// applied through the confirmation, and check that the ledger recorded the resolution
// and the run went on to commit; then open an agent session and approve its pending
// tool call through the confirmation. Every page is saved as a screenshot.
func TestServeUI(t *testing.T) {
	browser := chromium(t)
	t.Setenv(tokenEnv, e2eToken)
	e, _, m := indeterminate(t, fakesvc.ApplyDrop)
	ws, _ := tidyWorkspace(t)
	if code, _, errOut := cli(t, "", "--db", e.db, "plan", "run", tidyPlan, "--approve", "--by", "ci",
		"--workspace", ws, "--non-interactive=approve", "--allow-read-only", "wc"); code != 0 {
		t.Fatalf("plan run: exit %d: %s", code, errOut)
	}
	run := e.consumerRuns()[0]
	agentRun := newPendingAgent(t, e.db)
	s := startServe(t, e.db, e.wf, "--tools", e.tools, "--workspace", e.dir, "--token", testServeToken)

	// No UserDataDir option: the allocator makes a fresh profile directory and removes
	// it once the browser has exited (t.TempDir's cleanup raced Chromium's last writes).
	ctx := browserTab(t, browser, 90*time.Second)

	dir := artifacts(t)
	shot := func(name string) chromedp.Action { return screenshot(dir, name) }
	step := func(what string, actions ...chromedp.Action) {
		t.Helper()
		if err := chromedp.Run(ctx, actions...); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	}
	runRow := `tr[data-run="` + run.ID + `"]`
	step("log in",
		chromedp.Navigate(s.base+"/"),
		chromedp.WaitVisible(`#token`, chromedp.ByQuery),
		shot("login"),
		chromedp.SendKeys(`#token`, testServeToken, chromedp.ByQuery),
		chromedp.SendKeys(`#operator`, "dana", chromedp.ByQuery),
		chromedp.Click(`#login`, chromedp.ByQuery),
		chromedp.WaitVisible(runRow, chromedp.ByQuery),
		shot("runs"))
	var status string
	step("open the run's timeline",
		chromedp.Click(runRow+` a`, chromedp.ByQuery),
		chromedp.WaitVisible(`#timeline li[data-phase="mutate"]`, chromedp.ByQuery),
		chromedp.Text(`#run-status`, &status, chromedp.ByQuery),
		shot("run"))
	if status != string(scripthost.StatusPausedReconciliation) {
		t.Errorf("run page: status %q, want %s", status, scripthost.StatusPausedReconciliation)
	}
	mutRow := `tr[data-mutation="` + m.ID + `"]`
	step("resolve as applied",
		chromedp.Navigate(s.base+"/#/queue"),
		chromedp.WaitVisible(mutRow+` button.resolve-applied`, chromedp.ByQuery),
		shot("queue"),
		chromedp.Click(mutRow+` button.resolve-applied`, chromedp.ByQuery),
		chromedp.WaitVisible(`#modal-confirm`, chromedp.ByQuery),
		chromedp.SendKeys(`#resolve-result`, `{"id":"ch_ui"}`, chromedp.ByQuery),
		shot("confirm"),
		chromedp.Click(`#modal-confirm`, chromedp.ByQuery),
		chromedp.WaitNotPresent(mutRow, chromedp.ByQuery))

	// The ledger has the resolution, by the operator who logged in, and the host took
	// the run on to its commit.
	waitFor(t, func() bool { return e.consumerRuns()[0].Status == scripthost.StatusCommitted })
	got := e.mutations()[0]
	var result bytes.Buffer
	_ = json.Compact(&result, got.Result)
	if got.Status != scripthost.MutationApplied || got.ResolvedBy != "dana" || result.String() != `{"id":"ch_ui"}` {
		t.Errorf("mutation after the UI resolved it: %s by %q result %s", got.Status, got.ResolvedBy, got.Result)
	}
	step("the run page shows the commit",
		chromedp.Navigate(s.base+"/#/run/"+run.ID),
		chromedp.WaitVisible(`#timeline li[data-phase="next"]`, chromedp.ByQuery),
		chromedp.Text(`#run-status`, &status, chromedp.ByQuery),
		shot("run-committed"))
	if status != string(scripthost.StatusCommitted) {
		t.Errorf("run page after resolving: status %q, want committed", status)
	}
	step("the other pages",
		chromedp.Navigate(s.base+"/#/mutations"),
		chromedp.WaitVisible(`tr[data-mutation="`+m.ID+`"]`, chromedp.ByQuery),
		shot("mutations"),
		chromedp.Navigate(s.base+"/#/workflows"),
		chromedp.WaitVisible(`#workflows tr[data-workflow] button.pause`, chromedp.ByQuery),
		shot("workflows"),
		chromedp.Navigate(s.base+"/#/plans"),
		chromedp.WaitVisible(`#executions a[href="#/plan/tidy/1"]`, chromedp.ByQuery),
		shot("plans"),
		chromedp.Click(`#executions a[href="#/plan/tidy/1"]`, chromedp.ByQuery),
		chromedp.WaitVisible(`.step`, chromedp.ByQuery),
		shot("plan"),
		chromedp.Navigate(s.base+"/#/actions"),
		chromedp.WaitVisible(`#actions td`, chromedp.ByQuery),
		shot("actions"))
	var who string
	step("the action is recorded with who did it", chromedp.Text(`#actions tbody tr td:nth-child(4)`, &who, chromedp.ByQuery))
	if who != "dana" {
		t.Errorf("actions page: by %q, want dana", who)
	}

	// An agent session waits for approval of a file write: approve it through the
	// confirmation on the session page; the ledger records the decision and who made it.
	sessRow := `#sessions tr[data-session="` + agentRun.session + `"]`
	callRow := `#pending tr[data-call="` + agentRun.call + `"]`
	var tokens string
	step("open the agent session",
		chromedp.Navigate(s.base+"/#/agents"),
		chromedp.WaitVisible(sessRow+` a`, chromedp.ByQuery),
		shot("agents"),
		chromedp.Click(sessRow+` a`, chromedp.ByQuery),
		chromedp.WaitVisible(callRow+` button.approve`, chromedp.ByQuery),
		chromedp.WaitVisible(`#steps .turn[data-turn="notes/1"] tr[data-call="`+agentRun.call+`"]`, chromedp.ByQuery),
		chromedp.Text(`#session-status`, &status, chromedp.ByQuery),
		chromedp.Text(`#session-tokens`, &tokens, chromedp.ByQuery),
		shot("agent"))
	if status != "paused" || strings.HasPrefix(tokens, "0 + ") {
		t.Errorf("agent session page: status %q tokens %q, want paused with the turn's tokens", status, tokens)
	}
	step("approve the pending call",
		chromedp.Click(callRow+` button.approve`, chromedp.ByQuery),
		chromedp.WaitVisible(`#modal-confirm`, chromedp.ByQuery),
		shot("agent-confirm"),
		chromedp.Click(`#modal-confirm`, chromedp.ByQuery),
		chromedp.WaitNotPresent(`#pending`, chromedp.ByQuery),
		shot("agent-approved"))
	if c := agentRun.callRecord(t); c.Status != agent.CallApproved || c.Decision != "approved by dana" {
		t.Errorf("agent call after the UI approved it: %s (%s)", c.Status, c.Decision)
	}
	t.Logf("screenshots in %s", dir)
}

// browserTab starts headless Chromium at browser with a fresh profile and returns a
// tab's context, bounded by timeout (a bound, not a measure); the browser is closed
// when the test ends.
func browserTab(t *testing.T, browser string, timeout time.Duration) context.Context {
	t.Helper()
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(browser), chromedp.Headless, chromedp.NoSandbox, chromedp.DisableGPU,
		chromedp.NoFirstRun, chromedp.NoDefaultBrowserCheck,
		chromedp.Flag("disable-quic", true), chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true), chromedp.Flag("disable-sync", true),
		chromedp.WindowSize(1280, 900),
	}
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancelTab := chromedp.NewContext(actx)
	ctx, cancel := context.WithTimeout(ctx, timeout)
	t.Cleanup(func() { cancel(); cancelTab(); cancelAlloc() })
	return ctx
}
