package sandboxtest

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/scripthost/scripthost"
	"github.com/scripthost/scripthost/sandbox"
)

// timed invokes the behaviour and fails if it takes longer than limit + slack.
func (s *suite) timed(t *testing.T, ctx context.Context, name string, limits sandbox.Limits) (sandbox.Result, error) {
	t.Helper()
	p, c := s.load(t, name)
	start := time.Now()
	res, err := p.Invoke(ctx, sandbox.Invocation{Function: c.Function, Phase: scripthost.PhaseProducer, Tools: NewTools(), Limits: limits})
	bound := limits.WithDefaults().Timeout + slack
	if d := time.Since(start); d > bound {
		t.Errorf("%s took %v, want under %v", name, d, bound)
	}
	return res, err
}

func (s *suite) endlessLoop(t *testing.T) {
	t.Run("timeout", func(t *testing.T) {
		_, err := s.timed(t, context.Background(), EndlessLoop, sandbox.Limits{Timeout: 300 * time.Millisecond})
		wantLimit(t, err, "timeout")
	})
	t.Run("cancel", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		timer := time.AfterFunc(100*time.Millisecond, cancel)
		defer timer.Stop()
		_, err := s.timed(t, ctx, EndlessLoop, sandbox.Limits{Timeout: 5 * time.Second})
		if !errors.Is(err, context.Canceled) {
			t.Errorf("got %v, want an error wrapping context.Canceled", err)
		}
	})
}

func (s *suite) recursion(t *testing.T) {
	_, err := s.timed(t, context.Background(), Recursion, sandbox.Limits{MaxStackDepth: 200, Timeout: farTimeout})
	wantLimit(t, err, "stack", "memory")
}

func (s *suite) memoryHog(t *testing.T) {
	_, err := s.timed(t, context.Background(), MemoryHog, sandbox.Limits{MemoryBytes: 32 << 20, MaxMemoryPages: 512, Timeout: farTimeout})
	wantLimit(t, err, "memory")
}

func (s *suite) hugeOutput(t *testing.T) {
	_, err := s.timed(t, context.Background(), HugeOutput, sandbox.Limits{MaxOutputBytes: 1000})
	wantLimit(t, err, "output")
}

func (s *suite) freshInstance(t *testing.T) {
	p, c := s.load(t, FreshInstance)
	for i := range 3 {
		res, err := p.Invoke(context.Background(), sandbox.Invocation{Function: c.Function, Phase: scripthost.PhaseProducer, Tools: NewTools()})
		if err != nil {
			t.Fatalf("Invoke %d: %v", i, err)
		}
		equalJSON(t, "counter", res.Value, `1`)
	}
}

func (s *suite) deterministic(t *testing.T) {
	p, c := s.load(t, Deterministic)
	now := time.Date(2024, 1, 2, 3, 4, 5, 678e6, time.UTC)
	run := func(d *sandbox.Determinism) (ms int64, random []float64) {
		t.Helper()
		res, err := p.Invoke(context.Background(), sandbox.Invocation{Function: c.Function, Phase: scripthost.PhaseProducer, Tools: NewTools(), Deterministic: d})
		if err != nil {
			t.Fatalf("Invoke: %v", err)
		}
		var out struct {
			Now    int64     `json:"now"`
			Random []float64 `json:"random"`
		}
		if err := json.Unmarshal(res.Value, &out); err != nil || len(out.Random) != 3 {
			t.Fatalf("got %s, want {now, random: [3 numbers]} (%v)", res.Value, err)
		}
		for _, r := range out.Random {
			if r < 0 || r >= 1 {
				t.Errorf("random: got %v, want a number in [0, 1)", r)
			}
		}
		return out.Now, out.Random
	}
	ms1, r1 := run(&sandbox.Determinism{Now: now, Seed: 7})
	ms2, r2 := run(&sandbox.Determinism{Now: now, Seed: 7})
	_, r3 := run(&sandbox.Determinism{Now: now, Seed: 8})
	if ms1 != now.UnixMilli() || ms2 != now.UnixMilli() {
		t.Errorf("deterministic now: got %d and %d, want %d", ms1, ms2, now.UnixMilli())
	}
	if !equalFloats(r1, r2) {
		t.Errorf("same seed: got %v and %v, want equal", r1, r2)
	}
	if equalFloats(r1, r3) {
		t.Errorf("seeds 7 and 8: both gave %v, want different numbers", r1)
	}
	before := time.Now().UnixMilli()
	ms, _ := run(nil)
	if ms < before-60_000 || ms > time.Now().UnixMilli()+60_000 {
		t.Errorf("real now: got %d, want about %d", ms, before)
	}
}

func equalFloats(a, b []float64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func (s *suite) badModule(t *testing.T) {
	c, ok := s.modules(BadModule)
	if !ok {
		t.Fatalf("engine supplies no module for behaviour %s", BadModule)
	}
	p, err := s.eng.Load(context.Background(), c.Source)
	if err == nil {
		p.Close(context.Background())
		t.Fatalf("Load(%s): got no error, want a logic error", c.Source.Name)
	}
	if !scripthost.IsLogic(err) {
		t.Errorf("Load: got %v (class %q), want a logic error", err, scripthost.ClassOf(err))
	}
}

func (s *suite) unknownFunction(t *testing.T) {
	p, _ := s.load(t, EchoGlobals)
	_, err := p.Invoke(context.Background(), sandbox.Invocation{Function: "no.such.function", Phase: scripthost.PhaseProducer, Tools: NewTools()})
	if !scripthost.IsLogic(err) {
		t.Errorf("got %v (class %q), want a logic error", err, scripthost.ClassOf(err))
	}
}

// concurrentWithHostile runs well-behaved invocations while hostile ones run in other
// goroutines; every well-behaved one must succeed with the right value.
func (s *suite) concurrentWithHostile(t *testing.T) {
	hostile := []struct {
		name   string
		limits sandbox.Limits
		want   []string
	}{
		{EndlessLoop, sandbox.Limits{Timeout: time.Second}, []string{"timeout"}},
		{Recursion, sandbox.Limits{MaxStackDepth: 200, Timeout: farTimeout}, []string{"stack", "memory"}},
		{ToolFlood, sandbox.Limits{MaxToolCalls: 100}, []string{"tool_calls"}},
		// An engine may only see the process heap and share growth among the scripts
		// running at the time; the long timeout leaves room for that on a loaded machine.
		{MemoryHog, sandbox.Limits{MemoryBytes: 32 << 20, MaxMemoryPages: 512, Timeout: farTimeout}, []string{"memory"}},
	}
	for i := 0; i < len(hostile); i++ {
		if c, ok := s.modules(hostile[i].name); ok && c.Skip != "" {
			hostile = append(hostile[:i], hostile[i+1:]...)
			i--
		}
	}
	good, goodCase := s.load(t, EchoGlobals)
	type loaded struct {
		p sandbox.Program
		c Case
	}
	progs := make([]loaded, len(hostile))
	for i, h := range hostile {
		p, c := s.load(t, h.name)
		progs[i] = loaded{p, c}
	}
	var wg sync.WaitGroup
	errs := make([]error, len(hostile))
	done := make(chan struct{})
	for i, h := range hostile {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, errs[i] = progs[i].p.Invoke(context.Background(), sandbox.Invocation{Function: progs[i].c.Function, Phase: scripthost.PhaseProducer, Tools: NewTools(), Limits: h.limits})
		}()
	}
	go func() { wg.Wait(); close(done) }()
	state := json.RawMessage(`{"k":"v"}`)
	runs := 0
	for finished := false; !finished || runs < 5; runs++ {
		select {
		case <-done:
			finished = true
		default:
		}
		// What must hold is the result, not the latency: on a loaded machine (two
		// cores, the race detector, collections forced by the memory watcher) a trivial
		// invocation can wait seconds for the CPU, so it gets a generous timeout.
		res, err := good.Invoke(context.Background(), sandbox.Invocation{Function: goodCase.Function, Phase: scripthost.PhasePrepare,
			Globals: sandbox.Globals{State: state}, Tools: NewTools(), Limits: sandbox.Limits{Timeout: time.Minute}})
		if err != nil {
			t.Fatalf("well-behaved invocation %d: %v", runs, err)
		}
		equalJSON(t, "well-behaved result", res.Value, `{"state":{"k":"v"},"prepared":null,"mutationResult":null,"args":[]}`)
		if runs > 100000 {
			t.Fatal("hostile invocations did not finish")
		}
	}
	for i, h := range hostile {
		t.Run(h.name, func(t *testing.T) { wantLimit(t, errs[i], h.want...) })
	}
}
