package hostfuncs_test

import (
	"context"
	"encoding/json"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/scripthost/scripthost"
	"github.com/scripthost/scripthost/hostfuncs"
	"github.com/scripthost/scripthost/hostfuncs/httptool"
	"github.com/scripthost/scripthost/ledger"
)

const notSentDecl = `
- namespace: Svc
  method: charge
  url: "%URL%/charges/{customer}"
  timeout: 500ms
- namespace: Svc
  method: chargeLookup
  url: "%URL%/charges/{customer}"
  timeout: 500ms
  reconcile: {method: GET, url: "%URL%/charges?idempotency_key={key}", settle: 0s}
- namespace: Svc
  method: chargeSecret
  url: "%URL%/charges/{customer}"
  timeout: 500ms
  secret_fields: [card]
`

func loadNotSentTools(t *testing.T, base string) *hostfuncs.Registry {
	t.Helper()
	path := filepath.Join(t.TempDir(), "tools.yaml")
	if err := os.WriteFile(path, []byte(strings.ReplaceAll(notSentDecl, "%URL%", base)), 0o600); err != nil {
		t.Fatal(err)
	}
	tools, err := httptool.Load(path, func(string) (string, bool) { return "", false })
	if err != nil {
		t.Fatal(err)
	}
	reg := hostfuncs.NewRegistry()
	mustRegister(t, reg, tools...)
	return reg
}

// freePort returns a loopback address nothing listens on (yet).
func freePort(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

// keyRecorder is a service that applies every POST and answers 404 to every look-up,
// keeping the Idempotency-Key of each POST.
type keyRecorder struct {
	mu   sync.Mutex
	keys []string
}

func (k *keyRecorder) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		http.NotFound(w, r)
		return
	}
	k.mu.Lock()
	k.keys = append(k.keys, r.Header.Get("Idempotency-Key"))
	k.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	w.Write([]byte(`{"id":"ch_1"}`))
}

func (k *keyRecorder) posted() []string {
	k.mu.Lock()
	defer k.mu.Unlock()
	return append([]string(nil), k.keys...)
}

// serveOn starts h on addr (a port that was closed until now).
func serveOn(t *testing.T, addr string, h http.Handler) {
	t.Helper()
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatalf("listening on %s again: %v", addr, err)
	}
	srv := &http.Server{Handler: h}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
}

// TestNotSentSentAgainUnderSameKey: a mutation against a port nothing listens on
// (connection refused: not a byte sent) is known not to have happened. It is neither
// handed to a person (indeterminate) nor failed (which would change its key): it
// waits, and once the service listens it is sent again under the key it had, and
// applied once.
func TestNotSentSentAgainUnderSameKey(t *testing.T) {
	for _, method := range []string{"charge", "chargeLookup"} {
		t.Run(method, func(t *testing.T) {
			addr := freePort(t)
			reg := loadNotSentTools(t, "http://"+addr)
			s, _ := openStore(t)
			ctx := context.Background()
			r := mutatingRun(t, s)
			w := wrapperFor(reg, s, &r, hostfuncs.WrapperOptions{})
			w.SetPhase(scripthost.PhaseMutate)

			_, err := w.Call(ctx, "Svc", method, json.RawMessage(`{"customer":"cus_1","amount":5}`))
			if !isTerminate(err) || errCode(err) != hostfuncs.CodeNotSent {
				t.Errorf("call: got %v (code %q), want the invocation ended with code %s", err, errCode(err), hostfuncs.CodeNotSent)
			}
			m, err := s.RunMutation(ctx, r.ID)
			if err != nil {
				t.Fatal(err)
			}
			if m.Status != scripthost.MutationNeedsReconcile || !strings.HasPrefix(m.Error, hostfuncs.NotSent+":") {
				t.Fatalf("mutation: got %s %q, want needs_reconcile, not sent", m.Status, m.Error)
			}
			if run, _ := s.Run(ctx, r.ID); run.Status != scripthost.StatusPausedReconciliation || run.NotBefore.IsZero() {
				t.Errorf("run: got %s not before %v, want paused until the next attempt", run.Status, run.NotBefore)
			}

			svc := &keyRecorder{}
			serveOn(t, addr, svc)
			m2, err := hostfuncs.Reconcile(ctx, s, reg, m, hostfuncs.ReconcilePolicy{}, testNow)
			if err != nil {
				t.Fatal(err)
			}
			if m2.Status != scripthost.MutationApplied || !strings.Contains(string(m2.Result), "ch_1") {
				t.Errorf("after the service listens: got %s %s %q, want applied with the service's answer", m2.Status, m2.Result, m2.Error)
			}
			if got := svc.posted(); len(got) != 1 || got[0] != m.IdempotencyKey {
				t.Errorf("requests: got keys %q, want one with %q", got, m.IdempotencyKey)
			}
			// The key is the first one of these inputs: no failure was counted.
			if want := scripthost.IdempotencyKey(m.InputHash, 0); m.IdempotencyKey != want {
				t.Errorf("key: got %q, want %q (no failure counted)", m.IdempotencyKey, want)
			}
			if n, err := s.FailureCount(ctx, m.InputHash); err != nil || n != 0 {
				t.Errorf("failure count: got %d (%v), want 0", n, err)
			}
		})
	}
}

// TestNotSentGivesUpAsFailed: a service that stays unreachable uses up the attempts;
// the mutation is then known not to have happened (failed, so the run is prepared
// again), never indeterminate. A mutation whose stored params hold a redacted value
// cannot be sent again from the ledger and fails at once, sending nothing.
func TestNotSentGivesUpAsFailed(t *testing.T) {
	tests := []struct {
		name, method, input string
		attempts            int // reconcile passes until failed
	}{
		{"unreachable", "charge", `{"customer":"cus_1","amount":5}`, 2},
		{"redacted params", "chargeSecret", `{"customer":"cus_1","amount":5,"card":"4242424242424242"}`, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			addr := freePort(t)
			reg := loadNotSentTools(t, "http://"+addr)
			s, _ := openStore(t)
			ctx := context.Background()
			r := mutatingRun(t, s)
			w := wrapperFor(reg, s, &r, hostfuncs.WrapperOptions{})
			w.SetPhase(scripthost.PhaseMutate)
			w.Call(ctx, "Svc", tt.method, json.RawMessage(tt.input))
			m, err := s.RunMutation(ctx, r.ID)
			if err != nil || m.Status != scripthost.MutationNeedsReconcile {
				t.Fatalf("got %s (%v), want needs_reconcile", m.Status, err)
			}
			policy := hostfuncs.ReconcilePolicy{MaxAttempts: 2}
			for i := 1; i <= tt.attempts; i++ {
				m, err = hostfuncs.Reconcile(ctx, s, reg, m, policy, testNow)
				if err != nil {
					t.Fatal(err)
				}
				if i < tt.attempts && (m.Status != scripthost.MutationNeedsReconcile || !strings.HasPrefix(m.Error, hostfuncs.NotSent+":")) {
					t.Fatalf("attempt %d: got %s %q, want needs_reconcile, not sent", i, m.Status, m.Error)
				}
			}
			if m.Status != scripthost.MutationFailed || !strings.Contains(m.Error, hostfuncs.ReconciledFailed) {
				t.Errorf("got %s %q, want %s", m.Status, m.Error, hostfuncs.ReconciledFailed)
			}
			if strings.Contains(m.Error, "4242424242424242") {
				t.Errorf("error %q holds the secret field", m.Error)
			}
			ms, _ := s.Mutations(ctx, ledger.MutationFilter{Status: scripthost.MutationIndeterminate})
			if len(ms) != 0 {
				t.Errorf("got %d indeterminate mutations, want 0", len(ms))
			}
		})
	}
}
