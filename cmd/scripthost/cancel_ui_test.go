package main

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/scripthost/scripthost"
	"github.com/scripthost/scripthost/ledger"
	"github.com/scripthost/scripthost/ledger/sqlite"
)

// uiTab opens a headless Chromium tab logged in to s as operator.
func uiTab(t *testing.T, s *served, operator string) (context.Context, func(what string, actions ...chromedp.Action)) {
	t.Helper()
	browser := chromium(t)
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(browser), chromedp.Headless, chromedp.NoSandbox, chromedp.DisableGPU,
		chromedp.NoFirstRun, chromedp.NoDefaultBrowserCheck,
		chromedp.Flag("disable-quic", true), chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true), chromedp.Flag("disable-sync", true),
		chromedp.WindowSize(1280, 900),
	}
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	t.Cleanup(cancelAlloc)
	ctx, cancelTab := chromedp.NewContext(actx)
	t.Cleanup(cancelTab)
	ctx, cancel := context.WithTimeout(ctx, 90*time.Second)
	t.Cleanup(cancel)
	step := func(what string, actions ...chromedp.Action) {
		t.Helper()
		if err := chromedp.Run(ctx, actions...); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	}
	step("log in",
		chromedp.Navigate(s.base+"/"),
		chromedp.WaitVisible(`#token`, chromedp.ByQuery),
		chromedp.SendKeys(`#token`, testServeToken, chromedp.ByQuery),
		chromedp.SendKeys(`#operator`, operator, chromedp.ByQuery),
		chromedp.Click(`#login`, chromedp.ByQuery))
	return ctx, step
}

// TestServeUICancel cancels a run from its page in headless Chromium: the Cancel run
// button asks for confirmation with a reason, the page then shows the run cancelled
// with no button left, and the audit trail records who cancelled it and why.
func TestServeUICancel(t *testing.T) {
	e := newShopEnv(t, shopWorkflow)
	e.run(0)
	if code, _, errOut := e.cli("pause", "shop"); code != 0 {
		t.Fatalf("pause: %s", errOut)
	}
	r := e.preparedRun("o1")
	s := startServe(t, e.db, e.wf, "--workspace", e.ws, "--token", testServeToken)
	_, step := uiTab(t, s, "dana")
	var status string
	step("open the run and cancel it",
		chromedp.WaitVisible(`tr[data-run="`+r.ID+`"]`, chromedp.ByQuery),
		chromedp.Navigate(s.base+"/#/run/"+r.ID),
		chromedp.WaitVisible(`#cancel-run`, chromedp.ByQuery),
		chromedp.Click(`#cancel-run`, chromedp.ByQuery),
		chromedp.WaitVisible(`#modal-confirm`, chromedp.ByQuery),
		chromedp.SendKeys(`#cancel-reason`, "duplicate order", chromedp.ByQuery),
		chromedp.Click(`#modal-confirm`, chromedp.ByQuery),
		chromedp.WaitNotPresent(`#cancel-run`, chromedp.ByQuery),
		chromedp.Text(`#run-status`, &status, chromedp.ByQuery))
	if status != "cancelled" {
		t.Errorf("run page: status %q, want cancelled", status)
	}
	var acts []struct {
		Action  string          `json:"action"`
		Target  string          `json:"target"`
		By      string          `json:"by"`
		Request json.RawMessage `json:"request"`
	}
	s.get("/api/v1/actions", &acts)
	last := acts[len(acts)-1]
	if last.Action != "cancel" || last.Target != r.ID || last.By != "dana" || !strings.Contains(string(last.Request), "duplicate order") {
		t.Errorf("last action: %+v, want cancel of %s by dana with the reason", last, r.ID)
	}
}

// TestServeUIWrongToken logs in with a wrong token: the login page stays and says why,
// and the right token then logs in.
func TestServeUIWrongToken(t *testing.T) {
	e := newShopEnv(t, shopWorkflow)
	e.run(0)
	s := startServe(t, e.db, e.wf, "--workspace", e.ws, "--token", testServeToken)
	browser := chromium(t)
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(),
		chromedp.ExecPath(browser), chromedp.Headless, chromedp.NoSandbox, chromedp.DisableGPU,
		chromedp.NoFirstRun, chromedp.NoDefaultBrowserCheck, chromedp.Flag("disable-background-networking", true))
	defer cancelAlloc()
	ctx, cancelTab := chromedp.NewContext(actx)
	defer cancelTab()
	ctx, cancel := context.WithTimeout(ctx, 90*time.Second)
	defer cancel()
	var msg string
	var navShown bool
	if err := chromedp.Run(ctx,
		chromedp.Navigate(s.base+"/"),
		chromedp.WaitVisible(`#token`, chromedp.ByQuery),
		// The login page shows no nav: a test (or a person) waiting for it knows the
		// login went through.
		chromedp.Evaluate(`document.getElementById("nav").offsetParent !== null`, &navShown),
		chromedp.SendKeys(`#token`, "not-the-token", chromedp.ByQuery),
		chromedp.Click(`#login`, chromedp.ByQuery),
		chromedp.Poll(`document.getElementById("login-error") && document.getElementById("login-error").textContent`, &msg),
		chromedp.Sleep(300*time.Millisecond), // the hash change redraws the page
		chromedp.Text(`#login-error`, &msg, chromedp.ByQuery),
	); err != nil {
		t.Fatal(err)
	}
	if navShown {
		t.Error("the login page shows the nav before anyone logged in")
	}
	if !strings.Contains(msg, "wrong token") {
		t.Errorf("login page says %q, want it to say the token is wrong", msg)
	}
	if err := chromedp.Run(ctx,
		chromedp.SendKeys(`#token`, testServeToken, chromedp.ByQuery),
		chromedp.Click(`#login`, chromedp.ByQuery),
		chromedp.WaitVisible(`#nav`, chromedp.ByQuery),
	); err != nil {
		t.Fatal(err)
	}
}

// TestServeUIStoppedPhase shows a run paused in its mutate phase, then cancelled: the
// timeline's last phase shows the run's status, not "running".
func TestServeUIStoppedPhase(t *testing.T) {
	e := newShopEnv(t, shopWorkflow)
	e.run(0)
	if code, _, errOut := e.cli("pause", "shop"); code != 0 {
		t.Fatalf("pause: %s", errOut)
	}
	r := e.preparedRun("o1")
	ctx := context.Background()
	st, err := sqlite.Open(ctx, e.db, sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	started := ledger.NewPhaseEvent(r, ledger.EventPhaseStarted, "mutate")
	if _, err := st.AdvancePhase(ledger.WithEvents(ctx, started), r.ID, scripthost.RunPrepared, scripthost.RunMutating); err != nil {
		t.Fatal(err)
	}
	if _, err := st.SetRunStatus(ctx, r.ID, ledger.StatusChange{Status: scripthost.StatusPausedApproval}); err != nil {
		t.Fatal(err)
	}
	st.Close()
	s := startServe(t, e.db, e.wf, "--workspace", e.ws, "--token", testServeToken)
	_, step := uiTab(t, s, "dana")
	var head string
	mutate := `#timeline li[data-phase="mutate"] .phase-head`
	step("open the paused run",
		chromedp.WaitVisible(`tr[data-run="`+r.ID+`"]`, chromedp.ByQuery),
		chromedp.Navigate(s.base+"/#/run/"+r.ID),
		chromedp.WaitVisible(mutate, chromedp.ByQuery),
		chromedp.Text(mutate, &head, chromedp.ByQuery))
	if !strings.Contains(head, "paused:approval") || strings.Contains(head, "running") {
		t.Errorf("mutate phase shows %q, want paused:approval and not running", head)
	}
	step("cancel it",
		chromedp.Click(`#cancel-run`, chromedp.ByQuery),
		chromedp.WaitVisible(`#modal-confirm`, chromedp.ByQuery),
		chromedp.Click(`#modal-confirm`, chromedp.ByQuery),
		chromedp.WaitNotPresent(`#cancel-run`, chromedp.ByQuery),
		chromedp.Text(mutate, &head, chromedp.ByQuery))
	if !strings.Contains(head, "cancelled") || strings.Contains(head, "running") {
		t.Errorf("mutate phase shows %q, want cancelled", head)
	}
}
