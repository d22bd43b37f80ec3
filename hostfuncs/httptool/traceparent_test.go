package httptool_test

import (
	"context"
	"encoding/json"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/scripthost/scripthost/hostfuncs"
	"github.com/scripthost/scripthost/internal/fakesvc"
)

// TestTraceparentSent: a call made inside a span sends the W3C traceparent and
// tracestate of that span to the service, so its spans join the caller's trace; a call
// made outside any span sends none.
func TestTraceparentSent(t *testing.T) {
	svc := fakesvc.New()
	defer svc.Close()
	tools := loadDecl(t, svc)
	lookup := tools["Svc.lookup"]
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(tracetest.NewSpanRecorder()))
	ctx, span := tp.Tracer("test").Start(context.Background(), "tool Svc.lookup")
	ts, err := trace.ParseTraceState("vendor=v1")
	if err != nil {
		t.Fatal(err)
	}
	sc := span.SpanContext().WithTraceState(ts)
	ctx = trace.ContextWithSpanContext(ctx, sc)
	if _, err := lookup.Execute(hostfuncs.WithIdempotencyKey(ctx, ""), json.RawMessage(`{"id":"c1"}`)); err != nil {
		t.Fatal(err)
	}
	span.End()
	reqs := svc.Requests()
	h := reqs[len(reqs)-1].Header
	want := "00-" + sc.TraceID().String() + "-" + sc.SpanID().String() + "-01"
	if got := h.Get("Traceparent"); got != want {
		t.Errorf("traceparent: got %q, want %q", got, want)
	}
	if got := h.Get("Tracestate"); got != "vendor=v1" {
		t.Errorf("tracestate: got %q, want vendor=v1", got)
	}

	if _, err := lookup.Execute(context.Background(), json.RawMessage(`{"id":"c1"}`)); err != nil {
		t.Fatal(err)
	}
	reqs = svc.Requests()
	if got := reqs[len(reqs)-1].Header.Get("Traceparent"); got != "" {
		t.Errorf("a call outside any span sent traceparent %q", got)
	}
}
