package js_test

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/scripthost/scripthost"
	"github.com/scripthost/scripthost/internal/hostproc"
	"github.com/scripthost/scripthost/sandbox"
	"github.com/scripthost/scripthost/sandbox/js"
	"github.com/scripthost/scripthost/sandbox/sandboxtest"
)

// budgetCase is a script that spends its time or memory inside long built-ins, and
// the limit that must stop it.
type budgetCase struct {
	name    string
	code    string
	memory  int64         // the memory budget; 0 means budgetMemory
	timeout time.Duration // the timeout; 0 means farTimeout
	want    string        // the limit that must stop it: "memory", "timeout", "regex"
}

const (
	budgetMemory = 64 << 20
	bigMemory    = 1 << 30 // a budget the timeout cases never reach first
	// shortTimeout is the timeout of the cases that must end with it: longer than
	// building their input takes on a loaded machine, far shorter than the built-in
	// they then call would run if it ignored the interrupt.
	shortTimeout = 2 * time.Second
)

// jsonNested is a 16 MB JSON text of 1.8 million small nested arrays: about 4 GB once
// parsed, in one JSON.parse call.
const jsonNested = `'[' + '[[[[]]]],'.repeat(1.8e6) + '[]]'`

// budgetCases are the scripts TestBudgetsHoldInsideBuiltins runs. Each runs under a
// memory budget and a timeout, and must be stopped by the one named, inside the
// built-in: the timeout cases run under a budget they would reach only long after
// the timeout, so a built-in that ignores the interrupt runs on past it.
var budgetCases = []budgetCase{
	{name: "JSON.parse nested arrays", code: `return JSON.parse(` + jsonNested + `).length`, want: "memory"},
	{name: "JSON.parse nested arrays past the timeout", code: `return JSON.parse(` + jsonNested + `).length`,
		memory: bigMemory, timeout: shortTimeout, want: "timeout"},
	{name: "JSON.parse flat array of objects", code: `return JSON.parse('[' + '{"a":1,"b":"xy"},'.repeat(9e5) + '{}]').length`, want: "memory"},
	{name: "JSON.parse flat array of numbers", code: `return JSON.parse('[' + '1,'.repeat(7e6) + '1]').length`, want: "memory"},
	// The fast parser builds the whole valid prefix before it finds the error, and
	// then the slower one builds it again.
	{name: "JSON.parse invalid tail", code: `return JSON.parse('[' + '[],'.repeat(5e6) + ']x').length`, want: "memory"},
	{name: "JSON.stringify shared subtrees past the timeout", code: `let a = [1]; for (let i = 0; i < 40; i++) a = [a, a]; return JSON.stringify(a).length`,
		memory: bigMemory, timeout: shortTimeout, want: "timeout"},
	{name: "JSON.stringify huge structure", code: `const o = { s: 'x'.repeat(1000) }; return JSON.stringify(Array(1e5).fill(o)).length`, want: "memory"},
	{name: "Uint8Array push loop", code: `const a = []; for (;;) a.push(new Uint8Array(1 << 20))`, want: "memory"},
	{name: "Uint8Array push loop, written", code: `const a = []; for (;;) a.push(new Uint8Array(1 << 20).fill(1))`, want: "memory"},
	{name: "new ArrayBuffer(2**31)", code: `return new ArrayBuffer(2 ** 31).byteLength`, want: "memory"},
	{name: "new Float64Array(1e9)", code: `return new Float64Array(1e9).length`, want: "memory"},
	{name: "ArrayBuffer.prototype.slice loop", code: `const b = new ArrayBuffer(8 << 20); const a = []; for (;;) a.push(b.slice(0))`, want: "memory"},
	// Every element is read through a prototype chain 2000 objects long, natively.
	{name: "Uint8Array.from a deep array-like past the timeout", code: `let o = { length: 1e6 }
for (let i = 0; i < 2000; i++) o = Object.create(o)
return Uint8Array.from(o).length`, timeout: shortTimeout, want: "timeout"},
	{name: "Map growth", code: `const m = new Map(); for (let i = 0; ; i++) m.set(i, i)`, want: "memory"},
	{name: "Set growth", code: `const s = new Set(); for (let i = 0; ; i++) s.add('k' + i)`, want: "memory"},
	{name: "sort with a slow comparator", code: `const a = Array.from({ length: 1e5 }, (_, i) => -i)
a.sort((x, y) => { let n = 0; for (let i = 0; i < 1e4; i++) n += i; return x - y })`, timeout: shortTimeout, want: "timeout"},
	// The default comparison converts both elements to strings, natively, looking up
	// their conversion methods through a prototype chain 2000 objects long.
	{name: "sort with the default comparison past the timeout", code: `let p = {}
for (let i = 0; i < 2000; i++) p = Object.create(p)
const a = []; for (let i = 0; i < 1e5; i++) a.push(Object.create(p))
a.sort()`, memory: bigMemory, timeout: shortTimeout, want: "timeout"},
	{name: "'x'.repeat past the string limit", code: `return 'x'.repeat(budget / 4 + 1).length`, want: "memory"},
	{name: "'x'.repeat at the string limit, kept", code: `const a = []; for (;;) a.push('x'.repeat(budget / 4))`, want: "memory"},
	{name: "padStart past the string limit", code: `return ''.padStart(budget / 4 + 1, 'ab').length`, want: "memory"},
	{name: "Array(5e7).fill(0)", code: `return Array(5e7).fill(0).length`, want: "memory"},
	{name: "array growth", code: `const a = []; for (let i = 0; ; i++) a.push(i + 0.5)`, want: "memory"},
	{name: "regex backtracking", code: `return /(?=a)(a+)+$/.test('a'.repeat(1e4) + '!')`, want: "regex"},
	{name: "TextEncoder on a huge string", code: `return new TextEncoder().encode('\u20ac'.repeat(budget / 4)).length`, want: "memory"},
	{name: "TextEncoder loop", code: `const s = 'x'.repeat(4 << 20), a = []; for (;;) a.push(new TextEncoder().encode(s))`, want: "memory"},
}

// budgetProgram loads c's script; the script sees its budget as budget.
func budgetProgram(t testing.TB, eng *js.Engine, c budgetCase) (sandbox.Program, sandbox.Limits) {
	t.Helper()
	lim := sandbox.Limits{Timeout: c.timeout, MemoryBytes: c.memory}
	if lim.Timeout == 0 {
		lim.Timeout = farTimeout
	}
	if lim.MemoryBytes == 0 {
		lim.MemoryBytes = budgetMemory
	}
	code := fmt.Sprintf("export default { consumers: { c: { h() { const budget = %d\n%s\n} } } }", lim.MemoryBytes, c.code)
	return load(t, eng, "budget.js", code), lim
}

// grewRE finds how far past its budget the memory watcher saw a script's heap grow.
var grewRE = regexp.MustCompile(`heap grew by about (\d+) MiB`)

// runBudgetCase runs c and checks the limit that stopped it.
func runBudgetCase(t testing.TB, eng *js.Engine, c budgetCase) {
	t.Helper()
	p, lim := budgetProgram(t, eng, c)
	start := time.Now()
	res, err := p.Invoke(context.Background(), sandbox.Invocation{Function: "consumers.c.h", Phase: scripthost.PhasePrepare,
		Tools: sandboxtest.NewTools(), Limits: lim})
	if elapsed := time.Since(start); elapsed > lim.Timeout+slack {
		t.Errorf("took %v, want under %v", elapsed, lim.Timeout+slack)
	}
	var le *sandbox.LimitError
	if !errors.As(err, &le) {
		t.Fatalf("got %v (result %s), want a %s LimitError", err, res.Value, c.want)
	}
	if le.Limit != c.want {
		t.Fatalf("got limit %q (%v), want %q", le.Limit, err, c.want)
	}
	if !scripthost.IsLogic(err) {
		t.Errorf("got class %s, want logic", scripthost.ClassOf(err))
	}
	// The growth the watcher charged when it stopped the script: a built-in that
	// allocates in bulk must be stopped before it is far past the budget.
	if m := grewRE.FindStringSubmatch(le.Detail); m != nil {
		grew, _ := strconv.ParseInt(m[1], 10, 64)
		if limit := 2 * lim.MemoryBytes >> 20; grew > limit {
			t.Errorf("got heap growth of %d MiB charged (%s), want at most %d MiB (twice the budget)", grew, le.Detail, limit)
		}
	}
}

// TestBudgetsHoldInsideBuiltins: the timeout and the memory budget stop a script
// inside the built-ins that loop or allocate natively (JSON, typed arrays, Map and
// Set, sort, strings, regular expressions, TextEncoder), before it is far past
// either.
func TestBudgetsHoldInsideBuiltins(t *testing.T) {
	// The command's runtime settings (GOGC=400): the collector runs a quarter as often,
	// so a budget checked only after the fact is overrun furthest there (a typed-array
	// loop was charged 300 to 530 MiB against 64 MiB before goja metered its buffers).
	defer hostproc.Tune()()
	eng := js.New(js.Options{})
	for _, c := range budgetCases {
		t.Run(c.name, func(t *testing.T) { runBudgetCase(t, eng, c) })
	}
}

// rssOverhead is what the peak resident memory of a process running one hostile
// script may exceed twice the script's budget by, besides what the process held before
// the script started: the script's own source text and input strings (up to 16 MB in
// budgetCases), the runtime and the Go heap's headroom over its live part.
const rssOverhead = 64 << 20

// budgetCaseEnv names the budget case a child process of TestBudgetPeakRSS runs.
const budgetCaseEnv = "SCRIPTHOST_BUDGET_CASE"

// TestBudgetPeakRSS runs each memory case of budgetCases alone in a child process
// (this test binary, run again) and holds the peak resident memory the child reached
// while the script ran (VmHWM less the resident memory before it started) to twice
// the budget plus rssOverhead: the budget holds for the memory the process really
// uses, not only for what the watcher charged.
func TestBudgetPeakRSS(t *testing.T) {
	if name := os.Getenv(budgetCaseEnv); name != "" {
		budgetChild(t, name)
		return
	}
	if testing.Short() {
		t.Skip("runs a child process per case")
	}
	if raceEnabled {
		t.Skip("the race detector multiplies resident memory")
	}
	if _, err := os.Stat("/proc/self/status"); err != nil {
		t.Skip("needs /proc/self/status")
	}
	for _, c := range budgetCases {
		if c.memory > budgetMemory && c.want != "timeout" {
			continue
		}
		t.Run(c.name, func(t *testing.T) {
			cmd := exec.Command(os.Args[0], "-test.run=^TestBudgetPeakRSS$", "-test.v")
			// GOGC=400, as the command runs (hostproc.Tune).
			cmd.Env = append(os.Environ(), budgetCaseEnv+"="+c.name, "GOGC=400")
			out, err := cmd.CombinedOutput()
			if err != nil {
				t.Fatalf("child: %v\n%s", err, out)
			}
			var before, peak, budget int64
			found := false
			sc := bufio.NewScanner(bytes.NewReader(out))
			for sc.Scan() {
				if _, err := fmt.Sscanf(strings.TrimSpace(sc.Text()), "rss before=%d peak=%d budget=%d", &before, &peak, &budget); err == nil {
					found = true
				}
			}
			if !found {
				t.Fatalf("child printed no rss line:\n%s", out)
			}
			grew := peak - before
			t.Logf("peak RSS %d MiB, %d MiB over the %d MiB before the script, budget %d MiB", peak>>20, grew>>20, before>>20, budget>>20)
			if limit := 2*budget + rssOverhead; grew > limit {
				t.Errorf("got peak RSS %d MiB over what the process held before, want at most %d MiB (twice the %d MiB budget plus %d MiB)",
					grew>>20, limit>>20, budget>>20, rssOverhead>>20)
			}
		})
	}
}

// budgetChild runs the budget case named name and prints the process's resident
// memory before it and at its peak.
func budgetChild(t *testing.T, name string) {
	var c *budgetCase
	for i := range budgetCases {
		if budgetCases[i].name == name {
			c = &budgetCases[i]
		}
	}
	if c == nil {
		t.Fatalf("no budget case %q", name)
	}
	eng := js.New(js.Options{})
	// A first run of a well-behaved script builds what every run shares (the
	// compiled platform, goja's templates), which the process holds before.
	warm := load(t, eng, "warm.js", `export default { consumers: { c: { h() { return JSON.parse('[1]').length + new Uint8Array(4).length } } } }`)
	if _, err := warm.Invoke(context.Background(), sandbox.Invocation{Function: "consumers.c.h", Phase: scripthost.PhasePrepare,
		Tools: sandboxtest.NewTools()}); err != nil {
		t.Fatalf("warm-up: %v", err)
	}
	p, lim := budgetProgram(t, eng, *c)
	before, _, ok := hostproc.Memory()
	if !ok {
		t.Fatal("no resident memory in /proc/self/status")
	}
	_, err := p.Invoke(context.Background(), sandbox.Invocation{Function: "consumers.c.h", Phase: scripthost.PhasePrepare,
		Tools: sandboxtest.NewTools(), Limits: lim})
	_, peak, _ := hostproc.Memory()
	var le *sandbox.LimitError
	if !errors.As(err, &le) || le.Limit != c.want {
		t.Errorf("got %v, want a %s LimitError", err, c.want)
	}
	fmt.Printf("rss before=%d peak=%d budget=%d\n", before, peak, lim.MemoryBytes)
}
