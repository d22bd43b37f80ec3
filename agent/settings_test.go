package agent

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/scripthost/scripthost/internal/fakemodel"
	"github.com/scripthost/scripthost/ledger"
)

func baseSettings() Settings {
	return Settings{
		Workspace: "/work/ws", ModelURL: "http://127.0.0.1:8080/v1", ModelName: "m", APIKeyEnv: "SCRIPTHOST_MODEL_KEY",
		AllowedHosts: []string{"gpu.lan"},
		Programs:     []Program{{Name: "go"}, {Name: "grep", ReadOnly: true}},
		Approvals:    Approvals{FileWrite: Prompt, FileDelete: Prompt, Terminal: Prompt, NonInteractivePolicy: NonInteractiveFail},
		SecretEnv:    []string{"TOKEN"}, MaxResponseBytes: 1 << 20, MaxArgumentBytes: 1 << 20,
	}
}

func TestSettingsPermits(t *testing.T) {
	tests := []struct {
		name  string
		mod   func(*Settings)
		field string // "" when permitted
	}{
		{"the same", func(*Settings) {}, ""},
		{"terminal denied", func(s *Settings) { s.Approvals.Terminal = Deny }, ""},
		{"non-interactive skip", func(s *Settings) { s.Approvals.NonInteractivePolicy = NonInteractiveSkip }, ""},
		{"a read-only program needs approval", func(s *Settings) { s.Programs[1].ReadOnly = false }, ""},
		{"fewer programs", func(s *Settings) { s.Programs = s.Programs[:1] }, ""},
		{"smaller caps", func(s *Settings) { s.MaxResponseBytes, s.MaxArgumentBytes = 1000, 1000 }, ""},
		{"more secrets", func(s *Settings) { s.SecretEnv = append(s.SecretEnv, "OTHER") }, ""},
		{"the workspace with a trailing slash", func(s *Settings) { s.Workspace += "/" }, ""},
		{"another workspace", func(s *Settings) { s.Workspace = "/work/other" }, "workspace"},
		{"a subdirectory", func(s *Settings) { s.Workspace = "/work/ws/sub" }, "workspace"},
		{"another model server", func(s *Settings) { s.ModelURL = "http://127.0.0.1:9/v1" }, "model_url"},
		{"another model", func(s *Settings) { s.ModelName = "other" }, "model_name"},
		{"another key variable", func(s *Settings) { s.APIKeyEnv = "AWS_SECRET_ACCESS_KEY" }, "api_key_env"},
		{"another host", func(s *Settings) { s.AllowedHosts = append(s.AllowedHosts, "evil.example") }, "allowed_hosts"},
		{"another program", func(s *Settings) { s.Programs = append(s.Programs, Program{Name: "sh"}) }, "programs"},
		{"a program made read-only", func(s *Settings) { s.Programs[0].ReadOnly = true }, "programs"},
		{"file writes auto", func(s *Settings) { s.Approvals.FileWrite = Auto }, "approvals.file_write"},
		{"deletes auto", func(s *Settings) { s.Approvals.FileDelete = Auto }, "approvals.file_delete"},
		{"terminal auto", func(s *Settings) { s.Approvals.Terminal = Auto }, "approvals.terminal"},
		{"non-interactive auto", func(s *Settings) { s.Approvals.NonInteractivePolicy = NonInteractiveAuto }, "approvals.non_interactive_policy"},
		{"terminal left to the default", func(s *Settings) { s.Approvals.Terminal = "" }, ""},
		{"unsafe commands", func(s *Settings) { s.UnsafeCommands = true }, "unsafe_commands"},
		{"a secret no longer redacted", func(s *Settings) { s.SecretEnv = nil }, "secret_env"},
		{"a larger answer cap", func(s *Settings) { s.MaxResponseBytes = 2 << 20 }, "max_response_bytes"},
		{"a larger argument cap", func(s *Settings) { s.MaxArgumentBytes = 2 << 20 }, "max_argument_bytes"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			n := baseSettings()
			n.Programs = append([]Program(nil), n.Programs...)
			tc.mod(&n)
			err := baseSettings().Permits(n)
			var we *WideningError
			switch {
			case tc.field == "" && err != nil:
				t.Fatalf("got %v, want permitted", err)
			case tc.field != "" && !errors.As(err, &we):
				t.Fatalf("got %v, want a widening of %s", err, tc.field)
			case tc.field != "" && we.Field != tc.field:
				t.Fatalf("got a widening of %s, want %s", we.Field, tc.field)
			}
		})
	}
}

// TestSessionKeepsSettings: a session stores the settings it started with beside its
// task (whose steps stay where the web UI reads them); a resume asking for wider ones
// is refused before anything runs, a resume with none is refused, and a narrower
// resume runs.
func TestSessionKeepsSettings(t *testing.T) {
	e := newEnv(t, fakemodel.New(
		tools(call("run_terminal", map[string]any{"program": "sh", "args": []string{"-c", "echo ran >> log.txt"}})),
		done("ran"),
	))
	s := baseSettings()
	s.Workspace, s.ModelURL = e.dir, e.srv.URL
	s.Programs = []Program{{Name: "sh"}}
	x := e.executor(func(o *Options) { o.Settings = &s })
	res := e.run(x, "goal: g\nsteps: [{id: s, title: S, produces: [log.txt]}]\n")
	wantStatus(t, res, StatusPaused, CodeApprovalPending)

	sess, err := e.store.(ledger.AgentStore).AgentSession(context.Background(), res.Session)
	if err != nil {
		t.Fatal(err)
	}
	var raw struct {
		Steps    []Step    `json:"steps"`
		Settings *Settings `json:"settings"`
	}
	if err := json.Unmarshal(sess.Spec, &raw); err != nil || len(raw.Steps) != 1 || raw.Settings == nil {
		t.Fatalf("stored spec: got %s (%v), want the task's steps and the settings", sess.Spec, err)
	}
	task, stored, err := SessionSpec(sess)
	if err != nil || stored == nil || task.Goal != "g" {
		t.Fatalf("SessionSpec: got %+v, %+v, %v", task, stored, err)
	}
	if stored.Workspace != e.dir || stored.Approvals.Terminal != Prompt || stored.Programs[0].Name != "sh" {
		t.Fatalf("stored settings: got %+v", stored)
	}

	wide := s
	wide.Approvals.Terminal = Auto
	_, err = e.executor(func(o *Options) { o.Settings = &wide }).Resume(context.Background(), res.Session)
	var we *WideningError
	if !errors.As(err, &we) || we.Field != "approvals.terminal" {
		t.Fatalf("resume with terminal auto: got %v, want a widening of approvals.terminal", err)
	}
	if _, err := e.executor(nil).Resume(context.Background(), res.Session); err == nil || !strings.Contains(err.Error(), "Options.Settings") {
		t.Fatalf("resume without settings: got %v, want a refusal", err)
	}
	if _, err := os.Stat(filepath.Join(e.dir, "log.txt")); err == nil || e.srv.Count() != 1 {
		t.Fatalf("a refused resume ran something (%d model requests)", e.srv.Count())
	}

	if err := Decide(context.Background(), e.store, res.Session, "s/1/1", true, "alice"); err != nil {
		t.Fatal(err)
	}
	narrow := s
	narrow.Approvals.FileWrite = Deny
	res, err = e.executor(func(o *Options) { o.Settings = &narrow }).Resume(context.Background(), res.Session)
	if err != nil {
		t.Fatal(err)
	}
	wantStatus(t, res, StatusCompleted, "")
	if e.file("log.txt") != "ran\n" {
		t.Fatalf("log.txt: got %q", e.file("log.txt"))
	}
}

// TestStaleTempsRemoved: a temporary file of the writer's pattern that a killed write
// left is removed when a session starts and when one resumes; files that only look
// alike stay.
func TestStaleTempsRemoved(t *testing.T) {
	e := newEnv(t, fakemodel.New(done("nothing"), done("nothing")))
	stale := []string{".conf.txt.tmp-0123456789ab", "sub/.main.go.tmp-abcdef012345"}
	keep := []string{".conf.txt.tmp-mine", "conf.txt.tmp-0123456789ab", ".conf.txt.tmp-0123456789AB", ".conf.txt.tmp-0123456789abc", ".tmp-0123456789ab"}
	plant := func() {
		for _, n := range append(append([]string(nil), stale...), keep...) {
			p := filepath.Join(e.dir, n)
			os.MkdirAll(filepath.Dir(p), 0o755)
			if err := os.WriteFile(p, []byte("x"), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	check := func(when string) {
		t.Helper()
		for _, n := range stale {
			if _, err := os.Stat(filepath.Join(e.dir, n)); err == nil {
				t.Errorf("%s: %s is still there", when, n)
			}
		}
		for _, n := range keep {
			if _, err := os.Stat(filepath.Join(e.dir, n)); err != nil {
				t.Errorf("%s: %s was removed: %v", when, n, err)
			}
		}
	}
	plant()
	x := e.executor(nil)
	res := e.run(x, "goal: g\nsteps: [{id: s, title: S}]\n")
	wantStatus(t, res, StatusCompleted, "")
	check("start")
	if !strings.Contains(e.events.String(), "removed 2 temporary files an interrupted write left") {
		t.Errorf("events lack the removal: %s", e.events.String())
	}
	plant()
	if _, err := x.Resume(context.Background(), res.Session); err != nil {
		t.Fatal(err)
	}
	check("resume")
}
