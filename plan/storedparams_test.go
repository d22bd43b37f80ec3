package plan

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/scripthost/scripthost/hostfuncs"
)

// TestStoredParamsLoseCallSecrets: the params a plan's mutation stores and prints lose
// the value of a secret-looking field also where it is echoed under an innocent key
// (hostfuncs.StoredParams), and keep the rest.
func TestStoredParamsLoseCallSecrets(t *testing.T) {
	e := newEnv(t, envOpts{})
	err := e.reg.Register(&hostfuncs.Tool{Namespace: "test", Method: "token",
		InputSchema: json.RawMessage(`{"type":"object","properties":{"auth_token":{"type":"string"},"note":{"type":"string"}}}`),
		Execute: func(context.Context, json.RawMessage) (json.RawMessage, error) {
			return json.RawMessage(`{"ok":true}`), nil
		}})
	if err != nil {
		t.Fatal(err)
	}
	p := mustPlan(t, `{'plan_id':'sp','intent':'x','steps':[
	 {'step_id':'s','tool':'test.token','arguments':{'auth_token':'plan-token-value-77','note':'sent plan-token-value-77 today'}}]}`)
	if _, err := e.executor(Options{}).Run(context.Background(), p, approved(p)); err != nil {
		t.Fatal(err)
	}
	muts, err := e.store.Mutations(context.Background(), mutFilter("sp"))
	if err != nil || len(muts) != 1 {
		t.Fatalf("got %d mutations (%v), want 1", len(muts), err)
	}
	params := string(muts[0].Params)
	if strings.Contains(params, "plan-token-value-77") {
		t.Errorf("stored params %s hold the token", params)
	}
	if want := `"note":"sent ` + hostfuncs.Redacted + ` today"`; !strings.Contains(params, want) {
		t.Errorf("stored params %s, want %s", params, want)
	}
	for _, r := range e.records("sp") {
		if strings.Contains(string(r.Arguments), "plan-token-value-77") {
			t.Errorf("step record arguments %s hold the token", r.Arguments)
		}
	}
}
