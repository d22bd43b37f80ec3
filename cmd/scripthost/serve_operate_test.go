package main

import (
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/scripthost/scripthost"
	"github.com/scripthost/scripthost/internal/view"
)

// TestServePublishAndSkip publishes through POST /api/v1/events (token-protected,
// idempotent by id, another payload under a taken id refused, an undeclared topic
// refused), lets serve block on a poison event, reads the failed run's events from
// GET /api/v1/runs/{id}, sets the event aside with POST /api/v1/events/skip and
// watches the handler go on; the failed run is then listed as superseded, and both
// actions are in the audit trail.
func TestServePublishAndSkip(t *testing.T) {
	e := newShopEnv(t, shopWorkflow)
	s := startServe(t, e.db, e.wf, "--workspace", e.ws, "--token", testServeToken)

	pub := func(id, payload string) map[string]any {
		return map[string]any{"workflow": "shop", "topic": "orders", "id": id, "payload": rawJSON(payload), "by": "ops"}
	}
	if code, body := s.call("POST", "/api/v1/events", "", pub("o1", `{"n":1,"bad":true}`)); code != http.StatusUnauthorized {
		t.Fatalf("publish without a token: got %d: %s", code, body)
	}
	var p view.Published
	s.want("POST", "/api/v1/events", pub("o1", `{"n":1,"bad":true}`), http.StatusOK, &p)
	if p.Duplicate || p.Event.MessageID != "o1" || p.Event.Status != scripthost.EventPending {
		t.Fatalf("publish: got %+v", p)
	}
	s.want("POST", "/api/v1/events", pub("o1", `{"bad": true, "n": 1}`), http.StatusOK, &p)
	if !p.Duplicate {
		t.Errorf("publish again: got %+v, want duplicate", p)
	}
	if code, body := s.call("POST", "/api/v1/events", testServeToken, pub("o1", `{"n":9}`)); code != http.StatusConflict ||
		!strings.Contains(string(body), "another payload") {
		t.Errorf("another payload: got %d: %s", code, body)
	}
	bad := pub("r1", `{}`)
	bad["topic"] = "refunds"
	if code, body := s.call("POST", "/api/v1/events", testServeToken, bad); code != http.StatusBadRequest ||
		!strings.Contains(string(body), "declares no topic") {
		t.Errorf("undeclared topic: got %d: %s", code, body)
	}
	s.want("POST", "/api/v1/events", pub("o2", `{"n":2}`), http.StatusOK, &p)

	var failed []scripthost.Run
	waitFor(t, func() bool {
		s.get("/api/v1/runs?status=failed:logic", &failed)
		return len(failed) == 1
	})
	var d view.RunDetail
	s.get("/api/v1/runs/"+failed[0].ID, &d)
	if len(d.Events) == 0 || d.Events[0].ID != "o1" || d.Events[0].How != "peeked" {
		t.Fatalf("run detail events: got %+v, want o1 peeked first", d.Events)
	}

	if code, body := s.call("POST", "/api/v1/events/skip", "", map[string]any{"workflow": "shop", "topic": "orders", "id": "o1"}); code != http.StatusUnauthorized {
		t.Fatalf("skip without a token: got %d: %s", code, body)
	}
	var sk view.Skipped
	s.want("POST", "/api/v1/events/skip", map[string]any{"workflow": "shop", "topic": "orders", "id": "o1", "reason": "malformed", "by": "ops"},
		http.StatusOK, &sk)
	if sk.Event.Status != scripthost.EventSkipped || len(sk.Retried) != 1 || sk.Retried[0].Source.ID != failed[0].ID {
		t.Fatalf("skip: got %+v", sk)
	}
	waitFor(t, func() bool {
		b, err := os.ReadFile(filepath.Join(e.ws, "order-2.txt"))
		return err == nil && string(b) == "n=2"
	})
	var superseded []scripthost.Run
	s.get("/api/v1/runs?status=superseded", &superseded)
	if len(superseded) != 1 || superseded[0].ID != failed[0].ID || superseded[0].SupersededBy != sk.Retried[0].Retry.ID {
		t.Errorf("superseded runs: got %+v, want %s", superseded, failed[0].ID)
	}
	s.get("/api/v1/runs/"+failed[0].ID, &d)
	if d.Status != scripthost.StatusSuperseded {
		t.Errorf("run detail status: got %s, want superseded", d.Status)
	}
	if code, body := s.call("POST", "/api/v1/events/skip", testServeToken, map[string]any{"workflow": "shop", "topic": "orders", "id": "o2"}); code != http.StatusConflict {
		t.Errorf("skip a consumed event: got %d: %s", code, body)
	}
	var acts []struct {
		Action  string `json:"action"`
		By      string `json:"by"`
		Success bool   `json:"success"`
	}
	s.get("/api/v1/actions", &acts)
	var got []string
	for _, a := range acts {
		got = append(got, a.Action+":"+a.By+":"+map[bool]string{true: "ok", false: "refused"}[a.Success])
	}
	want := "publish:ops:ok publish:ops:ok publish:ops:refused publish:ops:refused publish:ops:ok skip_event:ops:ok skip_event:api:refused"
	if strings.Join(got, " ") != want {
		t.Errorf("actions:\n got %s\nwant %s", strings.Join(got, " "), want)
	}
}

type rawJSON string

func (r rawJSON) MarshalJSON() ([]byte, error) { return []byte(r), nil }

// TestServeUISkipEvent drives the web UI in headless Chromium: the failed run's page
// lists the poison event it peeked at with a Skip button; skipping it through the
// confirmation (with a reason) retries the run without it, the handler goes on with
// the next event, and the old run's page shows it superseded.
func TestServeUISkipEvent(t *testing.T) {
	browser := chromium(t)
	e := newShopEnv(t, shopWorkflow)
	e.run(0)
	for _, p := range []struct{ id, payload string }{{"o1", `{"n":1,"bad":true}`}, {"o2", `{"n":2}`}} {
		if code, _, errOut := e.cli("publish", "shop", "orders", "--id", p.id, "--payload", p.payload); code != 0 {
			t.Fatalf("publish: %s", errOut)
		}
	}
	e.run(exitBlocked)
	failed := e.runs()[0]
	s := startServe(t, e.db, e.wf, "--workspace", e.ws, "--token", testServeToken)

	ctx := browserTab(t, browser, 90*time.Second)
	step := func(what string, actions ...chromedp.Action) {
		t.Helper()
		if err := chromedp.Run(ctx, actions...); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	}
	skipButton := `#run-events tr[data-event="orders/o1"] button.skip-event`
	step("log in and open the failed run",
		chromedp.Navigate(s.base+"/"),
		chromedp.WaitVisible(`#token`, chromedp.ByQuery),
		chromedp.SendKeys(`#token`, testServeToken, chromedp.ByQuery),
		chromedp.SendKeys(`#operator`, "dana", chromedp.ByQuery),
		chromedp.Click(`#login`, chromedp.ByQuery),
		chromedp.WaitVisible(`tr[data-run="`+failed.ID+`"]`, chromedp.ByQuery),
		chromedp.Navigate(s.base+"/#/run/"+failed.ID),
		chromedp.WaitVisible(skipButton, chromedp.ByQuery))
	step("skip the poison event",
		chromedp.Click(skipButton, chromedp.ByQuery),
		chromedp.WaitVisible(`#modal-confirm`, chromedp.ByQuery),
		chromedp.SendKeys(`#skip-reason`, "unreadable order", chromedp.ByQuery),
		chromedp.Click(`#modal-confirm`, chromedp.ByQuery),
		chromedp.WaitNotPresent(skipButton, chromedp.ByQuery))
	waitFor(t, func() bool {
		b, err := os.ReadFile(filepath.Join(e.ws, "order-2.txt"))
		return err == nil && string(b) == "n=2"
	})
	// The skip leads to the retry's page: open the old run's page again and read its
	// status once the page shows that run (the retry's page is still there until the
	// new one renders).
	var status, title string
	for range 40 {
		// A read may meet the page while it is drawn again: try once more.
		err := chromedp.Run(ctx,
			chromedp.Navigate(s.base+"/#/run/"+failed.ID),
			chromedp.WaitVisible(`#run-events`, chromedp.ByQuery),
			chromedp.Text(`main h1`, &title, chromedp.ByQuery),
			chromedp.Text(`#run-status`, &status, chromedp.ByQuery))
		if err == nil && strings.Contains(title, failed.ID) && status == scripthost.StatusSuperseded {
			break
		}
		time.Sleep(250 * time.Millisecond)
	}
	if status != scripthost.StatusSuperseded {
		t.Errorf("run page: status %q, want superseded", status)
	}
	var acts []struct {
		Action  string          `json:"action"`
		By      string          `json:"by"`
		Request json.RawMessage `json:"request"`
	}
	s.get("/api/v1/actions", &acts)
	last := acts[len(acts)-1]
	if last.Action != "skip_event" || last.By != "dana" || !strings.Contains(string(last.Request), "unreadable order") {
		t.Errorf("last action: %+v, want skip_event by dana with the reason", last)
	}
}
