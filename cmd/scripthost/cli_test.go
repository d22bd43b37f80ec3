package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/scripthost/scripthost/ledger/sqlite"
)

// cli runs the CLI in-process and returns its exit code and output.
func runCLI(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var out, errOut bytes.Buffer
	code := execute(context.Background(), args, strings.NewReader(""), &out, &errOut)
	return code, out.String(), errOut.String()
}

func putFile(t *testing.T, path, content string) string {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// ledgerIsEmpty checks that a database holds no workflow and no run.
func ledgerIsEmpty(t *testing.T, db string) {
	t.Helper()
	if _, err := os.Stat(db); os.IsNotExist(err) {
		return
	}
	st, err := sqlite.Open(context.Background(), db, sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	wfs, err := st.Workflows(context.Background())
	if err != nil || len(wfs) != 0 {
		t.Errorf("workflows: got %v %v, want none", wfs, err)
	}
}

func TestRunBadInput(t *testing.T) {
	dir := t.TempDir()
	syntax := putFile(t, filepath.Join(dir, "syntax.js"), "export default {\n  topics: ['a'],\n  consumers: { c: { subscribe: ['a'], prepare() { return ; } } \n  oops here\n};\n")
	invalid := putFile(t, filepath.Join(dir, "invalid.js"), "export default { topics: ['a'], consumers: { c: { subscribe: ['b'], prepare() {} } } };\n")
	noDefault := putFile(t, filepath.Join(dir, "nodefault.js"), "const x = 1;\n")
	good := putFile(t, filepath.Join(dir, "good.js"), "export default { topics: ['a'], consumers: { c: { subscribe: ['a'], prepare() {} } } };\n")
	tests := []struct {
		name string
		args []string
		code int
		want []string
	}{
		{"syntax error", []string{"run", syntax, "--once"}, 3, []string{"syntax.js:4:"}},
		{"invalid definition", []string{"run", invalid, "--once"}, 3, []string{`consumer c: subscribes to undeclared topic "b"`, "invalid.js"}},
		{"no default export", []string{"run", noDefault, "--once"}, 3, []string{"default"}},
		{"missing file", []string{"run", filepath.Join(dir, "nope.js"), "--once"}, 2, []string{"nope.js"}},
		{"unknown language", []string{"run", putFile(t, filepath.Join(dir, "w.py"), "x"), "--once"}, 2, []string{"w.py", "unknown workflow language"}},
		{"unknown flag", []string{"run", good, "--frobnicate"}, 2, []string{"unknown flag: --frobnicate"}},
		{"no workflow", []string{"run"}, 2, []string{"requires at least 1 arg"}},
		{"unknown command", []string{"explode"}, 2, []string{`unknown command "explode"`}},
		{"bad workspace", []string{"run", good, "--once", "--workspace", filepath.Join(dir, "none")}, 2, []string{"--workspace"}},
		{"bad status", []string{"runs", "--status", "sleepy"}, 2, []string{`--status "sleepy"`}},
		{"bad reconcile policy", []string{"run", good, "--once", "--reconcile-attempts", "0"}, 2, []string{"--reconcile-attempts"}},
		{"bad concurrency", []string{"run", good, "--once", "--concurrency", "-1"}, 2, []string{"--concurrency must be 0"}},
		{"bad resolution", []string{"resolve", "m1", "--as", "maybe"}, 2, []string{`--as "maybe"`}},
		{"bad result json", []string{"resolve", "m1", "--as", "applied", "--result", "{"}, 2, []string{"--result is not valid JSON"}},
		{"resolve without a ledger", []string{"resolve", "m1", "--as", "skipped"}, exitLedger, []string{"no ledger at", "ledger.db"}},
		{"show without a ledger", []string{"show", "r1"}, exitLedger, []string{"no ledger at"}},
		{"retry without a ledger", []string{"retry", "r1"}, exitLedger, []string{"no ledger at"}},
		{"runs without a ledger", []string{"runs"}, exitLedger, []string{"no ledger at"}},
		{"mutations without a ledger", []string{"mutations"}, exitLedger, []string{"no ledger at"}},
		{"events without a ledger", []string{"events"}, exitLedger, []string{"no ledger at"}},
		{"pause without a ledger", []string{"pause", "w"}, exitLedger, []string{"no ledger at"}},
		{"resume without a ledger", []string{"resume", "w"}, exitLedger, []string{"no ledger at"}},
		{"plan show without a ledger", []string{"plan", "show", "p1"}, exitLedger, []string{"no ledger at"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			db := filepath.Join(t.TempDir(), "ledger.db")
			code, _, stderr := runCLI(t, append([]string{"--db", db}, tt.args...)...)
			if code != tt.code {
				t.Errorf("exit code: got %d, want %d (stderr %q)", code, tt.code, stderr)
			}
			for _, w := range tt.want {
				if !strings.Contains(stderr, w) {
					t.Errorf("stderr %q lacks %q", stderr, w)
				}
			}
			ledgerIsEmpty(t, db)
			if strings.Contains(tt.name, "without a ledger") {
				if _, err := os.Stat(db); !os.IsNotExist(err) {
					t.Errorf("%s: got %v, want no file created", db, err)
				}
			}
		})
	}
}

// Refusing a file that is not a ledger leaves nothing beside it.
func TestNoLockBesideANonLedger(t *testing.T) {
	dir := t.TempDir()
	notes := putFile(t, filepath.Join(dir, "notes.txt"), strings.Repeat("my notes\n", 200))
	good := putFile(t, filepath.Join(dir, "wf", "good.js"), "export default { topics: ['a'], consumers: { c: { subscribe: ['a'], prepare() {} } } };\n")
	for _, args := range [][]string{{"run", good, "--once"}, {"runs"}, {"plan", "show", "p1"}} {
		code, _, stderr := runCLI(t, append([]string{"--db", notes}, args...)...)
		if code != exitLedger || !strings.Contains(stderr, "notes.txt") {
			t.Errorf("%v: got exit %d %q, want %d naming the file", args, code, stderr, exitLedger)
		}
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 2 {
		t.Errorf("got %d files in the directory, want the 2 there were", len(entries))
	}
}

func TestLedgerFileProblems(t *testing.T) {
	dir := t.TempDir()
	corrupt := putFile(t, filepath.Join(dir, "corrupt.db"), strings.Repeat("not a database ", 100))
	before, _ := os.ReadFile(corrupt)
	code, _, stderr := runCLI(t, "--db", corrupt, "runs")
	if code != exitLedger || !strings.Contains(stderr, "corrupt.db") {
		t.Errorf("corrupt ledger: got %d %q, want exit %d naming the file", code, stderr, exitLedger)
	}
	if after, _ := os.ReadFile(corrupt); !bytes.Equal(before, after) {
		t.Error("corrupt ledger file was modified")
	}

	// A second host on the same ledger is refused while the first holds it.
	db := filepath.Join(dir, "busy.db")
	// An embedding host takes the same lock as run.
	first, err := sqlite.Open(context.Background(), db, sqlite.Options{HostLock: true})
	if err != nil {
		t.Fatal(err)
	}
	good := putFile(t, filepath.Join(dir, "wf", "good.js"), "export default { topics: ['a'], consumers: { c: { subscribe: ['a'], prepare() {} } } };\n")
	code, _, stderr = runCLI(t, "--db", db, "run", good, "--once")
	first.Close()
	if code != exitLedger || !strings.Contains(stderr, "busy.db") || !strings.Contains(stderr, "another scripthost process") {
		t.Errorf("locked ledger: got %d %q, want exit %d naming the file", code, stderr, exitLedger)
	}
}

func TestRunAndInspect(t *testing.T) {
	dir := t.TempDir()
	ws := filepath.Join(dir, "ws")
	putFile(t, filepath.Join(ws, "inbox", "a.txt"), "alpha")
	putFile(t, filepath.Join(ws, "inbox", "b.txt"), "beta")
	db := filepath.Join(dir, "ledger.db")
	wf, _ := filepath.Abs("../../scripts/files/workflow.js")
	code, stdout, stderr := runCLI(t, "--db", db, "run", wf, "--once", "--workspace", ws)
	if code != 0 {
		t.Fatalf("run: exit %d: %s", code, stderr)
	}
	if !strings.Contains(stdout, "[files/report] done: a.txt") {
		t.Errorf("console output: got %q", stdout)
	}
	for name, want := range map[string]string{"a.txt": "ALPHA", "b.txt": "BETA"} {
		got, err := os.ReadFile(filepath.Join(ws, "outbox", name))
		if err != nil || string(got) != want {
			t.Errorf("outbox/%s: got %q %v, want %q", name, got, err, want)
		}
	}

	var runs []map[string]any
	code, stdout, _ = runCLI(t, "--db", db, "runs", "--json")
	if err := json.Unmarshal([]byte(stdout), &runs); err != nil || code != 0 {
		t.Fatalf("runs --json: %v %d %q", err, code, stdout)
	}
	if len(runs) != 5 {
		t.Errorf("runs: got %d, want 5", len(runs))
	}
	for _, r := range runs {
		for _, k := range []string{"id", "workflow", "handler", "phase", "status"} {
			if _, ok := r[k]; !ok {
				t.Errorf("run %v lacks %s", r, k)
			}
		}
		if r["status"] != "committed" {
			t.Errorf("run %v: want committed", r)
		}
	}

	// --limit keeps the newest runs, in order.
	var newest []map[string]any
	_, stdout, _ = runCLI(t, "--db", db, "runs", "--json", "--limit", "2")
	if err := json.Unmarshal([]byte(stdout), &newest); err != nil || len(newest) != 2 || newest[0]["id"] != runs[3]["id"] || newest[1]["id"] != runs[4]["id"] {
		t.Errorf("runs --limit 2: got %v %v, want the last two of %d", newest, err, len(runs))
	}

	var muts []map[string]any
	_, stdout, _ = runCLI(t, "--db", db, "mutations", "--status", "applied", "--json")
	if err := json.Unmarshal([]byte(stdout), &muts); err != nil {
		t.Fatal(err)
	}
	if len(muts) != 2 {
		t.Fatalf("applied mutations: got %d, want 2", len(muts))
	}
	for _, m := range muts {
		for _, k := range []string{"id", "run_id", "tool", "status", "idempotency_key", "result", "error"} {
			if _, ok := m[k]; !ok {
				t.Errorf("mutation %v lacks %s", m, k)
			}
		}
		if m["tool"] != "Files.write" {
			t.Errorf("tool: got %v, want Files.write", m["tool"])
		}
	}
	_, stdout, _ = runCLI(t, "--db", db, "mutations", "--status", "indeterminate", "--json")
	if strings.TrimSpace(stdout) != "[]" {
		t.Errorf("no indeterminate mutations: got %q, want []", stdout)
	}

	var evs []map[string]any
	_, stdout, _ = runCLI(t, "--db", db, "events", "--json")
	if err := json.Unmarshal([]byte(stdout), &evs); err != nil || len(evs) != 4 {
		t.Fatalf("events: %v %d", err, len(evs))
	}

	// show: one run with its snapshots, one per transition.
	id := runs[1]["id"].(string)
	code, stdout, _ = runCLI(t, "--db", db, "show", id)
	var d struct {
		Run       map[string]any   `json:"run"`
		Snapshots []map[string]any `json:"snapshots"`
		Mutation  map[string]any   `json:"mutation"`
	}
	if err := json.Unmarshal([]byte(stdout), &d); err != nil || code != 0 {
		t.Fatalf("show: %v %q", err, stdout)
	}
	if len(d.Snapshots) < 6 || d.Mutation["tool"] != "Files.write" {
		t.Errorf("show: got %d snapshots and mutation %v, want the consumer's phases and its Files.write", len(d.Snapshots), d.Mutation)
	}

	// pause / resume.
	if code, out, _ := runCLI(t, "--db", db, "pause", "files"); code != 0 || !strings.Contains(out, "paused") {
		t.Errorf("pause: %d %q", code, out)
	}
	if code, out, _ := runCLI(t, "--db", db, "resume", "files"); code != 0 || !strings.Contains(out, "resumed") {
		t.Errorf("resume: %d %q", code, out)
	}
	if code, _, stderr := runCLI(t, "--db", db, "pause", "nope"); code != exitRefused {
		t.Errorf("pause unknown workflow: got %d %q, want %d", code, stderr, exitRefused)
	}
}

func TestValidate(t *testing.T) {
	wf, _ := filepath.Abs("../../scripts/files/workflow.js")
	code, stdout, stderr := runCLI(t, "validate", wf)
	if code != 0 || !strings.Contains(stdout, "producer scan (every 5m0s)") || !strings.Contains(stdout, "consumer process (on files)") {
		t.Errorf("validate: got %d %q %q", code, stdout, stderr)
	}
}
