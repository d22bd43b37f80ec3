package plan

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/scripthost/scripthost"
	"github.com/scripthost/scripthost/hostfuncs"
)

// A mutation whose request never reached the service is not an unknown outcome: the
// plan stops without asking a person to resolve it, and its next run sends it again
// under the same key.
func TestNotSentMutationSentAgainUnderItsKey(t *testing.T) {
	e := newEnv(t, envOpts{})
	var mu sync.Mutex
	var keys []string
	reachable := false
	tool := &hostfuncs.Tool{Namespace: "test", Method: "charge",
		InputSchema: json.RawMessage(`{"type":"object","properties":{"n":{"type":"integer"}}}`),
		Execute: func(ctx context.Context, _ json.RawMessage) (json.RawMessage, error) {
			mu.Lock()
			defer mu.Unlock()
			keys = append(keys, hostfuncs.IdempotencyKey(ctx))
			if !reachable {
				return nil, &scripthost.Error{Class: scripthost.ClassNetwork, Code: "network",
					Message: "dial tcp 127.0.0.1:1: connect: connection refused",
					Err:     &hostfuncs.NotSentError{Err: errors.New("connection refused")}}
			}
			return json.RawMessage(`{"charged":true}`), nil
		}}
	if err := e.reg.Register(tool); err != nil {
		t.Fatal(err)
	}
	p := mustPlan(t, `{'plan_id':'charge','intent':'x','steps':[{'step_id':'c','tool':'test.charge','arguments':{'n':1}}]}`)

	_, err := e.run(p, Options{})
	if CodeOf(err) != CodeE306NeedsReconcile {
		t.Fatalf("got %v, want %s", err, CodeE306NeedsReconcile)
	}
	if msg := err.Error(); !strings.Contains(msg, "never sent") || strings.Contains(msg, "resolve it") {
		t.Errorf("got %q, want it to say the mutation was never sent and not ask for a resolution", msg)
	}
	muts, err := e.store.Mutations(context.Background(), mutFilter("charge"))
	if err != nil {
		t.Fatal(err)
	}
	if len(muts) != 1 || muts[0].Status != scripthost.MutationNeedsReconcile {
		t.Fatalf("got %+v, want one mutation waiting to be sent again", muts)
	}

	mu.Lock()
	reachable = true
	mu.Unlock()
	res, err := e.run(p, Options{})
	if err != nil {
		t.Fatalf("second run: %v", err)
	}
	if got := stepIDs(res); got != "c:succeeded" {
		t.Errorf("got %s, want c:succeeded", got)
	}
	muts, err = e.store.Mutations(context.Background(), mutFilter("charge"))
	if err != nil {
		t.Fatal(err)
	}
	if len(muts) != 1 || muts[0].Status != scripthost.MutationApplied {
		t.Fatalf("got %+v, want the one mutation applied", muts)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(keys) != 2 || keys[0] != keys[1] || keys[0] != muts[0].IdempotencyKey {
		t.Errorf("got keys %q, want the mutation's key %q twice", keys, muts[0].IdempotencyKey)
	}
}
