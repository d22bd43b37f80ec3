package js_test

import (
	"context"
	"errors"
	"runtime"
	"runtime/metrics"
	"strings"
	"testing"

	"github.com/scripthost/scripthost"
	"github.com/scripthost/scripthost/sandbox"
	"github.com/scripthost/scripthost/sandbox/js"
	"github.com/scripthost/scripthost/sandbox/sandboxtest"
)

// TestStringBuildersRefused: every built-in that builds a string from script values
// refuses, before it grows, a string longer than a quarter of the memory budget in
// characters (the limit + and template literals have). The invocation ends with a
// memory limit error although the script catches the RangeError, and the process
// has allocated little while it ran: each case would build 2 to 64 times the limit.
// The regular expressions match little text: a match is timed, with a limit of its
// own, and the test must not depend on the machine's speed.
func TestStringBuildersRefused(t *testing.T) {
	const budget = 8 << 20 // strings up to 2 M characters
	// big is 1 M characters; obj converts to it, as a string and as a locale string.
	const prefix = `const big = 'x'.repeat(1 << 20)
const obj = { toString() { return big }, toLocaleString() { return big } }
`
	for _, tt := range []struct {
		name, code string
		// either: the string nearly fills the budget on its way to the limit, so the
		// heap watcher may stop the script first, with its own memory error.
		either bool
	}{
		{"replace regex", `'ab'.repeat(64).replace(/a/g, big)`, false},
		{"replace regex $&", `'x'.repeat(1 << 16).replace(/.+/, '$&'.repeat(64))`, false},
		{"replace function", `'ab'.repeat(64).replace(/a/g, () => big)`, false},
		{"replace string", `('a' + big).replace('a', big + big)`, false},
		{"replaceAll regex", `'ab'.repeat(64).replaceAll(/b/g, big)`, false},
		{"replaceAll string", `'ab'.repeat(3).replaceAll('b', big)`, false},
		{"RegExp Symbol.replace", `/a/g[Symbol.replace]('ab'.repeat(64), big)`, false},
		{"repeat", `'abc'.repeat(1 << 20)`, false},
		{"padStart", `'x'.padStart(3 << 20, 'ab')`, false},
		{"padEnd", `'x'.padEnd(3 << 20)`, false},
		{"concat", `''.concat(obj, obj, obj)`, false},
		{"String.raw", `String.raw({ raw: [big, big, big] })`, false},
		{"Array join", `[obj, obj, obj, obj].join('')`, false},
		{"Array toLocaleString", `[obj, obj, obj].toLocaleString()`, false},
		{"typed array join", `new Int8Array(64).join(big)`, false},
		{"JSON.stringify", `JSON.stringify({ a: Array(32).fill(big) }, ['a'])`, false},
		{"normalize", `'\ufdfa'.repeat(1 << 18).normalize('NFKD')`, true},
		{"encodeURIComponent", `encodeURIComponent('\u00e9'.repeat(1 << 19))`, false},
		{"escape", `escape('\u4e2d'.repeat(1 << 19))`, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			p := load(t, js.New(js.Options{}), "build.js", `export default { consumers: { c: { h() {
`+prefix+`  try { const s = `+tt.code+`; return 'built ' + s.length } catch (e) { return 'caught: ' + e }
} } } }`)
			runtime.GC()
			before := allocated()
			res, err := p.Invoke(context.Background(), sandbox.Invocation{Function: "consumers.c.h",
				Phase: scripthost.PhasePrepare, Tools: sandboxtest.NewTools(),
				Limits: sandbox.Limits{Timeout: farTimeout, MemoryBytes: budget}})
			grew := allocated() - before
			var le *sandbox.LimitError
			if !errors.As(err, &le) || le.Limit != "memory" {
				t.Fatalf("got %v (result %s), want a memory LimitError", err, res.Value)
			}
			if !tt.either && !strings.Contains(err.Error(), "exceeds the memory budget") {
				t.Errorf("got %q, want it to say the string exceeds the memory budget", err)
			}
			// The script's own strings (big, its copies), a fresh runtime and the
			// garbage of a conversion take a few MiB to tens; the refused strings would
			// take 6 to 150.
			if grew > 8*budget {
				t.Errorf("allocated %d MiB while it ran, want at most %d MiB", grew>>20, 8*budget>>20)
			}
			t.Logf("allocated %d MiB: %v", grew>>20, err)
		})
	}
}

// allocated is the number of bytes the process has allocated on the heap so far.
func allocated() int64 {
	s := []metrics.Sample{{Name: "/gc/heap/allocs:bytes"}}
	metrics.Read(s)
	return int64(s[0].Value.Uint64())
}
