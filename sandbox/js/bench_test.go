package js_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/dop251/goja"

	"github.com/scripthost/scripthost"
	"github.com/scripthost/scripthost/sandbox"
	"github.com/scripthost/scripthost/sandbox/js"
	"github.com/scripthost/scripthost/sandbox/sandboxtest"
)

// benchHandler is the phase function every benchmark runs: it walks the state and
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

// BenchmarkInvokePhase is one prepare phase through the engine: fresh runtime,
// prelude and guards, module evaluation, frozen globals and argument, call, result.
func BenchmarkInvokePhase(b *testing.B) {
	state := benchState(b)
	p := load(b, js.New(js.Options{}), "wf.js", "export default { consumers: { c: { prepare: "+benchHandler+" } } }")
	inv := sandbox.Invocation{Function: "consumers.c.prepare", Phase: scripthost.PhasePrepare,
		Globals: sandbox.Globals{State: state}, Args: []json.RawMessage{state}, Tools: sandboxtest.NewTools()}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := p.Invoke(context.Background(), inv); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkBareGoja is the same call on bare goja: new runtime, run the source, parse
// the state, call, stringify. It is the floor BenchmarkInvokePhase is compared with.
func BenchmarkBareGoja(b *testing.B) {
	state := string(benchState(b))
	prg := goja.MustCompile("wf.js", "("+benchHandler+")", false)
	b.ReportAllocs()
	for b.Loop() {
		vm := goja.New()
		fv, err := vm.RunProgram(prg)
		if err != nil {
			b.Fatal(err)
		}
		fn, _ := goja.AssertFunction(fv)
		parse, _ := goja.AssertFunction(vm.Get("JSON").ToObject(vm).Get("parse"))
		stringify, _ := goja.AssertFunction(vm.Get("JSON").ToObject(vm).Get("stringify"))
		arg, err := parse(goja.Undefined(), vm.ToValue(state))
		if err != nil {
			b.Fatal(err)
		}
		v, err := fn(goja.Undefined(), arg)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := stringify(goja.Undefined(), v); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkToolCall measures one tool round trip inside an invocation: the cost of an
// invocation making 100 awaited Echo.say calls, divided by 100, minus nothing (compare
// with BenchmarkInvokePhase for the fixed part).
func BenchmarkToolCall(b *testing.B) {
	p := load(b, js.New(js.Options{}), "wf.js", `export default { f: { async h() {
  let r
  for (let i = 0; i < 100; i++) r = await Echo.say({ text: 'hi', i })
  return r
} } }`)
	inv := sandbox.Invocation{Function: "f.h", Phase: scripthost.PhaseProducer, Tools: sandboxtest.NewTools()}
	b.ReportAllocs()
	for b.Loop() {
		inv.Tools = sandboxtest.NewTools()
		if _, err := p.Invoke(context.Background(), inv); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/100, "ns/call")
}
