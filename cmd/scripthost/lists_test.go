package main

import (
	"context"
	"encoding/json"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/scripthost/scripthost"
	"github.com/scripthost/scripthost/internal/fakesvc"
	"github.com/scripthost/scripthost/internal/view"
	"github.com/scripthost/scripthost/ledger"
	"github.com/scripthost/scripthost/ledger/sqlite"
)

// seedRuns writes n pending runs of take into the shop ledger, in one open of it.
func (e *shopEnv) seedRuns(n int) []scripthost.Run {
	e.t.Helper()
	ctx := context.Background()
	st, err := sqlite.Open(ctx, e.db, sqlite.Options{})
	if err != nil {
		e.t.Fatal(err)
	}
	defer st.Close()
	var out []scripthost.Run
	for range n {
		r, err := st.CreateRun(ctx, ledger.NewRun{Workflow: "shop", Version: 1, Handler: "take", Kind: scripthost.KindConsumer})
		if err != nil {
			e.t.Fatal(err)
		}
		out = append(out, r)
	}
	return out
}

var nextCursor = regexp.MustCompile(`--cursor (\S+)`)

// TestListPagesCLI pages `runs --json --limit N` with the cursor printed on stderr,
// through every run once, while --json without --limit still prints them all; it
// searches with -q, and refuses a cursor no listing printed.
func TestListPagesCLI(t *testing.T) {
	e := newShopEnv(t, shopWorkflow)
	e.run(0)
	seeded := e.seedRuns(7)
	all := e.runs()
	if len(all) != len(seeded) {
		t.Fatalf("runs --json: %d runs, want all %d", len(all), len(seeded))
	}
	var seen []string
	args := []string{"runs", "--json", "--limit", "3"}
	for pages := 1; ; pages++ {
		code, out, errOut := e.cli(args...)
		var runs []scripthost.Run
		if code != 0 || json.Unmarshal([]byte(out), &runs) != nil {
			t.Fatalf("%v: exit %d: %s%s", args, code, out, errOut)
		}
		for i := len(runs) - 1; i >= 0; i-- {
			seen = append(seen, runs[i].ID)
		}
		m := nextCursor.FindStringSubmatch(errOut)
		if m == nil {
			if pages != 3 {
				t.Errorf("%d pages, want 3", pages)
			}
			break
		}
		args = []string{"runs", "--json", "--limit", "3", "--cursor", m[1]}
	}
	var want []string
	for i := len(all) - 1; i >= 0; i-- {
		want = append(want, all[i].ID)
	}
	if !slices.Equal(seen, want) {
		t.Errorf("pages: got %v, want %v (newest first)", seen, want)
	}
	code, out, _ := e.cli("runs", "--json", "-q", strings.ToUpper(seeded[3].ID))
	if var1 := []scripthost.Run{}; code != 0 || json.Unmarshal([]byte(out), &var1) != nil || len(var1) != 1 || var1[0].ID != seeded[3].ID {
		t.Errorf("runs -q ID: exit %d: %s", code, out)
	}
	for _, bad := range [][]string{{"runs", "--cursor", "nope"}, {"mutations", "--cursor", "c1.x"}, {"events", "--limit", "-2"},
		{"agent", "list", "--cursor", "x"}} {
		if code, _, errOut := e.cli(bad...); code != 2 || !strings.Contains(errOut, bad[len(bad)-2]) {
			t.Errorf("%v: exit %d, want 2 naming %s: %s", bad, code, bad[len(bad)-2], errOut)
		}
	}
}

// TestBulkCancelCLI: `cancel` with a filter lists the runs it would cancel and
// changes nothing; with --yes --confirm of a stale token it refuses and changes
// nothing; with --yes it cancels exactly those, each in the audit trail with who and
// why. A run id with a filter, or neither, is a usage error.
func TestBulkCancelCLI(t *testing.T) {
	e := newShopEnv(t, shopWorkflow)
	e.run(0)
	runs := []scripthost.Run{e.preparedRun("o1"), e.preparedRun("o2"), e.preparedRun("o3")}
	code, out, errOut := e.cli("cancel", "--workflow", "shop", "--handler", "take")
	if code != 0 || !strings.Contains(out, "3 to cancel") || !strings.Contains(out, "nothing done: add --yes") {
		t.Fatalf("cancel with a filter: exit %d: %s%s", code, out, errOut)
	}
	for _, r := range runs {
		if !strings.Contains(out, r.ID) {
			t.Errorf("the list lacks run %s:\n%s", r.ID, out)
		}
	}
	for _, r := range e.runs() {
		if r.Status != scripthost.StatusActive {
			t.Fatalf("listing changed run %s: %s", r.ID, r.Status)
		}
	}
	if code, _, errOut := e.cli("cancel", "--workflow", "shop", "--yes", "--confirm", "0000"); code != exitRefused ||
		!strings.Contains(errOut, "changed") {
		t.Errorf("stale token: exit %d, want %d: %s", code, exitRefused, errOut)
	}
	if code, _, errOut := e.cli("cancel", runs[0].ID, "--workflow", "shop"); code != 2 {
		t.Errorf("an id and a filter: exit %d, want 2: %s", code, errOut)
	}
	if code, _, errOut := e.cli("cancel"); code != 2 {
		t.Errorf("neither an id nor a filter: exit %d, want 2: %s", code, errOut)
	}
	var plan view.BulkPlan
	code, out, _ = e.cli("cancel", "--workflow", "shop", "--json")
	if code != 0 || json.Unmarshal([]byte(out), &plan) != nil || plan.Count != 3 {
		t.Fatalf("cancel --json: exit %d: %s", code, out)
	}
	code, out, errOut = e.cli("cancel", "--workflow", "shop", "--yes", "--confirm", plan.Token, "--reason", "test orders", "--by", "ops")
	if code != 0 || !strings.Contains(out, "cancel: 3 done, 0 refused") {
		t.Fatalf("cancel --yes: exit %d: %s%s", code, out, errOut)
	}
	for _, r := range e.runs() {
		if r.Status != scripthost.StatusCancelled || r.Error != "cancelled by ops: test orders" {
			t.Errorf("run %s: %s %q, want cancelled by ops", r.ID, r.Status, r.Error)
		}
	}
	var targets []string
	for _, a := range e.actions() {
		var args struct {
			By      string
			Request struct{ Reason, Bulk string }
		}
		_ = json.Unmarshal(a.Arguments, &args)
		if a.StepID == "cancel" && a.Success && args.By == "ops" && args.Request.Reason == "test orders" && args.Request.Bulk == plan.Token {
			var target struct{ Target string }
			_ = json.Unmarshal(a.Arguments, &target)
			targets = append(targets, target.Target)
		}
	}
	if len(targets) != 3 {
		t.Errorf("audit trail: %d cancels by ops with the reason and token, want 3 (%v)", len(targets), targets)
	}
}

// TestListsAPIAndCLIAgree: the paged, searched listings, the topics and a bulk
// action's list answer the same through the API and the CLI's --json.
func TestListsAPIAndCLIAgree(t *testing.T) {
	t.Setenv(tokenEnv, e2eToken)
	e := newShopEnv(t, shopWorkflow)
	e.run(0)
	seeded := e.seedRuns(5)
	e.preparedRun("o7")
	// A poison order blocks the handler: a failed run for the bulk retry's list.
	ctx := context.Background()
	st, err := sqlite.Open(ctx, e.db, sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.Publish(ctx, ledger.NewEvent{Workflow: "shop", Topic: "orders", MessageID: "bad1", Payload: json.RawMessage(`{"bad":true}`)}); err != nil {
		t.Fatal(err)
	}
	st.Close()
	s := startServe(t, e.db, e.wf, "--workspace", e.ws, "--token", testServeToken)
	// serve runs the workflow too: wait until it has nothing left to do, so that both
	// sides read one ledger.
	waitFor(t, func() bool {
		for _, r := range e.runs() {
			if r.Status == scripthost.StatusActive {
				return false
			}
		}
		return true
	})
	// The next cursor of the first page, from the API, continues the CLI's listing.
	req, _ := http.NewRequest("GET", s.base+"/api/v1/runs?limit=2", nil)
	req.Header.Set("Authorization", "Bearer "+testServeToken)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	next := res.Header.Get("X-Next-Cursor")
	if next == "" || !strings.Contains(res.Header.Get("Link"), `rel="next"`) {
		t.Fatalf("no next cursor: %v", res.Header)
	}
	sameAsCLI(t, s, "/api/v1/runs?limit=2", e.db, "runs", "--limit", "2", "--json")
	sameAsCLI(t, s, "/api/v1/runs?limit=2&cursor="+next, e.db, "runs", "--limit", "2", "--cursor", next, "--json")
	sameAsCLI(t, s, "/api/v1/runs?q="+seeded[2].ID, e.db, "runs", "-q", seeded[2].ID, "--json")
	sameAsCLI(t, s, "/api/v1/runs?q=take&handler=take&limit=3", e.db, "runs", "--search", "take", "--handler", "take", "--limit", "3", "--json")
	sameAsCLI(t, s, "/api/v1/mutations?q=files&limit=5", e.db, "mutations", "-q", "files", "--limit", "5", "--json")
	sameAsCLI(t, s, "/api/v1/events?workflow=shop&topic=orders&limit=1", e.db, "events", "--workflow", "shop", "--topic", "orders", "--limit", "1", "--json")
	sameAsCLI(t, s, "/api/v1/events?q=o7", e.db, "events", "-q", "o7", "--json")
	sameAsCLI(t, s, "/api/v1/topics", e.db, "events", "topics", "--json")
	sameAsCLI(t, s, "/api/v1/topics?workflow=shop", e.db, "events", "topics", "--workflow", "shop", "--json")

	var api view.BulkPlan
	s.want("POST", "/api/v1/bulk/retry", map[string]any{"workflow": "shop"}, http.StatusOK, &api)
	if api.Count == 0 {
		t.Errorf("bulk retry lists nothing; want the run that failed on the poison order")
	}
	var cliPlan view.BulkPlan
	if code, out, errOut := e.cli("retry", "--workflow", "shop", "--json"); code != 0 || json.Unmarshal([]byte(out), &cliPlan) != nil {
		t.Fatalf("retry --workflow --json: exit %d: %s%s", code, out, errOut)
	}
	a, _ := json.Marshal(api)
	c, _ := json.Marshal(cliPlan)
	if string(a) != string(c) {
		t.Errorf("bulk retry list differs:\napi: %s\ncli: %s", a, c)
	}
}

// TestBulkResolveCLI: `resolve` with a filter lists the indeterminate mutations
// without needing an outcome; --yes without --reason is a usage error that changes
// nothing; with --reason it resolves them through the one-item resolve, recorded with
// who and why.
func TestBulkResolveCLI(t *testing.T) {
	t.Setenv(tokenEnv, e2eToken)
	e, _, m := indeterminate(t, fakesvc.ApplyDrop)
	cli := func(args ...string) (int, string, string) {
		return runCLI(t, append([]string{"--db", e.db}, args...)...)
	}
	code, out, errOut := cli("resolve", "-q", m.Tool, "--as", "failed")
	if code != 0 || !strings.Contains(out, m.ID) || !strings.Contains(out, "1 to resolve") {
		t.Fatalf("resolve with a filter: exit %d: %s%s", code, out, errOut)
	}
	if code, _, errOut := cli("resolve", "-q", m.Tool, "--as", "failed", "--yes"); code != 2 || !strings.Contains(errOut, "reason") {
		t.Errorf("--yes without --reason: exit %d, want 2 naming the reason: %s", code, errOut)
	}
	if got := e.mutations()[0]; got.Status != scripthost.MutationIndeterminate {
		t.Fatalf("refused resolve changed the mutation: %s", got.Status)
	}
	code, out, errOut = cli("resolve", "-q", m.Tool, "--as", "failed", "--yes", "--reason", "no charge at the bank", "--by", "hal")
	if code != 0 || !strings.Contains(out, "resolve: 1 done") {
		t.Fatalf("resolve --yes: exit %d: %s%s", code, out, errOut)
	}
	if got := e.mutations()[0]; got.Status != scripthost.MutationFailed || got.ResolvedBy != "hal" {
		t.Errorf("mutation: %s by %q, want failed by hal", got.Status, got.ResolvedBy)
	}
	code, out, _ = cli("resolve", "-q", m.Tool, "--as", "failed", "--json")
	var plan view.BulkPlan
	if code != 0 || json.Unmarshal([]byte(out), &plan) != nil || plan.Count != 0 {
		t.Errorf("after the resolve the filter selects %s, want nothing", out)
	}
}
