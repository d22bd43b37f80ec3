package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// shCheck is a step whose check runs sh: what an agent could write into a task file
// in its workspace between sessions.
const shCheck = "goal: g\nsteps: [{id: s, title: S, check: {program: sh, args: [-c, 'touch pwned']}}]\n"

func (a *agentCLI) pwned() bool {
	_, err := os.Stat(filepath.Join(a.ws, "pwned"))
	return err == nil
}

// TestAgentWorkspaceTaskCheckNeedsApproval: a task inside the workspace whose check
// runs sh, with sh allowlisted and terminal approvals on prompt, pauses before the
// check runs (exit 33); the check runs once the complete_step call is approved, and
// a denial fails the step without running it. A task reached through a link into the
// workspace is inside it too.
func TestAgentWorkspaceTaskCheckNeedsApproval(t *testing.T) {
	for _, tc := range []struct {
		name    string
		approve bool
		link    bool
	}{
		{"approved", true, false},
		{"denied", false, false},
		{"through a link, denied", false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := newAgentCLI(t, completeAnswer())
			task := filepath.Join(a.ws, "task.yaml")
			os.WriteFile(task, []byte(shCheck), 0o644)
			if tc.link {
				link := filepath.Join(t.TempDir(), "task.yaml")
				os.Symlink(task, link)
				task = link
			}
			code, out := a.run("", "run", task, "--workspace", a.ws, "--allow", "sh", "--terminal", "prompt")
			if code != 33 || a.pwned() {
				t.Fatalf("run: exit %d, pwned %v; want 33 with the check not run: %s", code, a.pwned(), out)
			}
			sess := sessionOf(t, out)
			verb := "deny"
			if tc.approve {
				verb = "approve"
			}
			if code, out := a.run("", verb, sess, "s/1/1"); code != 0 {
				t.Fatalf("%s: exit %d: %s", verb, code, out)
			}
			a.dir = t.TempDir() // resume anywhere: the session keeps where its task came from
			code, out = a.run("", "resume", sess)
			switch {
			case tc.approve && (code != 0 || !a.pwned()):
				t.Fatalf("resume after approval: exit %d, pwned %v; want 0 with the check run: %s", code, a.pwned(), out)
			case !tc.approve && (code != 33 || a.pwned() || !strings.Contains(out, "step s") || !strings.Contains(out, "sh -c touch pwned")):
				t.Fatalf("resume after denial: exit %d, pwned %v; want 33 naming step s and the check, not run: %s", code, a.pwned(), out)
			}
			if a.srv.Count() != 1 {
				t.Fatalf("model requests: got %d, want 1", a.srv.Count())
			}
		})
	}

	t.Run("terminal deny", func(t *testing.T) {
		a := newAgentCLI(t, completeAnswer())
		task := filepath.Join(a.ws, "task.yaml")
		os.WriteFile(task, []byte(shCheck), 0o644)
		code, out := a.run("", "run", task, "--workspace", a.ws, "--allow", "sh", "--terminal", "deny")
		if code != 33 || a.pwned() || !strings.Contains(out, "approval_denied") && !strings.Contains(out, "not approved") {
			t.Fatalf("exit %d, pwned %v; want 33 (not approved) with the check not run: %s", code, a.pwned(), out)
		}
	})

	t.Run("interactive", func(t *testing.T) {
		a := newAgentCLI(t, completeAnswer())
		task := filepath.Join(a.ws, "task.yaml")
		os.WriteFile(task, []byte(shCheck), 0o644)
		cmd := exec.Command(a.bin, "--db", a.db, "--unsafe-commands", "agent", "run", task, "--workspace", a.ws, "--allow", "sh", "--interactive")
		cmd.Env = append(os.Environ(), modelURLEnv+"="+a.srv.URL, "XDG_CONFIG_HOME="+a.cfgHome)
		cmd.Stdin = strings.NewReader("d\n")
		b, err := cmd.CombinedOutput()
		code, out := 0, string(b)
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		if code != 33 || a.pwned() || !strings.Contains(out, "$ sh -c touch pwned") {
			t.Fatalf("exit %d, pwned %v; want the check shown, denied and not run (33): %s", code, a.pwned(), out)
		}
	})
}

// TestAgentCheckRunsUnaskedWhereTheAgentCannotWriteIt: a read-only check program
// from a task inside the workspace runs without approval (and does run: its failure
// refuses the completion), and the operator's task outside the workspace keeps its
// check running unasked.
func TestAgentCheckRunsUnaskedWhereTheAgentCannotWriteIt(t *testing.T) {
	t.Run("read-only program, task in the workspace", func(t *testing.T) {
		a := newAgentCLI(t, completeAnswer(), writeNotes("hello\n"), completeAnswer())
		task := filepath.Join(a.ws, "task.yaml")
		os.WriteFile(task, []byte("goal: g\nsteps: [{id: s, title: S, check: {program: grep, args: [-q, hello, notes.txt]}}]\n"), 0o644)
		code, out := a.run("", "run", task, "--workspace", a.ws, "--allow-read-only", "grep", "--terminal", "prompt", "--jsonl")
		if code != 0 || a.srv.Count() != 3 || !strings.Contains(out, "completion refused") && !strings.Contains(out, "completion_refused") {
			t.Fatalf("exit %d after %d requests; want 0 after 3, the first completion refused by the check: %s", code, a.srv.Count(), out)
		}
	})

	t.Run("sh, task outside the workspace", func(t *testing.T) {
		a := newAgentCLI(t, completeAnswer())
		code, out := a.run("", "run", a.task(shCheck), "--workspace", a.ws, "--allow", "sh", "--terminal", "prompt")
		if code != 0 || !a.pwned() {
			t.Fatalf("exit %d, pwned %v; want 0 with the operator's check run: %s", code, a.pwned(), out)
		}
	})
}
