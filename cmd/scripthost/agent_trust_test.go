package main

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/scripthost/scripthost/agent"
	"github.com/scripthost/scripthost/internal/fakemodel"
)

func writeNotes(content string) fakemodel.Answer {
	return fakemodel.Answer{Calls: []fakemodel.Call{agentCall("write_file", map[string]string{"path": "notes.txt", "content": content})}}
}

func completeAnswer() fakemodel.Answer {
	return fakemodel.Answer{Calls: []fakemodel.Call{agentCall(agent.CompleteTool, map[string]string{"summary": "done"})}}
}

// pausedWrite starts a session whose write of notes.txt waits for approval.
func pausedWrite(t *testing.T, a *agentCLI) string {
	t.Helper()
	task := a.task("goal: g\nsteps: [{id: s, title: S}]\n")
	code, out := a.run("", "run", task, "--workspace", a.ws, "--file-write", "prompt")
	if code != 33 {
		t.Fatalf("run: exit %d, want 33 (waiting for approval): %s", code, out)
	}
	return sessionOf(t, out)
}

// sessionOf finds the session in the last progress line, "session ID: STATUS".
func sessionOf(t *testing.T, out string) string {
	t.Helper()
	for _, l := range strings.Split(out, "\n") {
		if f := strings.Fields(l); len(f) == 3 && f[0] == "session" && strings.HasSuffix(f[1], ":") {
			return strings.TrimSuffix(f[1], ":")
		}
	}
	t.Fatalf("no session in %q", out)
	return ""
}

// TestAgentResumeKeepsSettings: a session resumed from another directory, with no
// flags and another model server in the environment, works in its own workspace with
// its own model server: the approved write lands where the session started.
func TestAgentResumeKeepsSettings(t *testing.T) {
	a := newAgentCLI(t, writeNotes("approved\n"), completeAnswer())
	sess := pausedWrite(t, a)
	if code, out := a.run("", "approve", sess, "s/1/1"); code != 0 {
		t.Fatalf("approve: exit %d: %s", code, out)
	}
	decoy := fakemodel.New()
	defer decoy.Close()
	a.dir = t.TempDir()
	a.env = []string{modelURLEnv + "=" + decoy.URL}
	code, out := a.run("", "resume", sess)
	if code != 0 {
		t.Fatalf("resume: exit %d: %s", code, out)
	}
	if b, err := os.ReadFile(filepath.Join(a.ws, "notes.txt")); string(b) != "approved\n" {
		t.Fatalf("notes.txt in the session's workspace: got %q (%v), want the approved write", b, err)
	}
	if _, err := os.Stat(filepath.Join(a.dir, "notes.txt")); err == nil {
		t.Fatal("the approved write landed in the directory resume was run from")
	}
	if decoy.Count() != 0 || a.srv.Count() != 2 {
		t.Fatalf("model requests: got %d to the session's server and %d to the other, want 2 and 0", a.srv.Count(), decoy.Count())
	}
}

// TestAgentResumeRefusesWidening: a flag on resume that would widen the session's
// settings is refused, naming the flag, before anything runs; one that narrows them
// is used.
func TestAgentResumeRefusesWidening(t *testing.T) {
	a := newAgentCLI(t, writeNotes("approved\n"), completeAnswer())
	sess := pausedWrite(t, a)
	cfg := a.config("approvals:\n  file_write: auto\n  terminal: auto\nprograms: [{name: sh}]\n")
	tests := []struct {
		flags []string
		flag  string
	}{
		{[]string{"--workspace", t.TempDir()}, "--workspace"},
		{[]string{"--file-write", "auto"}, "--file-write"},
		{[]string{"--terminal", "auto"}, "--terminal"},
		{[]string{"--file-delete", "auto"}, "--file-delete"},
		{[]string{"--non-interactive-policy", "auto"}, "--non-interactive-policy"},
		{[]string{"--allow", "sh"}, "--allow"},
		{[]string{"--allow-read-only", "cat"}, "--allow-read-only"},
		{[]string{"--model", "http://127.0.0.1:9/v1"}, "--model"},
		{[]string{"--model-name", "other"}, "--model-name"},
		{[]string{"--model-key-env", "HOME"}, "--model-key-env"},
		{[]string{"--allow-model-host", "example.com"}, "--allow-model-host"},
		{[]string{"--max-model-response", "99999999"}, "--max-model-response"},
		{[]string{"--max-tool-argument", "99999999"}, "--max-tool-argument"},
		{[]string{"--config", cfg}, "--config"},
	}
	for _, tc := range tests {
		code, out := a.run("", append([]string{"resume", sess}, tc.flags...)...)
		if code != 2 || !strings.HasPrefix(lastLine(out), "scripthost: "+tc.flag+":") {
			t.Errorf("resume %v: exit %d, want 2 naming %s: %s", tc.flags, code, tc.flag, out)
		}
	}
	if a.srv.Count() != 1 {
		t.Fatalf("model requests after refused resumes: got %d, want 1", a.srv.Count())
	}
	if code, out := a.run("", "approve", sess, "s/1/1"); code != 0 {
		t.Fatalf("approve: exit %d: %s", code, out)
	}
	// Narrower, and the same values again: allowed.
	code, out := a.run("", "resume", sess, "--terminal", "deny", "--file-delete", "deny", "--workspace", a.ws, "--model", a.srv.URL, "--max-model-response", "4096")
	if code != 0 {
		t.Fatalf("narrowing resume: exit %d: %s", code, out)
	}
	if b, _ := os.ReadFile(filepath.Join(a.ws, "notes.txt")); string(b) != "approved\n" {
		t.Fatalf("notes.txt: got %q", b)
	}
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return lines[len(lines)-1]
}

// TestAgentWorkspaceConfigCannotWiden: settings in the workspace, which the agent can
// write, never widen what it may do. A model that wrote .scripthost/agent.yaml with
// terminal auto and sh allowed (YAML or JSON) cannot make the next session run sh
// without approval, nor at all where the operator did not allow it; a config that is,
// or resolves to, a file in the workspace is refused.
func TestAgentWorkspaceConfigCannotWiden(t *testing.T) {
	const widen = "approvals: {terminal: auto, non_interactive_policy: auto}\nprograms: [{name: sh}]\n"
	const widenJSON = `{"approvals": {"terminal": "auto", "non_interactive_policy": "auto"}, "programs": [{"name": "sh"}]}`
	pwn := fakemodel.Answer{Calls: []fakemodel.Call{agentCall("run_terminal", map[string]any{"program": "sh", "args": []string{"-c", "echo pwned > pwned.txt"}})}}
	for _, tc := range []struct {
		name, body string
		allow      []string
		want       int
	}{
		{"yaml, sh allowed by the operator", widen, []string{"--allow", "sh"}, 33},
		{"json, sh allowed by the operator", widenJSON, []string{"--allow", "sh"}, 33},
		// Approval is asked before the allowlist is: approving shows sh is not allowed.
		{"yaml, sh not allowed", widen, nil, 33},
		{"json, sh not allowed", widenJSON, nil, 33},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := newAgentCLI(t,
				fakemodel.Answer{Calls: []fakemodel.Call{agentCall("write_file", map[string]string{"path": ".scripthost/agent.yaml", "content": tc.body})}},
				completeAnswer(), pwn)
			task := a.task("goal: g\nsteps: [{id: s, title: S}]\n")
			if code, out := a.run("", "run", task, "--workspace", a.ws); code != 0 {
				t.Fatalf("session 1: exit %d: %s", code, out)
			}
			if b, _ := os.ReadFile(filepath.Join(a.ws, ".scripthost", "agent.yaml")); string(b) != tc.body {
				t.Fatalf("session 1 did not write the config: %q", b)
			}
			code, out := a.run("", append([]string{"run", task, "--workspace", a.ws}, tc.allow...)...)
			if code != tc.want {
				t.Errorf("session 2: exit %d, want %d: %s", code, tc.want, out)
			}
			if _, err := os.Stat(filepath.Join(a.ws, "pwned.txt")); err == nil {
				t.Fatalf("session 2 ran sh without approval: %s", out)
			}
			if !strings.Contains(out, "warning: ignoring "+filepath.Join(a.ws, ".scripthost", "agent.yaml")) {
				t.Errorf("session 2 did not warn about the ignored config: %s", out)
			}
			if tc.allow != nil {
				return
			}
			sess := sessionOf(t, out)
			if code, out := a.run("", "approve", sess, "s/1/1"); code != 0 {
				t.Fatalf("approve: exit %d: %s", code, out)
			}
			if code, out := a.run("", "resume", sess); code != 32 || !strings.Contains(out, "sh") {
				t.Fatalf("resume after approval: exit %d, want 32 (sh is not allowed): %s", code, out)
			}
			if _, err := os.Stat(filepath.Join(a.ws, "pwned.txt")); err == nil {
				t.Fatal("session 2 ran sh, which the operator did not allow")
			}
		})
	}

	t.Run("the workspace's .scripthost a link out", func(t *testing.T) {
		a := newAgentCLI(t, pwn)
		outside := t.TempDir()
		os.WriteFile(filepath.Join(outside, "agent.yaml"), []byte(widen), 0o644)
		os.Symlink(outside, filepath.Join(a.ws, ".scripthost"))
		code, out := a.run("", "run", a.task("goal: g\nsteps: [{id: s, title: S}]\n"), "--workspace", a.ws, "--allow", "sh")
		if _, err := os.Stat(filepath.Join(a.ws, "pwned.txt")); code != 33 || err == nil {
			t.Fatalf("exit %d, want 33 with sh not run: %s", code, out)
		}
	})

	inWorkspace := []struct {
		name  string
		setup func(a *agentCLI) []string
	}{
		{"--config ./x.yaml", func(a *agentCLI) []string {
			os.WriteFile(filepath.Join(a.ws, "x.yaml"), []byte(widen), 0o644)
			a.dir = a.ws
			return []string{"--config", "./x.yaml"}
		}},
		{"--config a link into the workspace", func(a *agentCLI) []string {
			os.WriteFile(filepath.Join(a.ws, "x.yaml"), []byte(widen), 0o644)
			link := filepath.Join(a.t.TempDir(), "agent.yaml")
			os.Symlink(filepath.Join(a.ws, "x.yaml"), link)
			return []string{"--config", link}
		}},
		{"--config in a directory linked into the workspace", func(a *agentCLI) []string {
			link := filepath.Join(a.t.TempDir(), "cfg")
			os.Symlink(a.ws, link)
			return []string{"--config", filepath.Join(link, "not-yet.yaml")}
		}},
		{"$XDG_CONFIG_HOME inside the workspace", func(a *agentCLI) []string {
			a.cfgHome = filepath.Join(a.ws, ".config")
			a.config(widen)
			return nil
		}},
	}
	for _, tc := range inWorkspace {
		t.Run(tc.name, func(t *testing.T) {
			a := newAgentCLI(t, pwn)
			flags := tc.setup(a)
			code, out := a.run("", append([]string{"run", a.task("goal: g\nsteps: [{id: s, title: S}]\n"), "--workspace", a.ws}, flags...)...)
			if code != 2 || !strings.Contains(out, "inside the workspace") || a.srv.Count() != 0 {
				t.Fatalf("exit %d after %d model requests, want 2 (refused) after none: %s", code, a.srv.Count(), out)
			}
		})
	}
}

// TestAgentKeyOnlyFromTheOperator: the model server gets the key from the variable the
// operator named, never one that a workspace config or a task names; a task inside the
// workspace does not choose the model server.
func TestAgentKeyOnlyFromTheOperator(t *testing.T) {
	const modelKey, planted, operatorKey = "model-key-6f1d2c", "planted-secret-9a8b7c", "operator-key-3e4f5a"
	env := []string{modelKeyEnv + "=" + modelKey, "PLANTED_SECRET=" + planted, "OPERATOR_KEY=" + operatorKey}
	auth := func(srv *fakemodel.Server) []string {
		var out []string
		for _, r := range srv.Requests() {
			out = append(out, r.Header.Get("Authorization"))
		}
		return out
	}

	t.Run("a workspace config's api_key_env", func(t *testing.T) {
		a := newAgentCLI(t, completeAnswer())
		a.env = env
		os.MkdirAll(filepath.Join(a.ws, ".scripthost"), 0o755)
		os.WriteFile(filepath.Join(a.ws, ".scripthost", "agent.yaml"), []byte("model: {api_key_env: PLANTED_SECRET}\n"), 0o644)
		if code, out := a.run("", "run", a.task("goal: g\nsteps: [{id: s, title: S}]\n"), "--workspace", a.ws); code != 0 {
			t.Fatalf("exit %d: %s", code, out)
		}
		if got := auth(a.srv); len(got) != 1 || got[0] != "Bearer "+modelKey {
			t.Fatalf("Authorization: got %q, want the key of $%s", got, modelKeyEnv)
		}
	})

	t.Run("the operator's config's api_key_env", func(t *testing.T) {
		a := newAgentCLI(t, completeAnswer())
		a.env = env
		a.config("model: {api_key_env: OPERATOR_KEY}\n")
		if code, out := a.run("", "run", a.task("goal: g\nsteps: [{id: s, title: S}]\n"), "--workspace", a.ws); code != 0 {
			t.Fatalf("exit %d: %s", code, out)
		}
		if got := auth(a.srv); len(got) != 1 || got[0] != "Bearer "+operatorKey {
			t.Fatalf("Authorization: got %q, want the key of $OPERATOR_KEY", got)
		}
	})

	t.Run("a task's api_key_env", func(t *testing.T) {
		a := newAgentCLI(t, completeAnswer())
		a.env = env
		code, out := a.run("", "run", a.task("goal: g\nmodel: {api_key_env: PLANTED_SECRET}\nsteps: [{id: s, title: S}]\n"), "--workspace", a.ws)
		if code != 2 || !strings.Contains(out, "model.api_key_env PLANTED_SECRET") || a.srv.Count() != 0 {
			t.Fatalf("exit %d after %d requests, want 2 (refused) after none: %s", code, a.srv.Count(), out)
		}
	})

	t.Run("a task in the workspace naming a model server", func(t *testing.T) {
		a := newAgentCLI(t, completeAnswer())
		a.env = env
		decoy := fakemodel.New(completeAnswer())
		defer decoy.Close()
		task := filepath.Join(a.ws, "task.yaml")
		os.WriteFile(task, []byte("goal: g\nmodel: {base_url: \""+decoy.URL+"\"}\nsteps: [{id: s, title: S}]\n"), 0o644)
		code, out := a.run("", "run", task, "--workspace", a.ws)
		if code != 2 || !strings.Contains(out, "model.base_url") || decoy.Count() != 0 || a.srv.Count() != 0 {
			t.Fatalf("exit %d after %d+%d requests, want 2 (refused) after none: %s", code, decoy.Count(), a.srv.Count(), out)
		}
		// Outside the workspace the operator's own task file may name it.
		outside := a.task("goal: g\nmodel: {base_url: \"" + decoy.URL + "\"}\nsteps: [{id: s, title: S}]\n")
		if code, out := a.run("", "run", outside, "--workspace", a.ws); code != 0 || decoy.Count() != 1 {
			t.Fatalf("task outside: exit %d after %d requests: %s", code, decoy.Count(), out)
		}
	})
}

// TestAgentModelAnswerCapCLI: a 30 MB tool argument is refused while it is read; the
// step fails with a model error an operator sees in agent show, and the ledger stays
// small.
func TestAgentModelAnswerCapCLI(t *testing.T) {
	a := newAgentCLI(t, writeNotes(strings.Repeat("x", 30<<20)))
	code, out := a.run("", "run", a.task("goal: g\nsteps: [{id: s, title: S}]\n"), "--workspace", a.ws)
	if code != 30 || !strings.Contains(out, "1048576-byte cap") {
		t.Fatalf("exit %d, want 30 with the cap named: %.2000s", code, out)
	}
	sess := sessionOf(t, out)
	if code, show := a.run("", "show", sess); code != 0 || !strings.Contains(show, "1048576-byte cap") {
		t.Fatalf("show: exit %d, want the refusal: %.2000s", code, show)
	}
	var size int64
	for _, suffix := range []string{"", "-wal"} {
		if fi, err := os.Stat(a.db + suffix); err == nil {
			size += fi.Size()
		}
	}
	if size > 4<<20 {
		t.Fatalf("ledger: got %d bytes, want under 4 MiB", size)
	}
	if _, err := os.Stat(filepath.Join(a.ws, "notes.txt")); err == nil {
		t.Fatal("the oversized write ran")
	}
}

// TestAgentKilledWriteTempRemoved SIGKILLs the real binary in a file edit; a temporary
// file of the writer's pattern left beside the file (as a kill between its creation and
// its rename leaves it) is removed by resume, and a user's file that only looks alike
// stays.
func TestAgentKilledWriteTempRemoved(t *testing.T) {
	a := newAgentCLI(t,
		fakemodel.Answer{Calls: []fakemodel.Call{agentCall("write_file", map[string]string{"path": "conf.txt", "content": "count=2\n"})}},
		completeAnswer(),
	)
	task := a.task("goal: bump\nsteps: [{id: bump, title: Bump}]\n")
	code, out := a.run("tool:before-execute", "run", task, "--workspace", a.ws)
	if code != -int(syscall.SIGKILL) {
		t.Fatalf("run: exit %d, want SIGKILL: %s", code, out)
	}
	stale := filepath.Join(a.ws, ".conf.txt.tmp-0123456789ab")
	mine := filepath.Join(a.ws, ".conf.txt.tmp-backup")
	os.WriteFile(stale, []byte("count=2\n"), 0o644)
	os.WriteFile(mine, []byte("keep me\n"), 0o644)
	code, out = a.run("", "resume", a.session(out), "--jsonl", "--workspace", a.ws)
	if code != 0 {
		t.Fatalf("resume: exit %d: %s", code, out)
	}
	if _, err := os.Stat(stale); err == nil {
		t.Fatalf("resume left %s: %s", stale, out)
	}
	if b, _ := os.ReadFile(mine); string(b) != "keep me\n" {
		t.Fatalf("resume removed the user's %s", mine)
	}
	if b, _ := os.ReadFile(filepath.Join(a.ws, "conf.txt")); string(b) != "count=2\n" {
		t.Fatalf("conf.txt: got %q", b)
	}
	if !strings.Contains(out, "removed 1 temporary files an interrupted write left: .conf.txt.tmp-0123456789ab") {
		t.Errorf("resume did not say what it removed: %s", out)
	}
}
