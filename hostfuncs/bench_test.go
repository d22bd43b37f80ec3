package hostfuncs_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/scripthost/scripthost"
	"github.com/scripthost/scripthost/hostfuncs"
)

// BenchmarkCallRead is the per-call overhead of a read: lookup, schema validation,
// classification, phase check and the call.
func BenchmarkCallRead(b *testing.B) {
	reg := hostfuncs.NewRegistry()
	tool := okTool("Pay", "quote", scripthost.OpRead)
	tool.InputSchema = chargeSchema
	if err := reg.Register(tool); err != nil {
		b.Fatal(err)
	}
	w := wrapperFor(reg, nil, nil, hostfuncs.WrapperOptions{Redactor: hostfuncs.NewRedactor("some-api-key-123")})
	w.SetPhase(scripthost.PhasePrepare)
	in := json.RawMessage(`{"amount":5,"currency":"usd","card":{"number":"4242424242424242"}}`)
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := w.Call(ctx, "Pay", "quote", in); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkCallRefused is the cost of a refused call (phase violation).
func BenchmarkCallRefused(b *testing.B) {
	reg := hostfuncs.NewRegistry()
	if err := reg.Register(okTool("Pay", "charge", "")); err != nil {
		b.Fatal(err)
	}
	w := wrapperFor(reg, nil, nil, hostfuncs.WrapperOptions{})
	w.SetPhase(scripthost.PhasePrepare)
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := w.Call(ctx, "Pay", "charge", json.RawMessage(`{}`)); err == nil {
			b.Fatal("want a refusal")
		}
	}
}

// BenchmarkCallMutation is a whole recorded mutation on SQLite: failure count,
// durable in_flight row, the call, the applied row.
func BenchmarkCallMutation(b *testing.B) {
	t := &testing.T{}
	s, _ := openStore(t)
	defer s.Close()
	reg := hostfuncs.NewRegistry()
	if err := reg.Register(okTool("Pay", "charge", "")); err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		i++
		w := hostfuncs.NewToolWrapper(reg, s, hostfuncs.RunInfo{Workflow: "wf", Handler: "h", Scope: fmt.Sprint("b", i)}, hostfuncs.WrapperOptions{})
		w.SetPhase(scripthost.PhaseMutate)
		if _, err := w.Call(ctx, "Pay", "charge", json.RawMessage(`{"amount":5,"password":"x1234"}`)); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkRedact(b *testing.B) {
	r := hostfuncs.NewRedactor("some-api-key-123", "another-secret-456")
	text := "POST https://api.example.com/v1/charges?customer=cus_123&amount=500: HTTP 422: {\"error\":\"card declined\",\"request_id\":\"req_abc\"}"
	b.ReportAllocs()
	for b.Loop() {
		r.Redact(text)
	}
}

func BenchmarkRedactJSON(b *testing.B) {
	r := hostfuncs.NewRedactor("some-api-key-123")
	in := json.RawMessage(`{"amount":500,"currency":"usd","customer":{"id":"cus_123","email":"a@b.c"},"password":"x","items":[{"sku":"a","qty":1},{"sku":"b","qty":2}]}`)
	b.ReportAllocs()
	for b.Loop() {
		r.RedactJSON(in)
	}
}
