package hostfuncs_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/scripthost/scripthost"
	"github.com/scripthost/scripthost/hostfuncs"
	"github.com/scripthost/scripthost/ledger"
)

// TestCallerWorkflowKeepsStoredNames: plans and agents record their mutations under
// the names ledgers already hold, and Key.Hash is the input hash those rows carry, so
// an earlier call recorded before the one framing is still found.
func TestCallerWorkflowKeepsStoredNames(t *testing.T) {
	if got := hostfuncs.CallerWorkflow(hostfuncs.CallerPlan, "p1"); got != "plan:p1" {
		t.Errorf("plan workflow = %q, want plan:p1", got)
	}
	if got := hostfuncs.CallerWorkflow(hostfuncs.CallerAgent, "s1"); got != "agent/s1" {
		t.Errorf("agent workflow = %q, want agent/s1", got)
	}
	tool := &hostfuncs.Tool{Namespace: "Svc", Method: "put"}
	k := hostfuncs.Key{Workflow: "plan:p1", Handler: "step", Events: []string{"e1"}, Scope: "plan/p1/1/step"}
	want := scripthost.InputHash(scripthost.KeyInput{Workflow: "plan:p1", Handler: "step", Events: []string{"e1"},
		Namespace: "Svc", Method: "put", Params: []byte(`{"a":1}`), Scope: "plan/p1/1/step"})
	if got := k.Hash(tool, []byte(`{"a":1}`)); got != want {
		t.Errorf("Key.Hash = %s, want %s", got, want)
	}
}

// runEffect runs one run-less effect of tool under workflow "agent/s", its key input
// scoped to scope.
func runEffect(t *testing.T, s ledger.Store, reg *hostfuncs.Registry, tool *hostfuncs.Tool, scope string, red *hostfuncs.Redactor, secrets ...string) hostfuncs.EffectOutcome {
	t.Helper()
	hash := hostfuncs.Key{Workflow: "agent/s", Handler: "h", Scope: scope}.Hash(tool, []byte(`{}`))
	o, err := hostfuncs.Effect{Store: s, Registry: reg, Tool: tool, Input: json.RawMessage(`{}`),
		Record:  ledger.NewMutation{Workflow: "agent/s", Handler: "h", Params: json.RawMessage(`{}`), InputHash: hash},
		Secrets: secrets, Redactor: red, Policy: hostfuncs.ReconcilePolicy{MaxAttempts: 1}, Clock: fixedClock,
	}.Run(context.Background())
	if err != nil {
		t.Fatalf("Effect.Run: %v", err)
	}
	return o
}

// TestEffectStatus: the one outcome switch tells applied, failed, never sent and
// indeterminate apart.
func TestEffectStatus(t *testing.T) {
	s, _ := openStore(t)
	reg := hostfuncs.NewRegistry()
	answer := func(out string, err error) *hostfuncs.Tool {
		return &hostfuncs.Tool{Namespace: "Svc", Method: "m", Execute: func(context.Context, json.RawMessage) (json.RawMessage, error) {
			return json.RawMessage(out), err
		}}
	}
	tests := []struct {
		name string
		tool *hostfuncs.Tool
		want hostfuncs.EffectStatus
	}{
		{"applied", answer(`{"ok":true}`, nil), hostfuncs.EffectApplied},
		{"failed", answer("", scripthost.Errorf(scripthost.ClassLogic, "", "refused")), hostfuncs.EffectFailed},
		{"not sent", answer("", &scripthost.Error{Class: scripthost.ClassNetwork, Message: "dial", Err: &hostfuncs.NotSentError{Err: errors.New("refused")}}), hostfuncs.EffectNotSent},
		{"indeterminate", answer("", scripthost.Errorf(scripthost.ClassNetwork, "", "connection reset")), hostfuncs.EffectIndeterminate},
	}
	for _, tc := range tests {
		o := runEffect(t, s, reg, tc.tool, tc.name, nil)
		if got := o.Status(); got != tc.want {
			t.Errorf("%s: Status() = %d, want %d (mutation %s)", tc.name, got, tc.want, o.Mutation.Status)
		}
	}
}

// TestEffectStoredResultRecipe: the stored result loses the call's own secrets
// always and, with a redactor (plans and agents), secret-looking fields too; an empty
// answer is stored as null.
func TestEffectStoredResultRecipe(t *testing.T) {
	s, _ := openStore(t)
	reg := hostfuncs.NewRegistry()
	echo := &hostfuncs.Tool{Namespace: "Svc", Method: "echo", Execute: func(context.Context, json.RawMessage) (json.RawMessage, error) {
		return json.RawMessage(`{"token":"visible-token-value","echo":"own-secret-value"}`), nil
	}}
	plain := runEffect(t, s, reg, echo, "plain", nil, "own-secret-value").Mutation.Result
	if strings.Contains(string(plain), "own-secret-value") || !strings.Contains(string(plain), "visible-token-value") {
		t.Errorf("without a redactor the stored result = %s, want the call's secret removed and the rest kept", plain)
	}
	red := runEffect(t, s, reg, echo, "redacted", hostfuncs.NewRedactor(), "own-secret-value").Mutation.Result
	if strings.Contains(string(red), "own-secret-value") || strings.Contains(string(red), "visible-token-value") {
		t.Errorf("with a redactor the stored result = %s, want both values removed", red)
	}
	empty := &hostfuncs.Tool{Namespace: "Svc", Method: "empty", Execute: func(context.Context, json.RawMessage) (json.RawMessage, error) {
		return nil, nil
	}}
	if got := runEffect(t, s, reg, empty, "empty", hostfuncs.NewRedactor()).Mutation.Result; string(got) != "null" {
		t.Errorf("empty answer stored as %s, want null", got)
	}
}

// TestEarlier: the one look-up of an earlier call passes over failed mutations,
// reconciles one in flight once (and keeps the reconciled row) and finds none when all
// failed.
func TestEarlier(t *testing.T) {
	s, _ := openStore(t)
	ctx := context.Background()
	reg := hostfuncs.NewRegistry()
	calls := 0
	flaky := &hostfuncs.Tool{Namespace: "Svc", Method: "flaky", Execute: func(context.Context, json.RawMessage) (json.RawMessage, error) {
		calls++
		if calls == 1 {
			return nil, scripthost.Errorf(scripthost.ClassLogic, "", "first refused")
		}
		return json.RawMessage(`{"n":2}`), nil
	}}
	failed := runEffect(t, s, reg, flaky, "flaky", nil).Mutation
	muts := []scripthost.Mutation{failed}
	if m, err := hostfuncs.Earlier(ctx, s, reg, muts, hostfuncs.ReconcilePolicy{MaxAttempts: 1}, fixedClock); err != nil || m.ID != "" {
		t.Fatalf("Earlier(failed) = %s %s, %v; want none", m.ID, m.Status, err)
	}
	applied := runEffect(t, s, reg, flaky, "flaky", nil).Mutation
	muts = append(muts, applied)
	if m, err := hostfuncs.Earlier(ctx, s, reg, muts, hostfuncs.ReconcilePolicy{MaxAttempts: 1}, fixedClock); err != nil || m.ID != applied.ID {
		t.Fatalf("Earlier = %s %s, %v; want the applied %s", m.ID, m.Status, err, applied.ID)
	}

	mustRegister(t, reg, &hostfuncs.Tool{Namespace: "Svc", Method: "rec", Execute: okTool("Svc", "rec", "").Execute,
		Reconcile: func(context.Context, scripthost.Mutation) (scripthost.Reconciliation, error) {
			return scripthost.Reconciliation{Outcome: scripthost.ReconcileApplied, Result: json.RawMessage(`{"found":true}`)}, nil
		}})
	inflight := uncertainMutation(t, s, "rec", "s1")
	muts = []scripthost.Mutation{inflight}
	m, err := hostfuncs.Earlier(ctx, s, reg, muts, hostfuncs.ReconcilePolicy{MaxAttempts: 1}, fixedClock)
	if err != nil || m.ID != inflight.ID || m.Status != scripthost.MutationApplied {
		t.Fatalf("Earlier(in flight) = %s %s, %v; want %s reconciled as applied", m.ID, m.Status, err, inflight.ID)
	}
	if muts[0].Status != scripthost.MutationApplied {
		t.Errorf("the look-up kept %s in its list, want the reconciled row", muts[0].Status)
	}
}

// TestStoredParamsRecipe: the one recipe for stored params removes the call's own
// secret values always (a short one where it is a whole value), and with a redactor
// the secret-looking and declared secret fields (these whatever their type) and
// credential formats too, as the stored result's recipe does; what is left is
// canonical.
func TestStoredParamsRecipe(t *testing.T) {
	tool := &hostfuncs.Tool{Namespace: "Svc", Method: "put", SecretFields: []string{"pin"}}
	in := []byte(`{"api_key":"key-value-0000","memo":"pin 4242-pin-value used","n":1.50,"pin":"4242-pin-value","short":"ab"}`)
	secrets := []string{"4242-pin-value", "ab"}
	plain, err := hostfuncs.StoredParams(tool, in, secrets, nil)
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"api_key":"key-value-0000","memo":"pin [REDACTED] used","n":1.50,"pin":"[REDACTED]","short":"[REDACTED]"}`; string(plain) != want {
		t.Errorf("without a redactor: %s, want %s", plain, want)
	}
	red, err := hostfuncs.StoredParams(tool, in, secrets, hostfuncs.NewRedactor())
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"api_key":"[REDACTED]","memo":"pin [REDACTED] used","n":1.50,"pin":"[REDACTED]","short":"[REDACTED]"}`; string(red) != want {
		t.Errorf("with a redactor: %s, want %s", red, want)
	}
	// A declared secret field loses its value whatever its type; a secret-looking key
	// keeps a number (a token_count is no secret).
	num, err := hostfuncs.StoredParams(tool, []byte(`{"pin":4242,"token_count":5}`), nil, hostfuncs.NewRedactor())
	if want := `{"pin":"[REDACTED]","token_count":5}`; err != nil || string(num) != want {
		t.Errorf("numbers: %s (%v), want %s", num, err, want)
	}
	if got, err := hostfuncs.StoredParams(tool, []byte(`{"tag":"<b>"}`), nil, nil); err != nil || string(got) != `{"tag":"\u003cb\u003e"}` {
		t.Errorf("without secrets: %s (%v), want canonical", got, err)
	}
	if _, err := hostfuncs.StoredParams(tool, []byte(`{"a":`), nil, nil); err == nil {
		t.Error("malformed params: got no error")
	}
}

// TestWorkflowStoredParamsLoseCallSecrets: a workflow's mutation stores its params
// through StoredParams: a declared secret field's value is gone also where it is
// echoed under an innocent key.
func TestWorkflowStoredParamsLoseCallSecrets(t *testing.T) {
	s, _ := openStore(t)
	ctx := context.Background()
	reg := hostfuncs.NewRegistry()
	mustRegister(t, reg, &hostfuncs.Tool{Namespace: "Svc", Method: "charge", SecretFields: []string{"pin"},
		Execute: func(context.Context, json.RawMessage) (json.RawMessage, error) {
			return json.RawMessage(`{"ok":true}`), nil
		}})
	w := wrapperFor(reg, s, nil, hostfuncs.WrapperOptions{})
	w.SetPhase(scripthost.PhaseMutate)
	if _, err := w.Call(ctx, "Svc", "charge", json.RawMessage(`{"pin":"wf-pin-value-99","memo":"with wf-pin-value-99","amount":3}`)); err != nil {
		t.Fatal(err)
	}
	ms, err := s.Mutations(ctx, ledger.MutationFilter{})
	if err != nil || len(ms) != 1 {
		t.Fatalf("got %d mutations (%v), want 1", len(ms), err)
	}
	if want := `{"amount":3,"memo":"with [REDACTED]","pin":"[REDACTED]"}`; string(ms[0].Params) != want {
		t.Errorf("stored params %s, want %s", ms[0].Params, want)
	}
}
