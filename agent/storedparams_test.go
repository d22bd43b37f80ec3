package agent

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/scripthost/scripthost/hostfuncs"
	"github.com/scripthost/scripthost/internal/fakemodel"
	"github.com/scripthost/scripthost/ledger"
)

// TestStoredParamsLoseCallSecrets: the params an agent's mutation stores lose the
// value of the tool's declared secret field (a name that does not look secret) and
// that value where it is echoed under an innocent key (hostfuncs.StoredParams).
func TestStoredParamsLoseCallSecrets(t *testing.T) {
	const pin = "agent-pin-value-4242"
	e := newEnv(t, fakemodel.New(
		tools(call("test_charge", map[string]string{"pin": pin, "memo": "paid with " + pin, "amount": "12"})),
		done("charged"),
	))
	err := e.reg.Register(&hostfuncs.Tool{Namespace: "test", Method: "charge", SecretFields: []string{"pin"},
		InputSchema: json.RawMessage(`{"type":"object","properties":{"pin":{"type":"string"},"memo":{"type":"string"},"amount":{"type":"string"}}}`),
		Execute: func(context.Context, json.RawMessage) (json.RawMessage, error) {
			return json.RawMessage(`{"charged":true}`), nil
		}})
	if err != nil {
		t.Fatal(err)
	}
	res := e.run(e.executor(nil), "goal: charge\nsteps:\n  - id: charge\n    title: Charge once\n")
	wantStatus(t, res, StatusCompleted, "")
	muts, err := e.store.Mutations(context.Background(), ledger.MutationFilter{Workflow: Workflow(res.Session)})
	if err != nil || len(muts) != 1 {
		t.Fatalf("got %d mutations (%v), want 1", len(muts), err)
	}
	params := string(muts[0].Params)
	if strings.Contains(params, pin) {
		t.Errorf("stored params %s hold the secret field's value", params)
	}
	if !strings.Contains(params, `"amount":"12"`) || !strings.Contains(params, hostfuncs.Redacted) {
		t.Errorf("stored params %s, want the amount kept and the secret redacted", params)
	}
}
