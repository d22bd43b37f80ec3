package serve

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/scripthost/scripthost"
	"github.com/scripthost/scripthost/internal/view"
	"github.com/scripthost/scripthost/ledger"
)

// listServer serves store over loopback HTTP.
func listServer(t *testing.T, store ledger.Store) string {
	t.Helper()
	srv, err := New(Config{Store: store, Token: testToken})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(srv)
	t.Cleanup(hs.Close)
	return hs.URL
}

// call sends a request with the token and returns the status, the body and the next
// cursor header.
func call(t *testing.T, method, url string, body any) (int, []byte, string) {
	t.Helper()
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	}
	req, _ := http.NewRequest(method, url, rd)
	req.Header.Set("Authorization", "Bearer "+testToken)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res.StatusCode, b, res.Header.Get("X-Next-Cursor")
}

// TestAPIPagesRuns pages 250 runs 100 at a time by the next cursor: every run once,
// newest first across pages (oldest first within one, as a limited listing always
// was); a run created meanwhile does not shift the pages after the first; q searches
// in the ledger query; a bad cursor or limit is a 400 naming the parameter.
func TestAPIPagesRuns(t *testing.T) {
	ctx := context.Background()
	store, failed := failedRunLedger(t, nil)
	for i := range 249 {
		h := "bill"
		if i%50 == 0 {
			h = "ship"
		}
		if _, err := store.CreateRun(ctx, ledger.NewRun{Workflow: "orders", Version: 1, Handler: h, Kind: scripthost.KindConsumer}); err != nil {
			t.Fatal(err)
		}
	}
	base := listServer(t, store)
	all, err := store.Runs(ctx, ledger.RunFilter{})
	if err != nil || len(all) != 250 {
		t.Fatalf("seeded %d runs (%v), want 250", len(all), err)
	}
	var seen []string
	cursor, pages := "", 0
	for {
		code, b, next := call(t, "GET", base+"/api/v1/runs?limit=100&cursor="+cursor, nil)
		if code != 200 {
			t.Fatalf("page %d: %d %s", pages, code, b)
		}
		var runs []scripthost.Run
		if err := json.Unmarshal(b, &runs); err != nil {
			t.Fatal(err)
		}
		for i := len(runs) - 1; i >= 0; i-- {
			seen = append(seen, runs[i].ID)
		}
		pages++
		if pages == 1 {
			// A run created now is on no page after the first.
			if _, err := store.CreateRun(ctx, ledger.NewRun{Workflow: "orders", Version: 1, Handler: "bill", Kind: scripthost.KindConsumer}); err != nil {
				t.Fatal(err)
			}
		}
		if next == "" {
			break
		}
		cursor = next
	}
	if pages != 3 || len(seen) != 250 {
		t.Fatalf("got %d runs on %d pages, want 250 on 3", len(seen), pages)
	}
	var want []string
	for i := len(all) - 1; i >= 0; i-- {
		want = append(want, all[i].ID)
	}
	slices.Sort(want)
	got := slices.Clone(seen)
	slices.Sort(got)
	if !slices.Equal(got, want) {
		t.Errorf("the pages do not hold every run once")
	}

	for path, wantIDs := range map[string]int{
		"/api/v1/runs?q=BOOM":                         1,
		"/api/v1/runs?q=" + failed.ID:                 1,
		"/api/v1/runs?q=ship&limit=2":                 2,
		"/api/v1/runs?q=ship&handler=bill":            0,
		"/api/v1/runs?q=failed:logic&status=active":   0,
		"/api/v1/runs?status=failed:logic&workflow=x": 0,
	} {
		code, b, _ := call(t, "GET", base+path, nil)
		var runs []scripthost.Run
		if code != 200 || json.Unmarshal(b, &runs) != nil || len(runs) != wantIDs {
			t.Errorf("GET %s: %d, %d runs (%s); want %d", path, code, len(runs), b, wantIDs)
		}
	}
	for path, param := range map[string]string{
		"/api/v1/runs?cursor=nope":            "cursor=",
		"/api/v1/runs?cursor=c1.!!":           "cursor=",
		"/api/v1/mutations?cursor=c1.bm9wZQ":  "cursor=",
		"/api/v1/events?limit=-1":             "limit=",
		"/api/v1/agent/sessions?limit=ten":    "limit=",
		"/api/v1/executions?cursor=x":         "cursor=",
		"/api/v1/mutations/indeterminate?q=x": "",
	} {
		code, b, _ := call(t, "GET", base+path, nil)
		if param == "" {
			if code != 200 {
				t.Errorf("GET %s: %d %s", path, code, b)
			}
			continue
		}
		if code != http.StatusBadRequest || !strings.Contains(string(b), param) {
			t.Errorf("GET %s: %d %s; want 400 naming %s", path, code, b, param)
		}
	}
}

// TestAPITopics sums up each topic with its backlog, and pages a topic's events.
func TestAPITopics(t *testing.T) {
	ctx := context.Background()
	now := time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)
	clock := now
	store, _ := failedRunLedger(t, func() time.Time { return clock })
	for i := range 5 {
		clock = now.Add(time.Duration(i) * time.Minute)
		if _, err := store.Publish(ctx, ledger.NewEvent{Workflow: "orders", Topic: "in", MessageID: fmt.Sprintf("o-%d", i), Payload: json.RawMessage(`{}`)}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := store.SkipEvent(ctx, "orders", "in", "o-0"); err != nil {
		t.Fatal(err)
	}
	clock = now.Add(time.Hour)
	srv, err := New(Config{Store: store, Token: testToken, Clock: func() time.Time { return clock }})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(srv)
	defer hs.Close()
	code, b, _ := call(t, "GET", hs.URL+"/api/v1/topics", nil)
	var ts []view.Topic
	if code != 200 || json.Unmarshal(b, &ts) != nil || len(ts) != 1 {
		t.Fatalf("topics: %d %s", code, b)
	}
	if tp := ts[0]; tp.Pending != 4 || tp.Skipped != 1 || tp.BacklogSeconds != 59*60 || !tp.OldestPending.Equal(now.Add(time.Minute)) {
		t.Errorf("topic: %+v; want 4 pending, 1 skipped, backlog 59m (the oldest pending published at +1m)", tp)
	}
	code, b, next := call(t, "GET", hs.URL+"/api/v1/events?workflow=orders&topic=in&limit=3", nil)
	var evs []scripthost.Event
	if code != 200 || json.Unmarshal(b, &evs) != nil || len(evs) != 3 || evs[0].MessageID != "o-2" || next == "" {
		t.Fatalf("first page of events: %d %s next %q", code, b, next)
	}
	_, b, next2 := call(t, "GET", hs.URL+"/api/v1/events?workflow=orders&topic=in&limit=3&cursor="+next, nil)
	if err := json.Unmarshal(b, &evs); err != nil || len(evs) != 2 || evs[0].MessageID != "o-0" || next2 != "" {
		t.Errorf("second page of events: %s next %q", b, next2)
	}
	_, b, _ = call(t, "GET", hs.URL+"/api/v1/events?workflow=orders&topic=in&q=O-3", nil)
	if err := json.Unmarshal(b, &evs); err != nil || len(evs) != 1 || evs[0].MessageID != "o-3" {
		t.Errorf("search o-3: %s", b)
	}
}

// TestAPIBulkCancel lists what a bulk cancel would change with a token, refuses the
// token once the list changed (409 with the list now), applies the action to exactly
// the confirmed list, and records each run in the audit trail with who and why.
func TestAPIBulkCancel(t *testing.T) {
	ctx := context.Background()
	store, failed := failedRunLedger(t, nil)
	var active []scripthost.Run
	for range 4 {
		r, err := store.CreateRun(ctx, ledger.NewRun{Workflow: "orders", Version: 1, Handler: "bill", Kind: scripthost.KindConsumer})
		if err != nil {
			t.Fatal(err)
		}
		active = append(active, r)
	}
	base := listServer(t, store)
	// A filter on the phase selects as the runs listing does: these runs are pending.
	code, b, _ := call(t, "POST", base+"/api/v1/bulk/cancel", map[string]any{"workflow": "orders", "phase": "mutating"})
	if var0 := (view.BulkPlan{}); code != 200 || json.Unmarshal(b, &var0) != nil || var0.Count != 0 {
		t.Errorf("cancel preview of mutating runs: %d %s; want none", code, b)
	}
	filter := map[string]any{"workflow": "orders", "handler": "bill", "phase": "pending", "since": "2000-01-01T00:00:00Z"}
	code, b, _ = call(t, "POST", base+"/api/v1/bulk/cancel", filter)
	var plan view.BulkPlan
	if code != 200 || json.Unmarshal(b, &plan) != nil || plan.Count != 4 || plan.Token == "" {
		t.Fatalf("preview: %d %s", code, b)
	}
	for _, it := range plan.Items {
		if it.ID == failed.ID {
			t.Errorf("the preview lists the failed run %s, which cannot be cancelled", failed.ID)
		}
	}
	if r, _ := store.Run(ctx, active[0].ID); r.Status != scripthost.StatusActive {
		t.Fatalf("the preview changed run %s: %s", r.ID, r.Status)
	}
	// One of them is cancelled by itself: the token no longer matches.
	if _, err := view.Cancel(ctx, store, active[0].ID, ledger.Cancel{By: "someone"}); err != nil {
		t.Fatal(err)
	}
	confirm := map[string]any{"workflow": "orders", "handler": "bill", "phase": "pending", "since": "2000-01-01T00:00:00Z",
		"confirm": plan.Token, "reason": "bad deploy", "by": "erin"}
	code, b, _ = call(t, "POST", base+"/api/v1/bulk/cancel", confirm)
	var changed struct {
		Error string        `json:"error"`
		Now   view.BulkPlan `json:"now"`
	}
	if code != http.StatusConflict || json.Unmarshal(b, &changed) != nil || changed.Now.Count != 3 {
		t.Fatalf("stale token: %d %s; want 409 with the 3 runs now", code, b)
	}
	for _, r := range active[1:] {
		if got, _ := store.Run(ctx, r.ID); got.Status != scripthost.StatusActive {
			t.Fatalf("refused confirmation changed run %s: %s", r.ID, got.Status)
		}
	}
	confirm["confirm"] = changed.Now.Token
	code, b, _ = call(t, "POST", base+"/api/v1/bulk/cancel", confirm)
	var done view.BulkDone
	if code != 200 || json.Unmarshal(b, &done) != nil || done.Done != 3 || done.Failed != 0 {
		t.Fatalf("apply: %d %s", code, b)
	}
	for _, r := range active[1:] {
		if got, _ := store.Run(ctx, r.ID); got.Status != scripthost.StatusCancelled {
			t.Errorf("run %s: %s, want cancelled", r.ID, got.Status)
		}
	}
	code, b, _ = call(t, "GET", base+"/api/v1/actions", nil)
	var acts []action
	if code != 200 || json.Unmarshal(b, &acts) != nil {
		t.Fatalf("actions: %d %s", code, b)
	}
	var cancelled []string
	for _, a := range acts {
		var req struct{ Reason, Bulk string }
		_ = json.Unmarshal(a.Request, &req)
		if a.Action == "cancel" && a.By == "erin" && a.Success && req.Reason == "bad deploy" && req.Bulk == changed.Now.Token {
			cancelled = append(cancelled, a.Target)
		}
	}
	slices.Sort(cancelled)
	var want []string
	for _, r := range active[1:] {
		want = append(want, r.ID)
	}
	slices.Sort(want)
	if !slices.Equal(cancelled, want) {
		t.Errorf("audit trail: cancels by erin for %v, want %v", cancelled, want)
	}
	for _, bad := range []struct {
		path string
		body map[string]any
		want string
	}{
		{"/api/v1/bulk/delete", filter, "action"},
		{"/api/v1/bulk/resolve", map[string]any{"as": "failed", "confirm": "x"}, "reason"},
		{"/api/v1/bulk/resolve", map[string]any{"as": "maybe", "reason": "x", "confirm": "x"}, "as"},
		{"/api/v1/bulk/resolve", map[string]any{"status": "applied"}, "status"},
		{"/api/v1/bulk/cancel", map[string]any{"status": "gone"}, "status"},
		{"/api/v1/bulk/cancel", map[string]any{"nope": 1}, "nope"},
	} {
		if code, b, _ := call(t, "POST", base+bad.path, bad.body); code != http.StatusBadRequest || !strings.Contains(string(b), bad.want) {
			t.Errorf("POST %s %v: %d %s; want 400 naming %s", bad.path, bad.body, code, b, bad.want)
		}
	}
}

// TestAPIBulkRetryAndResolve: a bulk retry reports a run it cannot retry with the
// reason (its mutation's outcome is unknown) and retries the others; a bulk resolve
// resolves the indeterminate mutation with the outcome given, recorded with the reason.
func TestAPIBulkRetryAndResolve(t *testing.T) {
	ctx := context.Background()
	store, failed := failedRunLedger(t, nil)
	r, err := store.CreateRun(ctx, ledger.NewRun{Workflow: "orders", Version: 1, Handler: "bill", Kind: scripthost.KindConsumer,
		Start: scripthost.RunPreparing, Prepared: &ledger.PrepareResult{Mutate: true}})
	if err != nil {
		t.Fatal(err)
	}
	m, err := store.BeginMutation(ctx, ledger.NewMutation{RunID: r.ID, Namespace: "Pay", Method: "charge", InputHash: "h1"})
	if err != nil {
		t.Fatal(err)
	}
	if m, err = store.MarkIndeterminate(ctx, m.ID, "timeout"); err != nil {
		t.Fatal(err)
	}
	base := listServer(t, store)
	code, b, _ := call(t, "POST", base+"/api/v1/bulk/retry", map[string]any{"workflow": "orders"})
	var plan view.BulkPlan
	if code != 200 || json.Unmarshal(b, &plan) != nil || plan.Count != 2 {
		t.Fatalf("retry preview: %d %s; want the failed run and the paused one", code, b)
	}
	code, b, _ = call(t, "POST", base+"/api/v1/bulk/retry", map[string]any{"workflow": "orders", "confirm": plan.Token, "by": "fay"})
	var done view.BulkDone
	if code != 200 || json.Unmarshal(b, &done) != nil || done.Done != 1 || done.Failed != 1 {
		t.Fatalf("retry: %d %s; want 1 done, 1 refused", code, b)
	}
	for _, res := range done.Results {
		if res.ID == r.ID && (res.OK || !strings.Contains(res.Error, "resolve it")) {
			t.Errorf("run %s with an indeterminate mutation: %+v; want refused, saying to resolve it", r.ID, res)
		}
		if res.ID == failed.ID && !res.OK {
			t.Errorf("failed run %s: %+v; want retried", failed.ID, res)
		}
	}
	if got, _ := store.Run(ctx, failed.ID); got.SupersededBy == "" {
		t.Errorf("failed run %s was not retried", failed.ID)
	}

	// The list needs no outcome yet: the dialog asks for it after showing the list.
	code, b, _ = call(t, "POST", base+"/api/v1/bulk/resolve", map[string]any{"q": "pay.charge"})
	if code != 200 || json.Unmarshal(b, &plan) != nil || plan.Count != 1 || plan.Items[0].ID != m.ID || plan.Items[0].Tool != "Pay.charge" {
		t.Fatalf("resolve preview: %d %s", code, b)
	}
	code, b, _ = call(t, "POST", base+"/api/v1/bulk/resolve", map[string]any{"q": "pay.charge", "as": "failed", "reason": "no charge at the bank",
		"by": "gil", "confirm": plan.Token})
	if code != 200 || json.Unmarshal(b, &done) != nil || done.Done != 1 {
		t.Fatalf("resolve: %d %s", code, b)
	}
	if got, _ := store.Mutation(ctx, m.ID); got.Status != scripthost.MutationFailed || got.ResolvedBy != "gil" {
		t.Errorf("mutation after the bulk resolve: %s by %q", got.Status, got.ResolvedBy)
	}
	_, b, _ = call(t, "GET", base+"/api/v1/actions", nil)
	if !strings.Contains(string(b), "no charge at the bank") {
		t.Errorf("the audit trail has no resolve with its reason: %s", b)
	}
}

// TestAPIPagesExecutions pages and searches the plan executions in the ledger query,
// leaving out the operator audit trail.
func TestAPIPagesExecutions(t *testing.T) {
	ctx := context.Background()
	store, _ := failedRunLedger(t, nil)
	base := time.Date(2026, 2, 3, 4, 5, 6, 0, time.UTC)
	for i, id := range []string{"tidy/1", "tidy/2", "deploy/1"} {
		if err := store.AppendExecution(ctx, ledger.ExecutionRecord{ExecutionID: id, PlanID: strings.Split(id, "/")[0], StepID: "s",
			Seq: 1, Tool: "Files.write", StartedAt: base.Add(time.Duration(i) * time.Second), EndedAt: base.Add(time.Duration(i) * time.Second),
			Success: true}); err != nil {
			t.Fatal(err)
		}
	}
	if err := view.RecordAction(ctx, store, view.Action{Name: "cancel", Target: "r", By: "x", Started: base, Ended: base}); err != nil {
		t.Fatal(err)
	}
	srv := listServer(t, store)
	code, b, next := call(t, "GET", srv+"/api/v1/executions?limit=2", nil)
	var xs []execution
	if code != 200 || json.Unmarshal(b, &xs) != nil || len(xs) != 2 || xs[0].ID != "tidy/2" || xs[1].ID != "deploy/1" || next == "" {
		t.Fatalf("first page: %d %s next %q", code, b, next)
	}
	_, b, next = call(t, "GET", srv+"/api/v1/executions?limit=2&cursor="+next, nil)
	if json.Unmarshal(b, &xs) != nil || len(xs) != 1 || xs[0].ID != "tidy/1" || xs[0].N != 1 || xs[0].Steps != 1 || next != "" {
		t.Errorf("second page: %s next %q", b, next)
	}
	_, b, _ = call(t, "GET", srv+"/api/v1/executions?q=DEPLOY", nil)
	if json.Unmarshal(b, &xs) != nil || len(xs) != 1 || xs[0].ID != "deploy/1" {
		t.Errorf("search deploy: %s", b)
	}
	_, b, _ = call(t, "GET", srv+"/api/v1/executions", nil)
	if json.Unmarshal(b, &xs) != nil || len(xs) != 3 || xs[0].ID != "tidy/1" || xs[2].ID != "deploy/1" {
		t.Errorf("all executions, oldest first, without the audit trail: %s", b)
	}
}
