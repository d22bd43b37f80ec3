package plan

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/scripthost/scripthost"
	"github.com/scripthost/scripthost/hostfuncs"
	"github.com/scripthost/scripthost/hostfuncs/command"
	"github.com/scripthost/scripthost/hostfuncs/workspace"
	"github.com/scripthost/scripthost/ledger"
	"github.com/scripthost/scripthost/ledger/sqlite"
)

// env is a real executor setup: a SQLite ledger file, a workspace directory, the file
// tools, run_command with a small allowlist, and a few test tools.
type env struct {
	t      testing.TB
	dir    string // workspace root
	dbPath string
	store  ledger.Store
	reg    *hostfuncs.Registry
	ws     *workspace.Workspace
	cmds   *command.Runner
	events bytes.Buffer
	sleeps []time.Duration
	calls  map[string]int // test tool calls by name
	mu     sync.Mutex
	// flakyFails is how many times test.flaky fails before it succeeds.
	flakyFails int
}

type envOpts struct {
	dbPath   string // reuse a ledger file
	dir      string // reuse a workspace
	programs []command.Program
}

// fixedClock returns a clock that advances one millisecond per call from a fixed time.
func fixedClock() func() time.Time {
	var mu sync.Mutex
	t := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	return func() time.Time {
		mu.Lock()
		defer mu.Unlock()
		t = t.Add(time.Millisecond)
		return t
	}
}

// counterIDs returns deterministic ids for the store.
func counterIDs() func() string {
	var mu sync.Mutex
	n := 0
	return func() string {
		mu.Lock()
		defer mu.Unlock()
		n++
		return fmt.Sprintf("m%04d", n)
	}
}

func newEnv(t testing.TB, o envOpts) *env {
	t.Helper()
	e := &env{t: t, calls: map[string]int{}}
	e.dir = o.dir
	if e.dir == "" {
		e.dir = filepath.Join(t.TempDir(), "ws")
		if err := os.MkdirAll(e.dir, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	e.dbPath = o.dbPath
	if e.dbPath == "" {
		e.dbPath = filepath.Join(t.TempDir(), "ledger.db")
	}
	store, err := sqlite.Open(context.Background(), e.dbPath, sqlite.Options{Clock: fixedClock(), NewID: counterIDs()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	e.store = store
	if e.ws, err = workspace.New(e.dir); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.ws.Close() })
	progs := o.programs
	if progs == nil {
		progs = []command.Program{{Name: "echo", ReadOnly: true}, {Name: "sh"}, {Name: "false"}, {Name: "sleep"}, {Name: "true", ReadOnly: true}}
	}
	if e.cmds, err = command.New(command.Config{Workspace: e.ws, Programs: progs}); err != nil {
		t.Fatal(err)
	}
	e.reg = hostfuncs.NewRegistry()
	if err := e.reg.Register(e.ws.Tools()...); err != nil {
		t.Fatal(err)
	}
	if err := e.reg.Register(e.cmds.Tool()); err != nil {
		t.Fatal(err)
	}
	if err := e.reg.Register(e.testTools()...); err != nil {
		t.Fatal(err)
	}
	return e
}

// testTools: test.flaky (a mutation failing flakyFails times with a definite error),
// test.fail (a read that always fails), test.secret (echoes its input, with a secret
// field and a secret value).
func (e *env) testTools() []*hostfuncs.Tool {
	count := func(name string) int {
		e.mu.Lock()
		defer e.mu.Unlock()
		e.calls[name]++
		return e.calls[name]
	}
	obj := json.RawMessage(`{"type":"object","additionalProperties":false,"required":[],"properties":{"n":{"type":"integer"}}}`)
	return []*hostfuncs.Tool{
		{Namespace: "test", Method: "flaky", InputSchema: obj, Execute: func(context.Context, json.RawMessage) (json.RawMessage, error) {
			if n := count("flaky"); n <= e.flakyFails {
				return nil, scripthost.Errorf(scripthost.ClassLogic, "flaky", "failure %d", n)
			}
			return json.RawMessage(`{"ok":true}`), nil
		}},
		{Namespace: "test", Method: "fail", InputSchema: obj, ReadOnly: hostfuncs.ReadOnlyAlways, Execute: func(context.Context, json.RawMessage) (json.RawMessage, error) {
			count("fail")
			return nil, scripthost.Errorf(scripthost.ClassLogic, "boom", "always fails")
		}},
		{Namespace: "test", Method: "secret", SecretFields: []string{"pin"}, Secrets: []string{"tool-held-secret-value"},
			InputSchema: json.RawMessage(`{"type":"object","additionalProperties":false,"required":["pin","note"],"properties":{"pin":{"type":"string"},"note":{"type":"string"}}}`),
			Execute: func(_ context.Context, in json.RawMessage) (json.RawMessage, error) {
				count("secret")
				return json.Marshal(map[string]any{"echo": string(in), "stdout": "using tool-held-secret-value", "exit_code": 0})
			}},
	}
}

func (e *env) executor(o Options) *Executor {
	e.t.Helper()
	o.Store, o.Registry, o.Workspace, o.Commands = e.store, e.reg, e.ws, e.cmds
	if o.Events == nil {
		o.Events = &e.events
	}
	if o.Clock == nil {
		o.Clock = fixedClock()
	}
	o.Sleep = func(_ context.Context, d time.Duration) error {
		e.mu.Lock()
		defer e.mu.Unlock()
		e.sleeps = append(e.sleeps, d)
		return nil
	}
	x, err := New(o)
	if err != nil {
		e.t.Fatal(err)
	}
	return x
}

// mustPlan parses a plan document written with single quotes for readability.
func mustPlan(t testing.TB, doc string) *Plan {
	t.Helper()
	p, err := Parse([]byte(strings.ReplaceAll(doc, "'", `"`)))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func approved(p *Plan) *Authorization {
	a := Approve(p, "alice", time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	return &a
}

// run runs p approved and returns the result and error.
func (e *env) run(p *Plan, o Options) (*Result, error) {
	e.t.Helper()
	return e.executor(o).Run(context.Background(), p, approved(p))
}

func (e *env) exists(rel string) bool {
	_, err := os.Stat(filepath.Join(e.dir, rel))
	return err == nil
}

func (e *env) records(id string) []ledger.ExecutionRecord {
	e.t.Helper()
	recs, err := Records(context.Background(), e.store, id)
	if err != nil {
		e.t.Fatal(err)
	}
	return recs
}

func stepIDs(res *Result) string {
	var ids []string
	for _, s := range res.Steps {
		ids = append(ids, s.StepID+":"+s.Status)
	}
	return strings.Join(ids, ",")
}

func mutFilter(planID string) ledger.MutationFilter {
	return ledger.MutationFilter{Workflow: workflowName(planID)}
}

func redactorWith(secrets ...string) *hostfuncs.Redactor { return hostfuncs.NewRedactor(secrets...) }
