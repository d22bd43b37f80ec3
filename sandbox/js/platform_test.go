package js_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/scripthost/scripthost"
	"github.com/scripthost/scripthost/sandbox"
	"github.com/scripthost/scripthost/sandbox/js"
	"github.com/scripthost/scripthost/sandbox/sandboxtest"
)

var platformEngine = js.New(js.Options{})

// evalJS runs body as an async handler and returns its result as JSON.
func evalJS(t testing.TB, body string, det *sandbox.Determinism) (string, error) {
	t.Helper()
	src := "export default { h: { async f() {\n" + body + "\n} } }"
	p, err := platformEngine.Load(context.Background(), sandbox.Source{Name: "platform.js", Code: []byte(src)})
	if err != nil {
		return "", err
	}
	res, err := p.Invoke(context.Background(), sandbox.Invocation{Function: "h.f", Phase: scripthost.PhaseProducer,
		Tools: sandboxtest.NewTools(), Deterministic: det, Limits: sandbox.Limits{Timeout: 20 * time.Second}})
	return string(res.Value), err
}

// cases runs each body and compares its JSON result with want.
type jsCase struct {
	name, body, want string
}

func runCases(t *testing.T, det *sandbox.Determinism, cases []jsCase) {
	t.Helper()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := evalJS(t, c.body, det)
			if err != nil {
				t.Fatalf("error: %v", err)
			}
			var g, w any
			if err := json.Unmarshal([]byte(got), &g); err != nil {
				t.Fatalf("result %s: %v", got, err)
			}
			if err := json.Unmarshal([]byte(c.want), &w); err != nil {
				t.Fatalf("want %s: %v", c.want, err)
			}
			gj, _ := json.Marshal(g)
			wj, _ := json.Marshal(w)
			if string(gj) != string(wj) {
				t.Errorf("got  %s\nwant %s", gj, wj)
			}
		})
	}
}

func TestPlatformSmoke(t *testing.T) {
	runCases(t, nil, []jsCase{
		{"url", `const u = new URL('../c?x=1#f', 'http://a/b/d'); return [u.href, u.origin, u.searchParams.get('x')]`, `["http://a/c?x=1#f","http://a","1"]`},
		{"text", `return Array.from(new TextEncoder().encode('é'))`, `[195,169]`},
		{"base64", `return [btoa('hi'), atob('aGk=')]`, `["aGk=","hi"]`},
		{"clone", `const a = {x: new Map([[1, new Set([2])]])}; a.self = a; const b = structuredClone(a); return [b.self === b, b.x.get(1).has(2), b !== a]`, `[true,true,true]`},
		{"uuid", `return crypto.randomUUID().length`, `36`},
		{"digest", `const d = await crypto.subtle.digest('SHA-256', new TextEncoder().encode('abc')); return Array.from(new Uint8Array(d)).slice(0,4)`, `[186,120,22,191]`},
		{"timer", `const t0 = Date.now(); await new Promise(r => setTimeout(r, 20)); return Date.now() - t0 >= 19`, `true`},
		{"intl", `return [(1234.5).toLocaleString('en-US'), new Intl.NumberFormat('de-DE', {style:'currency', currency:'EUR'}).format(1234.5), new Date(Date.UTC(2026,0,15,15,4,5)).toLocaleString('en-US', {timeZone:'UTC'})]`, `["1,234.5","1.234,50\u00a0€","1/15/2026, 3:04:05 PM"]`},
	})
}

// TestStructuredCloneDepthLimit: under the default memory budget a value nested past
// 10,000 levels is refused with a stack LimitError naming structuredClone.
func TestStructuredCloneDepthLimit(t *testing.T) {
	_, err := evalJS(t, `let v = {}; for (let i = 0; i < 20000; i++) v = { v }; return structuredClone(v) === v`, nil)
	var le *sandbox.LimitError
	if !errors.As(err, &le) || le.Limit != "stack" || !strings.Contains(le.Detail, "structuredClone") {
		t.Fatalf("got %v, want a stack LimitError about structuredClone", err)
	}
	got, err := evalJS(t, `let v = {}; for (let i = 0; i < 9000; i++) v = { v }; let c = structuredClone(v), n = 0; while (c.v) { c = c.v; n++ } return n`, nil)
	if err != nil || got != "9000" {
		t.Fatalf("9000 levels: got %s, %v; want 9000", got, err)
	}
}

// TestWorkflowsDocWebPlatformExample runs the web-platform example of docs/workflows.md
// as a handler.
func TestWorkflowsDocWebPlatformExample(t *testing.T) {
	readme, err := os.ReadFile("../../docs/workflows.md")
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(readme), "\n## Web platform\n")
	if ok {
		_, rest, ok = strings.Cut(rest, "```js\n")
	}
	code, _, ok2 := strings.Cut(rest, "```")
	if !ok || !ok2 {
		t.Fatal("docs/workflows.md: no js block after ## Web platform")
	}
	got, err := evalJS(t, code+"\nreturn { ok, origin: url.origin, after: url.searchParams.get('starting_after').length, total }", nil)
	if err != nil {
		t.Fatalf("docs/workflows.md example: %v", err)
	}
	if want := "{\"ok\":true,\"origin\":\"https://api.example.com\",\"after\":36,\"total\":\"1.234,50\u00a0€\"}"; got != want {
		t.Errorf("docs/workflows.md example: got %s, want %s", got, want)
	}
}

// TestPlatformLimits: each web API that could allocate or loop without bound is stopped
// by the limit meant for it (with a timeout generous enough that a slow machine does
// not end it first).
func TestPlatformLimits(t *testing.T) {
	tests := []struct {
		name, body, limit string
		memory            int64
	}{
		// 10,000 pending callbacks hold about 8 MiB: the cap shows under a budget with
		// room to spare, not at the 8 MiB of the others, where either limit may come
		// first.
		{"timer flood", `for (;;) setTimeout(() => {}, 1000)`, "timers", 64 << 20},
		{"TextEncoder", `return new TextEncoder().encode('x'.repeat(3 << 20)).length`, "memory", 8 << 20},
		{"TextDecoder", `return new TextDecoder().decode(new Uint8Array(6 << 20)).length`, "memory", 8 << 20},
		{"btoa", `return btoa('x'.repeat(5 << 20)).length`, "memory", 8 << 20},
		{"structuredClone length", `const a = []; a.length = 1e9; return structuredClone(a).length`, "memory", 8 << 20},
		{"structuredClone buffers", `const b = new ArrayBuffer(3 << 20); return structuredClone([b, b.slice(0), b.slice(0)]).length`, "memory", 8 << 20},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := load(t, platformEngine, "limits.js", "export default { h: { async f() {\n"+tc.body+"\n} } }")
			_, err := p.Invoke(context.Background(), sandbox.Invocation{Function: "h.f", Phase: scripthost.PhaseProducer,
				Tools: sandboxtest.NewTools(), Limits: sandbox.Limits{Timeout: time.Minute, MemoryBytes: tc.memory}})
			var le *sandbox.LimitError
			if !errors.As(err, &le) || le.Limit != tc.limit {
				t.Fatalf("got %v, want a %s LimitError", err, tc.limit)
			}
		})
	}
}
