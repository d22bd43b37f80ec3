package main

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// codeWorkspace copies the code example's Go project into a temp dir.
func codeWorkspace(t *testing.T) (ws, db string) {
	t.Helper()
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("go is not on PATH: lsp_check cannot check the example project here")
	}
	ws = filepath.Join(t.TempDir(), "ws")
	if err := os.CopyFS(ws, os.DirFS("../../codegraph/testdata/go")); err != nil {
		t.Fatal(err)
	}
	return ws, filepath.Join(t.TempDir(), "ledger.db")
}

// TestPlanExampleCode runs the code example plan through the CLI: read a file,
// splice_patch a method after a confirmation on the terminal, lsp_check the project.
func TestPlanExampleCode(t *testing.T) {
	ws, db := codeWorkspace(t)
	code, out, errOut := cli(t, "y\n", "--db", db, "plan", "run", "../../scripts/plans/code-fix.json", "--approve", "--by", "ci", "--workspace", ws)
	if code != 0 {
		t.Fatalf("got exit %d, want 0\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
	}
	if !strings.Contains(out, "execution code-fix/1 completed, 3 of 3 steps in ") || !strings.Contains(errOut, "step patch (splice_patch) requires confirmation") {
		t.Fatalf("got\n%s\n%s\nwant the completed summary after a confirmation", out, errOut)
	}
	src, _ := os.ReadFile(filepath.Join(ws, "shapes", "shapes.go"))
	if !strings.Contains(string(src), "r2 := c.R * c.R\n\treturn math.Pi * r2\n}\n\n// Square") {
		t.Fatalf("shapes.go after the plan:\n%s", src)
	}
	code, out, errOut = cli(t, "", "--db", db, "plan", "show", "code-fix/1/check", "--json")
	if code != 0 {
		t.Fatalf("show: exit %d: %s", code, errOut)
	}
	var recs []struct {
		Result      json.RawMessage `json:"result"`
		Diagnostics json.RawMessage `json:"diagnostics"`
	}
	if err := json.Unmarshal([]byte(out), &recs); err != nil || len(recs) != 1 {
		t.Fatalf("show --json: %v\n%s", err, out)
	}
	var res, diag bytes.Buffer
	_ = json.Compact(&res, recs[0].Result)
	_ = json.Compact(&diag, recs[0].Diagnostics)
	if !strings.Contains(res.String(), `"checker":"go vet"`) || !strings.Contains(res.String(), `"ok":true`) {
		t.Errorf("check result: %s", res.String())
	}
	if !strings.Contains(diag.String(), `"intent":"Compute a circle's area`) {
		t.Errorf("evidence lacks the intent: %s", diag.String())
	}
}

// TestPlanExampleCodeTypeError: the variant whose patch does not type-check fails its
// check step with the compiler's diagnostic (file, line, code), kept as evidence.
func TestPlanExampleCodeTypeError(t *testing.T) {
	ws, db := codeWorkspace(t)
	code, out, errOut := cli(t, "", "--db", db, "plan", "run", "../../scripts/plans/code-fix-bad.json", "--approve", "--by", "ci",
		"--workspace", ws, "--non-interactive=approve")
	if code != 30 {
		t.Fatalf("got exit %d, want 30\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
	}
	if !strings.Contains(out, "check failed E301") {
		t.Fatalf("got\n%s\nwant the check step failed with E301", out)
	}
	code, out, errOut = cli(t, "", "--db", db, "plan", "show", "code-fix-bad/1")
	if code != 0 {
		t.Fatalf("show: exit %d: %s", code, errOut)
	}
	want := `check: shapes/shapes.go:20:9: error IncompatibleAssign: cannot use "pi r squared" (untyped string constant) as float64 value in return statement (go build)`
	if !strings.Contains(out, want) || !strings.Contains(out, "intent: Compute a circle's area") {
		t.Fatalf("plan show:\n%s\nwant the line\n%s", out, want)
	}
}

// TestCodeCommands: code index is incremental; symbols and refs answer from it.
func TestCodeCommands(t *testing.T) {
	dir := t.TempDir()
	if err := os.CopyFS(dir, os.DirFS("../../codegraph/testdata/go")); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := cli(t, "", "code", "index", dir, "--json")
	if code != 0 || !strings.Contains(out, `"parsed": 2`) {
		t.Fatalf("index: exit %d\n%s%s", code, out, errOut)
	}
	if _, err := os.Stat(filepath.Join(dir, "codegraph.db")); err != nil {
		t.Fatal(err)
	}
	code, out, _ = cli(t, "", "code", "index", dir, "--json")
	if code != 0 || !strings.Contains(out, `"parsed": 0`) || !strings.Contains(out, `"unchanged": 2`) {
		t.Fatalf("second index: exit %d\n%s", code, out)
	}
	code, out, _ = cli(t, "", "code", "symbols", "--dir", dir, "shapes/shapes.go")
	if code != 0 || !strings.Contains(out, "Circle.Area") || !strings.Contains(out, "shapes/shapes.go:17-19") {
		t.Fatalf("symbols: exit %d\n%s", code, out)
	}
	code, out, _ = cli(t, "", "code", "refs", "--dir", dir, "Total")
	if code != 0 || !strings.Contains(out, "main.go:10:21") {
		t.Fatalf("refs: exit %d\n%s", code, out)
	}
	if code, _, errOut := cli(t, "", "code", "symbols", "--dir", dir, "../escape.go"); code == 0 || !strings.Contains(errOut, "outside") {
		t.Fatalf("escape: exit %d: %s", code, errOut)
	}
	if code, _, errOut := cli(t, "", "code", "symbols", "--dir", dir, "shapes/missing.go"); code == 0 || !strings.Contains(errOut, "shapes/missing.go: no such file") {
		t.Fatalf("missing file: exit %d: %s", code, errOut)
	}
}

// TestWorkflowCodeQueries: a workflow reads the code index with the read-only Code.*
// tools in its prepare phase.
func TestWorkflowCodeQueries(t *testing.T) {
	dir := t.TempDir()
	ws := filepath.Join(dir, "ws")
	putFile(t, filepath.Join(ws, "lib.go"), "package lib\n\nfunc F() int { return 1 }\n\nfunc G() int { return F() + F() }\n")
	wf := putFile(t, filepath.Join(dir, "code", "workflow.js"), `export default {
  topics: ['jobs'],
  producers: { tick: { schedule: { every: '1h' }, publishes: ['jobs'],
    async handler() { await Topics.publish({ topic: 'jobs', id: 'job-1', payload: {} }); } } },
  consumers: { work: { subscribe: ['jobs'],
    async prepare() {
      const [ev] = await Topics.peek({ topic: 'jobs', limit: 1 });
      if (!ev) return null;
      const syms = await Code.symbols({ path: 'lib.go' });
      const refs = await Code.references({ name: 'F' });
      const from = await Code.referencesFrom({ path: 'lib.go', name: 'F' });
      return { reservations: [{ topic: 'jobs', ids: [ev.id] }],
        data: syms.symbols.map(s => s.name).join(',') + ' ' + refs.references.length + ' ' + from.references[0].start_line };
    },
    async mutate(d) { await Files.write({ path: 'out.txt', content: d }); },
    async next() { return {}; } } },
};
`)
	code, _, stderr := runCLI(t, "--db", filepath.Join(dir, "l.db"), "run", wf, "--once", "--workspace", ws)
	if code != 0 {
		t.Fatalf("run: exit %d: %s", code, stderr)
	}
	got, err := os.ReadFile(filepath.Join(ws, "out.txt"))
	if err != nil || string(got) != "F,G 2 5" {
		t.Fatalf("out.txt: got %q, %v; want \"F,G 2 5\"", got, err)
	}
}

// TestCodeCheckCommand: code check prints the checker's diagnostics and exits 30 when
// the project has errors.
func TestCodeCheckCommand(t *testing.T) {
	ws, _ := codeWorkspace(t)
	code, out, errOut := cli(t, "", "code", "check", "--dir", ws)
	if code != 0 || !strings.Contains(out, "go vet in .: 0 errors, 0 warnings") {
		t.Fatalf("clean: exit %d\n%s%s", code, out, errOut)
	}
	putFile(t, filepath.Join(ws, "shapes", "bad.go"), "package shapes\n\nfunc Bad() int { return undefinedThing }\n")
	code, out, errOut = cli(t, "", "code", "check", "--dir", ws, "shapes")
	if code != 30 || !strings.Contains(out, "shapes/bad.go:3:25: error UndeclaredName: undefined: undefinedThing") {
		t.Fatalf("type error: exit %d\n%s%s", code, out, errOut)
	}
}
