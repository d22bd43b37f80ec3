package hostfuncs_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/scripthost/scripthost"
	"github.com/scripthost/scripthost/hostfuncs"
	"github.com/scripthost/scripthost/hostfuncs/httptool"
	"github.com/scripthost/scripthost/internal/fakesvc"
	"github.com/scripthost/scripthost/ledger"
)

// envSecret is the API token the HTTP tools read from the environment. It has
// characters that URL escaping changes, so that escaped copies are caught too.
const envSecret = "s3cr3t/Tok+en=42xyz"

const matrixDecl = `
- namespace: Svc
  method: charge
  url: "%URL%/charges/{customer}?note={note}"
  headers: {Authorization: "Bearer ${SVC_TOKEN}"}
  input_schema:
    type: object
    properties: {customer: {type: string}, amount: {type: integer}, note: {type: string}}
    required: [customer, amount]
  timeout: 300ms
  reconcile: {method: GET, url: "%URL%/charges?idempotency_key={key}"}
- namespace: Svc
  method: chargeNoReconcile
  url: "%URL%/charges/{customer}?note={note}"
  headers: {Authorization: "Bearer ${SVC_TOKEN}"}
  timeout: 300ms
`

func loadMatrixTools(t *testing.T, svc *fakesvc.Server) *hostfuncs.Registry {
	t.Helper()
	path := filepath.Join(t.TempDir(), "tools.yaml")
	if err := os.WriteFile(path, []byte(strings.ReplaceAll(matrixDecl, "%URL%", svc.URL())), 0o600); err != nil {
		t.Fatal(err)
	}
	tools, err := httptool.Load(path, func(name string) (string, bool) {
		if name == "SVC_TOKEN" {
			return envSecret, true
		}
		return "", false
	})
	if err != nil {
		t.Fatal(err)
	}
	reg := hostfuncs.NewRegistry()
	mustRegister(t, reg, tools...)
	return reg
}

// TestHTTPOutcomeMatrix runs every fake service behaviour through the wrapper with and
// without a reconciler and checks the final mutation status and that the service
// applied the mutation at most once. It also checks that the environment secret, which
// the input carries too (a script echoing what it was given), reaches no error, no log
// line and no byte of the ledger.
func TestHTTPOutcomeMatrix(t *testing.T) {
	svc := fakesvc.New()
	defer svc.Close()
	reg := loadMatrixTools(t, svc)
	s, path := openStore(t)
	var logs logBuffer
	ctx := context.Background()

	type want struct {
		status  scripthost.MutationStatus
		applies int
	}
	tests := []struct {
		b         fakesvc.Behavior
		rb        fakesvc.ReconcileBehavior
		with, wo  want // with and without a reconciler
		resultKey bool // the call returns normally with the service's answer
	}{
		{fakesvc.Succeed, fakesvc.ReconcileTruth, want{scripthost.MutationApplied, 1}, want{scripthost.MutationApplied, 1}, true},
		{fakesvc.Fail4xx, fakesvc.ReconcileTruth, want{scripthost.MutationFailed, 0}, want{scripthost.MutationFailed, 0}, false},
		{fakesvc.Unauthorized, fakesvc.ReconcileTruth, want{scripthost.MutationFailed, 0}, want{scripthost.MutationFailed, 0}, false},
		{fakesvc.Forbidden, fakesvc.ReconcileTruth, want{scripthost.MutationFailed, 0}, want{scripthost.MutationFailed, 0}, false},
		{fakesvc.Fail5xx, fakesvc.ReconcileTruth, want{scripthost.MutationFailed, 0}, want{scripthost.MutationIndeterminate, 0}, false},
		{fakesvc.ApplyTimeout, fakesvc.ReconcileTruth, want{scripthost.MutationApplied, 1}, want{scripthost.MutationIndeterminate, 1}, true},
		{fakesvc.ApplyDrop, fakesvc.ReconcileTruth, want{scripthost.MutationApplied, 1}, want{scripthost.MutationIndeterminate, 1}, true},
		{fakesvc.ApplyTimeout, fakesvc.ReconcileError, want{scripthost.MutationNeedsReconcile, 1}, want{scripthost.MutationIndeterminate, 1}, false},
		{fakesvc.Fail5xx, fakesvc.ReconcileError, want{scripthost.MutationNeedsReconcile, 0}, want{scripthost.MutationIndeterminate, 0}, false},
	}
	for _, tt := range tests {
		for _, withRec := range []bool{true, false} {
			method, w := "charge", tt.with
			if !withRec {
				method, w = "chargeNoReconcile", tt.wo
			}
			name := string(tt.b) + "/reconcile_" + string(tt.rb) + "/" + method
			t.Run(name, func(t *testing.T) {
				svc.SetReconcile(tt.rb)
				svc.Next(tt.b)
				before := len(svc.Requests())
				r := mutatingRun(t, s)
				wr := wrapperFor(reg, s, &r, hostfuncs.WrapperOptions{Logger: debugLogger(&logs)})
				wr.SetPhase(scripthost.PhaseMutate)
				in := `{"customer":"cus_1","amount":5,"note":` + jsonString(envSecret) + `}`
				out, err := wr.Call(ctx, "Svc", method, json.RawMessage(in))

				m, gerr := s.RunMutation(ctx, r.ID)
				if gerr != nil {
					t.Fatal(gerr)
				}
				if m.Status != w.status {
					t.Errorf("got status %s (%v), want %s", m.Status, err, w.status)
				}
				if got := svc.Applies(m.IdempotencyKey); got != w.applies {
					t.Errorf("got %d applies, want %d", got, w.applies)
				}
				posts := 0
				for _, req := range svc.Requests()[before:] {
					if req.Method == "POST" {
						posts++
						if req.Header.Get("Idempotency-Key") != m.IdempotencyKey {
							t.Errorf("request key %q, want %q", req.Header.Get("Idempotency-Key"), m.IdempotencyKey)
						}
					}
				}
				if posts != 1 {
					t.Errorf("got %d mutation requests, want 1", posts)
				}
				if tt.resultKey && w.status == scripthost.MutationApplied {
					if err != nil || !strings.Contains(string(out), m.IdempotencyKey) {
						t.Errorf("got %s, %v; want the service's answer", out, err)
					}
				} else if !isTerminate(err) {
					t.Errorf("got %v, want the invocation ended", err)
				}
				if err != nil && leaks(err.Error()) {
					t.Errorf("error message leaks the secret: %q", err.Error())
				}
				if leaks(string(out)) {
					t.Errorf("result leaks the secret: %s", out)
				}
				// A later reconcile (the runtime's background retry) never applies again.
				if m.Status == scripthost.MutationNeedsReconcile {
					svc.SetReconcile(fakesvc.ReconcileTruth)
					m2, err := hostfuncs.Reconcile(ctx, s, reg, m, hostfuncs.ReconcilePolicy{}, testNow)
					if err != nil {
						t.Fatal(err)
					}
					wantAfter := scripthost.MutationFailed
					if w.applies == 1 {
						wantAfter = scripthost.MutationApplied
					}
					if m2.Status != wantAfter || svc.Applies(m.IdempotencyKey) != w.applies {
						t.Errorf("background reconcile: got %s with %d applies, want %s with %d", m2.Status, svc.Applies(m.IdempotencyKey), wantAfter, w.applies)
					}
				}
			})
		}
	}

	// Nothing the ledger holds, in any file, contains the secret in any form.
	s.Close()
	files, _ := filepath.Glob(path + "*")
	if len(files) == 0 {
		t.Fatal("no ledger files")
	}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, form := range secretForms() {
			if bytes.Contains(data, []byte(form)) {
				t.Errorf("ledger file %s contains the secret as %q", filepath.Base(f), form)
			}
		}
	}
	if leaks(logs.String()) {
		t.Errorf("logs leak the secret")
	}
	if !strings.Contains(logs.String(), "mutation in flight") {
		t.Errorf("logs were not captured")
	}
}

// TestLedgerRowsRedacted reads every mutation row back and checks params, results
// and errors, and that a redacted copy is what is stored while the service got the
// real input.
func TestLedgerRowsRedacted(t *testing.T) {
	svc := fakesvc.New()
	defer svc.Close()
	reg := loadMatrixTools(t, svc)
	s, _ := openStore(t)
	ctx := context.Background()
	for _, b := range []fakesvc.Behavior{fakesvc.Succeed, fakesvc.Fail4xx, fakesvc.ApplyDrop} {
		svc.Next(b)
		r := mutatingRun(t, s)
		w := wrapperFor(reg, s, &r, hostfuncs.WrapperOptions{})
		w.SetPhase(scripthost.PhaseMutate)
		w.Call(ctx, "Svc", "chargeNoReconcile", json.RawMessage(`{"customer":"c","amount":1,"note":`+jsonString(envSecret)+`,"password":"hunter2hunter2"}`))
	}
	ms, err := s.Mutations(ctx, ledger.MutationFilter{})
	if err != nil || len(ms) != 3 {
		t.Fatalf("got %d mutations (%v), want 3", len(ms), err)
	}
	for _, m := range ms {
		row, _ := json.Marshal(m)
		if leaks(string(row)) || strings.Contains(string(row), "hunter2hunter2") {
			t.Errorf("row leaks a secret: %s", row)
		}
		if !strings.Contains(string(m.Params), `"note":"[REDACTED]"`) || !strings.Contains(string(m.Params), `"password":"[REDACTED]"`) {
			t.Errorf("got params %s, want note and password redacted", m.Params)
		}
	}
	sent := 0
	for _, req := range svc.Requests() {
		if strings.Contains(string(req.Body), "hunter2hunter2") {
			sent++
		}
	}
	if sent != 3 {
		t.Errorf("got %d requests with the real input, want 3", sent)
	}
}

func jsonString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

func secretForms() []string {
	e := jsonString(envSecret)
	return []string{envSecret, e[1 : len(e)-1], "s3cr3t%2FTok%2Ben%3D42xyz", "s3cr3t%2FTok+en=42xyz"}
}

func leaks(s string) bool {
	for _, f := range secretForms() {
		if strings.Contains(s, f) {
			return true
		}
	}
	return false
}
