package command

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/scripthost/scripthost"
	"github.com/scripthost/scripthost/hostfuncs/workspace"
)

func newWorkspace(t *testing.T) *workspace.Workspace {
	t.Helper()
	dir := t.TempDir()
	if err := os.Mkdir(filepath.Join(dir, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	ws, err := workspace.New(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ws.Close() })
	return ws
}

func newRunner(t *testing.T, cfg Config) (*Runner, string) {
	t.Helper()
	ws := newWorkspace(t)
	cfg.Workspace = ws
	if cfg.Programs == nil {
		cfg.Programs = []Program{{Name: "echo", ReadOnly: true}, {Name: "sh"}, {Name: "false"}, {Name: "pwd", ReadOnly: true}, {Name: "seq"}}
	}
	r, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return r, ws.Dir()
}

func TestRun(t *testing.T) {
	r, dir := newRunner(t, Config{MaxOutput: 10})
	tests := []struct {
		name string
		req  Request
		want Result
	}{
		{"no interpolation", Request{Program: "echo", Args: []string{"$HOME", "a;b", "`id`", "$(id)", "*"}},
			Result{Stdout: "$HOME a;b `id` $(id) *\n"[:10], StdoutTruncated: true}},
		{"exit code", Request{Program: "false", Args: []string{}}, Result{ExitCode: 1}},
		{"cwd", Request{Program: "pwd", Args: nil, Cwd: "sub"}, Result{Stdout: (dir + "/sub\n")[:10], StdoutTruncated: true}},
		{"stderr", Request{Program: "sh", Args: []string{"-c", "echo oops >&2; exit 3"}}, Result{ExitCode: 3, Stderr: "oops\n"}},
		{"output cap", Request{Program: "seq", Args: []string{"1", "1000"}}, Result{Stdout: "1\n2\n3\n4\n5\n", StdoutTruncated: true}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := r.Run(context.Background(), tt.req)
			if err != nil {
				t.Fatal(err)
			}
			if got != tt.want {
				t.Errorf("got %+v, want %+v", got, tt.want)
			}
		})
	}
}

func TestRefusals(t *testing.T) {
	r, _ := newRunner(t, Config{})
	tests := []struct {
		name string
		req  Request
		want string
	}{
		{"not allowlisted", Request{Program: "rm", Args: []string{"-rf", "/"}}, `"rm"`},
		{"path as program", Request{Program: "/bin/echo"}, `"/bin/echo"`},
		{"cwd escape", Request{Program: "pwd", Cwd: "../.."}, `"../.."`},
		{"cwd absolute", Request{Program: "pwd", Cwd: "/etc"}, `"/etc"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := r.Run(context.Background(), tt.req)
			var se *scripthost.Error
			if !errors.As(err, &se) || se.Code != scripthost.CodeSandboxViolation {
				t.Fatalf("got %v, want a sandbox_violation", err)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("got %q, want it to name %s", err, tt.want)
			}
		})
	}
}

func TestTimeoutKillsProcessGroup(t *testing.T) {
	// The limit leaves the shell time to start its grandchild even on a loaded machine.
	r, dir := newRunner(t, Config{MaxTimeout: 1500 * time.Millisecond})
	start := time.Now()
	// The shell starts a grandchild that would outlive it and writes a tick file while
	// it lives (its pid would mean nothing outside the sandbox's pid namespace); the
	// kill must take it too. timeout_ms asks for more than MaxTimeout and is capped.
	res, err := r.Run(context.Background(), Request{Program: "sh", Args: []string{"-c",
		"(while :; do echo $$ > tick.new; mv tick.new tick; sleep 0.05; done) & wait"}, TimeoutMS: 60000})
	if err != nil {
		t.Fatal(err)
	}
	if !res.TimedOut || res.ExitCode != -1 {
		t.Errorf("got %+v, want timed out with exit code -1", res)
	}
	if el := time.Since(start); el > 20*time.Second {
		t.Errorf("got %v, want the 1.5s limit to end the command (with slack)", el)
	}
	tick := filepath.Join(dir, "tick")
	stat := func() time.Time {
		info, err := os.Stat(tick)
		if err != nil {
			t.Fatal(err)
		}
		return info.ModTime()
	}
	deadline := time.Now().Add(10 * time.Second)
	for last := stat(); ; {
		time.Sleep(500 * time.Millisecond)
		now := stat()
		if now.Equal(last) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("got the grandchild still writing its tick file, want it killed with the command")
		}
		last = now
	}
}

func TestToolClassifyAndSchema(t *testing.T) {
	r, _ := newRunner(t, Config{})
	tool := r.Tool()
	if tool.Name() != "plan.run_command" {
		t.Errorf("got %s, want plan.run_command", tool.Name())
	}
	for prog, want := range map[string]scripthost.Operation{"echo": scripthost.OpRead, "sh": scripthost.OpMutate, "rm": scripthost.OpMutate} {
		in, _ := json.Marshal(Request{Program: prog})
		if got := tool.Classify(in); got != want {
			t.Errorf("%s: got %s, want %s", prog, got, want)
		}
	}
	out, err := tool.Execute(context.Background(), json.RawMessage(`{"program":"echo","args":["hi"]}`))
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"exit_code":0,"stdout":"hi\n","stderr":"","timed_out":false}`; string(out) != want {
		t.Errorf("got %s, want %s", out, want)
	}
	if !r.Available("echo") || r.Available("rm") {
		t.Errorf("got Available(echo)=%v Available(rm)=%v, want true, false", r.Available("echo"), r.Available("rm"))
	}
}

func TestNewRejectsMissingProgram(t *testing.T) {
	ws, err := workspace.New(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer ws.Close()
	if _, err := New(Config{Workspace: ws, Programs: []Program{{Name: "no-such-program-xyz"}}}); err == nil {
		t.Error("got nil, want an error for a program that is not on PATH")
	}
	if _, err := New(Config{Workspace: ws, Programs: []Program{{Name: "/bin/echo"}}}); err == nil {
		t.Error("got nil, want an error for a name with a slash")
	}
}

func BenchmarkRunTrue(b *testing.B) {
	ws, err := workspace.New(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	r, err := New(Config{Workspace: ws, Programs: []Program{{Name: "true"}}})
	if err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		if _, err := r.Run(context.Background(), Request{Program: "true"}); err != nil {
			b.Fatal(err)
		}
	}
}
