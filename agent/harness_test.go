package agent

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/scripthost/scripthost/hostfuncs"
	"github.com/scripthost/scripthost/hostfuncs/command"
	"github.com/scripthost/scripthost/hostfuncs/workspace"
	"github.com/scripthost/scripthost/internal/fakemodel"
	"github.com/scripthost/scripthost/ledger"
	"github.com/scripthost/scripthost/ledger/sqlite"
)

type env struct {
	t      *testing.T
	dir    string
	dbPath string
	store  ledger.Store
	reg    *hostfuncs.Registry
	ws     *workspace.Workspace
	cmds   *command.Runner
	srv    *fakemodel.Server
	events bytes.Buffer
	mu     sync.Mutex
	sleeps []time.Duration
}

func newEnv(t *testing.T, srv *fakemodel.Server) *env {
	t.Helper()
	e := &env{t: t, dir: t.TempDir(), srv: srv}
	t.Cleanup(srv.Close)
	e.dbPath = filepath.Join(t.TempDir(), "ledger.db")
	store, err := sqlite.Open(context.Background(), e.dbPath, sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	e.store = store
	if e.ws, err = workspace.New(e.dir); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.ws.Close() })
	if e.cmds, err = command.New(command.Config{Workspace: e.ws, Programs: []command.Program{{Name: "true", ReadOnly: true}, {Name: "false", ReadOnly: true}, {Name: "sh"}}}); err != nil {
		t.Fatal(err)
	}
	e.reg = hostfuncs.NewRegistry()
	if err := e.reg.Register(append(e.ws.Tools(), e.cmds.Tool())...); err != nil {
		t.Fatal(err)
	}
	return e
}

func (e *env) executor(mod func(*Options)) *Executor {
	e.t.Helper()
	d, err := NewOpenAI(OpenAIConfig{BaseURL: e.srv.URL})
	if err != nil {
		e.t.Fatal(err)
	}
	o := Options{Store: e.store, Registry: e.reg, Driver: d, Model: "test-model", Workspace: e.ws, Commands: e.cmds,
		Events: &e.events, Approvals: Approvals{FileWrite: Auto, FileDelete: Auto, Terminal: Auto},
		Sleep: func(_ context.Context, d time.Duration) error {
			e.mu.Lock()
			defer e.mu.Unlock()
			e.sleeps = append(e.sleeps, d)
			return nil
		}}
	if mod != nil {
		mod(&o)
	}
	x, err := New(o)
	if err != nil {
		e.t.Fatal(err)
	}
	return x
}

func (e *env) run(x *Executor, task string) Result {
	e.t.Helper()
	tk, err := ParseTask("task.yaml", []byte(task))
	if err != nil {
		e.t.Fatal(err)
	}
	res, err := x.Run(context.Background(), "task.yaml", tk)
	if err != nil {
		e.t.Fatal(err)
	}
	return res
}

func (e *env) file(name string) string {
	b, err := os.ReadFile(filepath.Join(e.dir, name))
	if err != nil {
		e.t.Fatal(err)
	}
	return string(b)
}

func (e *env) eventTypes() []string {
	var out []string
	for _, l := range strings.Split(strings.TrimSpace(e.events.String()), "\n") {
		var ev Event
		if err := json.Unmarshal([]byte(l), &ev); err != nil {
			e.t.Fatalf("event line %q: %v", l, err)
		}
		out = append(out, ev.Type)
	}
	return out
}

func call(name string, args any) fakemodel.Call {
	b, _ := json.Marshal(args)
	return fakemodel.Call{Name: name, Args: string(b)}
}

func done(summary string) fakemodel.Answer {
	return fakemodel.Answer{Calls: []fakemodel.Call{call(CompleteTool, map[string]string{"summary": summary})}}
}

func tools(calls ...fakemodel.Call) fakemodel.Answer { return fakemodel.Answer{Calls: calls} }

// toolResults are the tool messages of request i, in order.
func toolResults(r fakemodel.Request) []string {
	var out []string
	for i, m := range r.Messages {
		if m.Role == "tool" {
			out = append(out, r.Text(i))
		}
	}
	return out
}

func wantStatus(t *testing.T, res Result, status, code string) {
	t.Helper()
	if res.Status != status || res.Code != code {
		t.Fatalf("got status %s code %q (%s), want %s %q; steps %+v", res.Status, res.Code, res.Message, status, code, res.Steps)
	}
}
