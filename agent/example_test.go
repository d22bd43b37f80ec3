package agent

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/scripthost/scripthost"
	"github.com/scripthost/scripthost/hostfuncs"
	"github.com/scripthost/scripthost/hostfuncs/command"
	"github.com/scripthost/scripthost/internal/fakemodel"
)

// TestExampleTask runs scripts/agent/readme-task.yaml against a scripted model.
func TestExampleTask(t *testing.T) {
	raw, err := os.ReadFile("../scripts/agent/readme-task.yaml")
	if err != nil {
		t.Fatal(err)
	}
	tk, err := ParseTask("readme-task.yaml", raw)
	if err != nil {
		t.Fatal(err)
	}
	e := newEnv(t, fakemodel.New(
		tools(call("list_directory", map[string]string{"dir": "."})),
		tools(call("read_file", map[string]string{"path": "main.go"})),
		done("a hello-world program"),
		tools(call("write_file", map[string]string{"path": "README.md", "content": "# hello\n\nPrints hello.\n\n## Testing\n\ngo test ./...\n"})),
		done("wrote README.md"),
	))
	os.WriteFile(filepath.Join(e.dir, "main.go"), []byte("package main\n"), 0o644)
	cmds, err := command.New(command.Config{Workspace: e.ws, Programs: []command.Program{{Name: "grep", ReadOnly: true}}})
	if err != nil {
		t.Fatal(err)
	}
	x := e.executor(func(o *Options) { o.Commands = cmds })
	res, err := x.Run(context.Background(), "readme-task.yaml", tk)
	if err != nil {
		t.Fatal(err)
	}
	wantStatus(t, res, StatusCompleted, "")
}

func TestStepTimeout(t *testing.T) {
	e := newEnv(t, fakemodel.New(fakemodel.Answer{Text: "slow", Delay: 5 * time.Second}))
	res := e.run(e.executor(nil), `{"goal": "g", "retry": {"max_retries": 0}, "steps": [{"id": "s", "title": "S", "timeout_ms": 200}]}`)
	wantStatus(t, res, StatusFailed, CodeStepTimeout)
	if res.ExitCode() != 34 {
		t.Fatalf("exit code: got %d, want 34", res.ExitCode())
	}
}

// TestReadToolNetworkErrorsRetry: a read-only tool failing with a network error is
// retried with the backoff; a mutating one is not (its outcome is reconciled instead).
func TestReadToolNetworkErrorsRetry(t *testing.T) {
	e := newEnv(t, fakemodel.New(tools(call("Net_lookup", map[string]any{})), done("ok")))
	n := 0
	e.reg.Register(&hostfuncs.Tool{Namespace: "Net", Method: "lookup", ReadOnly: hostfuncs.ReadOnlyAlways,
		Execute: func(context.Context, json.RawMessage) (json.RawMessage, error) {
			if n++; n <= 2 {
				return nil, scripthost.Errorf(scripthost.ClassNetwork, "net", "connection reset")
			}
			return json.RawMessage(`{"ip":"127.0.0.1"}`), nil
		}})
	res := e.run(e.executor(nil), `{"goal": "g", "steps": [{"id": "s", "title": "S"}]}`)
	wantStatus(t, res, StatusCompleted, "")
	if n != 3 || len(e.sleeps) != 2 {
		t.Fatalf("got %d calls and sleeps %v, want 3 and [1s 2s]", n, e.sleeps)
	}
}
