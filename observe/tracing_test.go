package observe

import (
	"context"
	"encoding/json"
	"errors"
	"testing"

	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/scripthost/scripthost"
	"github.com/scripthost/scripthost/hostfuncs"
)

// TestRunSpans drives one run twice, as a run resumed after a wait is: both drives'
// spans sit in the trace the run id names and link to the run's anchor, so the
// resumption is found from the first drive and the other way round; the failed phase
// of the second drive marks its run span as an error as well as its own; the tool
// call's span is of kind CLIENT.
func TestRunSpans(t *testing.T) {
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	o := New(Options{Tracer: tp})
	reg := hostfuncs.NewRegistry()
	if err := reg.Register(&hostfuncs.Tool{Namespace: "Svc", Method: "apply",
		Execute: func(context.Context, json.RawMessage) (json.RawMessage, error) { return json.RawMessage(`{}`), nil }}); err != nil {
		t.Fatal(err)
	}
	o.WrapTools(reg)
	run := scripthost.Run{ID: "run-42", Workflow: "w", Handler: "h"}

	ctx, endRun := o.Run(context.Background(), run.ID)
	pctx, endPhase := o.Phase(ctx, run, scripthost.PhaseMutate)
	_, err := reg.Tools()[0].Execute(pctx, json.RawMessage(`{}`))
	endPhase(err)
	endRun(nil)

	ctx, endRun = o.Run(context.Background(), run.ID)
	_, endPhase = o.Phase(ctx, run, scripthost.PhaseNext)
	endPhase(errors.New("next threw"))
	endRun(nil)

	spans := exp.GetSpans()
	if len(spans) != 5 {
		t.Fatalf("got %d spans, want 5", len(spans))
	}
	anchor := RunAnchor(run.ID)
	if !anchor.Equal(RunAnchor(run.ID)) || anchor.TraceID() == RunAnchor("run-43").TraceID() {
		t.Fatal("the anchor is not a function of the run id")
	}
	tool, first, second := spans[0], spans[2], spans[4]
	for _, s := range []tracetest.SpanStub{first, second} {
		if s.Name != "run" || s.SpanContext.TraceID() != anchor.TraceID() || s.Parent.SpanID() != anchor.SpanID() {
			t.Errorf("run span %q in trace %s under %s, want the anchor's trace %s", s.Name, s.SpanContext.TraceID(), s.Parent.SpanID(), anchor.TraceID())
		}
		if len(s.Links) != 1 || !s.Links[0].SpanContext.Equal(anchor) {
			t.Errorf("run span links %v, want one to the anchor", s.Links)
		}
	}
	if first.SpanContext.SpanID() == second.SpanContext.SpanID() {
		t.Error("the two drives share a span")
	}
	if tool.SpanKind != trace.SpanKindClient {
		t.Errorf("tool span kind %v, want client", tool.SpanKind)
	}
	if first.Status.Code != codes.Unset {
		t.Errorf("the first drive, which failed nothing, has status %v", first.Status)
	}
	if spans[3].Status.Code != codes.Error || second.Status.Code != codes.Error || second.Status.Description != "phase next failed: next threw" {
		t.Errorf("failed phase: phase status %v, run status %v, want both errors", spans[3].Status, second.Status)
	}
}

// TestResource: the resource names the service scripthost and the host's lease name
// unless OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES say otherwise, which win.
func TestResource(t *testing.T) {
	get := func() map[string]string {
		t.Helper()
		res, err := Resource(context.Background(), "scripthost", "box/12/ab")
		if err != nil {
			t.Fatal(err)
		}
		m := map[string]string{}
		for _, kv := range res.Attributes() {
			m[string(kv.Key)] = kv.Value.Emit()
		}
		return m
	}
	t.Setenv("OTEL_SERVICE_NAME", "")
	t.Setenv("OTEL_RESOURCE_ATTRIBUTES", "")
	if m := get(); m["service.name"] != "scripthost" || m["service.instance.id"] != "box/12/ab" || m["host.name"] == "" {
		t.Errorf("without the variables: %v", m)
	}
	t.Setenv("OTEL_SERVICE_NAME", "billing-host")
	t.Setenv("OTEL_RESOURCE_ATTRIBUTES", "deployment.environment=prod,service.instance.id=pod-7")
	if m := get(); m["service.name"] != "billing-host" || m["deployment.environment"] != "prod" || m["service.instance.id"] != "pod-7" {
		t.Errorf("with the variables: %v", m)
	}
	t.Setenv("OTEL_RESOURCE_ATTRIBUTES", "broken")
	if _, err := Resource(context.Background(), "scripthost", ""); err == nil {
		t.Error("a malformed OTEL_RESOURCE_ATTRIBUTES was accepted")
	}
}
