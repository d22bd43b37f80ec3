package main

import (
	"crypto/sha256"
	"database/sql"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/scripthost/scripthost"
	"github.com/scripthost/scripthost/internal/fakesvc"
	"github.com/scripthost/scripthost/internal/pgtest"
)

// recordedPayments runs scripts/payments through the CLI with --record-calls against
// the fake payment service on loopback, and returns the environment and the ids of
// its runs by handler.
func recordedPayments(t *testing.T) (*httpEnv, map[string][]string) {
	t.Helper()
	return recordedPaymentsIn(t, filepath.Join(t.TempDir(), "ledger.db"))
}

func recordedPaymentsIn(t *testing.T, db string) (*httpEnv, map[string][]string) {
	t.Helper()
	t.Setenv("PAYMENTS_API_KEY", "sk_example_key_123")
	svc := fakesvc.New()
	t.Cleanup(svc.Close)
	const example = "../../scripts/payments"
	dir := t.TempDir()
	for _, f := range []string{"workflow.js", "invoices.json"} {
		writeFile(t, filepath.Join(dir, f), readFileT(t, filepath.Join(example, f)))
	}
	tools := strings.ReplaceAll(readFileT(t, filepath.Join(example, "tools.json")), "http://127.0.0.1:8787", svc.URL())
	writeFile(t, filepath.Join(dir, "tools.json"), tools)
	e := &httpEnv{t: t, dir: dir, db: db, wf: filepath.Join(dir, "workflow.js"), tools: filepath.Join(dir, "tools.json")}
	e.mustRun("--name", "payments", "--record-calls")
	var runs []scripthost.Run
	e.listJSON(&runs, "runs")
	ids := map[string][]string{}
	for _, r := range runs {
		ids[r.Handler] = append(ids[r.Handler], r.ID)
	}
	if len(ids["invoices"]) != 1 || len(ids["pay"]) != 3 {
		t.Fatalf("runs: got %v, want one invoices run and three pay runs", ids)
	}
	return e, ids
}

func fileHash(t *testing.T, path string) [32]byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return sha256.Sum256(b)
}

// TestFixtureRecordPasses: runs recorded from a real ledger become a fixture (one for
// all, and one per run with -o DIR) that `scripthost test` passes against the code
// that made them; the ledger is not written.
func TestFixtureRecordPasses(t *testing.T) {
	e, ids := recordedPayments(t)
	before := fileHash(t, e.db)
	out := filepath.Join(t.TempDir(), "recorded.json")
	args := append([]string{"--db", e.db, "fixture", "record", "-o", out, ids["invoices"][0]}, ids["pay"]...)
	code, stdout, stderr := cli(t, "", args...)
	if code != 0 {
		t.Fatalf("fixture record: exit %d\n%s%s", code, stdout, stderr)
	}
	raw := readFileT(t, out)
	for _, want := range []string{`"Files.read"`, `"Payments.charge"`, `"handler": "receipts"`, `"cents": 18199`} {
		if !strings.Contains(raw, want) {
			t.Errorf("fixture lacks %s:\n%s", want, raw)
		}
	}
	code, stdout, stderr = cli(t, "", "test", e.wf, "--fixtures", out, "--tools", e.tools)
	if code != 0 || !strings.Contains(stdout, "ok      recorded.json") {
		t.Fatalf("test of the recorded fixture: exit %d\n%s%s\nfixture:\n%s", code, stdout, stderr, raw)
	}

	dir := filepath.Join(t.TempDir(), "each") + "/"
	code, stdout, stderr = cli(t, "", append([]string{"--db", e.db, "fixture", "record", "-o", dir}, ids["pay"]...)...)
	if code != 0 || strings.Count(stdout, "wrote ") != 3 {
		t.Fatalf("fixture record -o DIR: exit %d\n%s%s", code, stdout, stderr)
	}
	code, stdout, stderr = cli(t, "", "test", e.wf, "--fixtures", dir, "--tools", e.tools)
	if code != 0 || !strings.Contains(stdout, "3 fixtures, 3 passed, 0 failed") {
		t.Fatalf("test of the per-run fixtures: exit %d\n%s%s", code, stdout, stderr)
	}
	if fileHash(t, e.db) != before {
		t.Error("fixture record changed the ledger file")
	}
}

// TestReplayCLI: replaying the recorded ledger against the unchanged code reports
// every run ok; a changed charge reports the pay runs' first divergence at the line of
// the call, exit 1; --workflow and --since select runs; the ledger is not written.
func TestReplayCLI(t *testing.T) {
	e, ids := recordedPayments(t)
	before := fileHash(t, e.db)
	code, stdout, stderr := cli(t, "", "test", e.wf, "--replay", e.db, "--tools", e.tools)
	if code != 0 {
		t.Fatalf("replay of the unchanged code: exit %d\n%s%s", code, stdout, stderr)
	}
	total := len(ids["invoices"]) + len(ids["pay"]) + len(ids["receipts"])
	if n := len(regexp.MustCompile(`(?m)^ok  `).FindAllString(stdout, -1)); n != total || strings.Contains(stdout, "DIVERGED") {
		t.Errorf("got %d ok of %d runs:\n%s", n, total, stdout)
	}

	src := readFileT(t, e.wf)
	changed := strings.Replace(src, "amount: inv.amount,", "amount: inv.amount + 1,", 1)
	if changed == src {
		t.Fatal("the change does not apply")
	}
	wf2 := filepath.Join(t.TempDir(), "workflow.js")
	writeFile(t, wf2, changed)
	line := strings.Count(changed[:strings.Index(changed, "await Payments.charge")], "\n") + 1
	code, stdout, stderr = cli(t, "", "test", wf2, "--replay", e.db, "--workflow", "payments", "--tools", e.tools)
	if code != 1 {
		t.Fatalf("replay of changed code: exit %d, want 1\n%s%s", code, stdout, stderr)
	}
	want := regexp.MustCompile(`workflow\.js:` + itoa(line) + `:\d+: different call: call 1: Payments\.charge input`)
	if got := len(want.FindAllString(stdout, -1)); got != 3 {
		t.Errorf("want 3 divergences matching %s, got %d:\n%s", want, got, stdout)
	}
	if !strings.Contains(stdout, ".amount: got 4201, want 4200") {
		t.Errorf("no field diff in:\n%s", stdout)
	}
	if want := "payments: " + itoa(total) + " runs replayed, " + itoa(total-3) + " ok, 3 diverged\n"; !strings.Contains(stdout, want) {
		t.Errorf("no summary:\n%s", stdout)
	}

	// --since in the future selects nothing: a clear error, not a pass.
	future := time.Now().Add(time.Hour).UTC().Format(time.RFC3339)
	code, _, stderr = cli(t, "", "test", e.wf, "--replay", e.db, "--since", future)
	if code != 2 || !strings.Contains(stderr, "no finished runs of workflow payments since") {
		t.Errorf("--since future: exit %d, stderr %s", code, stderr)
	}
	code, stdout, _ = cli(t, "", "test", e.wf, "--replay", e.db, "--since", "1h", "--tools", e.tools)
	if code != 0 || !strings.Contains(stdout, " runs replayed") {
		t.Errorf("--since 1h: exit %d\n%s", code, stdout)
	}
	code, _, stderr = cli(t, "", "test", e.wf, "--replay", e.db, "--workflow", "nope")
	if code != 2 || !strings.Contains(stderr, "no finished runs of workflow nope") {
		t.Errorf("--workflow nope: exit %d, stderr %s", code, stderr)
	}
	if fileHash(t, e.db) != before {
		t.Error("replay changed the ledger file")
	}
}

// TestReplayBadLedger: a missing path, a file that is no database, a database that is
// no ledger and an unknown run id each give a clear error.
func TestReplayBadLedger(t *testing.T) {
	dir := t.TempDir()
	wf := filepath.Join(dir, "workflow.js")
	writeFile(t, wf, readFileT(t, "../../scripts/payments/workflow.js"))
	text := filepath.Join(dir, "notes.txt")
	writeFile(t, text, "not a database at all, just some words")
	foreign := filepath.Join(dir, "other.db")
	foreignDB(t, foreign)
	for _, tc := range []struct {
		ledger, want string
	}{
		{filepath.Join(dir, "missing.db"), "no such ledger file"},
		{text, "not an SQLite database"},
		{foreign, "without the ledger schema"},
	} {
		code, _, stderr := cli(t, "", "test", wf, "--replay", tc.ledger)
		if code != exitLedger || !strings.Contains(stderr, tc.want) || !strings.Contains(stderr, tc.ledger) {
			t.Errorf("--replay %s: exit %d, stderr %q, want %q naming the file", tc.ledger, code, stderr, tc.want)
		}
	}
	code, _, stderr := cli(t, "", "test", wf, "--since", "1h")
	if code != 2 || !strings.Contains(stderr, "goes with --replay") {
		t.Errorf("--since without --replay: exit %d, stderr %q", code, stderr)
	}
	code, _, stderr = cli(t, "", "test", wf, "--replay", text, "--since", "yesterday")
	if code != 2 || !strings.Contains(stderr, `--since "yesterday"`) {
		t.Errorf("bad --since: exit %d, stderr %q", code, stderr)
	}
	e, _ := recordedPayments(t)
	code, _, stderr = cli(t, "", "--db", e.db, "fixture", "record", "no-such-run")
	if code != exitRefused || !strings.Contains(stderr, "no-such-run") || !strings.Contains(stderr, "not found") {
		t.Errorf("unknown run: exit %d, stderr %q", code, stderr)
	}
	code, _, stderr = cli(t, "", "--db", e.db, "fixture", "record")
	if code != 2 || !strings.Contains(stderr, "name runs, or --workflow") {
		t.Errorf("no run: exit %d, stderr %q", code, stderr)
	}
}

// foreignDB creates an SQLite database that is not a ledger.
func foreignDB(t *testing.T, path string) {
	t.Helper()
	db, err := sql.Open("sqlite3", path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec(`CREATE TABLE notes (body TEXT)`); err != nil {
		t.Fatal(err)
	}
}

func itoa(n int) string {
	b, _ := json.Marshal(n)
	return string(b)
}

// TestReplayPostgres: a shared (postgres://) ledger is replayed and recorded from like
// an SQLite file.
func TestReplayPostgres(t *testing.T) {
	e, ids := recordedPaymentsIn(t, pgtest.URL(t))
	code, stdout, stderr := cli(t, "", "test", e.wf, "--replay", e.db, "--workflow", "payments", "--tools", e.tools)
	if code != 0 || !strings.Contains(stdout, " 0 diverged\n") {
		t.Fatalf("replay from postgres: exit %d\n%s%s", code, stdout, stderr)
	}
	code, stdout, stderr = cli(t, "", "--db", e.db, "fixture", "record", ids["pay"][0])
	if code != 0 || !strings.Contains(stdout, `"Payments.charge"`) {
		t.Fatalf("record from postgres: exit %d\n%s%s", code, stdout, stderr)
	}
}

// TestRecordAndReplayFilesExample: the files example's whole pass, recorded with
// --workflow, is a fixture that passes; its replay is ok, and a changed output file
// diverges at the Files.write call.
func TestRecordAndReplayFilesExample(t *testing.T) {
	dir := t.TempDir()
	wf := filepath.Join(dir, "files", "workflow.js")
	ws := filepath.Join(dir, "ws")
	db := filepath.Join(t.TempDir(), "ledger.db")
	writeFileAll(t, wf, readFileT(t, filesExample))
	writeFileAll(t, filepath.Join(ws, "inbox", "a.txt"), "hello\n")
	writeFileAll(t, filepath.Join(ws, "inbox", "b.txt"), "world\n")
	code, out, errOut := cli(t, "", "--db", db, "run", wf, "--once", "--workspace", ws, "--record-calls")
	if code != 0 {
		t.Fatalf("run: exit %d\n%s%s", code, out, errOut)
	}
	fx := filepath.Join(t.TempDir(), "pass.json")
	code, out, errOut = cli(t, "", "--db", db, "fixture", "record", "--workflow", "files", "-o", fx)
	if code != 0 {
		t.Fatalf("fixture record --workflow: exit %d\n%s%s", code, out, errOut)
	}
	code, out, errOut = cli(t, "", "test", wf, "--fixtures", fx)
	if code != 0 {
		t.Fatalf("test of the recorded pass: exit %d\n%s%s\n%s", code, out, errOut, readFileT(t, fx))
	}
	code, out, errOut = cli(t, "", "test", wf, "--replay", db)
	if code != 0 || strings.Contains(out, "DIVERGED") {
		t.Fatalf("replay: exit %d\n%s%s", code, out, errOut)
	}
	src := readFileT(t, wf)
	changed := strings.Replace(src, "prepared.content.toUpperCase()", "prepared.content.toLowerCase()", 1)
	writeFileAll(t, wf, changed)
	line := strings.Count(changed[:strings.Index(changed, "await Files.write")], "\n") + 1
	code, out, _ = cli(t, "", "test", wf, "--replay", db)
	want := "workflow.js:" + itoa(line) + ":"
	if code != 1 || strings.Count(out, want) != 2 || !strings.Contains(out, `.content: got "hello\n", want "HELLO\n"`) {
		t.Errorf("replay of changed code: exit %d, want 1 and two divergences at %s\n%s", code, want, out)
	}
}

func writeFileAll(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	writeFile(t, path, content)
}
