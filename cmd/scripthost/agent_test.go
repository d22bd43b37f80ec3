package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/scripthost/scripthost"
	"github.com/scripthost/scripthost/agent"
	"github.com/scripthost/scripthost/internal/fakemodel"
	"github.com/scripthost/scripthost/ledger"
	"github.com/scripthost/scripthost/ledger/sqlite"
)

func agentCall(name string, args any) fakemodel.Call {
	b, _ := json.Marshal(args)
	return fakemodel.Call{Name: name, Args: string(b)}
}

type agentCLI struct {
	t       *testing.T
	bin, db string
	ws      string
	srv     *fakemodel.Server
	// cfgHome is $XDG_CONFIG_HOME of every run: the operator's agent config is
	// cfgHome/scripthost/agent.yaml.
	cfgHome string
	// dir is the working directory of every run ("" is the test's).
	dir string
	// env is added to every run's environment.
	env []string
}

// run runs the real binary; failpoint, when set, makes it SIGKILL itself there.
func (a *agentCLI) run(failpoint string, args ...string) (int, string) {
	a.t.Helper()
	args = append([]string{"--db", a.db, "--unsafe-commands", "agent"}, args...)
	cmd := exec.Command(a.bin, args...)
	cmd.Env = append(os.Environ(), failpointEnv+"="+failpoint, modelURLEnv+"="+a.srv.URL, "XDG_CONFIG_HOME="+a.cfgHome)
	cmd.Env = append(cmd.Env, a.env...)
	cmd.Dir = a.dir
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	if ee, ok := err.(*exec.ExitError); ok {
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			return -int(ws.Signal()), out.String()
		}
		return ee.ExitCode(), out.String()
	}
	if err != nil {
		a.t.Fatal(err)
	}
	return 0, out.String()
}

func (a *agentCLI) session(out string) string {
	a.t.Helper()
	for _, l := range strings.Split(out, "\n") {
		if s, ok := strings.CutPrefix(l, "session "); ok && strings.Contains(s, ":") {
			return strings.SplitN(s, ":", 2)[0]
		}
	}
	store, err := sqlite.Open(context.Background(), a.db, sqlite.Options{})
	if err != nil {
		a.t.Fatal(err)
	}
	defer store.Close()
	muts, _ := store.Mutations(context.Background(), ledger.MutationFilter{})
	for _, m := range muts {
		if s, ok := strings.CutPrefix(m.Workflow, "agent/"); ok {
			return s
		}
	}
	a.t.Fatalf("no session in %q", out)
	return ""
}

func newAgentCLI(t *testing.T, script ...fakemodel.Answer) *agentCLI {
	a := &agentCLI{t: t, bin: crashBinary(t), db: filepath.Join(t.TempDir(), "ledger.db"), ws: t.TempDir(), srv: fakemodel.New(script...), cfgHome: t.TempDir()}
	t.Cleanup(a.srv.Close)
	return a
}

func (a *agentCLI) task(body string) string {
	p := filepath.Join(a.t.TempDir(), "task.yaml")
	os.WriteFile(p, []byte(body), 0o644)
	return p
}

// TestAgentCrashResumeFileTool SIGKILLs the real binary right after a file edit ran
// and before its outcome was recorded; resume reconciles the edit from the file, never
// applies it twice and never sends a finished model turn again.
func TestAgentCrashResumeFileTool(t *testing.T) {
	for _, point := range []string{"tool:before-execute", "tool:after-execute"} {
		t.Run(point, func(t *testing.T) { testAgentCrashResumeFileTool(t, point) })
	}
}

func testAgentCrashResumeFileTool(t *testing.T, point string) {
	a := newAgentCLI(t,
		fakemodel.Answer{Calls: []fakemodel.Call{agentCall("modify_file", map[string]any{"path": "conf.txt",
			"edits": []map[string]string{{"search": "count=1", "replace": "count=2"}}})}},
		fakemodel.Answer{Calls: []fakemodel.Call{agentCall(agent.CompleteTool, map[string]string{"summary": "bumped"})}},
	)
	os.WriteFile(filepath.Join(a.ws, "conf.txt"), []byte("count=1\n"), 0o644)
	task := a.task("goal: bump\nsteps: [{id: bump, title: Bump the count}]\n")
	code, out := a.run(point, "run", task, "--workspace", a.ws)
	if code != -int(syscall.SIGKILL) || a.srv.Count() != 1 {
		t.Fatalf("first run: exit %d after %d requests, want SIGKILL after 1: %s", code, a.srv.Count(), out)
	}
	sess := a.session(out)
	code, out = a.run("", "resume", sess, "--workspace", a.ws)
	if code != 0 {
		t.Fatalf("resume: exit %d: %s", code, out)
	}
	if a.srv.Count() != 2 {
		t.Fatalf("model requests: got %d, want 2 (the first turn is not sent again)", a.srv.Count())
	}
	if b, _ := os.ReadFile(filepath.Join(a.ws, "conf.txt")); string(b) != "count=2\n" {
		t.Fatalf("conf.txt: got %q", b)
	}
	store, err := sqlite.Open(context.Background(), a.db, sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	muts, _ := store.Mutations(context.Background(), ledger.MutationFilter{Workflow: agent.Workflow(sess)})
	// Killed after the edit: reconciled as applied, not run again. Killed before it:
	// reconciled as not done, then run once with the next key.
	want := []scripthost.MutationStatus{scripthost.MutationApplied}
	if point == "tool:before-execute" {
		want = []scripthost.MutationStatus{scripthost.MutationFailed, scripthost.MutationApplied}
	}
	var got []scripthost.MutationStatus
	for _, m := range muts {
		got = append(got, m.Status)
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("mutations: got %v, want %v", got, want)
	}
	// The second request carries the reconciled result of the first turn's call.
	last := a.srv.Requests()[1]
	if !strings.Contains(string(last.Raw), `\"ok\":true`) {
		t.Fatalf("resumed request lacks the reconciled result: %s", last.Raw)
	}
	code, out = a.run("", "show", sess)
	if code != 0 || !strings.Contains(out, "modify_file") || !strings.Contains(out, "turn 2") {
		t.Fatalf("show: exit %d: %s", code, out)
	}
}

// TestAgentCrashResumeTerminalNeedsApproval: a command killed mid-call has an unknown
// outcome; resume does not run it again until a person approves.
func TestAgentCrashResumeTerminalNeedsApproval(t *testing.T) {
	a := newAgentCLI(t,
		fakemodel.Answer{Calls: []fakemodel.Call{agentCall("run_terminal", map[string]any{"program": "sh", "args": []string{"-c", "echo ran >> log.txt"}})}},
		fakemodel.Answer{Calls: []fakemodel.Call{agentCall(agent.CompleteTool, map[string]string{"summary": "ran"})}},
	)
	task := a.task("goal: log\nsteps: [{id: log, title: Log}]\n")
	flags := []string{"--workspace", a.ws, "--allow", "sh", "--terminal", "auto"}
	code, out := a.run("tool:after-execute", append([]string{"run", task, "--jsonl"}, flags...)...)
	if code != -int(syscall.SIGKILL) {
		t.Fatalf("first run: exit %d: %s", code, out)
	}
	sess := a.session(out)
	code, out = a.run("", append([]string{"resume", sess}, flags...)...)
	if code != 33 || !strings.Contains(out, "outcome unknown") {
		t.Fatalf("resume: exit %d, want 33 (outcome unknown): %s", code, out)
	}
	if b, _ := os.ReadFile(filepath.Join(a.ws, "log.txt")); string(b) != "ran\n" {
		t.Fatalf("log.txt: got %q, want one line (not re-run)", b)
	}
	if code, out = a.run("", "approve", sess, "log/1/1", "--by", "carol"); code != 0 {
		t.Fatalf("approve: exit %d: %s", code, out)
	}
	code, out = a.run("", append([]string{"resume", sess}, flags...)...)
	if code != 0 {
		t.Fatalf("resume after approval: exit %d: %s", code, out)
	}
	if b, _ := os.ReadFile(filepath.Join(a.ws, "log.txt")); string(b) != "ran\nran\n" {
		t.Fatalf("log.txt: got %q, want the approved re-run", b)
	}
	if a.srv.Count() != 2 {
		t.Fatalf("model requests: got %d, want 2", a.srv.Count())
	}
}

func TestAgentCLIExitCodesAndJSONL(t *testing.T) {
	a := newAgentCLI(t, fakemodel.Answer{Text: "hm"}, fakemodel.Answer{Text: "hm"})
	task := a.task("goal: g\nturn_limit: 2\nsteps: [{id: s, title: S}]\n")
	code, out := a.run("", "run", task, "--workspace", a.ws, "--jsonl")
	if code != 31 {
		t.Fatalf("exit %d, want 31: %s", code, out)
	}
	var types []string
	for _, l := range strings.Split(out, "\n") {
		var ev struct {
			Type string `json:"type"`
		}
		if json.Unmarshal([]byte(l), &ev) == nil && ev.Type != "" {
			types = append(types, ev.Type)
		}
	}
	if !strings.Contains(strings.Join(types, ","), "step_start,model_request,model_response,model_request,model_response,step_failed,stage,session_end") {
		t.Fatalf("events: got %v", types)
	}
	bad := a.task("goal: g\nsteps:\n  - id: s\n    title: S\n    depends_on: [nope]\n    bogus: 1\n")
	code, out = a.run("", "run", bad, "--workspace", a.ws)
	if code == 0 || !strings.Contains(out, "line 6:") || !strings.Contains(out, "bogus") {
		t.Fatalf("bad task: exit %d: %s", code, out)
	}
	code, out = a.run("", "run", task, "--workspace", a.ws, "--model", "http://example.com/v1")
	if code != 2 || !strings.Contains(out, "not a loopback") {
		t.Fatalf("remote model: exit %d: %s", code, out)
	}
}

// config writes the operator's agent config.
func (a *agentCLI) config(body string) string {
	a.t.Helper()
	p := filepath.Join(a.cfgHome, "scripthost", "agent.yaml")
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		a.t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		a.t.Fatal(err)
	}
	return p
}

// TestAgentInteractivePromptAndConfig: the operator's config file sets file writes to
// prompt; in --interactive mode the terminal shows the call with a preview, v shows it
// again, a approves.
func TestAgentInteractivePromptAndConfig(t *testing.T) {
	a := newAgentCLI(t,
		fakemodel.Answer{Calls: []fakemodel.Call{agentCall("write_file", map[string]string{"path": "notes.txt", "content": "first line\nsecond line\n"})}},
		fakemodel.Answer{Calls: []fakemodel.Call{agentCall(agent.CompleteTool, map[string]string{"summary": "wrote"})}},
	)
	a.config("approvals:\n  file_write: prompt\n")
	task := a.task("goal: g\nsteps: [{id: s, title: S, produces: [notes.txt]}]\n")
	cmd := exec.Command(a.bin, "--db", a.db, "agent", "run", task, "--workspace", a.ws, "--interactive")
	cmd.Env = append(os.Environ(), modelURLEnv+"="+a.srv.URL, "XDG_CONFIG_HOME="+a.cfgHome)
	cmd.Stdin = strings.NewReader("v\na\n")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	for _, want := range []string{"s wants write_file (file_write)", "notes.txt:\nfirst line\nsecond line", "[a]pprove, [d]eny, [v]iew, [s]kip step?", "session "} {
		if !strings.Contains(string(out), want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if b, _ := os.ReadFile(filepath.Join(a.ws, "notes.txt")); !strings.HasPrefix(string(b), "first line") {
		t.Fatalf("notes.txt: got %q", b)
	}
	a.config("approvals:\n  file_write: sometimes\n")
	code, o := a.run("", "run", task, "--workspace", a.ws)
	if code == 0 || !strings.Contains(o, `file_write: "sometimes" is not prompt, auto or deny`) {
		t.Fatalf("bad config: exit %d: %s", code, o)
	}
}
