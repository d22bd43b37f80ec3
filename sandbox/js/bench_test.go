package js_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/dop251/goja"

	"github.com/scripthost/scripthost"
	"github.com/scripthost/scripthost/internal/benchcmp"
	"github.com/scripthost/scripthost/sandbox"
	"github.com/scripthost/scripthost/sandbox/js"
)

// benchHandler is the phase function of the state benchmark: it walks the state and
// returns a small summary.
const benchHandler = `function (state) {
  let n = 0
  for (const item of state.items) n += item.size
  return { count: state.items.length, total: n }
}`

// benchState is about 10 KB of JSON.
func benchState(b *testing.B) json.RawMessage {
	b.Helper()
	var sb strings.Builder
	sb.WriteString(`{"items":[`)
	for i := range 100 {
		if i > 0 {
			sb.WriteByte(',')
		}
		fmt.Fprintf(&sb, `{"name":"file-%03d.txt","size":%d,"tags":["a","b"],"path":"/data/in/file-%03d.txt"}`, i, i*10, i)
	}
	sb.WriteString(`]}`)
	if sb.Len() < 8000 {
		b.Fatalf("state is %d bytes, want about 10 KB", sb.Len())
	}
	return json.RawMessage(sb.String())
}

// echo offers Echo.say, which returns its input, and records nothing: the tool's own
// cost stays out of the measurement.
type echo struct{}

func (echo) List() []sandbox.ToolName { return []sandbox.ToolName{{Namespace: "Echo", Method: "say"}} }
func (echo) Call(_ context.Context, _, _ string, in json.RawMessage) (json.RawMessage, error) {
	return in, nil
}

// invokeLoop runs inv on p once per iteration.
func invokeLoop(p sandbox.Program, inv sandbox.Invocation) func(b *testing.B) {
	return func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := p.Invoke(context.Background(), inv); err != nil {
				b.Fatal(err)
			}
		}
	}
}

// bareFresh is the bare-goja side of a phase: a new runtime, the function compiled from
// src run in it, called with args made by mkArgs, and its result stringified.
func bareFresh(src string, setup func(vm *goja.Runtime), mkArgs func(vm *goja.Runtime) []goja.Value) func(b *testing.B) {
	prg := goja.MustCompile("wf.js", "("+src+")", false)
	return func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			vm := goja.New()
			if setup != nil {
				setup(vm)
			}
			fv, err := vm.RunProgram(prg)
			if err != nil {
				b.Fatal(err)
			}
			fn, _ := goja.AssertFunction(fv)
			v, err := fn(goja.Undefined(), mkArgs(vm)...)
			if err != nil {
				b.Fatal(err)
			}
			stringify, _ := goja.AssertFunction(vm.Get("JSON").ToObject(vm).Get("stringify"))
			if _, err := stringify(goja.Undefined(), v); err != nil {
				b.Fatal(err)
			}
		}
	}
}

// BenchmarkJSPhaseToolCall: one phase that makes one tool call, in a fresh sandbox,
// against a fresh bare goja runtime calling one Go function.
func BenchmarkJSPhaseToolCall(b *testing.B) {
	p := load(b, js.New(js.Options{}), "wf.js", `export default { f: { async h() { return await Echo.say({ text: 'hi' }) } } }`)
	inv := sandbox.Invocation{Function: "f.h", Phase: scripthost.PhaseProducer, Tools: echo{}}
	setup := func(vm *goja.Runtime) {
		_ = vm.Set("say", func(v goja.Value) goja.Value { return v })
	}
	ref := bareFresh(`function () { return say({ text: 'hi' }) }`, setup, func(*goja.Runtime) []goja.Value { return nil })
	benchcmp.Against(b, "phase", benchcmp.Case{Run: ref}, benchcmp.Case{Run: invokeLoop(p, inv)})
}

// calls is how many awaited tool calls one invocation of the per-call benchmark makes:
// enough that the invocation's fixed cost is a few percent of the total.
const calls = 100

// BenchmarkJSToolCall: the cost of one awaited tool call inside an invocation, against
// a warm bare goja runtime awaiting a Go function that returns a resolved promise.
func BenchmarkJSToolCall(b *testing.B) {
	p := load(b, js.New(js.Options{}), "wf.js", fmt.Sprintf(`export default { f: { async h() {
  let r
  for (let i = 0; i < %d; i++) r = await Echo.say({ text: 'hi', i })
  return r
} } }`, calls))
	inv := sandbox.Invocation{Function: "f.h", Phase: scripthost.PhaseProducer, Tools: echo{},
		Limits: sandbox.Limits{MaxToolCalls: calls}}
	ref := func(b *testing.B) {
		vm := goja.New()
		_ = vm.Set("say", func(v goja.Value) goja.Value {
			p, resolve, _ := vm.NewPromise()
			_ = resolve(v)
			return vm.ToValue(p)
		})
		fv, err := vm.RunString(fmt.Sprintf(`(async function () {
  let r
  for (let i = 0; i < %d; i++) r = await say({ text: 'hi', i })
  return r
})`, calls))
		if err != nil {
			b.Fatal(err)
		}
		fn, _ := goja.AssertFunction(fv)
		b.ReportAllocs()
		for b.Loop() {
			v, err := fn(goja.Undefined())
			if err != nil {
				b.Fatal(err)
			}
			if p, ok := v.Export().(*goja.Promise); !ok || p.State() != goja.PromiseStateFulfilled {
				b.Fatalf("got %v, want a fulfilled promise", v)
			}
		}
	}
	benchcmp.Against(b, "call", benchcmp.Case{Run: ref, Per: calls}, benchcmp.Case{Run: invokeLoop(p, inv), Per: calls})
}

// BenchmarkJSStatePhase: one prepare phase with 10 KB of state in and a small result
// out (fresh runtime, module evaluation, frozen globals and argument, call, result),
// against a fresh bare goja runtime parsing the state into native objects, calling the
// same function and stringifying its result.
func BenchmarkJSStatePhase(b *testing.B) {
	state := benchState(b)
	p := load(b, js.New(js.Options{}), "wf.js", "export default { consumers: { c: { prepare: "+benchHandler+" } } }")
	inv := sandbox.Invocation{Function: "consumers.c.prepare", Phase: scripthost.PhasePrepare,
		Globals: sandbox.Globals{State: state}, Args: []json.RawMessage{state}, Tools: echo{}}
	ref := bareFresh(benchHandler, nil, func(vm *goja.Runtime) []goja.Value {
		parse, _ := goja.AssertFunction(vm.Get("JSON").ToObject(vm).Get("parse"))
		arg, err := parse(goja.Undefined(), vm.ToValue(string(state)))
		if err != nil {
			b.Fatal(err)
		}
		return []goja.Value{arg}
	})
	benchcmp.Against(b, "phase", benchcmp.Case{Run: ref}, benchcmp.Case{Run: invokeLoop(p, inv)})
}
