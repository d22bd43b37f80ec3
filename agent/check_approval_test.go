package agent

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/scripthost/scripthost/internal/fakemodel"
	"github.com/scripthost/scripthost/ledger"
)

// shCheckTask's step is checked by sh, which writes pwned: a check the agent could
// have written into a task file in its workspace.
const shCheckTask = `{"goal": "g", "steps": [{"id": "s", "title": "S", "check": {"program": "sh", "args": ["-c", "touch pwned"]}}]}`

func checkSettings(inWorkspace bool, ap Approvals) *Settings {
	return &Settings{Approvals: ap, TaskInWorkspace: inWorkspace}
}

func (e *env) exists(name string) bool {
	_, err := os.Stat(filepath.Join(e.dir, name))
	return err == nil
}

// TestCheckOfWorkspaceTaskNeedsApproval: a check from a task inside the workspace
// whose program is not read-only runs only as a run_terminal call of it would: with
// terminal prompt and nobody to ask the session pauses and the check has not run;
// approving the complete_step call and resuming runs it.
func TestCheckOfWorkspaceTaskNeedsApproval(t *testing.T) {
	e := newEnv(t, fakemodel.New(done("did it")))
	x := e.executor(func(o *Options) {
		o.Settings = checkSettings(true, Approvals{Terminal: Prompt, NonInteractivePolicy: NonInteractiveFail})
	})
	res := e.run(x, shCheckTask)
	wantStatus(t, res, StatusPaused, CodeApprovalPending)
	if e.exists("pwned") {
		t.Fatal("the check ran without approval")
	}
	if !strings.Contains(e.events.String(), "$ sh -c touch pwned") {
		t.Errorf("the approval request does not show the check: %s", e.events.String())
	}
	calls, err := e.store.(ledger.AgentStore).AgentToolCalls(context.Background(), res.Session)
	if err != nil || len(calls) != 1 || calls[0].Tool != CompleteTool || calls[0].Status != CallPendingApproval {
		t.Fatalf("calls: %+v (%v), want complete_step pending approval", calls, err)
	}
	if err := Decide(context.Background(), e.store, res.Session, "s/1/1", true, "alice"); err != nil {
		t.Fatal(err)
	}
	res, err = x.Resume(context.Background(), res.Session)
	if err != nil {
		t.Fatal(err)
	}
	wantStatus(t, res, StatusCompleted, "")
	if !e.exists("pwned") {
		t.Fatal("the approved check did not run")
	}
	if e.srv.Count() != 1 {
		t.Fatalf("model requests: got %d, want 1 (resume does not ask again)", e.srv.Count())
	}
	calls, _ = e.store.(ledger.AgentStore).AgentToolCalls(context.Background(), res.Session)
	if len(calls) != 1 || calls[0].Status != CallDone || calls[0].Decision != "approved by alice" {
		t.Fatalf("calls: %+v, want complete_step done with alice's approval", calls)
	}
}

// TestCheckOfWorkspaceTaskDecisions: each way the terminal policy decides applies to
// the check; a check not approved fails the step (approval_denied), naming the step
// and the program, and does not run.
func TestCheckOfWorkspaceTaskDecisions(t *testing.T) {
	for _, tc := range []struct {
		name   string
		ap     Approvals
		ans    Answer // "" for no prompter
		status string
		code   string
		ran    bool
		asked  bool
	}{
		{"terminal deny", Approvals{Terminal: Deny}, "", StatusFailed, CodeApprovalDenied, false, false},
		{"non-interactive skip", Approvals{Terminal: Prompt, NonInteractivePolicy: NonInteractiveSkip}, "", StatusFailed, CodeApprovalDenied, false, false},
		{"denied at the prompt", Approvals{Terminal: Prompt}, AnswerDeny, StatusFailed, CodeApprovalDenied, false, true},
		{"step skipped at the prompt", Approvals{Terminal: Prompt}, AnswerSkipStep, StatusFailed, CodeApprovalDenied, false, true},
		{"approved at the prompt", Approvals{Terminal: Prompt}, AnswerApprove, StatusCompleted, "", true, true},
		{"terminal auto", Approvals{Terminal: Auto}, "", StatusCompleted, "", true, false},
		{"non-interactive auto", Approvals{Terminal: Prompt, NonInteractivePolicy: NonInteractiveAuto}, "", StatusCompleted, "", true, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, fakemodel.New(done("did it")))
			p := &answerPrompter{ans: tc.ans}
			x := e.executor(func(o *Options) {
				o.Settings = checkSettings(true, tc.ap)
				if tc.ans != "" {
					o.Prompter = p
				}
			})
			res := e.run(x, shCheckTask)
			wantStatus(t, res, tc.status, tc.code)
			if e.exists("pwned") != tc.ran {
				t.Fatalf("check ran: %v, want %v", e.exists("pwned"), tc.ran)
			}
			if (len(p.seen) == 1) != tc.asked {
				t.Fatalf("asked %d times, want asked %v", len(p.seen), tc.asked)
			}
			if tc.asked {
				if c := p.seen[0]; c.Class != ClassTerminal || c.Tool != CompleteTool || !strings.Contains(c.Preview, "$ sh -c touch pwned") {
					t.Errorf("prompt: %+v", c)
				}
			}
			if tc.code == CodeApprovalDenied && tc.ans != AnswerSkipStep &&
				(!strings.Contains(res.Message, "step s") || !strings.Contains(res.Message, "sh")) {
				t.Errorf("message %q does not name the step and the program", res.Message)
			}
		})
	}
}

// TestCheckReadOnlyOrOperatorTaskRunsUnasked: a read-only check program runs unasked
// from a task inside the workspace, and any allowlisted check from the operator's
// task outside it (or with no settings) runs unasked, as before.
func TestCheckReadOnlyOrOperatorTaskRunsUnasked(t *testing.T) {
	strict := Approvals{Terminal: Prompt, NonInteractivePolicy: NonInteractiveFail}
	for _, tc := range []struct {
		name     string
		settings *Settings
		task     string
		code     string
	}{
		{"read-only check passing, task in the workspace", checkSettings(true, strict),
			`{"goal": "g", "steps": [{"id": "s", "title": "S", "check": {"program": "true"}}]}`, ""},
		{"sh check, task outside the workspace", checkSettings(false, strict), shCheckTask, ""},
		{"sh check, no settings", nil, shCheckTask, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, fakemodel.New(done("did it")))
			p := &answerPrompter{ans: AnswerDeny}
			x := e.executor(func(o *Options) {
				o.Settings = tc.settings
				o.Approvals = strict
				o.Prompter = p
			})
			res := e.run(x, tc.task)
			wantStatus(t, res, StatusCompleted, "")
			if len(p.seen) != 0 {
				t.Fatalf("asked about %+v", p.seen)
			}
			if tc.task == shCheckTask && !e.exists("pwned") {
				t.Fatal("the operator's check did not run")
			}
		})
	}

	// The read-only check does run: failing, it refuses the completion.
	e := newEnv(t, fakemodel.New(done("first")))
	x := e.executor(func(o *Options) { o.Settings = checkSettings(true, strict) })
	res := e.run(x, `{"goal": "g", "turn_limit": 1, "steps": [{"id": "s", "title": "S", "check": {"program": "false"}}]}`)
	wantStatus(t, res, StatusFailed, CodeTurnLimit)
	if !strings.Contains(e.events.String(), "the check false  exited with code 1") {
		t.Fatalf("the read-only check did not run: %s", e.events.String())
	}
}

// TestSettingsTaskInWorkspaceNotDropped: a resume may not treat a task from inside
// the workspace as the operator's.
func TestSettingsTaskInWorkspaceNotDropped(t *testing.T) {
	s := baseSettings()
	s.TaskInWorkspace = true
	n := baseSettings()
	var we *WideningError
	if err := s.Permits(n); !errors.As(err, &we) || we.Field != "task_in_workspace" {
		t.Fatalf("got %v, want a widening of task_in_workspace", err)
	}
	if err := baseSettings().Permits(s); err != nil {
		t.Fatalf("narrowing: %v", err)
	}
}

// TestCheckDeniedByDecideFailsStep: denying the paused complete_step (agent deny)
// fails the step on resume, naming the step and the check, without running it or
// asking the model again.
func TestCheckDeniedByDecideFailsStep(t *testing.T) {
	e := newEnv(t, fakemodel.New(done("did it")))
	x := e.executor(func(o *Options) {
		o.Settings = checkSettings(true, Approvals{Terminal: Prompt, NonInteractivePolicy: NonInteractiveFail})
	})
	res := e.run(x, shCheckTask)
	wantStatus(t, res, StatusPaused, CodeApprovalPending)
	if err := Decide(context.Background(), e.store, res.Session, "s/1/1", false, "bob"); err != nil {
		t.Fatal(err)
	}
	res, err := x.Resume(context.Background(), res.Session)
	if err != nil {
		t.Fatal(err)
	}
	wantStatus(t, res, StatusFailed, CodeApprovalDenied)
	if e.exists("pwned") || e.srv.Count() != 1 {
		t.Fatalf("pwned %v after %d model requests; want the check not run after 1", e.exists("pwned"), e.srv.Count())
	}
	if !strings.Contains(res.Message, "sh -c touch pwned of step s") || !strings.Contains(res.Message, "denied by bob") {
		t.Fatalf("message %q does not name the check, the step and the decision", res.Message)
	}
}
