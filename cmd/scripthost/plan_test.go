package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/scripthost/scripthost/plan"
)

const tidyPlan = "../../scripts/plans/tidy.json"

// cli runs the CLI in-process and returns its exit code, stdout and stderr.
func cli(t *testing.T, stdin string, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	code := execute(context.Background(), args, strings.NewReader(stdin), &out, &errb)
	return code, out.String(), errb.String()
}

// tidyWorkspace copies the example's workspace into a temp dir.
func tidyWorkspace(t *testing.T) (ws, db string) {
	t.Helper()
	ws = filepath.Join(t.TempDir(), "ws")
	if err := os.CopyFS(ws, os.DirFS("../../scripts/plans/tidy-workspace")); err != nil {
		t.Fatal(err)
	}
	return ws, filepath.Join(t.TempDir(), "ledger.db")
}

// TestPlanExampleTidy runs the example plan end to end through the CLI, then reads its
// evidence back with plan show.
func TestPlanExampleTidy(t *testing.T) {
	ws, db := tidyWorkspace(t)
	code, out, errOut := cli(t, "", "--db", db, "plan", "run", tidyPlan, "--approve", "--by", "ci",
		"--workspace", ws, "--non-interactive=approve", "--allow-read-only", "wc")
	if code != 0 {
		t.Fatalf("got exit %d, want 0\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
	}
	if !strings.Contains(out, "execution tidy/1 completed, 7 of 7 steps") {
		t.Errorf("got output\n%s\nwant the completed summary", out)
	}
	for _, f := range []string{"archive/2026/INDEX.md", "archive/2026/2026-01-05.txt", "archive/2026/2026-01-12.txt"} {
		if _, err := os.Stat(filepath.Join(ws, f)); err != nil {
			t.Errorf("got %v, want %s", err, f)
		}
	}
	if entries, _ := os.ReadDir(filepath.Join(ws, "inbox")); len(entries) != 0 {
		t.Errorf("got %d files left in the inbox, want 0", len(entries))
	}

	code, out, errOut = cli(t, "", "--db", db, "plan", "show", "tidy/1", "--json")
	if code != 0 {
		t.Fatalf("show: got exit %d: %s", code, errOut)
	}
	var recs []map[string]any
	if err := json.Unmarshal([]byte(out), &recs); err != nil || len(recs) != 7 {
		t.Fatalf("show: got %d records (%v), want 7", len(recs), err)
	}
	if got := recs[5]["stdout"].(string); !strings.Contains(got, "total") {
		t.Errorf("show: got wc stdout %q, want its output", got)
	}
	code, out, _ = cli(t, "", "--db", db, "plan", "show", "tidy/1/count-lines")
	if code != 0 || !strings.Contains(out, "tidy/1/count-lines") || strings.Contains(out, "tidy/1/check-index") {
		t.Errorf("show one step: got exit %d\n%s", code, out)
	}
	if code, _, _ := cli(t, "", "--db", db, "plan", "show", "tidy/9"); code != 1 {
		t.Errorf("show unknown: got exit %d, want 1", code)
	}
}

func TestPlanRunConfirmationPolicies(t *testing.T) {
	tests := []struct {
		name  string
		flags []string
		stdin string
		want  int
	}{
		{"non-interactive approve", []string{"--non-interactive=approve"}, "", 0},
		{"non-interactive deny", []string{"--non-interactive=deny"}, "y\n", plan.ExitConfirmationDenied},
		{"prompt answered yes", nil, "y\n", 0},
		{"prompt answered no", nil, "n\n", plan.ExitConfirmationDenied},
		{"prompt without input", nil, "", plan.ExitConfirmationDenied},
		{"bad policy", []string{"--non-interactive=maybe"}, "", 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ws, db := tidyWorkspace(t)
			args := append([]string{"--db", db, "plan", "run", tidyPlan, "--approve", "--workspace", ws, "--allow-read-only", "wc"}, tt.flags...)
			code, out, errOut := cli(t, tt.stdin, args...)
			if code != tt.want {
				t.Fatalf("got exit %d, want %d\nstdout:\n%s\nstderr:\n%s", code, tt.want, out, errOut)
			}
			if tt.flags == nil && !strings.Contains(errOut, "step archive-retro (Files.move) requires confirmation") {
				t.Errorf("got stderr %q, want the question", errOut)
			}
			moved := fileExists(filepath.Join(ws, "archive/2026/2026-01-12.txt"))
			if moved != (tt.want == 0) {
				t.Errorf("got retro moved=%v, want %v", moved, tt.want == 0)
			}
		})
	}
}

func TestPlanRunAuthorization(t *testing.T) {
	ws, db := tidyWorkspace(t)
	dir := t.TempDir()
	auth := filepath.Join(dir, "auth.json")
	if code, _, errOut := cli(t, "", "plan", "approve", tidyPlan, "--by", "alice", "-o", auth); code != 0 {
		t.Fatalf("approve: got exit %d: %s", code, errOut)
	}
	denied := filepath.Join(dir, "denied.json")
	if code, _, _ := cli(t, "", "plan", "approve", tidyPlan, "--deny", "-o", denied); code != 0 {
		t.Fatal("approve --deny failed")
	}
	// The same plan with one argument changed no longer matches the hash.
	raw, _ := os.ReadFile(tidyPlan)
	changed := filepath.Join(dir, "changed.json")
	if err := os.WriteFile(changed, bytes.Replace(raw, []byte("inbox/*.txt"), []byte("inbox/*"), 1), 0o644); err != nil {
		t.Fatal(err)
	}
	base := []string{"--db", db, "plan", "run", "--workspace", ws, "--non-interactive=approve", "--allow-read-only", "wc"}
	tests := []struct {
		name string
		args []string
		want int
		msg  string
	}{
		{"no approval", []string{tidyPlan}, 1, plan.CodeE002NotApproved},
		{"denied", []string{tidyPlan, "--authorization", denied}, 1, plan.CodeE002NotApproved},
		{"changed plan", []string{changed, "--authorization", auth}, 1, plan.CodeE003HashMismatch},
		{"both flags", []string{tidyPlan, "--authorization", auth, "--approve"}, 2, "not both"},
		{"missing plan file", []string{filepath.Join(dir, "nope.json"), "--approve"}, 2, "no such file"},
		{"approved", []string{tidyPlan, "--authorization", auth, "--jsonl"}, 0, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, out, errOut := cli(t, "", append(base, tt.args...)...)
			if code != tt.want || !strings.Contains(errOut, tt.msg) {
				t.Fatalf("got exit %d, stderr %q, want %d and %q", code, errOut, tt.want, tt.msg)
			}
			if tt.want != 0 {
				return
			}
			// --jsonl: stdout is the event stream, one JSON object a line.
			sc := bufio.NewScanner(strings.NewReader(out))
			var last plan.Event
			n := 0
			for sc.Scan() {
				if err := json.Unmarshal(sc.Bytes(), &last); err != nil {
					t.Fatalf("got a stdout line that is not JSON: %q", sc.Text())
				}
				n++
			}
			if last.Type != plan.EventPlanComplete || last.Status != "completed" || n < 7*4 {
				t.Errorf("got %d events ending with %+v, want every step's events and plan_complete", n, last)
			}
		})
	}
}

func TestPlanRunExitCodes(t *testing.T) {
	tests := []struct {
		name string
		step string
		want int
	}{
		{"step failed", `{"step_id":"s","tool":"run_command","arguments":{"program":"false","args":[]}}`, plan.ExitStepFailed},
		{"sandbox violation", `{"step_id":"s","tool":"file_read","arguments":{"path":"../../etc/passwd"}}`, plan.ExitSandboxViolation},
		{"program outside the allowlist", `{"step_id":"s","tool":"run_command","arguments":{"program":"rm","args":["-rf","."]}}`, plan.ExitSandboxViolation},
		{"timeout", `{"step_id":"s","tool":"run_command","arguments":{"program":"sleep","args":["30"],"timeout_ms":100}}`, plan.ExitStepTimeout},
		{"precondition", `{"step_id":"s","tool":"file_read","arguments":{"path":"x"},"precondition":{"file_exists":"x"}}`, plan.ExitStepFailed},
		{"unknown tool", `{"step_id":"s","tool":"shell","arguments":{}}`, 1},
		{"invalid plan", `{"step_id":"s"}`, 1},
		{"ok", `{"step_id":"s","tool":"file_write","arguments":{"path":"x","content":"y"}}`, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			p := filepath.Join(dir, "p.json")
			if err := os.WriteFile(p, []byte(`{"plan_id":"x","intent":"x","steps":[`+tt.step+`]}`), 0o644); err != nil {
				t.Fatal(err)
			}
			ws := filepath.Join(dir, "ws")
			if err := os.Mkdir(ws, 0o755); err != nil {
				t.Fatal(err)
			}
			code, _, errOut := cli(t, "", "--db", filepath.Join(dir, "db"), "plan", "run", p, "--approve", "--workspace", ws,
				"--allow", "false,sleep", "--events", filepath.Join(dir, "events.jsonl"))
			if code != tt.want {
				t.Errorf("got exit %d, want %d: %s", code, tt.want, errOut)
			}
		})
	}
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}
