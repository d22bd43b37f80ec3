package js_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/scripthost/scripthost"
	"github.com/scripthost/scripthost/sandbox"
	"github.com/scripthost/scripthost/sandbox/js"
	"github.com/scripthost/scripthost/sandbox/sandboxtest"
)

// hostileTimeout is the Timeout hostile scripts run under; slack bounds how much
// longer they may take to be stopped (a liveness bound, not a performance assertion).
const (
	hostileTimeout = time.Second
	farTimeout     = 2 * time.Minute
	hostileMemory  = 8 << 20
	slack          = 10 * time.Second
)

// TestHostileCorpus runs every script in testdata/hostile/js. The first line of each
// says what must happen:
//
//	// want: limit <name>...   a *sandbox.LimitError naming one of the limits
//	// want: logic <text>      a logic error whose message contains text
//	// want: ok <json>         success with that result
//
// While each runs, a well-behaved invocation runs in a loop and must keep succeeding.
func TestHostileCorpus(t *testing.T) {
	files, err := filepath.Glob("../../testdata/hostile/js/*.js")
	if err != nil || len(files) == 0 {
		t.Fatalf("hostile corpus: got %d files (%v), want some", len(files), err)
	}
	eng := js.New(js.Options{})
	good := load(t, eng, "good.js", `export default { c: { h(x) { return { sum: x.a + __state__.b, n: [1, 2, 3].map((v) => v * 2) } } } }`)
	state := json.RawMessage(`{"a":1,"list":[1]}`)
	for _, file := range files {
		name := filepath.Base(file)
		t.Run(name, func(t *testing.T) {
			code, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			first, _, _ := strings.Cut(string(code), "\n")
			want, ok := strings.CutPrefix(first, "// want: ")
			if !ok {
				t.Fatalf("first line %q: want a `// want:` line", first)
			}
			kind, arg, _ := strings.Cut(want, " ")

			stop := make(chan struct{})
			var goodRuns atomic.Int64
			var wg sync.WaitGroup
			wg.Add(1)
			go func() {
				defer wg.Done()
				for {
					select {
					case <-stop:
						return
					default:
					}
					res, err := good.Invoke(context.Background(), sandbox.Invocation{
						Function: "c.h", Phase: scripthost.PhasePrepare,
						Globals: sandbox.Globals{State: json.RawMessage(`{"b":2}`)},
						Args:    []json.RawMessage{json.RawMessage(`{"a":40}`)},
						Tools:   sandboxtest.NewTools(),
						// The result must be right; its latency on a loaded machine is not
						// what is tested.
						Limits: sandbox.Limits{Timeout: time.Minute},
					})
					if err != nil {
						t.Errorf("well-behaved invocation next to %s: %v", name, err)
						return
					}
					if got := string(res.Value); got != `{"sum":42,"n":[2,4,6]}` {
						t.Errorf("well-behaved invocation next to %s: got %s, want {\"sum\":42,\"n\":[2,4,6]}", name, got)
						return
					}
					goodRuns.Add(1)
				}
			}()

			// Only a case that accepts the timeout runs under the short one: any other
			// limit must end the script first however slow the machine is.
			timeout := farTimeout
			if kind == "limit" && strings.Contains(" "+arg+" ", " timeout ") {
				timeout = hostileTimeout
			}
			start := time.Now()
			var res sandbox.Result
			p, err := eng.Load(context.Background(), sandbox.Source{Name: name, Code: code})
			if err == nil {
				res, err = p.Invoke(context.Background(), sandbox.Invocation{
					Function: "consumers.c.h", Phase: scripthost.PhasePrepare,
					Globals: sandbox.Globals{State: state},
					Tools:   sandboxtest.NewTools(),
					Limits:  sandbox.Limits{Timeout: timeout, MemoryBytes: hostileMemory},
				})
			}
			elapsed := time.Since(start)
			close(stop)
			wg.Wait()
			if elapsed > timeout+slack {
				t.Errorf("took %v, want under %v", elapsed, timeout+slack)
			}
			checkWant(t, kind, arg, res, err)
		})
	}
}

func checkWant(t *testing.T, kind, arg string, res sandbox.Result, err error) {
	t.Helper()
	switch kind {
	case "ok":
		if err != nil {
			t.Fatalf("got error %v, want result %s", err, arg)
		}
		var got, want any
		if err := json.Unmarshal(res.Value, &got); err != nil {
			t.Fatalf("result %q: %v", res.Value, err)
		}
		if err := json.Unmarshal([]byte(arg), &want); err != nil {
			t.Fatalf("want %q: %v", arg, err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("got %s, want %s", res.Value, arg)
		}
	case "limit":
		var le *sandbox.LimitError
		if !errors.As(err, &le) {
			t.Fatalf("got %v (result %s), want a LimitError %s", err, res.Value, arg)
		}
		if !strings.Contains(" "+arg+" ", " "+le.Limit+" ") {
			t.Errorf("got limit %q (%v), want one of %s", le.Limit, err, arg)
		}
		if !scripthost.IsLogic(err) {
			t.Errorf("got class %s, want logic", scripthost.ClassOf(err))
		}
	case "logic":
		if !scripthost.IsLogic(err) {
			t.Fatalf("got %v (class %q, result %s), want a logic error", err, scripthost.ClassOf(err), res.Value)
		}
		if !strings.Contains(err.Error(), arg) {
			t.Errorf("got %q, want it to contain %q", err, arg)
		}
	default:
		t.Fatalf("unknown want kind %q", kind)
	}
}

// load loads code or fails the test.
func load(t testing.TB, eng *js.Engine, name, code string) sandbox.Program {
	t.Helper()
	p, err := eng.Load(context.Background(), sandbox.Source{Name: name, Code: []byte(code)})
	if err != nil {
		t.Fatalf("Load(%s): %v", name, err)
	}
	return p
}
