package httptool_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/scripthost/scripthost"
	"github.com/scripthost/scripthost/hostfuncs"
	"github.com/scripthost/scripthost/internal/fakesvc"
)

const lookupDecl = `
- namespace: Pay
  method: charge
  url: "%URL%/v1/charges/{customer}"
  timeout: 200ms
  reconcile: {url: "%URL%/v1/charges?idempotency_key={key}"SETTLE}
`

// TestLookupNotFoundWhileUnderWay: a look-up's 404 while the first request may still
// be under way is "try again then", not "failed" — a failed mutation is prepared again
// under a new key, so concluding it early would charge twice once the slow first
// request lands. After the window a 404 is trusted.
func TestLookupNotFoundWhileUnderWay(t *testing.T) {
	input := json.RawMessage(`{"customer":"cus_1","amount":2000}`)
	svc := fakesvc.New()
	defer svc.Close()
	tool := loadTools(t, svc.URL(), strings.Replace(lookupDecl, "SETTLE", "", 1))["Pay.charge"]
	ctx := hostfuncs.WithIdempotencyKey(context.Background(), "key-1")

	recorded := time.Now()
	svc.Next(fakesvc.Hold)
	if _, err := tool.Execute(ctx, input); !scripthost.IsNetwork(err) {
		t.Fatalf("held call: got %v, want a timeout", err)
	}
	m := scripthost.Mutation{IdempotencyKey: "key-1", Params: input, CreatedAt: recorded}
	rec, err := tool.Reconcile(ctx, m)
	if err != nil || rec.Outcome != scripthost.ReconcileRetryLater || !strings.Contains(rec.Reason, "no record yet") {
		t.Fatalf("look-up while the request is held: got %s %q (%v), want retry later (no record yet)", rec.Outcome, rec.Reason, err)
	}
	// The default window is the timeout twice over: the call's own, then settle.
	if rec.RetryAfter <= 0 || rec.RetryAfter > 400*time.Millisecond {
		t.Errorf("retry after: got %s, want the rest of 400ms", rec.RetryAfter)
	}

	// The slow request lands; the next look-up sees it, and nothing applied twice.
	svc.Release()
	waitFor(t, func() bool { return svc.Total() == 1 })
	rec, err = tool.Reconcile(ctx, m)
	if err != nil || rec.Outcome != scripthost.ReconcileApplied {
		t.Fatalf("look-up after the request landed: got %s %q (%v), want applied", rec.Outcome, rec.Reason, err)
	}

	// A mutation recorded long enough ago that its request cannot be under way.
	old := scripthost.Mutation{IdempotencyKey: "key-never-sent", Params: input, CreatedAt: time.Now().Add(-time.Second)}
	if rec, err := tool.Reconcile(ctx, old); err != nil || rec.Outcome != scripthost.ReconcileFailed {
		t.Errorf("look-up past the window: got %s %q (%v), want failed", rec.Outcome, rec.Reason, err)
	}
	if got := svc.Total(); got != 1 {
		t.Errorf("applies: got %d, want 1", got)
	}
}

// TestLookupSettle: settle sets the window past the timeout; 0s trusts a 404 at once.
func TestLookupSettle(t *testing.T) {
	svc := fakesvc.New()
	defer svc.Close()
	ctx := hostfuncs.WithIdempotencyKey(context.Background(), "key-1")
	m := scripthost.Mutation{IdempotencyKey: "key-1", Params: json.RawMessage(`{"customer":"c"}`), CreatedAt: time.Now()}
	for _, tt := range []struct {
		settle string
		want   scripthost.ReconcileOutcome
		max    time.Duration
	}{
		{"0s", scripthost.ReconcileRetryLater, 200 * time.Millisecond},
		{"1h", scripthost.ReconcileRetryLater, time.Hour + 200*time.Millisecond},
	} {
		tool := loadTools(t, svc.URL(), strings.Replace(lookupDecl, "SETTLE", ", settle: "+tt.settle, 1))["Pay.charge"]
		rec, err := tool.Reconcile(ctx, m)
		if err != nil || rec.Outcome != tt.want || rec.RetryAfter > tt.max || rec.RetryAfter < tt.max-time.Second {
			t.Errorf("settle %s: got %s after %s (%v), want %s within %s", tt.settle, rec.Outcome, rec.RetryAfter, err, tt.want, tt.max)
		}
	}
	// Past the timeout: settle 0s trusts the 404, settle 1h still waits.
	m.CreatedAt = time.Now().Add(-300 * time.Millisecond)
	for settle, want := range map[string]scripthost.ReconcileOutcome{"0s": scripthost.ReconcileFailed, "1h": scripthost.ReconcileRetryLater} {
		tool := loadTools(t, svc.URL(), strings.Replace(lookupDecl, "SETTLE", ", settle: "+settle, 1))["Pay.charge"]
		if rec, err := tool.Reconcile(ctx, m); err != nil || rec.Outcome != want {
			t.Errorf("settle %s, recorded 300ms ago: got %s %q (%v), want %s", settle, rec.Outcome, rec.Reason, err, want)
		}
	}
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not reached in 10s")
		}
		time.Sleep(5 * time.Millisecond)
	}
}
