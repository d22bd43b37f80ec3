package hosttest_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/scripthost/scripthost"
	"github.com/scripthost/scripthost/host/hosttest"
	"github.com/scripthost/scripthost/hostfuncs"
)

const mailWorkflow = "testdata/mail/workflow.js"

// embedderTools are an embedder's tools; calling their Execute would reach a real
// service, so the fixtures must answer instead.
func embedderTools(called *atomic.Int32, sendSchema string) []*hostfuncs.Tool {
	real := func(context.Context, json.RawMessage) (json.RawMessage, error) {
		called.Add(1)
		return nil, scripthost.Errorf(scripthost.ClassNetwork, "", "a real service was called")
	}
	return []*hostfuncs.Tool{
		{
			Namespace: "Directory", Method: "lookup",
			InputSchema: json.RawMessage(`{"type":"object","properties":{"user":{"type":"string"}},"required":["user"]}`),
			ReadOnly:    hostfuncs.ReadOnlyAlways,
			Execute:     real,
		},
		{
			Namespace: "Mail", Method: "send",
			InputSchema: json.RawMessage(sendSchema),
			Execute:     real,
		},
	}
}

const sendSchema = `{"type":"object","properties":{"to":{"type":"string"},"subject":{"type":"string"}},"required":["to","subject"]}`

func TestRunPasses(t *testing.T) {
	var called atomic.Int32
	hosttest.Run(t, mailWorkflow, "testdata/mail/fixtures", hosttest.Options{Tools: embedderTools(&called, sendSchema), WasmCacheDir: t.TempDir()})
	if n := called.Load(); n != 0 {
		t.Errorf("real tools called %d times, want 0", n)
	}
}

// TestToolSchemasAreReal: the embedder's schema is checked before the fixture
// answers, so an input the real tool would refuse fails the run.
func TestToolSchemasAreReal(t *testing.T) {
	var called atomic.Int32
	strict := `{"type":"object","properties":{"to":{"type":"string"},"body":{"type":"string"}},"required":["to","body"],"additionalProperties":false}`
	results, report, err := hosttest.Check(context.Background(), mailWorkflow, "testdata/mail/fixtures",
		hosttest.Options{Tools: embedderTools(&called, strict), WasmCacheDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	if len(results) != 1 || results[0].Passed() {
		t.Fatalf("got %d results (passed=%v), want one failure\n%s", len(results), len(results) == 1 && results[0].Passed(), report)
	}
	for _, want := range []string{"mutations[0]: missing Mail.send", "runs[0]: got welcome failed:logic", "invalid input"} {
		if !strings.Contains(report, want) {
			t.Errorf("report lacks %q:\n%s", want, report)
		}
	}
}

// TestCheckUpdate: with Update the fixture's expectations are rewritten and then pass.
func TestCheckUpdate(t *testing.T) {
	var called atomic.Int32
	dir := t.TempDir()
	src, err := os.ReadFile("testdata/mail/fixtures/welcome.yaml")
	if err != nil {
		t.Fatal(err)
	}
	changed := strings.Replace(string(src), "welcome: {sent: 1}", "welcome: {sent: 7}", 1)
	if err := os.WriteFile(filepath.Join(dir, "welcome.yaml"), []byte(changed), 0o644); err != nil {
		t.Fatal(err)
	}
	opts := hosttest.Options{Tools: embedderTools(&called, sendSchema), WasmCacheDir: t.TempDir()}
	_, report, err := hosttest.Check(context.Background(), mailWorkflow, dir, hosttest.Options{Tools: opts.Tools, Update: true, WasmCacheDir: opts.WasmCacheDir})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(report, "UPDATED welcome.yaml") || !strings.Contains(report, "state.welcome: got {\"sent\":1}, want {\"sent\":7}") {
		t.Errorf("update report:\n%s", report)
	}
	results, report, err := hosttest.Check(context.Background(), mailWorkflow, dir, opts)
	if err != nil {
		t.Fatal(err)
	}
	if !results[0].Passed() {
		t.Errorf("after the update: got a failure\n%s", report)
	}
}
