package wasm

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/scripthost/scripthost"
	"github.com/scripthost/scripthost/sandbox"
)

const hostileDir = "../../testdata/hostile/wasm"

// newEngine returns an engine over a fresh cache dir, closed with the test.
func newEngine(t testing.TB, opts Options) *Engine {
	t.Helper()
	if opts.CacheDir == "" && !opts.NoDiskCache {
		opts.CacheDir = t.TempDir()
	}
	e, err := New(context.Background(), opts)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	t.Cleanup(func() { _ = e.Close(context.Background()) })
	return e
}

func readFixture(t testing.TB, name string) sandbox.Source {
	t.Helper()
	code, err := os.ReadFile(filepath.Join(hostileDir, name))
	if err != nil {
		t.Fatal(err)
	}
	return sandbox.Source{Name: name, Code: code}
}

func load(t testing.TB, e *Engine, name string) *Program {
	t.Helper()
	p, err := e.load(context.Background(), readFixture(t, name))
	if err != nil {
		t.Fatalf("Load %s: %v", name, err)
	}
	t.Cleanup(func() { _ = p.Close(context.Background()) })
	return p
}

// testTools offers Echo.say (returns its input), Fail.network, Fail.terminate and
// Fail.panic, and counts the calls that reach it.
type testTools struct {
	calls atomic.Int64
	mu    sync.Mutex
	seen  []string
}

var errTestNetwork = &scripthost.Error{Class: scripthost.ClassNetwork, Code: "connection_reset", Message: "reset"}
var errTestCause = errors.New("host shutting down")

func (tt *testTools) List() []sandbox.ToolName {
	return []sandbox.ToolName{{Namespace: "Echo", Method: "say"}, {Namespace: "Fail", Method: "network"},
		{Namespace: "Fail", Method: "terminate"}, {Namespace: "Fail", Method: "panic"}}
}

func (tt *testTools) Call(ctx context.Context, ns, method string, in json.RawMessage) (json.RawMessage, error) {
	tt.calls.Add(1)
	tt.mu.Lock()
	tt.seen = append(tt.seen, ns+"."+method)
	tt.mu.Unlock()
	switch ns + "." + method {
	case "Echo.say":
		return in, nil
	case "Fail.network":
		return nil, errTestNetwork
	case "Fail.terminate":
		return nil, sandbox.Terminate(errTestCause)
	case "Fail.panic":
		panic("tool panicked on purpose")
	}
	return nil, scripthost.Errorf(scripthost.ClassLogic, scripthost.CodeUnknownTool, "no tool %s.%s", ns, method)
}

// limitOf returns the LimitError in err's chain, or nil.
func limitOf(err error) *sandbox.LimitError {
	var le *sandbox.LimitError
	if errors.As(err, &le) {
		return le
	}
	return nil
}
