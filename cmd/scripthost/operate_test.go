package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/scripthost/scripthost"
	"github.com/scripthost/scripthost/internal/view"
	"github.com/scripthost/scripthost/ledger"
	"github.com/scripthost/scripthost/ledger/sqlite"
)

// shopWorkflow takes one order at a time: its prepare phase peeks at the oldest order
// and throws on one marked bad (a poison event), which blocks the handler.
const shopWorkflow = `export default {
  name: 'shop',
  topics: ['orders'],
  consumers: {
    take: { subscribe: ['orders'],
      async prepare() { const [e] = await Topics.peek({ topic: 'orders' }); if (!e) return null;
        if (e.payload.bad) throw new Error('cannot read order ' + e.id);
        return { reservations: [{ topic: 'orders', ids: [e.id] }], data: e.payload }; },
      async mutate(d) { if (d) await Files.write({ path: 'order-' + d.n + '.txt', content: 'n=' + d.n }); } },
  },
};`

// shopEnv is a ledger and a workspace holding shopWorkflow.
type shopEnv struct {
	t      *testing.T
	db, ws string
	wf     string
}

func newShopEnv(t *testing.T, source string) *shopEnv {
	dir := t.TempDir()
	e := &shopEnv{t: t, db: filepath.Join(dir, "ledger.db"), ws: filepath.Join(dir, "shop")}
	e.wf = putFile(t, filepath.Join(e.ws, "workflow.js"), source)
	return e
}

// cli runs the CLI on the env's ledger.
func (e *shopEnv) cli(args ...string) (int, string, string) {
	e.t.Helper()
	return runCLI(e.t, append([]string{"--db", e.db}, args...)...)
}

// run runs the workflow once and wants exit code want.
func (e *shopEnv) run(want int) {
	e.t.Helper()
	if code, out, errOut := e.cli("run", e.wf, "--once", "--workspace", e.ws); code != want {
		e.t.Fatalf("run --once: exit %d, want %d\n%s\n%s", code, want, out, errOut)
	}
}

// runs lists the handler's runs, oldest first.
func (e *shopEnv) runs() []scripthost.Run {
	e.t.Helper()
	code, out, errOut := e.cli("runs", "--json")
	if code != 0 {
		e.t.Fatalf("runs: exit %d: %s", code, errOut)
	}
	var runs []scripthost.Run
	if err := json.Unmarshal([]byte(out), &runs); err != nil {
		e.t.Fatal(err)
	}
	return runs
}

// actions reads the audit trail of operator actions from the ledger.
func (e *shopEnv) actions() []ledger.ExecutionRecord {
	e.t.Helper()
	st, err := sqlite.Open(context.Background(), e.db, sqlite.Options{})
	if err != nil {
		e.t.Fatal(err)
	}
	defer st.Close()
	recs, err := st.Executions(context.Background(), ledger.ExecutionFilter{PlanID: view.AuditPlan})
	if err != nil {
		e.t.Fatal(err)
	}
	return recs
}

// TestPublishCLI publishes events from the command line: stored once by id (a second
// publication says so), a different payload under a taken id refused, bad input
// refused with where it is wrong, and each publication recorded as an operator action.
func TestPublishCLI(t *testing.T) {
	e := newShopEnv(t, shopWorkflow)
	e.run(0)
	code, out, errOut := e.cli("publish", "shop", "orders", "--id", "o1", "--payload", `{"n": 1}`, "--by", "ops")
	if code != 0 || !strings.Contains(out, "published event shop/orders/o1") || !strings.Contains(out, "next run or serve pass") {
		t.Fatalf("publish: exit %d: %s%s", code, out, errOut)
	}
	payload := putFile(t, filepath.Join(t.TempDir(), "o1.json"), "{\n  \"n\": 1\n}\n")
	code, out, errOut = e.cli("publish", "shop", "orders", "--id", "o1", "--payload", "@"+payload)
	if code != 0 || !strings.Contains(out, "published already") || !strings.Contains(out, "nothing stored") {
		t.Fatalf("publish again: exit %d: %s%s", code, out, errOut)
	}
	code, _, errOut = e.cli("publish", "shop", "orders", "--id", "o1", "--payload", `{"n": 2}`)
	if code != exitRefused || !strings.Contains(errOut, "another payload") || !strings.Contains(errOut, `{"n": 1}`) {
		t.Fatalf("another payload: exit %d: %s", code, errOut)
	}
	bad := putFile(t, filepath.Join(t.TempDir(), "bad.json"), "{\n  \"n\": 1,\n  oops\n}\n")
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"undeclared topic", []string{"shop", "refunds", "--id", "r1", "--payload", "{}"}, `declares no topic "refunds"`},
		{"bad JSON in a file", []string{"shop", "orders", "--id", "o2", "--payload", "@" + bad}, bad + ":3:3"},
		{"bad JSON inline", []string{"shop", "orders", "--id", "o2", "--payload", "{"}, "--payload"},
		{"empty id", []string{"shop", "orders", "--id", " ", "--payload", "{}"}, "--id is required"},
		{"missing file", []string{"shop", "orders", "--id", "o2", "--payload", "@" + bad + ".none"}, "bad.json.none"},
	} {
		code, _, errOut := e.cli(append([]string{"publish"}, tc.args...)...)
		if code != 2 || !strings.Contains(errOut, tc.want) {
			t.Errorf("%s: exit %d, want 2 and %q: %s", tc.name, code, tc.want, errOut)
		}
	}
	if code, _, errOut := e.cli("publish", "nosuch", "orders", "--id", "x", "--payload", "{}"); code != exitRefused {
		t.Errorf("unknown workflow: exit %d, want %d: %s", code, exitRefused, errOut)
	}
	code, out, _ = e.cli("events", "--json")
	var evs []scripthost.Event
	if err := json.Unmarshal([]byte(out), &evs); err != nil || code != 0 {
		t.Fatal(code, err)
	}
	var n struct{ N int }
	if len(evs) != 1 || evs[0].MessageID != "o1" || json.Unmarshal(evs[0].Payload, &n) != nil || n.N != 1 {
		t.Fatalf("got events %+v, want o1 alone", evs)
	}
	var published, refused int
	for _, a := range e.actions() {
		if a.StepID != "publish" {
			continue
		}
		if a.Success {
			published++
		} else {
			refused++
		}
		if a.Success && published == 1 && !strings.Contains(string(a.Arguments), `"by":"ops"`) {
			t.Errorf("first publication recorded as %s, want by ops", a.Arguments)
		}
	}
	// Usage errors stop before the action; the taken id and the unknown workflow are
	// refused actions.
	if published != 2 || refused != 3 {
		t.Errorf("got %d publications and %d refusals recorded, want 2 and 3", published, refused)
	}
	// The workflow takes the event up at its next pass.
	e.run(0)
	if b, err := os.ReadFile(filepath.Join(e.ws, "order-1.txt")); err != nil || string(b) != "n=1" {
		t.Errorf("order-1.txt: %q %v, want n=1", b, err)
	}
}

// TestSkipPoisonEvent blocks a handler on an event its prepare phase cannot read: the
// failed run records the event it peeked at (show lists it), events skip sets it aside
// (it stays listed as skipped, the skip is recorded with its reason) and the handler
// goes on with the next event at the next pass; the run that failed is then shown
// superseded.
func TestSkipPoisonEvent(t *testing.T) {
	e := newShopEnv(t, shopWorkflow)
	e.run(0)
	for _, p := range []struct{ id, payload string }{{"o1", `{"n":1,"bad":true}`}, {"o2", `{"n":2}`}} {
		if code, out, errOut := e.cli("publish", "shop", "orders", "--id", p.id, "--payload", p.payload); code != 0 {
			t.Fatalf("publish %s: exit %d: %s%s", p.id, code, out, errOut)
		}
	}
	code, _, errOut := e.cli("run", e.wf, "--once", "--workspace", e.ws)
	if code != exitBlocked || !strings.Contains(errOut, "scripthost events skip shop TOPIC ID") {
		t.Fatalf("run --once: exit %d, want %d and a hint to skip the event: %s", code, exitBlocked, errOut)
	}
	runs := e.runs()
	if len(runs) != 1 || !runs[0].Status.Failed() {
		t.Fatalf("got runs %+v, want one failed", runs)
	}
	failed := runs[0]
	code, out, errOut := e.cli("show", failed.ID)
	if code != 0 {
		t.Fatalf("show: exit %d: %s", code, errOut)
	}
	var d view.RunDetail
	if err := json.Unmarshal([]byte(out), &d); err != nil {
		t.Fatal(err)
	}
	// The peek answered with both orders; the script threw on the first.
	want := []view.RunEvent{{Topic: "orders", ID: "o1", How: "peeked", Status: scripthost.EventPending},
		{Topic: "orders", ID: "o2", How: "peeked", Status: scripthost.EventPending}}
	if len(d.Events) != 2 || d.Events[0] != want[0] || d.Events[1] != want[1] {
		t.Fatalf("show lists events %+v, want %+v", d.Events, want)
	}

	code, out, errOut = e.cli("events", "skip", "shop", "orders", "o1", "--reason", "malformed order")
	if code != 0 || !strings.Contains(out, "event shop/orders/o1 skipped") || !strings.Contains(out, "retries "+failed.ID) {
		t.Fatalf("events skip: exit %d: %s%s", code, out, errOut)
	}
	code, out, _ = e.cli("events", "--status", "skipped", "--json")
	var evs []scripthost.Event
	if err := json.Unmarshal([]byte(out), &evs); err != nil || code != 0 || len(evs) != 1 || evs[0].MessageID != "o1" {
		t.Fatalf("skipped events: %s (%v)", out, err)
	}
	var recorded bool
	for _, a := range e.actions() {
		if a.StepID == "skip_event" && a.Success && strings.Contains(string(a.Arguments), "malformed order") {
			recorded = true
		}
	}
	if !recorded {
		t.Errorf("the skip is not in the audit trail with its reason: %+v", e.actions())
	}
	// Skipping it again changes nothing and says so.
	if code, out, _ := e.cli("events", "skip", "shop", "orders", "o1"); code != 0 || !strings.Contains(out, "skipped already") {
		t.Errorf("skip again: exit %d: %s", code, out)
	}

	e.run(0)
	if b, err := os.ReadFile(filepath.Join(e.ws, "order-2.txt")); err != nil || string(b) != "n=2" {
		t.Errorf("order-2.txt: %q %v, want n=2: the handler did not go on", b, err)
	}
	_, table, _ := e.cli("runs")
	if !strings.Contains(table, failed.ID) || !strings.Contains(lineWith(table, failed.ID), "superseded") {
		t.Errorf("runs table does not show %s superseded:\n%s", failed.ID, table)
	}
	if code, out, _ := e.cli("show", failed.ID); code != 0 || !strings.Contains(out, `"status": "superseded"`) {
		t.Errorf("show does not say superseded:\n%s", out)
	}
	// An event a run consumed cannot be set aside.
	if code, _, errOut := e.cli("events", "skip", "shop", "orders", "o2"); code != exitRefused || !strings.Contains(errOut, "only a pending event") {
		t.Errorf("skip consumed: exit %d: %s", code, errOut)
	}
}

func lineWith(text, s string) string {
	for _, l := range strings.Split(text, "\n") {
		if strings.Contains(l, s) {
			return l
		}
	}
	return ""
}

// TestRetryQueuedOrNow checks that retry says its run waits for the next pass (and
// runs nothing), that retry --now drives the retry to its commit at once, and that the
// runs retried are shown superseded, and that both retries are in the audit trail.
func TestRetryQueuedOrNow(t *testing.T) {
	e := newShopEnv(t, shopWorkflow)
	e.run(0)
	e.cli("publish", "shop", "orders", "--id", "o1", "--payload", `{"n":1,"bad":true}`)
	e.run(exitBlocked)
	first := e.runs()[0]

	code, out, errOut := e.cli("retry", first.ID)
	if code != 0 || !strings.Contains(out, "queued") || !strings.Contains(out, "next pass of scripthost run or scripthost serve") {
		t.Fatalf("retry: exit %d: %s%s", code, out, errOut)
	}
	runs := e.runs()
	if len(runs) != 2 || runs[1].Phase != scripthost.RunPending || runs[1].Status != scripthost.StatusActive {
		t.Fatalf("got runs %+v, want the retry queued in pending", runs)
	}
	if runs[0].SupersededBy != runs[1].ID || runs[0].Shown() != scripthost.StatusSuperseded {
		t.Errorf("source %+v: want superseded by %s", runs[0], runs[1].ID)
	}
	// The retry fails again on the same event at the next pass.
	e.run(exitBlocked)
	second := e.runs()[1]
	if !second.Status.Failed() {
		t.Fatalf("retry: got %s, want failed", second.Status)
	}
	if code, _, errOut := e.cli("retry", second.ID, "--tools", "x.json"); code != 2 || !strings.Contains(errOut, "go with --now") {
		t.Errorf("--tools without --now: exit %d: %s", code, errOut)
	}
	// Fix the workflow: store the fix, then retry at once.
	putFile(t, e.wf, strings.Replace(shopWorkflow, "if (e.payload.bad) throw", "if (false) throw", 1))
	e.run(exitBlocked)
	code, out, errOut = e.cli("retry", second.ID, "--now")
	if code != 0 || !strings.Contains(out, "running it now") || !strings.Contains(out, "committed") {
		t.Fatalf("retry --now: exit %d: %s%s", code, out, errOut)
	}
	if b, err := os.ReadFile(filepath.Join(e.ws, "order-1.txt")); err != nil || string(b) != "n=1" {
		t.Errorf("order-1.txt: %q %v, want n=1", b, err)
	}
	runs = e.runs()
	last := runs[len(runs)-1]
	if last.Status != scripthost.StatusCommitted || last.RetryOf != second.ID {
		t.Errorf("got newest run %+v, want the retry of %s committed", last, second.ID)
	}
	for _, r := range runs[:len(runs)-1] {
		if r.Shown() != scripthost.StatusSuperseded {
			t.Errorf("run %s shown %s, want superseded", r.ID, r.Shown())
		}
	}
	// Both retries, queued and --now, are in the one audit trail, by the current user.
	var retries []string
	for _, a := range auditTrail(t, e.db) {
		if strings.HasPrefix(a, "retry:") {
			retries = append(retries, a)
		}
	}
	who := func(a string) string { return strings.Split(a, ":")[2] }
	if len(retries) != 2 || !strings.HasPrefix(retries[0], "retry:"+first.ID+":") || !strings.HasPrefix(retries[1], "retry:"+second.ID+":") ||
		who(retries[0]) == "" || who(retries[1]) == "" || !strings.HasSuffix(retries[1], ":ok") {
		t.Errorf("audit trail: retries %q, want the queued retry of %s and the --now retry of %s, each with who", retries, first.ID, second.ID)
	}
	code, out, errOut = e.cli("runs", "--status", "superseded", "--json")
	var sup []scripthost.Run
	if err := json.Unmarshal([]byte(out), &sup); code != 0 || err != nil || len(sup) != len(runs)-1 {
		t.Errorf("runs --status superseded: exit %d, %d runs, want %d: %s%s", code, len(sup), len(runs)-1, out, errOut)
	}
}
