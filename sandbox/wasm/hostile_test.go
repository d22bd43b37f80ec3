package wasm

import (
	"context"
	"encoding/json"
	"errors"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/scripthost/scripthost"
	"github.com/scripthost/scripthost/sandbox"
)

func TestLoadRefusesHostileModules(t *testing.T) {
	e := newEngine(t, Options{})
	tests := []struct {
		file string
		want []string // substrings of the error
	}{
		{"noabi.wasm", []string{"does not export scripthost_abi_version", "ABI v1"}},
		{"nodescribe.wasm", []string{"does not export scripthost_describe"}},
		{"abiv2.wasm", []string{"guest ABI v2", "speaks v1"}},
		{"imports.wasm", []string{"env.now", "scripthost.exec (no such host function)"}},
		{"importglobal.wasm", []string{"imports 1 globals; the host provides none"}},
		{"reserved.wasm", []string{`export "scripthost:refused_pages": names starting with "scripthost:" are reserved`}},
		{"bigmem.wasm", []string{"maximum memory of 65536 pages (4 GiB)", "limit of 1024 pages (64 MiB)"}},
		{"badref.wasm", []string{`producers.p.handler: "missing" is not an exported function`}},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			_, err := e.Load(context.Background(), readFixture(t, tt.file))
			if err == nil {
				t.Fatalf("got nil error, want one containing %q", tt.want)
			}
			if !scripthost.IsLogic(err) {
				t.Errorf("got class %s, want logic (%v)", scripthost.ClassOf(err), err)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("got error %q, want it to contain %q", err, w)
				}
			}
		})
	}
}

func TestLoadRefusesGarbage(t *testing.T) {
	e := newEngine(t, Options{})
	for name, code := range map[string][]byte{
		"empty":     nil,
		"text":      []byte("export default {}"),
		"truncated": []byte("\x00asm\x01\x00\x00\x00\x05\x10"),
		"bad body":  []byte("\x00asm\x01\x00\x00\x00\x01\x04\x01\x60\x00\x00\x0a\x02\x01\x00"),
	} {
		t.Run(name, func(t *testing.T) {
			_, err := e.Load(context.Background(), sandbox.Source{Name: "x.wasm", Code: code})
			if !scripthost.IsLogic(err) {
				t.Fatalf("got %v, want a logic error", err)
			}
		})
	}
}

// hostileCase is one invocation of the hostile corpus and the error it must end with.
type hostileCase struct {
	file, fn string
	limits   sandbox.Limits
	limit    string   // want a LimitError with this name, or
	code     string   // a *scripthost.Error with this code
	want     []string // substrings of the error
}

func (tt hostileCase) check(t *testing.T, err error) {
	t.Helper()
	if err == nil {
		t.Fatal("got nil error, want one")
	}
	if !scripthost.IsLogic(err) {
		t.Errorf("got class %s, want logic", scripthost.ClassOf(err))
	}
	var se *scripthost.Error
	if !errors.As(err, &se) {
		t.Fatalf("got %T %v, want a *scripthost.Error", err, err)
	}
	if tt.limit != "" {
		if le := limitOf(err); le == nil || le.Limit != tt.limit {
			t.Errorf("got %v, want a %s LimitError", err, tt.limit)
		}
	} else if se.Code != tt.code {
		t.Errorf("got code %q, want %q (%v)", se.Code, tt.code, err)
	}
	for _, w := range tt.want {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("got error %q, want it to contain %q", err, w)
		}
	}
}

var hostileCases = []hostileCase{
	{file: "loop.wasm", fn: "spin", limits: sandbox.Limits{Timeout: 100 * time.Millisecond}, limit: "timeout"},
	{file: "fanout.wasm", fn: "fib", limits: sandbox.Limits{Timeout: 100 * time.Millisecond}, limit: "timeout"},
	{file: "grow.wasm", fn: "bomb", limits: sandbox.Limits{MaxMemoryPages: 64}, limit: "memory", want: []string{"cap is 64 pages"}},
	// At the engine's own cap wazero refuses the growth itself; it must still be a
	// memory limit, as must one growth far past the cap and one past a declared maximum.
	{file: "grow.wasm", fn: "bomb", limits: sandbox.Limits{Timeout: 2 * time.Minute}, limit: "memory", want: []string{"cap is 1024 pages (64 MiB)"}},
	{file: "grow.wasm", fn: "huge", limit: "memory", want: []string{"huge trap: unreachable after the guest asked for 2147549184 bytes (32769 pages)", "cap is 1024 pages (64 MiB)"}},
	// Past 4 GiB wazero refuses the growth without asking the engine's allocator.
	{file: "grow.wasm", fn: "past4g", limit: "memory", want: []string{"asked for 4295032832 bytes (65537 pages)", "more than the 65536 pages (4 GiB)"}},
	{file: "grow.wasm", fn: "maxgrow", limit: "memory", want: []string{"(4294967296 pages)", "more than the 65536 pages (4 GiB)"}},
	{file: "grow.wasm", fn: "nested", limit: "memory", want: []string{"trap: integer divide by zero after the guest asked for", "(131073 pages)"}},
	{file: "grow.wasm", fn: "failafter", limit: "memory", want: []string{"failafter failed (out of memory!!) after the guest asked for 2147549184 bytes"}},
	{file: "growmax.wasm", fn: "bomb", limit: "memory", want: []string{"declares a maximum of 4 pages"}},
	{file: "failbig.wasm", fn: "big", limit: "output", want: []string{"big: fail: error of 65537 bytes, limit 65536"}},
	{file: "failbig.wasm", fn: "oob_big", code: scripthost.CodeSandboxViolation, want: []string{"fail: error range [0x10000, +131072) is outside the guest memory of 131072 bytes"}},
	{file: "flood.wasm", fn: "flood", limits: sandbox.Limits{MaxToolCalls: 10}, limit: "tool_calls"},
	{file: "trap.wasm", fn: "unreachable", code: scripthost.CodeScript, want: []string{"unreachable: wasm trap: unreachable"}},
	{file: "trap.wasm", fn: "divzero", code: scripthost.CodeScript, want: []string{"divzero: wasm trap: integer divide by zero"}},
	{file: "trap.wasm", fn: "oob_load", code: scripthost.CodeScript, want: []string{"out of bounds memory access"}},
	// Filling wazero's 400 MB stack takes seconds on a loaded machine: the timeout
	// is far away so that the case does not depend on the machine's speed.
	{file: "trap.wasm", fn: "recurse", limits: sandbox.Limits{Timeout: 2 * time.Minute}, limit: "stack"},
	{file: "pointers.wasm", fn: "oob", code: scripthost.CodeSandboxViolation, want: []string{"oob: return_value: value range [0xfffa, +16) is outside the guest memory of 65536 bytes"}},
	{file: "pointers.wasm", fn: "wrap", code: scripthost.CodeSandboxViolation, want: []string{"[0xffffff00, +512) wraps around"}},
	{file: "pointers.wasm", fn: "huge_log", code: scripthost.CodeSandboxViolation, want: []string{"log: text range [0x0, +4294967295) is outside"}},
	{file: "pointers.wasm", fn: "huge_read", code: scripthost.CodeSandboxViolation, want: []string{"input_read: buffer range"}},
	{file: "pointers.wasm", fn: "tool_wrap", code: scripthost.CodeSandboxViolation, want: []string{"tool_call: name range [0xffffffff, +2) wraps"}},
	{file: "pointers.wasm", fn: "result_oob", code: scripthost.CodeSandboxViolation, want: []string{"result_read: buffer range [0xffff, +2)"}},
	{file: "pointers.wasm", fn: "bad_json", code: scripthost.CodeSandboxViolation, want: []string{"not valid JSON"}},
	{file: "pointers.wasm", fn: "bad_level", code: scripthost.CodeSandboxViolation, want: []string{"unknown level 9"}},
	{file: "good.wasm", fn: "scripthost_abi_version", code: scripthost.CodeInvalidWorkflow, want: []string{"not an exported handler"}},
	{file: "good.wasm", fn: "nope", code: scripthost.CodeInvalidWorkflow, want: []string{`"nope" is not an exported handler`}},
}

func TestHostileInvocations(t *testing.T) {
	e := newEngine(t, Options{})
	for _, tt := range hostileCases {
		t.Run(tt.file+"/"+tt.fn, func(t *testing.T) {
			p := load(t, e, tt.file)
			tools := &testTools{}
			start := time.Now()
			_, err := p.Invoke(context.Background(), sandbox.Invocation{
				Function: tt.fn, Phase: scripthost.PhaseProducer, Tools: tools, Limits: tt.limits})
			// A liveness bound, not a timing assertion: every case ends well within its
			// timeout (the default 5s) plus slack. The cases that run to a memory or stack
			// limit under a longer timeout are bounded by that timeout, since a loaded
			// machine under the race detector takes its time to get there.
			bound := 15 * time.Second
			if tt.limits.Timeout > bound {
				bound = tt.limits.Timeout
			}
			if d := time.Since(start); d > bound {
				t.Errorf("took %s", d)
			}
			tt.check(t, err)
			if tt.limit == "tool_calls" {
				if got := tools.calls.Load(); got != 10 {
					t.Errorf("got %d calls reaching the tools, want 10", got)
				}
			}
		})
	}
}

func TestPointerAtEndOfMemory(t *testing.T) {
	p := load(t, newEngine(t, Options{}), "pointers.wasm")
	res, err := p.Invoke(context.Background(), sandbox.Invocation{Function: "edge"})
	if err != nil {
		t.Fatal(err)
	}
	if got := string(res.Value); got != `"x"` {
		t.Errorf("got %s, want \"x\"", got)
	}
}

// TestRefusedGrowthIsNotAnError: a guest that sees memory.grow fail and carries on
// ends normally, however far past the cap it asked (past 4 GiB too).
func TestRefusedGrowthIsNotAnError(t *testing.T) {
	p := load(t, newEngine(t, Options{}), "grow.wasm")
	for _, fn := range []string{"polite", "polite4g"} {
		res, err := p.Invoke(context.Background(), sandbox.Invocation{Function: fn})
		if err != nil {
			t.Fatalf("%s: %v", fn, err)
		}
		if got := string(res.Value); got != "1" {
			t.Errorf("%s: got %s, want 1", fn, got)
		}
	}
}

// TestLoopDoesNotStallHost runs a guest that never returns (an endless loop, and a
// recursion without loops) and checks that, while it runs, a ticking goroutine
// advances, runtime.GC returns, and a well-behaved invocation of another module
// finishes.
func TestLoopDoesNotStallHost(t *testing.T) {
	for _, tt := range []struct{ file, fn string }{{"loop.wasm", "spin"}, {"fanout.wasm", "fib"}} {
		t.Run(tt.file, func(t *testing.T) { testDoesNotStallHost(t, tt.file, tt.fn) })
	}
}

func testDoesNotStallHost(t *testing.T, file, fn string) {
	e := newEngine(t, Options{})
	loop := load(t, e, file)
	good := load(t, e, "good.wasm")

	var ticks atomic.Int64
	stop := make(chan struct{})
	defer close(stop)
	go func() {
		tk := time.NewTicker(10 * time.Millisecond)
		defer tk.Stop()
		for {
			select {
			case <-stop:
				return
			case <-tk.C:
				ticks.Add(1)
			}
		}
	}()

	// The loop runs until cancelled below, however slow the machine: its timeout is
	// far away (TestHostileInvocations checks that the timeout stops it).
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() {
		_, err := loop.Invoke(ctx, sandbox.Invocation{Function: fn,
			Limits: sandbox.Limits{Timeout: 2 * time.Minute}})
		done <- err
	}()
	time.Sleep(100 * time.Millisecond) // let the guest enter its loop
	before := ticks.Load()
	gcDone := make(chan struct{})
	go func() { runtime.GC(); close(gcDone) }()
	select {
	case <-gcDone:
	case <-time.After(30 * time.Second):
		t.Fatal("runtime.GC did not return while the guest looped")
	}
	res, err := good.Invoke(context.Background(), sandbox.Invocation{Function: "echo",
		Globals: sandbox.Globals{State: json.RawMessage(`{"ok":true}`)}})
	if err != nil || string(res.Value) != `{"ok":true}` {
		t.Errorf("well-behaved invocation during the loop: got %s, %v; want {\"ok\":true}", res.Value, err)
	}
	time.Sleep(100 * time.Millisecond)
	if after := ticks.Load(); after <= before {
		t.Errorf("ticker stalled: got %d ticks after, %d before", after, before)
	}
	select {
	case err := <-done:
		t.Fatalf("loop ended early: %v", err)
	default:
	}
	cancel()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) {
			t.Errorf("got %v, want an error wrapping context.Canceled", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("loop did not stop when cancelled")
	}
}

func TestCancelStopsLoop(t *testing.T) {
	p := load(t, newEngine(t, Options{}), "loop.wasm")
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { defer wg.Done(); time.Sleep(50 * time.Millisecond); cancel() }()
	_, err := p.Invoke(ctx, sandbox.Invocation{Function: "spin", Limits: sandbox.Limits{Timeout: time.Minute}})
	wg.Wait()
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("got %v, want an error wrapping context.Canceled", err)
	}
	if limitOf(err) != nil {
		t.Errorf("got a LimitError %v for a cancelled context", err)
	}
}

// TestHostileConcurrently runs the whole hostile corpus at once while a well-behaved
// invocation runs again and again: every hostile case ends with its error and every
// well-behaved run succeeds.
func TestHostileConcurrently(t *testing.T) {
	e := newEngine(t, Options{})
	good := load(t, e, "good.wasm")
	progs := make([]*Program, len(hostileCases))
	for i, tt := range hostileCases {
		progs[i] = load(t, e, tt.file)
	}
	errs := make([]error, len(hostileCases))
	var wg sync.WaitGroup
	for i, tt := range hostileCases {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, errs[i] = progs[i].Invoke(context.Background(), sandbox.Invocation{
				Function: tt.fn, Tools: &testTools{}, Limits: tt.limits})
		}()
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	deadline := time.Now().Add(60 * time.Second)
	for runs, finished := 0, false; !finished || runs < 3; runs++ {
		select {
		case <-done:
			finished = true
		default:
		}
		if time.Now().After(deadline) {
			t.Fatal("hostile invocations did not finish")
		}
		res, err := good.Invoke(context.Background(), sandbox.Invocation{Function: "echo",
			Globals: sandbox.Globals{State: json.RawMessage(`[1]`)}})
		if err != nil || string(res.Value) != "[1]" {
			t.Fatalf("well-behaved run %d: got %s, %v; want [1]", runs, res.Value, err)
		}
	}
	for i, tt := range hostileCases {
		t.Run(tt.file+"/"+tt.fn, func(t *testing.T) { tt.check(t, errs[i]) })
	}
}
