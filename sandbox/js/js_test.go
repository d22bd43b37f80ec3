package js_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/scripthost/scripthost"
	"github.com/scripthost/scripthost/sandbox"
	"github.com/scripthost/scripthost/sandbox/js"
	"github.com/scripthost/scripthost/sandbox/sandboxtest"
)

func invoke(t *testing.T, p sandbox.Program, fn string, args ...string) (sandbox.Result, error) {
	t.Helper()
	inv := sandbox.Invocation{Function: fn, Phase: scripthost.PhasePrepare, Tools: sandboxtest.NewTools()}
	for _, a := range args {
		inv.Args = append(inv.Args, json.RawMessage(a))
	}
	return p.Invoke(context.Background(), inv)
}

func scriptErr(t *testing.T, err error) *scripthost.Error {
	t.Helper()
	var se *scripthost.Error
	if !errors.As(err, &se) {
		t.Fatalf("got %v, want a *scripthost.Error", err)
	}
	return se
}

// The throw sits on line 7 of the TypeScript source; the interface, type and blank
// lines esbuild removes must not shift it.
const tsSource = `interface Input { n: number }
type Out = { doubled: number }

function check(x: Input): Out {
  const limit: number = 0
  if (x.n < limit) {
    throw new Error('negative: ' + x.n)
  }
  return { doubled: x.n * 2 }
}

export default { consumers: { c: { prepare: async (s: Input): Promise<Out> => check(s) } } }
`

func TestTypeScriptErrorLocation(t *testing.T) {
	p := load(t, js.New(js.Options{}), "wf.ts", tsSource)
	res, err := invoke(t, p, "consumers.c.prepare", `{"n":21}`)
	if err != nil {
		t.Fatalf("Invoke: %v", err)
	}
	if got := string(res.Value); got != `{"doubled":42}` {
		t.Errorf("result: got %s, want {\"doubled\":42}", got)
	}
	_, err = invoke(t, p, "consumers.c.prepare", `{"n":-1}`)
	se := scriptErr(t, err)
	if se.Class != scripthost.ClassLogic || se.Code != scripthost.CodeScript {
		t.Errorf("got class %s code %s, want logic %s", se.Class, se.Code, scripthost.CodeScript)
	}
	if se.File != "wf.ts" || se.Line != 7 || se.Column != 11 {
		t.Errorf("location: got %s:%d:%d, want wf.ts:7:11", se.File, se.Line, se.Column)
	}
	if !strings.Contains(se.Message, "negative: -1") || !strings.Contains(se.Stack, "wf.ts:7:") {
		t.Errorf("got message %q stack %q, want the error and its stack", se.Message, se.Stack)
	}
}

func TestLoadErrors(t *testing.T) {
	tests := []struct {
		name, file, code string
		line             int
		want             string
	}{
		{"syntax", "wf.ts", "const a = 1\nconst b: number = 2\nexport default { x: a +* b }\n", 3, "Unexpected"},
		{"syntax js", "wf.js", "export default {\n  a: (,\n}\n", 2, "Unexpected"},
		{"import", "wf.ts", "import { x } from './other'\nexport default { x }\n", 0, "imports are not supported"},
		{"no default", "wf.js", "export const x = 1\n", 0, "no default export"},
		{"commonjs", "wf.js", "module.exports = { consumers: {} }\n", 0, "no default export"},
		{"default number", "wf.js", "export default 42\n", 0, "no default export"},
		{"default function", "wf.js", "export default function () {}\n", 0, "default export is a function"},
		{"top-level throw", "wf.js", "throw new Error('at load')\nexport default {}\n", 1, "at load"},
		{"deep nesting", "wf.js", "export default " + strings.Repeat("[", 1e6) + "\n", 0, "nested deeper"},
	}
	eng := js.New(js.Options{})
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := eng.Load(context.Background(), sandbox.Source{Name: tt.file, Code: []byte(tt.code)})
			if !scripthost.IsLogic(err) {
				t.Fatalf("got %v, want a logic error", err)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("got %q, want it to contain %q", err, tt.want)
			}
			if se := scriptErr(t, err); tt.line > 0 && (se.Line != tt.line || se.File != tt.file) {
				t.Errorf("location: got %s:%d, want %s:%d", se.File, se.Line, tt.file, tt.line)
			}
		})
	}
}

func TestDefinition(t *testing.T) {
	p := load(t, js.New(js.Options{}), "wf.js", `export default {
  topics: ['files', 'done'],
  producers: { scan: { schedule: { every: '5m' }, publishes: ['files'], async handler(state) { return [] } } },
  consumers: { process: { subscribe: ['files'], publishes: ['done'],
    guard(state) { return true }, before() {}, after() {},
    onError: { strategy: 'retry', maxRetries: 2, backoff: 'exponential', delayMs: 100 },
    async prepare(state) { return state }, async mutate(prepared) { return 1 },
    async next(prepared, mutationResult) { return mutationResult + 1 },
    hooks: [() => 1, { nested: () => 2 }], missing: undefined, nothing: null } },
}`)
	def, err := p.Definition(context.Background())
	if err != nil {
		t.Fatalf("Definition: %v", err)
	}
	want := `{"topics":["files","done"],` +
		`"producers":{"scan":{"schedule":{"every":"5m"},"publishes":["files"],"handler":"producers.scan.handler"}},` +
		`"consumers":{"process":{"subscribe":["files"],"publishes":["done"],` +
		`"guard":"consumers.process.guard","before":"consumers.process.before","after":"consumers.process.after",` +
		`"onError":{"strategy":"retry","maxRetries":2,"backoff":"exponential","delayMs":100},` +
		`"prepare":"consumers.process.prepare","mutate":"consumers.process.mutate","next":"consumers.process.next",` +
		`"hooks":["consumers.process.hooks.0",{"nested":"consumers.process.hooks.1.nested"}],"nothing":null}}}`
	if string(def) != want {
		t.Errorf("got  %s\nwant %s", def, want)
	}
	tests := []struct{ fn, args, want string }{
		{"consumers.process.next", `[1, 41]`, `42`},
		{"consumers.process.hooks.1.nested", `[]`, `2`},
		{"producers.scan.handler", `[]`, `[]`},
	}
	for _, tt := range tests {
		var args []json.RawMessage
		_ = json.Unmarshal([]byte(tt.args), &args)
		res, err := p.Invoke(context.Background(), sandbox.Invocation{Function: tt.fn, Args: args, Tools: sandboxtest.NewTools()})
		if err != nil || string(res.Value) != tt.want {
			t.Errorf("Invoke(%s): got %s, %v, want %s", tt.fn, res.Value, err, tt.want)
		}
	}
	for _, fn := range []string{"consumers.process.onError", "consumers.process.constructor", "toString", "consumers.__proto__.toString", ""} {
		if _, err := invoke(t, p, fn); !scripthost.IsLogic(err) {
			t.Errorf("Invoke(%q): got %v, want a logic error", fn, err)
		}
	}
}

func TestResultValues(t *testing.T) {
	p := load(t, js.New(js.Options{}), "wf.js", `export default { f: {
  undef() {}, date() { return new Date(0) }, nan() { return [NaN, Infinity] },
  cycle() { const a = {}; a.self = a; return a }, big() { return 10n },
  nested() { return { a: [1, 'two', { three: true }], u: undefined } },
  async later() { await null; return 'done' },
} }`)
	tests := []struct{ fn, want, err string }{
		{"f.undef", `null`, ""},
		{"f.date", `"1970-01-01T00:00:00.000Z"`, ""},
		{"f.nan", `[null,null]`, ""},
		{"f.nested", `{"a":[1,"two",{"three":true}]}`, ""},
		{"f.later", `"done"`, ""},
		{"f.cycle", "", "circular"},
		{"f.big", "", "BigInt"},
	}
	for _, tt := range tests {
		t.Run(tt.fn, func(t *testing.T) {
			res, err := invoke(t, p, tt.fn)
			if tt.err != "" {
				if !scripthost.IsLogic(err) || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("got %v, want a logic error containing %q", err, tt.err)
				}
				return
			}
			if err != nil || string(res.Value) != tt.want {
				t.Errorf("got %s, %v, want %s", res.Value, err, tt.want)
			}
		})
	}
}

func TestTools(t *testing.T) {
	p := load(t, js.New(js.Options{}), "wf.js", `export default { f: {
  async caught() {
    try { await Fail.network({ a: 1 }) } catch (e) {
      return { name: e.name, message: e.message, class: e.class, code: e.code, tool: e.tool, isError: e instanceof Error }
    }
  },
  async rethrown() {
    try { await Fail.network({}) } catch (e) { throw e }
  },
  async terminated() {
    try { await Fail.terminate({}) } catch (e) { await Echo.say({ after: 'catch' }) }
    finally { await Echo.say({ after: 'finally' }) }
    return 'survived'
  },
  result() { return Echo.say({ n: [1, 2] }).then((r) => ({ got: r, frozen: Object.isFrozen(Echo) })) },
  hijack() {
    try { Echo.say = () => 'hijacked' } catch (e) {}
    return Echo.say({ ok: true })
  },
  async unawaited() { Fail.network({}); return 'fine' },
} }`)
	t.Run("caught", func(t *testing.T) {
		res, err := invoke(t, p, "f.caught")
		want := `{"name":"ToolError","message":"sandboxtest: connection reset by peer","class":"network","code":"connection_reset","tool":"Fail.network","isError":true}`
		if err != nil || string(res.Value) != want {
			t.Errorf("got %s, %v, want %s", res.Value, err, want)
		}
	})
	t.Run("rethrown", func(t *testing.T) {
		_, err := invoke(t, p, "f.rethrown")
		se := scriptErr(t, err)
		if !errors.Is(err, sandboxtest.ErrNetwork) || se.Class != scripthost.ClassNetwork || se.Op != "Fail.network" || se.Line != 8 {
			t.Errorf("got %v (class %s, op %q, line %d), want the network error located at the call, line 8", err, se.Class, se.Op, se.Line)
		}
	})
	t.Run("terminated", func(t *testing.T) {
		tools := sandboxtest.NewTools()
		_, err := p.Invoke(context.Background(), sandbox.Invocation{Function: "f.terminated", Tools: tools})
		if !errors.Is(err, sandbox.ErrTerminate) || !errors.Is(err, sandboxtest.ErrTerminateCause) {
			t.Errorf("got %v, want the termination", err)
		}
		if calls := tools.Calls(); len(calls) != 1 {
			t.Errorf("calls: got %s, want only the terminating one", tools)
		}
	})
	for _, tt := range []struct{ fn, want string }{
		{"f.result", `{"got":{"n":[1,2]},"frozen":true}`},
		{"f.hijack", `{"ok":true}`},
		{"f.unawaited", `"fine"`},
	} {
		t.Run(tt.fn, func(t *testing.T) {
			res, err := invoke(t, p, tt.fn)
			if err != nil || string(res.Value) != tt.want {
				t.Errorf("got %s, %v, want %s", res.Value, err, tt.want)
			}
		})
	}
}

func TestPollutionDoesNotLeak(t *testing.T) {
	p := load(t, js.New(js.Options{}), "wf.js", `export default { f: {
  pollute() {
    Object.prototype.polluted = 'yes'
    Array.prototype.map = () => 'hijacked'
    JSON.stringify = () => '"hijacked"'
    globalThis.leak = 1
    return [1].map((x) => x)
  },
  check() { return [({}).polluted === undefined, [1].map((x) => x + 1), typeof leak] },
} }`)
	res, err := invoke(t, p, "f.pollute")
	if err != nil || string(res.Value) != `"hijacked"` {
		t.Fatalf("pollute: got %s, %v, want \"hijacked\" (serialized by the host, not the script)", res.Value, err)
	}
	res, err = invoke(t, p, "f.check")
	if err != nil || string(res.Value) != `[true,[2],"undefined"]` {
		t.Errorf("next invocation: got %s, %v, want [true,[2],\"undefined\"]", res.Value, err)
	}
}

func TestGlobalsReadOnly(t *testing.T) {
	p := load(t, js.New(js.Options{}), "wf.js", `'use strict'
export default { f: { write(arg) {
  const threw = []
  for (const [name, f] of [['assign', () => { __state__ = 1 }], ['property', () => { __state__.a = 2 }],
    ['nested', () => { __state__.list.push(3) }], ['arg', () => { arg.a = 4 }]]) {
    try { f() } catch (e) { threw.push(name + ':' + e.name) }
  }
  return { threw, state: __state__, arg }
} } }`)
	state := `{"a":1,"list":[1]}`
	res, err := p.Invoke(context.Background(), sandbox.Invocation{Function: "f.write", Tools: sandboxtest.NewTools(),
		Globals: sandbox.Globals{State: json.RawMessage(state)}, Args: []json.RawMessage{json.RawMessage(state)}})
	want := `{"threw":["assign:TypeError","property:TypeError","nested:TypeError","arg:TypeError"],"state":{"a":1,"list":[1]},"arg":{"a":1,"list":[1]}}`
	if err != nil || string(res.Value) != want {
		t.Errorf("got %s, %v, want %s", res.Value, err, want)
	}
}

// TestInputsParsedOnce: an input whose JSON text is another's (a phase's state is
// often its argument too) is the same frozen value; inputs with other texts are not,
// and every argument past the ones kept for sharing is still parsed.
func TestInputsParsedOnce(t *testing.T) {
	p := load(t, js.New(js.Options{}), "wf.js", `export default { f: { g(...args) {
  return { stateIsArg0: __state__ === args[0], preparedIsArg1: __prepared__ === args[1],
    stateIsPrepared: __state__ === __prepared__, args }
} } }`)
	state, other := json.RawMessage(`{"a":[1]}`), json.RawMessage(`{"a":[2]}`)
	args := []json.RawMessage{state, other}
	for i := range 6 {
		args = append(args, json.RawMessage(fmt.Sprintf(`{"n":%d}`, i)))
	}
	res, err := p.Invoke(context.Background(), sandbox.Invocation{Function: "f.g", Tools: sandboxtest.NewTools(),
		Globals: sandbox.Globals{State: state, Prepared: other}, Args: args})
	want := `{"stateIsArg0":true,"preparedIsArg1":true,"stateIsPrepared":false,"args":[{"a":[1]},{"a":[2]},{"n":0},{"n":1},{"n":2},{"n":3},{"n":4},{"n":5}]}`
	if err != nil || string(res.Value) != want {
		t.Errorf("got %s, %v, want %s", res.Value, err, want)
	}
}

func TestConsole(t *testing.T) {
	p := load(t, js.New(js.Options{}), "wf.js", `export default { f: { h() {
  console.log('a', 1, { b: 2 }, [1], undefined, null, () => 1)
  console.info('info'); console.debug('debug')
  console.error(new TypeError('bad'))
} } }`)
	res, err := invoke(t, p, "f.h")
	if err != nil {
		t.Fatal(err)
	}
	want := []string{`log a 1 {"b":2} [1] undefined null [Function]`, "log info", "log debug", "error TypeError: bad"}
	if len(res.Console) != len(want) {
		t.Fatalf("got %v, want %d lines", res.Console, len(want))
	}
	for i, l := range res.Console {
		if got := l.Level + " " + l.Text; !strings.HasPrefix(got, want[i]) {
			t.Errorf("line %d: got %q, want prefix %q", i, got, want[i])
		}
	}
}

func TestDeterministic(t *testing.T) {
	fixed := time.Date(2030, 5, 6, 7, 8, 9, 0, time.UTC)
	clock := time.Date(2001, 2, 3, 4, 5, 6, 0, time.UTC)
	p := load(t, js.New(js.Options{Clock: func() time.Time { return clock }}), "wf.js", `export default { f: { h() {
  return [new Date().toISOString(), Date.now(), Math.random()]
} } }`)
	run := func(d *sandbox.Determinism) []any {
		res, err := p.Invoke(context.Background(), sandbox.Invocation{Function: "f.h", Tools: sandboxtest.NewTools(), Deterministic: d})
		if err != nil {
			t.Fatal(err)
		}
		var out []any
		_ = json.Unmarshal(res.Value, &out)
		return out
	}
	a, b := run(&sandbox.Determinism{Now: fixed, Seed: 1}), run(&sandbox.Determinism{Now: fixed, Seed: 1})
	if a[0] != "2030-05-06T07:08:09.000Z" || a[1] != float64(fixed.UnixMilli()) || a[2] != b[2] {
		t.Errorf("deterministic: got %v and %v, want the fixed time and equal random numbers", a, b)
	}
	if c := run(nil); c[0] != "2001-02-03T04:05:06.000Z" {
		t.Errorf("injected clock: got %v, want 2001-02-03T04:05:06.000Z", c[0])
	}
}

func TestConcurrentInvocations(t *testing.T) {
	p := load(t, js.New(js.Options{}), "wf.js", `let n = 0
export default { f: { async h(x) { n++; const r = await Echo.say({ x }); return [n, r.x] } } }`)
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 10 {
				arg, _ := json.Marshal(g*100 + i)
				res, err := p.Invoke(context.Background(), sandbox.Invocation{Function: "f.h", Tools: sandboxtest.NewTools(), Args: []json.RawMessage{arg}})
				if want := "[1," + string(arg) + "]"; err != nil || string(res.Value) != want {
					t.Errorf("got %s, %v, want %s", res.Value, err, want)
					return
				}
			}
		}()
	}
	wg.Wait()
}

func TestDeterministicTimeZone(t *testing.T) {
	p := load(t, js.New(js.Options{}), "wf.js", `export default { f: { h() {
  const d = new Date()
  const local = new Date(2024, 0, 15, 9, 30)
  const moved = new Date(d.getTime()); moved.setHours(23, 15)
  return [d.getHours(), d.getDate(), d.getTimezoneOffset(), d.toString(), local.toISOString(), moved.toISOString(),
    new Date(2024, 0, 15).getTimezoneOffset(), new Date(NaN).getHours(), String(new Date(NaN)), typeof Date()]
} } }`)
	now := time.Date(2024, 7, 1, 2, 0, 0, 0, time.UTC)
	tests := []struct{ zone, want string }{
		{"", `[2,1,0,"Mon Jul 01 2024 02:00:00 GMT+0000 (UTC)","2024-01-15T09:30:00.000Z","2024-07-01T23:15:00.000Z",0,null,"Invalid Date","string"]`},
		{"America/New_York", `[22,30,240,"Sun Jun 30 2024 22:00:00 GMT-0400 (EDT)","2024-01-15T14:30:00.000Z","2024-07-01T03:15:00.000Z",300,null,"Invalid Date","string"]`},
		{"Asia/Kolkata", `[7,1,-330,"Mon Jul 01 2024 07:30:00 GMT+0530 (IST)","2024-01-15T04:00:00.000Z","2024-07-01T17:45:00.000Z",-330,null,"Invalid Date","string"]`},
	}
	for _, tt := range tests {
		t.Run(tt.zone, func(t *testing.T) {
			res, err := p.Invoke(context.Background(), sandbox.Invocation{Function: "f.h", Tools: sandboxtest.NewTools(),
				Deterministic: &sandbox.Determinism{Now: now, TimeZone: tt.zone}})
			if err != nil || string(res.Value) != tt.want {
				t.Errorf("got  %s, %v\nwant %s", res.Value, err, tt.want)
			}
		})
	}
	_, err := p.Invoke(context.Background(), sandbox.Invocation{Function: "f.h", Tools: sandboxtest.NewTools(),
		Deterministic: &sandbox.Determinism{Now: now, TimeZone: "Mars/Olympus"}})
	if !scripthost.IsLogic(err) {
		t.Errorf("unknown zone: got %v, want a logic error", err)
	}
}

// TestModernSyntax checks that what esbuild leaves or lowers for goja runs: the
// transform targets ES2017 and goja runs the rest.
func TestModernSyntax(t *testing.T) {
	p := load(t, js.New(js.Options{}), "wf.ts", `
enum Color { Red = 1, Green }
class Counter {
  #n = 0
  static zero = 0
  label?: string = 'c'
  inc(): number { return ++this.#n }
}
async function* gen() { yield 1; yield 2 }
export default { f: { async h(x?: { a?: { b?: number } }) {
  const c = new Counter(); c.inc()
  const out: number[] = []
  for await (const v of gen()) out.push(v)
  let z: number | undefined
  z ??= 5
  const { a, ...rest } = { a: 1, b: 2, c: 3 }
  const settled = await Promise.allSettled([Promise.resolve(1), Promise.reject(new Error('x'))])
  try { JSON.parse('{') } catch { z += 1 }
  return [x?.a?.b ?? 'none', c.inc(), out, z, rest, 2 ** 10, 1_000, Color.Green, settled.map((s) => s.status),
    Object.fromEntries([['k', 'v']]), [[1], [2]].flat(), 'a-b'.replaceAll('-', '+'), /(?<y>\d{4})/.exec('in 2024').groups.y]
} } }`)
	res, err := invoke(t, p, "f.h")
	want := `["none",2,[1,2],6,{"b":2,"c":3},1024,1000,2,["fulfilled","rejected"],{"k":"v"},[1,2],"a+b","2024"]`
	if err != nil || string(res.Value) != want {
		t.Errorf("got  %s, %v\nwant %s", res.Value, err, want)
	}
}

// blockingTools blocks every call until its context ends.
type blockingTools struct{ sandboxtest.Tools }

func (b *blockingTools) Call(ctx context.Context, ns, method string, input json.RawMessage) (json.RawMessage, error) {
	<-ctx.Done()
	return nil, ctx.Err()
}

func TestTimeoutDuringToolCall(t *testing.T) {
	p := load(t, js.New(js.Options{}), "wf.js", `export default { f: { async h() {
  try { await Echo.say({}) } catch (e) { for (;;) {} }
} } }`)
	start := time.Now()
	_, err := p.Invoke(context.Background(), sandbox.Invocation{Function: "f.h", Tools: &blockingTools{},
		Limits: sandbox.Limits{Timeout: 200 * time.Millisecond}})
	var le *sandbox.LimitError
	if !errors.As(err, &le) || le.Limit != "timeout" {
		t.Errorf("got %v, want a timeout LimitError", err)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("took %v, want about the 200ms limit", d)
	}
}

// shadowTools offers a tool whose namespace is a built-in global.
type shadowTools struct{ sandboxtest.Tools }

func (s *shadowTools) List() []sandbox.ToolName {
	return []sandbox.ToolName{{Namespace: "JSON", Method: "parse"}}
}

func TestToolNamespaceCannotHideGlobals(t *testing.T) {
	p := load(t, js.New(js.Options{}), "wf.js", `export default { f: { h() { return JSON.parse('1') } } }`)
	_, err := p.Invoke(context.Background(), sandbox.Invocation{Function: "f.h", Tools: &shadowTools{}})
	if err == nil || !strings.Contains(err.Error(), "would hide the global") {
		t.Errorf("got %v, want an error naming the clash", err)
	}
}

// TestDeepJSONParse: JSON.parse recurses natively per nesting level, and ten million
// levels overflow the Go stack, a fatal error no recover catches. The guard refuses
// the text first. (It runs with the default memory budget, which the string needs.)
func TestDeepJSONParse(t *testing.T) {
	p := load(t, js.New(js.Options{}), "wf.js", `export default { f: {
  deep() { return JSON.parse('['.repeat(1e7)) },
  fine() { return JSON.parse('{"a":"[[[[","b":[[1]]}') },
} }`)
	_, err := invoke(t, p, "f.deep")
	var le *sandbox.LimitError
	if !errors.As(err, &le) || le.Limit != "stack" {
		t.Errorf("deep: got %v, want a stack LimitError", err)
	}
	res, err := invoke(t, p, "f.fine")
	if err != nil || string(res.Value) != `{"a":"[[[[","b":[[1]]}` {
		t.Errorf("fine: got %s, %v", res.Value, err)
	}
}
