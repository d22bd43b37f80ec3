package sandboxtest

import (
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/scripthost/scripthost"
	"github.com/scripthost/scripthost/sandbox"
)

// farTimeout is the Timeout of a case that tests another limit: far enough that the
// limit under test ends the invocation first on any machine, however loaded, so that
// the result does not depend on the machine's speed.
const farTimeout = 2 * time.Minute

// slack is how long past a limit an engine may take to report it. It is a liveness
// bound for shared, race-instrumented CI machines, not a performance assertion.
const slack = 10 * time.Second

// Run checks eng against every behaviour in Behaviours, then checks that a
// well-behaved invocation is unaffected by hostile ones running at the same time.
func Run(t *testing.T, eng sandbox.Engine, modules Modules) {
	t.Helper()
	s := &suite{eng: eng, modules: modules}
	checks := map[string]func(t *testing.T){
		Definition:      s.definition,
		EchoGlobals:     s.echoGlobals,
		GlobalsReadOnly: s.globalsReadOnly,
		CallTool:        s.callTool,
		ToolErrorClass:  s.toolErrorClass,
		CatchToolError:  s.catchToolError,
		Terminate:       s.terminate,
		ToolPanic:       s.toolPanic,
		ToolFlood:       s.toolFlood,
		Throw:           s.throw,
		Console:         s.console,
		ConsoleFlood:    s.consoleFlood,
		EndlessLoop:     s.endlessLoop,
		Recursion:       s.recursion,
		MemoryHog:       s.memoryHog,
		HugeOutput:      s.hugeOutput,
		FreshInstance:   s.freshInstance,
		Deterministic:   s.deterministic,
		BadModule:       s.badModule,
	}
	for _, name := range Behaviours {
		t.Run(name, func(t *testing.T) {
			if c, ok := modules(name); ok && c.Skip != "" {
				t.Skip(c.Skip)
			}
			checks[name](t)
		})
	}
	t.Run("UnknownFunction", s.unknownFunction)
	t.Run("ConcurrentWithHostile", s.concurrentWithHostile)
}

type suite struct {
	eng     sandbox.Engine
	modules Modules
}

// load loads the module for name, failing the test when the engine has none.
func (s *suite) load(t *testing.T, name string) (sandbox.Program, Case) {
	t.Helper()
	c, ok := s.modules(name)
	if !ok {
		t.Fatalf("engine supplies no module for behaviour %s", name)
	}
	p, err := s.eng.Load(context.Background(), c.Source)
	if err != nil {
		t.Fatalf("Load(%s): %v", c.Source.Name, err)
	}
	t.Cleanup(func() { p.Close(context.Background()) })
	return p, c
}

// invoke runs the behaviour's function with inv (Function and Tools filled in).
func (s *suite) invoke(t *testing.T, name string, inv sandbox.Invocation) (sandbox.Result, *Tools, error) {
	t.Helper()
	p, c := s.load(t, name)
	tools := NewTools()
	inv.Function, inv.Tools = c.Function, tools
	res, err := p.Invoke(context.Background(), inv)
	return res, tools, err
}

// equalJSON fails unless got and want are the same JSON value.
func equalJSON(t *testing.T, what string, got json.RawMessage, want string) {
	t.Helper()
	var g, w any
	if err := json.Unmarshal(got, &g); err != nil {
		t.Fatalf("%s: got invalid JSON %q: %v", what, got, err)
	}
	if err := json.Unmarshal([]byte(want), &w); err != nil {
		t.Fatalf("%s: bad want %q: %v", what, want, err)
	}
	if !reflect.DeepEqual(g, w) {
		t.Errorf("%s: got %s, want %s", what, got, want)
	}
}

// wantLimit fails unless err is a *sandbox.LimitError naming one of limits.
func wantLimit(t *testing.T, err error, limits ...string) {
	t.Helper()
	var le *sandbox.LimitError
	if !errors.As(err, &le) {
		t.Fatalf("got error %v, want a *sandbox.LimitError %v", err, limits)
	}
	for _, l := range limits {
		if le.Limit == l {
			if !scripthost.IsLogic(err) {
				t.Errorf("got class %s for %v, want logic", scripthost.ClassOf(err), err)
			}
			return
		}
	}
	t.Errorf("got limit %q (%v), want one of %v", le.Limit, err, limits)
}

func (s *suite) definition(t *testing.T) {
	c, ok := s.modules(Definition)
	if !ok {
		t.Fatalf("engine supplies no module for behaviour %s", Definition)
	}
	p, err := s.eng.Load(context.Background(), c.Source)
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	defer p.Close(context.Background())
	raw, err := p.Definition(context.Background())
	if err != nil {
		t.Fatalf("Definition: %v", err)
	}
	var def struct {
		Topics    []string `json:"topics"`
		Consumers map[string]struct {
			Subscribe []string `json:"subscribe"`
			Publishes []string `json:"publishes"`
			Prepare   string   `json:"prepare"`
		} `json:"consumers"`
	}
	if err := json.Unmarshal(raw, &def); err != nil {
		t.Fatalf("Definition: got %s, not the expected shape: %v", raw, err)
	}
	if want := []string{"in", "out"}; !reflect.DeepEqual(def.Topics, want) {
		t.Errorf("topics: got %v, want %v", def.Topics, want)
	}
	cons := def.Consumers["c"]
	if !reflect.DeepEqual(cons.Subscribe, []string{"in"}) || !reflect.DeepEqual(cons.Publishes, []string{"out"}) {
		t.Errorf("consumer c: got subscribe %v publishes %v, want [in] [out]", cons.Subscribe, cons.Publishes)
	}
	if cons.Prepare == "" {
		t.Fatalf("consumer c: got no prepare function reference in %s", raw)
	}
	res, err := p.Invoke(context.Background(), sandbox.Invocation{Function: cons.Prepare, Phase: scripthost.PhasePrepare, Tools: NewTools()})
	if err != nil {
		t.Fatalf("Invoke(%q): %v", cons.Prepare, err)
	}
	equalJSON(t, "prepare result", res.Value, `"prepared"`)
}

func (s *suite) echoGlobals(t *testing.T) {
	tests := []struct {
		name    string
		globals sandbox.Globals
		args    []json.RawMessage
		want    string
	}{
		{
			name: "all",
			globals: sandbox.Globals{
				State:          json.RawMessage(`{"s":[1,2,{"deep":true}]}`),
				Prepared:       json.RawMessage(`"p"`),
				MutationResult: json.RawMessage(`{"id":7}`),
			},
			args: []json.RawMessage{json.RawMessage(`{"n":1}`), json.RawMessage(`"two"`)},
			want: `{"state":{"s":[1,2,{"deep":true}]},"prepared":"p","mutationResult":{"id":7},"args":[{"n":1},"two"]}`,
		},
		{
			name:    "state only",
			globals: sandbox.Globals{State: json.RawMessage(`[]`)},
			want:    `{"state":[],"prepared":null,"mutationResult":null,"args":[]}`,
		},
		{
			name: "none",
			want: `{"state":null,"prepared":null,"mutationResult":null,"args":[]}`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, _, err := s.invoke(t, EchoGlobals, sandbox.Invocation{Phase: scripthost.PhasePrepare, Globals: tt.globals, Args: tt.args})
			if err != nil {
				t.Fatalf("Invoke: %v", err)
			}
			equalJSON(t, "result", res.Value, tt.want)
		})
	}
}

func (s *suite) globalsReadOnly(t *testing.T) {
	state := `{"a":1,"list":[1]}`
	res, _, err := s.invoke(t, GlobalsReadOnly, sandbox.Invocation{
		Phase:   scripthost.PhasePrepare,
		Globals: sandbox.Globals{State: json.RawMessage(state)},
		Args:    []json.RawMessage{json.RawMessage(state)},
	})
	if err != nil {
		t.Fatalf("Invoke: %v", err)
	}
	equalJSON(t, "__state__ after writes", res.Value, state)
}

func (s *suite) callTool(t *testing.T) {
	res, tools, err := s.invoke(t, CallTool, sandbox.Invocation{Phase: scripthost.PhaseProducer})
	if err != nil {
		t.Fatalf("Invoke: %v", err)
	}
	equalJSON(t, "result", res.Value, `{"text":"hi"}`)
	calls := tools.Calls()
	if len(calls) != 1 || calls[0].Namespace != "Echo" || calls[0].Method != "say" {
		t.Fatalf("calls: got %s, want one Echo.say", tools)
	}
	equalJSON(t, "tool input", calls[0].Input, `{"text":"hi"}`)
	if res.ToolCalls != 1 {
		t.Errorf("Result.ToolCalls: got %d, want 1", res.ToolCalls)
	}
}

func (s *suite) toolErrorClass(t *testing.T) {
	_, _, err := s.invoke(t, ToolErrorClass, sandbox.Invocation{Phase: scripthost.PhaseProducer})
	if !scripthost.IsNetwork(err) {
		t.Fatalf("got %v (class %q), want a network error", err, scripthost.ClassOf(err))
	}
	if !errors.Is(err, ErrNetwork) {
		t.Errorf("got %v, want it to wrap ErrNetwork", err)
	}
}

func (s *suite) catchToolError(t *testing.T) {
	res, _, err := s.invoke(t, CatchToolError, sandbox.Invocation{Phase: scripthost.PhaseProducer})
	if err != nil {
		t.Fatalf("Invoke: %v", err)
	}
	equalJSON(t, "caught error", res.Value, `{"class":"network","code":"connection_reset"}`)
}

func (s *suite) terminate(t *testing.T) {
	res, _, err := s.invoke(t, Terminate, sandbox.Invocation{Phase: scripthost.PhaseMutate})
	if err == nil {
		t.Fatalf("got result %s, want the invocation terminated", res.Value)
	}
	if !errors.Is(err, sandbox.ErrTerminate) || !errors.Is(err, ErrTerminateCause) {
		t.Errorf("got %v, want it to wrap sandbox.ErrTerminate and ErrTerminateCause", err)
	}
}

func (s *suite) toolPanic(t *testing.T) {
	_, _, err := s.invoke(t, ToolPanic, sandbox.Invocation{Phase: scripthost.PhaseProducer})
	var se *scripthost.Error
	if !errors.As(err, &se) || se.Class != scripthost.ClassInternal || !hasCode(err, scripthost.CodeToolPanic) {
		t.Fatalf("got %v, want an internal error with code %s", err, scripthost.CodeToolPanic)
	}
}

// hasCode reports whether some *scripthost.Error in err's chain has code.
func hasCode(err error, code string) bool {
	for err != nil {
		var se *scripthost.Error
		if !errors.As(err, &se) {
			return false
		}
		if se.Code == code {
			return true
		}
		err = se.Err
	}
	return false
}

func (s *suite) toolFlood(t *testing.T) {
	_, tools, err := s.invoke(t, ToolFlood, sandbox.Invocation{Phase: scripthost.PhaseProducer, Limits: sandbox.Limits{MaxToolCalls: 10}})
	wantLimit(t, err, "tool_calls")
	if n := len(tools.Calls()); n > 10 {
		t.Errorf("calls that reached the tools: got %d, want at most 10", n)
	}
}

func (s *suite) throw(t *testing.T) {
	_, _, err := s.invoke(t, Throw, sandbox.Invocation{Phase: scripthost.PhasePrepare})
	var se *scripthost.Error
	if !errors.As(err, &se) {
		t.Fatalf("got %v, want a *scripthost.Error", err)
	}
	if se.Class != scripthost.ClassLogic || se.Code != scripthost.CodeScript {
		t.Errorf("got class %q code %q, want logic %s", se.Class, se.Code, scripthost.CodeScript)
	}
	if se.Line <= 0 {
		t.Errorf("got line %d, want the script location (line > 0)", se.Line)
	}
	if !strings.Contains(err.Error(), "boom") {
		t.Errorf("got message %q, want it to contain %q", err, "boom")
	}
}

func (s *suite) console(t *testing.T) {
	res, _, err := s.invoke(t, Console, sandbox.Invocation{Phase: scripthost.PhaseProducer})
	if err != nil {
		t.Fatalf("Invoke: %v", err)
	}
	want := []sandbox.ConsoleLine{{Level: "log", Text: "one"}, {Level: "warn", Text: "two"}, {Level: "error", Text: "three"}}
	if !reflect.DeepEqual(res.Console, want) {
		t.Errorf("console: got %v, want %v", res.Console, want)
	}
}

func (s *suite) consoleFlood(t *testing.T) {
	res, _, err := s.invoke(t, ConsoleFlood, sandbox.Invocation{Phase: scripthost.PhaseProducer, Limits: sandbox.Limits{MaxConsoleBytes: 1000}})
	if err != nil {
		t.Fatalf("Invoke: %v (a full console must not fail the invocation)", err)
	}
	equalJSON(t, "result", res.Value, `"done"`)
	if len(res.Console) == 0 || len(res.Console) >= 1000 {
		t.Fatalf("console lines: got %d, want some but fewer than 1000", len(res.Console))
	}
	kept := 0
	for _, l := range res.Console[:len(res.Console)-1] {
		kept += len(l.Text)
	}
	if kept > 1000 {
		t.Errorf("console bytes before the marker: got %d, want at most 1000", kept)
	}
	if last := res.Console[len(res.Console)-1]; strings.Repeat("x", 100) == last.Text {
		t.Errorf("last console line: got %q, want a marker saying lines were dropped", last.Text)
	}
}
