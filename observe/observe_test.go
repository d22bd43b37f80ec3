package observe

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"net/http/httptest"
	"strings"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/scripthost/scripthost"
	"github.com/scripthost/scripthost/hostfuncs"
)

// TestSpansNestAndSlowCallsAreLogged drives the hooks as the runtime does: a run, a
// phase in it, a tool call in the phase. The spans nest run > phase > tool, the tool's
// carries the idempotency key, a slow call is logged, and the histograms count.
func TestSpansNestAndSlowCallsAreLogged(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	var logs bytes.Buffer
	o := New(Options{Tracer: tp, Logger: slog.New(slog.NewJSONHandler(&logs, nil)), SlowCall: 1})
	reg := hostfuncs.NewRegistry()
	if err := reg.Register(&hostfuncs.Tool{Namespace: "Svc", Method: "apply",
		Execute: func(ctx context.Context, in json.RawMessage) (json.RawMessage, error) {
			return nil, scripthost.Errorf(scripthost.ClassNetwork, "down", "service down")
		}}); err != nil {
		t.Fatal(err)
	}
	o.WrapTools(reg)

	run := scripthost.Run{ID: "r1", Workflow: "w", Handler: "h"}
	ctx, endRun := o.Run(context.Background(), run.ID)
	pctx, endPhase := o.Phase(ctx, run, scripthost.PhaseMutate)
	_, err := reg.Tools()[0].Execute(hostfuncs.WithIdempotencyKey(pctx, "key-1"), json.RawMessage(`{}`))
	endPhase(err)
	endRun(nil)
	if err == nil {
		t.Fatal("the wrapped tool lost its error")
	}

	spans := rec.Ended()
	if len(spans) != 3 {
		t.Fatalf("got %d spans, want 3", len(spans))
	}
	tool, phase, runSpan := spans[0], spans[1], spans[2]
	if tool.Name() != "tool Svc.apply" || phase.Name() != "phase mutate" || runSpan.Name() != "run" {
		t.Fatalf("spans %q %q %q", tool.Name(), phase.Name(), runSpan.Name())
	}
	if tool.Parent().SpanID() != phase.SpanContext().SpanID() || phase.Parent().SpanID() != runSpan.SpanContext().SpanID() {
		t.Error("the spans do not nest run > phase > tool")
	}
	found := false
	for _, a := range tool.Attributes() {
		found = found || (string(a.Key) == "scripthost.idempotency_key" && a.Value.AsString() == "key-1")
	}
	if !found {
		t.Errorf("the tool span has no idempotency key: %v", tool.Attributes())
	}
	if !strings.Contains(logs.String(), `"msg":"slow tool call"`) || !strings.Contains(logs.String(), `"tool":"Svc.apply"`) {
		t.Errorf("no slow call line: %s", logs.String())
	}

	o.OnCommit(3, 1000)
	o.OnSync(5, 2000)
	o.OnRetry("stale_row")
	o.OnRetry("stale_row")
	w := httptest.NewRecorder()
	o.Handler().ServeHTTP(w, httptest.NewRequest("GET", "/metrics", nil))
	body := w.Body.String()
	for _, want := range []string{
		`scripthost_tool_call_duration_seconds_count{outcome="network",tool="Svc.apply"} 1`,
		`scripthost_phase_duration_seconds_count{handler="h",phase="mutate",workflow="w"} 1`,
		`scripthost_ledger_commit_batch_size_sum 3`,
		`scripthost_ledger_wal_fsync_commits_sum 5`,
		`scripthost_ledger_wal_fsync_duration_seconds_count 1`,
		`scripthost_ledger_transaction_retries_total{reason="stale_row"} 2`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("metrics lack %s", want)
		}
	}
}
