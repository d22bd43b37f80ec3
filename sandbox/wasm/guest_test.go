package wasm

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/scripthost/scripthost"
	"github.com/scripthost/scripthost/sandbox"
)

func TestGoGuestDefinition(t *testing.T) {
	p := conformance(t)
	def, err := p.Definition(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var d struct {
		Topics    []string
		Consumers map[string]struct{ Prepare string }
	}
	if err := json.Unmarshal(def, &d); err != nil {
		t.Fatalf("definition %s: %v", def, err)
	}
	if got := strings.Join(d.Topics, ","); got != "in,out" {
		t.Errorf("got topics %q, want in,out", got)
	}
	ref := d.Consumers["c"].Prepare
	res, err := p.Invoke(context.Background(), sandbox.Invocation{Function: ref, Phase: scripthost.PhasePrepare})
	if err != nil || string(res.Value) != `"prepared"` {
		t.Errorf("invoke %q: got %s, %v; want \"prepared\"", ref, res.Value, err)
	}
}

func TestGoGuestResults(t *testing.T) {
	p := conformance(t)
	det := &sandbox.Determinism{Now: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC), Seed: 42}
	tests := []struct {
		fn   string
		inv  sandbox.Invocation
		want string
	}{
		{fn: "echo_globals", want: `{"args":[],"mutationResult":null,"prepared":null,"state":null}`},
		{fn: "echo_globals", inv: sandbox.Invocation{
			Globals: sandbox.Globals{State: json.RawMessage(`{"s":1}`), Prepared: json.RawMessage(`[2]`),
				MutationResult: json.RawMessage(`"m"`)},
			Args: []json.RawMessage{json.RawMessage(`{"s":1}`), nil}},
			want: `{"args":[{"s":1},null],"mutationResult":"m","prepared":[2],"state":{"s":1}}`},
		{fn: "globals_readonly", inv: sandbox.Invocation{Globals: sandbox.Globals{State: json.RawMessage(`{"a":1,"list":[1]}`)}},
			want: `{"a":1,"list":[1]}`},
		{fn: "call_tool", want: `{"text":"hi"}`},
		{fn: "catch_tool_error", want: `{"class":"network","code":"connection_reset"}`},
		{fn: "fresh_instance", want: `1`},
		{fn: "fresh_instance", want: `1`},
		{fn: "phase", inv: sandbox.Invocation{Phase: scripthost.PhaseNext}, want: `"next"`},
		{fn: "deterministic", inv: sandbox.Invocation{Deterministic: det}, want: `"now":1767323045000`},
	}
	for _, tt := range tests {
		t.Run(tt.fn, func(t *testing.T) {
			inv := tt.inv
			inv.Function = tt.fn
			inv.Tools = &testTools{}
			res, err := p.Invoke(context.Background(), inv)
			if err != nil {
				t.Fatal(err)
			}
			if got := string(res.Value); !strings.Contains(got, tt.want) {
				t.Errorf("got %s, want %s", got, tt.want)
			}
		})
	}
}

func TestGoGuestDeterminism(t *testing.T) {
	p := conformance(t)
	run := func(seed int64) string {
		res, err := p.Invoke(context.Background(), sandbox.Invocation{Function: "deterministic",
			Deterministic: &sandbox.Determinism{Now: time.Unix(1000, 0), Seed: seed}})
		if err != nil {
			t.Fatal(err)
		}
		return string(res.Value)
	}
	a, b, c := run(1), run(1), run(2)
	if a != b {
		t.Errorf("same seed: got %s and %s, want equal", a, b)
	}
	if a == c {
		t.Errorf("seeds 1 and 2 both gave %s, want different numbers", a)
	}
	if !strings.Contains(a, `"now":1000000`) {
		t.Errorf("got %s, want now 1000000", a)
	}
	// Without Determinism the clock is wazero's fake one and random_get reads the
	// engine's source: two runs differ.
	r1, err1 := p.Invoke(context.Background(), sandbox.Invocation{Function: "deterministic"})
	r2, err2 := p.Invoke(context.Background(), sandbox.Invocation{Function: "deterministic"})
	if err1 != nil || err2 != nil {
		t.Fatal(err1, err2)
	}
	if string(r1.Value) == string(r2.Value) {
		t.Errorf("two non-deterministic runs both gave %s", r1.Value)
	}
}

func TestGoGuestConsole(t *testing.T) {
	p := conformance(t)
	res, err := p.Invoke(context.Background(), sandbox.Invocation{Function: "console"})
	if err != nil {
		t.Fatal(err)
	}
	want := []sandbox.ConsoleLine{{Level: "log", Text: "one"}, {Level: "warn", Text: "two"}, {Level: "error", Text: "three"}}
	if len(res.Console) != len(want) {
		t.Fatalf("got %v, want %v", res.Console, want)
	}
	for i := range want {
		if res.Console[i] != want[i] {
			t.Errorf("line %d: got %v, want %v", i, res.Console[i], want[i])
		}
	}

	res, err = p.Invoke(context.Background(), sandbox.Invocation{Function: "console_flood",
		Limits: sandbox.Limits{MaxConsoleBytes: 1000}})
	if err != nil || string(res.Value) != `"done"` {
		t.Fatalf("got %s, %v; want \"done\"", res.Value, err)
	}
	total := 0
	for _, l := range res.Console[:len(res.Console)-1] {
		total += len(l.Text)
	}
	if total > 1000 || total < 900 {
		t.Errorf("got %d bytes of console lines, want at most 1000 (and most of it kept)", total)
	}
	if last := res.Console[len(res.Console)-1]; !strings.Contains(last.Text, "truncated") {
		t.Errorf("got last line %q, want a truncation marker", last.Text)
	}

	res, err = p.Invoke(context.Background(), sandbox.Invocation{Function: "stdout"})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Console) != 1 || res.Console[0] != (sandbox.ConsoleLine{Level: "error", Text: "to stderr"}) {
		t.Errorf("got %v, want one error line \"to stderr\"", res.Console)
	}
}

func TestGoGuestErrors(t *testing.T) {
	p := conformance(t)
	tests := []struct {
		fn     string
		limits sandbox.Limits
		check  func(t *testing.T, err error, tools *testTools)
	}{
		{fn: "tool_error_class", check: func(t *testing.T, err error, _ *testTools) {
			if !errors.Is(err, errTestNetwork) || !scripthost.IsNetwork(err) {
				t.Errorf("got %v (class %s), want the tool's network error", err, scripthost.ClassOf(err))
			}
		}},
		{fn: "terminate", check: func(t *testing.T, err error, _ *testTools) {
			if !errors.Is(err, sandbox.ErrTerminate) || !errors.Is(err, errTestCause) {
				t.Errorf("got %v, want ErrTerminate wrapping the cause", err)
			}
		}},
		{fn: "tool_panic", check: func(t *testing.T, err error, _ *testTools) {
			var se *scripthost.Error
			if !errors.As(err, &se) || se.Class != scripthost.ClassInternal || se.Code != scripthost.CodeToolPanic {
				t.Errorf("got %v, want an internal tool_panic error", err)
			}
		}},
		{fn: "tool_flood", limits: sandbox.Limits{MaxToolCalls: 10}, check: func(t *testing.T, err error, tools *testTools) {
			if le := limitOf(err); le == nil || le.Limit != "tool_calls" {
				t.Errorf("got %v, want a tool_calls LimitError", err)
			}
			if n := tools.calls.Load(); n != 10 {
				t.Errorf("got %d calls reaching the tools, want 10", n)
			}
		}},
		{fn: "throw", check: func(t *testing.T, err error, _ *testTools) {
			var se *scripthost.Error
			if !errors.As(err, &se) || se.Code != scripthost.CodeScript || se.Line == 0 ||
				!strings.Contains(se.Message, "boom") || !strings.HasSuffix(se.File, "conformance/main.go") {
				t.Errorf("got %#v, want a script_error at conformance/main.go:<line> saying boom", se)
			}
		}},
		{fn: "fail_error", check: func(t *testing.T, err error, _ *testTools) {
			var se *scripthost.Error
			if !errors.As(err, &se) || se.Code != scripthost.CodeScript || se.Line == 0 || !strings.Contains(se.Message, "boom from an error") {
				t.Errorf("got %#v, want a located script_error", se)
			}
		}},
		{fn: "raw_panic", check: func(t *testing.T, err error, _ *testTools) {
			var se *scripthost.Error
			if !errors.As(err, &se) || se.Code != scripthost.CodeScript || se.Line == 0 ||
				!strings.Contains(se.Message, "panic: raw boom") || !strings.HasSuffix(se.File, "conformance/main.go") {
				t.Errorf("got %#v, want a script_error at conformance/main.go:<line> with the panic", se)
			}
		}},
		{fn: "endless_loop", limits: sandbox.Limits{Timeout: 200 * time.Millisecond}, check: func(t *testing.T, err error, _ *testTools) {
			if le := limitOf(err); le == nil || le.Limit != "timeout" {
				t.Errorf("got %v, want a timeout LimitError", err)
			}
		}},
		// The limit tested must end these, however slow the machine: the timeout is
		// far away.
		{fn: "recursion", limits: sandbox.Limits{MaxMemoryPages: 512, Timeout: 2 * time.Minute}, check: func(t *testing.T, err error, _ *testTools) {
			if le := limitOf(err); le == nil || (le.Limit != "memory" && le.Limit != "stack") {
				t.Errorf("got %v, want a memory or stack LimitError", err)
			}
		}},
		{fn: "memory_hog", limits: sandbox.Limits{MaxMemoryPages: 512, Timeout: 2 * time.Minute}, check: func(t *testing.T, err error, _ *testTools) {
			if le := limitOf(err); le == nil || le.Limit != "memory" {
				t.Errorf("got %v, want a memory LimitError", err)
			}
		}},
		{fn: "huge_output", limits: sandbox.Limits{MaxOutputBytes: 1000}, check: func(t *testing.T, err error, _ *testTools) {
			if le := limitOf(err); le == nil || le.Limit != "output" {
				t.Errorf("got %v, want an output LimitError", err)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.fn, func(t *testing.T) {
			tools := &testTools{}
			_, err := p.Invoke(context.Background(), sandbox.Invocation{Function: tt.fn, Tools: tools, Limits: tt.limits})
			if err == nil {
				t.Fatal("got nil error, want one")
			}
			tt.check(t, err, tools)
		})
	}
}

// TestNoRealClockByDefault: an engine without WASIConfig.RealClock gives guests
// wazero's fake clock, which starts at 2022-01-01T00:00:00Z.
func TestNoRealClockByDefault(t *testing.T) {
	code := buildGuest(t, conformanceDir)
	e := newEngine(t, Options{CacheDir: sharedCacheDir()})
	p, err := e.Load(context.Background(), sandbox.Source{Name: "conformance.wasm", Code: code})
	if err != nil {
		t.Fatal(err)
	}
	res, err := p.Invoke(context.Background(), sandbox.Invocation{Function: "deterministic"})
	if err != nil {
		t.Fatal(err)
	}
	var out struct{ Now int64 }
	if err := json.Unmarshal(res.Value, &out); err != nil {
		t.Fatal(err)
	}
	fake := time.Date(2022, 1, 1, 0, 0, 0, 0, time.UTC).UnixMilli()
	if d := out.Now - fake; d < 0 || d > 60_000 {
		t.Errorf("got now %d, want wazero's fake clock, a little after %d", out.Now, fake)
	}
}
