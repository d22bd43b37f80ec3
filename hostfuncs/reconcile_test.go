package hostfuncs_test

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/scripthost/scripthost"
	"github.com/scripthost/scripthost/hostfuncs"
	"github.com/scripthost/scripthost/ledger"
)

func TestBackoff(t *testing.T) {
	p := hostfuncs.ReconcilePolicy{BaseDelay: time.Second, MaxDelay: 10 * time.Second}
	tests := []struct {
		attempts int
		want     time.Duration
	}{{1, time.Second}, {2, 2 * time.Second}, {3, 4 * time.Second}, {4, 8 * time.Second}, {5, 10 * time.Second}, {60, 10 * time.Second}, {0, time.Second}}
	for _, tt := range tests {
		if got := p.Backoff(tt.attempts); got != tt.want {
			t.Errorf("Backoff(%d): got %v, want %v", tt.attempts, got, tt.want)
		}
	}
	d := hostfuncs.ReconcilePolicy{}.WithDefaults()
	if d.MaxAttempts != 5 || d.BaseDelay != time.Second || d.MaxDelay != 5*time.Minute {
		t.Errorf("defaults: got %+v, want 5, 1s, 5m", d)
	}
}

// uncertainMutation records a run-less in_flight mutation of tool ns.method.
func uncertainMutation(t *testing.T, s ledger.Store, method, scope string) scripthost.Mutation {
	t.Helper()
	hash := scripthost.InputHash(scripthost.KeyInput{Workflow: "wf", Handler: "h", Namespace: "Svc", Method: method, Params: []byte(`{}`), Scope: scope})
	m, err := s.BeginMutation(context.Background(), ledger.NewMutation{Workflow: "wf", Handler: "h", Namespace: "Svc", Method: method,
		Params: json.RawMessage(`{}`), InputHash: hash, IdempotencyKey: scripthost.IdempotencyKey(hash, 0)})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// TestReconcileRetriesThenIndeterminate walks one mutation through the policy: each
// undecided attempt schedules the next after a doubling delay, the last hands it to a
// person.
func TestReconcileRetriesThenIndeterminate(t *testing.T) {
	s, _ := openStore(t)
	ctx := context.Background()
	var keys []string
	reg := hostfuncs.NewRegistry()
	mustRegister(t, reg, &hostfuncs.Tool{Namespace: "Svc", Method: "later", Execute: okTool("a", "b", "").Execute,
		Reconcile: func(ctx context.Context, m scripthost.Mutation) (scripthost.Reconciliation, error) {
			keys = append(keys, hostfuncs.IdempotencyKey(ctx))
			return scripthost.Reconciliation{Outcome: scripthost.ReconcileRetryLater, Reason: "token=abc123 not ready"}, nil
		}})
	m := uncertainMutation(t, s, "later", "s1")
	p := hostfuncs.ReconcilePolicy{MaxAttempts: 3, BaseDelay: time.Second, MaxDelay: time.Minute}
	wantNext := []time.Duration{time.Second, 2 * time.Second}
	for i := range 3 {
		var err error
		m, err = hostfuncs.Reconcile(ctx, s, reg, m, p, testNow)
		if err != nil {
			t.Fatal(err)
		}
		if i < 2 {
			if m.Status != scripthost.MutationNeedsReconcile || m.ReconcileAttempts != i+1 || !m.NextReconcileAt.Equal(testNow.Add(wantNext[i])) {
				t.Errorf("attempt %d: got %s attempts %d next %v, want needs_reconcile %d at now+%v", i+1, m.Status, m.ReconcileAttempts, m.NextReconcileAt, i+1, wantNext[i])
			}
		}
	}
	if m.Status != scripthost.MutationIndeterminate {
		t.Errorf("after the last attempt: got %s, want indeterminate", m.Status)
	}
	if strings.Contains(m.Error, "abc123") {
		t.Errorf("stored reason leaks a token: %q", m.Error)
	}
	if len(keys) != 3 || keys[0] != m.IdempotencyKey {
		t.Errorf("reconcile context keys: got %v, want the mutation's key each time", keys)
	}
}

func TestReconcileOutcomes(t *testing.T) {
	s, _ := openStore(t)
	ctx := context.Background()
	reg := hostfuncs.NewRegistry()
	exec := okTool("a", "b", "").Execute
	mustRegister(t, reg,
		&hostfuncs.Tool{Namespace: "Svc", Method: "none", Execute: exec},
		&hostfuncs.Tool{Namespace: "Svc", Method: "applied", Execute: exec, Secrets: []string{"host-secret-1"},
			Reconcile: func(context.Context, scripthost.Mutation) (scripthost.Reconciliation, error) {
				return scripthost.Reconciliation{Outcome: scripthost.ReconcileApplied, Result: json.RawMessage(`{"echo":"host-secret-1"}`)}, nil
			}},
		&hostfuncs.Tool{Namespace: "Svc", Method: "failed", Execute: exec,
			Reconcile: func(context.Context, scripthost.Mutation) (scripthost.Reconciliation, error) {
				return scripthost.Reconciliation{Outcome: scripthost.ReconcileFailed, Reason: "no record"}, nil
			}},
		&hostfuncs.Tool{Namespace: "Svc", Method: "never", Execute: exec,
			Reconcile: func(context.Context, scripthost.Mutation) (scripthost.Reconciliation, error) {
				return scripthost.Reconciliation{Outcome: scripthost.ReconcileIndeterminate, Reason: "key used with other params"}, nil
			}},
		&hostfuncs.Tool{Namespace: "Svc", Method: "later", Execute: exec,
			Reconcile: func(context.Context, scripthost.Mutation) (scripthost.Reconciliation, error) {
				return scripthost.Reconciliation{Outcome: scripthost.ReconcileRetryLater, Reason: "busy", RetryAfter: time.Hour}, nil
			}},
		&hostfuncs.Tool{Namespace: "Svc", Method: "soon", Execute: exec,
			Reconcile: func(context.Context, scripthost.Mutation) (scripthost.Reconciliation, error) {
				return scripthost.Reconciliation{Outcome: scripthost.ReconcileRetryLater, Reason: "busy", RetryAfter: time.Millisecond}, nil
			}},
		&hostfuncs.Tool{Namespace: "Svc", Method: "weird", Execute: exec,
			Reconcile: func(context.Context, scripthost.Mutation) (scripthost.Reconciliation, error) {
				return scripthost.Reconciliation{Outcome: "maybe"}, nil
			}},
		&hostfuncs.Tool{Namespace: "Svc", Method: "panics", Execute: exec,
			Reconcile: func(context.Context, scripthost.Mutation) (scripthost.Reconciliation, error) { panic("bad") }})
	tests := []struct {
		method  string
		want    scripthost.MutationStatus
		wantMsg string
		next    time.Duration // after testNow, for needs_reconcile
	}{
		{"none", scripthost.MutationIndeterminate, "no reconciler for Svc.none", 0},
		{"unregistered", scripthost.MutationIndeterminate, "no reconciler for Svc.unregistered", 0},
		{"applied", scripthost.MutationApplied, "", 0},
		{"failed", scripthost.MutationFailed, "reconciled as failed: no record", 0},
		{"never", scripthost.MutationIndeterminate, "Svc.never cannot tell what became of the mutation: key used with other params", 0},
		// The service's Retry-After wins over a shorter backoff, not over a longer one.
		{"later", scripthost.MutationNeedsReconcile, "retry later: busy", time.Hour},
		{"soon", scripthost.MutationNeedsReconcile, "retry later: busy", hostfuncs.DefaultReconcileBase},
		{"weird", scripthost.MutationNeedsReconcile, `unknown reconcile outcome "maybe"`, hostfuncs.DefaultReconcileBase},
		{"panics", scripthost.MutationNeedsReconcile, "panicked: bad", hostfuncs.DefaultReconcileBase},
	}
	for _, tt := range tests {
		t.Run(tt.method, func(t *testing.T) {
			m := uncertainMutation(t, s, tt.method, tt.method)
			got, err := hostfuncs.Reconcile(ctx, s, reg, m, hostfuncs.ReconcilePolicy{}, testNow)
			if err != nil {
				t.Fatal(err)
			}
			if got.Status != tt.want || !strings.Contains(got.Error, tt.wantMsg) {
				t.Errorf("got %s %q, want %s containing %q", got.Status, got.Error, tt.want, tt.wantMsg)
			}
			if tt.next > 0 && !got.NextReconcileAt.Equal(testNow.Add(tt.next)) {
				t.Errorf("next reconcile: got %s, want %s", got.NextReconcileAt, testNow.Add(tt.next))
			}
			if tt.want == scripthost.MutationApplied && string(got.Result) != `{"echo":"[REDACTED]"}` {
				t.Errorf("got result %s, want the tool's secret redacted", got.Result)
			}
		})
	}
	// The ledger refuses to reconcile a settled mutation, and Reconcile says so.
	m := uncertainMutation(t, s, "applied", "settled")
	m, _ = hostfuncs.Reconcile(ctx, s, reg, m, hostfuncs.ReconcilePolicy{}, testNow)
	if _, err := hostfuncs.Reconcile(ctx, s, reg, m, hostfuncs.ReconcilePolicy{}, testNow); err == nil {
		t.Errorf("reconciling an applied mutation: got nil, want a ledger error")
	}
}

// TestConcurrentMutations: however calls interleave, one mutate phase admits one
// mutation.
func TestConcurrentMutations(t *testing.T) {
	s, _ := openStore(t)
	reg := hostfuncs.NewRegistry()
	mustRegister(t, reg, okTool("Svc", "do", ""))
	r := mutatingRun(t, s)
	w := wrapperFor(reg, s, &r, hostfuncs.WrapperOptions{})
	w.SetPhase(scripthost.PhaseMutate)
	var wg sync.WaitGroup
	var mu sync.Mutex
	ok, second := 0, 0
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := w.Call(context.Background(), "Svc", "do", json.RawMessage(`{"i":`+string(rune('0'+i))+`}`))
			mu.Lock()
			defer mu.Unlock()
			if err == nil {
				ok++
			} else if errCode(err) == scripthost.CodeSecondMutation {
				second++
			}
		}()
	}
	wg.Wait()
	if ok != 1 || second != 7 {
		t.Errorf("got %d admitted and %d refused, want 1 and 7", ok, second)
	}
}

// TestErrorsAndLogsRedacted: a tool's error that echoes the input's secret fields and
// a registered secret reaches neither the script, the ledger nor the log.
func TestErrorsAndLogsRedacted(t *testing.T) {
	s, _ := openStore(t)
	ctx := context.Background()
	reg := hostfuncs.NewRegistry()
	mustRegister(t, reg,
		&hostfuncs.Tool{Namespace: "Pay", Method: "charge", SecretFields: []string{"card"}, Secrets: []string{"host-api-key-9"},
			Execute: func(_ context.Context, in json.RawMessage) (json.RawMessage, error) {
				return nil, scripthost.LogicError("declined %s with host-api-key-9", in)
			}},
		&hostfuncs.Tool{Namespace: "Pay", Method: "check", ReadOnly: hostfuncs.ReadOnlyAlways, SecretFields: []string{"card"},
			Execute: func(_ context.Context, in json.RawMessage) (json.RawMessage, error) {
				return nil, scripthost.Errorf(scripthost.ClassNetwork, "", "timeout checking %s", in)
			}})
	var logs logBuffer
	secrets := []string{"4242424242424242", "hunter2hunter2", "host-api-key-9"}
	input := json.RawMessage(`{"card":"4242424242424242","pin":{"password":"hunter2hunter2"},"amount":5}`)

	w := wrapperFor(reg, s, nil, hostfuncs.WrapperOptions{Logger: debugLogger(&logs)})
	w.SetPhase(scripthost.PhasePrepare)
	_, rerr := w.Call(ctx, "Pay", "check", input)
	w.SetPhase(scripthost.PhaseMutate)
	_, merr := w.Call(ctx, "Pay", "charge", input)
	m, _ := w.Mutation()
	row, _ := json.Marshal(m)
	for _, where := range []struct{ name, text string }{
		{"read error", rerr.Error()}, {"mutation error", merr.Error()}, {"ledger row", string(row)}, {"logs", logs.String()},
	} {
		for _, sec := range secrets {
			if strings.Contains(where.text, sec) {
				t.Errorf("%s contains %q: %s", where.name, sec, where.text)
			}
		}
	}
	if !strings.Contains(merr.Error(), "declined") || m.Status != scripthost.MutationFailed {
		t.Errorf("got %v / %s, want the declined error and a failed mutation", merr, m.Status)
	}
}
