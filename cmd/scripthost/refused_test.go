package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/scripthost/scripthost/ledger"
)

// refusalIn returns the data of the run's tool_refused events in the ledger at db.
func refusalsIn(t *testing.T, db, handler string) []map[string]any {
	t.Helper()
	st := openLedger(t, db)
	runs, err := st.Runs(context.Background(), ledger.RunFilter{Handler: handler})
	if err != nil || len(runs) != 1 {
		t.Fatalf("runs of %s: got %d (%v), want 1", handler, len(runs), err)
	}
	evs, err := st.LifecycleEvents(context.Background(), ledger.LifecycleFilter{RunID: runs[0].ID})
	if err != nil {
		t.Fatal(err)
	}
	var out []map[string]any
	for _, ev := range evs {
		if ev.Type == ledger.EventToolRefused {
			var d map[string]any
			if err := json.Unmarshal(ev.Data, &d); err != nil {
				t.Fatal(err)
			}
			d["run"] = runs[0].ID
			out = append(out, d)
		}
	}
	return out
}

// A second mutation in mutate is logged on the run as a tool_refused event with the
// tool, the phase, the reason and where the script made the call, and show --events
// prints it.
func TestRefusedCallInLifecycleLog(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(dir, "l.db")
	wf := jobWorkflow(t, dir, map[string]string{"MUTATE": "await Files.write({ path: 'out/again', content: 'x' });"})
	if code, _, stderr := runCLI(t, "--db", db, "run", wf, "--once"); code != 0 {
		t.Fatalf("run: got exit %d %q, want 0", code, stderr)
	}
	refused := refusalsIn(t, db, "work")
	if len(refused) != 1 {
		t.Fatalf("tool_refused events: got %v, want 1", refused)
	}
	d := refused[0]
	if d["tool"] != "Files.write" || d["phase"] != "mutate" || d["reason"] != "second_mutation" ||
		d["file"] != "workflow.js" || d["line"] != float64(7) || d["column"] == nil {
		t.Errorf("tool_refused data: got %v, want Files.write, mutate, second_mutation at workflow.js:7", d)
	}
	code, stdout, stderr := runCLI(t, "--db", db, "show", d["run"].(string), "--events")
	if code != 0 {
		t.Fatalf("show --events: exit %d %q", code, stderr)
	}
	line := regexp.MustCompile(`(?m)^.*tool_refused.*$`).FindString(stdout)
	if missing, ok := containsAllStr(line, "at=workflow.js:7:", "phase=mutate", "reason=second_mutation", "tool=Files.write"); !ok {
		t.Errorf("show --events: tool_refused line %q lacks %q:\n%s", line, missing, stdout)
	}
}

// A mutation from prepare is refused (phase) and logged on the run it fails, before
// the failure.
func TestPhaseRefusalInLifecycleLog(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(dir, "l.db")
	wf := jobWorkflow(t, dir, map[string]string{"PREPARE": "await Files.write({ path: 'early', content: 'x' });"})
	if code, _, stderr := runCLI(t, "--db", db, "run", wf, "--once"); code != exitBlocked {
		t.Fatalf("run: got exit %d %q, want %d", code, stderr, exitBlocked)
	}
	refused := refusalsIn(t, db, "work")
	if len(refused) != 1 || refused[0]["reason"] != "phase" || refused[0]["phase"] != "prepare" || refused[0]["line"] != float64(6) {
		t.Fatalf("tool_refused events: got %v, want one phase refusal in prepare at line 6", refused)
	}
	_, stdout, _ := runCLI(t, "--db", db, "show", refused[0]["run"].(string), "--events")
	if i, j := strings.Index(stdout, "tool_refused"), strings.Index(stdout, "phase_failed"); i < 0 || j < i {
		t.Errorf("show --events: want tool_refused before phase_failed:\n%s", stdout)
	}
}

// A tool missing from --tools is named as such where the script calls it, in test (a
// response for it is refused at load, not guessed to be a mutation that prepare may
// not call) and in run (the script's error names it with file:line).
func TestToolMissingFromToolsFile(t *testing.T) {
	dir := t.TempDir()
	wf := putFile(t, filepath.Join(dir, "wf", "workflow.js"), `export default {
  topics: ['people'],
  producers: { tick: { schedule: { every: '1h' }, publishes: ['people'],
    async handler() { await Topics.publish({ topic: 'people', id: 'ada', payload: { name: 'Ada' } }); } } },
  consumers: { greet: { subscribe: ['people'],
    async prepare() {
      const [ev] = await Topics.peek({ topic: 'people', limit: 1 });
      if (!ev) return null;
      const who = await Directory.lookup({ name: ev.payload.name });
      return { reservations: [{ topic: 'people', ids: [ev.id] }], data: who };
    },
    async mutate(who) { } } },
};
`)
	tools := putFile(t, filepath.Join(dir, "tools.json"), `{"tools": []}`)
	putFile(t, filepath.Join(dir, "wf", "fixtures", "ada.json"), `{
  "producers": [],
  "events": [{"topic": "people", "id": "ada", "payload": {"name": "Ada"}}],
  "responses": [{"tool": "Directory.lookup", "result": {"email": "ada@example.com"}}]
}`)
	code, stdout, _ := runCLI(t, "test", wf, "--tools", tools)
	if code == 0 || strings.Contains(stdout, "not allowed in 'prepare' phase") ||
		!strings.Contains(stdout, "responses[0]: tool Directory.lookup is neither a tool of the host nor declared under tools") {
		t.Errorf("test: got exit %d\n%s\nwant a failure naming Directory.lookup as undeclared, not a phase error", code, stdout)
	}
	db := filepath.Join(dir, "l.db")
	if err := os.MkdirAll(filepath.Join(dir, "ws"), 0o755); err != nil {
		t.Fatal(err)
	}
	if code, _, stderr := runCLI(t, "--db", db, "run", wf, "--tools", tools, "--workspace", filepath.Join(dir, "ws"), "--once"); code == 0 ||
		!strings.Contains(stderr, "workflow.js:9:") || !strings.Contains(stderr, "the host offers no tool Directory.*") ||
		strings.Contains(stderr, "not allowed in") {
		t.Errorf("run: got exit %d %q, want the missing Directory named at workflow.js:9", code, stderr)
	}
	runs, err := openLedger(t, db).Runs(context.Background(), ledger.RunFilter{Handler: "greet"})
	if err != nil || len(runs) != 1 {
		t.Fatalf("runs of greet: got %d (%v), want 1", len(runs), err)
	}
	if missing, ok := containsAllStr(runs[0].Error, "workflow.js:9:", "ReferenceError: Directory is not defined",
		"the host offers no tool Directory.*: is it missing from the host's tools, such as the --tools file?", "Files.*", "Topics.*"); !ok {
		t.Errorf("run error %q lacks %q", runs[0].Error, missing)
	}
}

func containsAllStr(s string, subs ...string) (string, bool) {
	for _, sub := range subs {
		if !strings.Contains(s, sub) {
			return sub, false
		}
	}
	return "", true
}

// The serve UI's run timeline shows a refused call with its reason and where the
// script made it.
func TestServeUIShowsRefusedCall(t *testing.T) {
	browser := chromium(t)
	dir := t.TempDir()
	db := filepath.Join(dir, "l.db")
	wf := jobWorkflow(t, dir, map[string]string{"MUTATE": "await Files.write({ path: 'out/again', content: 'x' });"})
	if code, _, stderr := runCLI(t, "--db", db, "run", wf, "--once"); code != 0 {
		t.Fatalf("run: got exit %d %q, want 0", code, stderr)
	}
	runID := refusalsIn(t, db, "work")[0]["run"].(string)
	s := startServe(t, db, "--token", testServeToken)

	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(browser), chromedp.Headless, chromedp.NoSandbox, chromedp.DisableGPU,
		chromedp.NoFirstRun, chromedp.NoDefaultBrowserCheck, chromedp.Flag("disable-background-networking", true),
	}
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	defer cancelAlloc()
	ctx, cancelTab := chromedp.NewContext(actx)
	defer cancelTab()
	ctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	row := `#timeline li[data-phase="mutate"]`
	var text string
	err := chromedp.Run(ctx,
		chromedp.Navigate(s.base+"/"),
		chromedp.WaitVisible(`#token`, chromedp.ByQuery),
		chromedp.SendKeys(`#token`, testServeToken, chromedp.ByQuery),
		chromedp.SendKeys(`#operator`, "dana", chromedp.ByQuery),
		chromedp.Click(`#login`, chromedp.ByQuery),
		chromedp.WaitVisible(`#runs, table, main`, chromedp.ByQuery),
		chromedp.Navigate(s.base+"/#/run/"+runID),
		chromedp.WaitVisible(row, chromedp.ByQuery),
		chromedp.Text(row, &text, chromedp.ByQuery))
	if err != nil {
		t.Fatal(err)
	}
	if missing, ok := containsAllStr(text, "tool_refused", "tool=Files.write", "reason=second_mutation", "at=workflow.js:7:"); !ok {
		t.Errorf("timeline row %q lacks %q", text, missing)
	}
}
