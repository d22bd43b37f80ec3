package agent

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/scripthost/scripthost"
	"github.com/scripthost/scripthost/hostfuncs"
	"github.com/scripthost/scripthost/internal/fakemodel"
	"github.com/scripthost/scripthost/ledger"
)

// A mutation whose request never reached the service is sent again under the same
// key, and failed (the model told) if it still cannot be sent: the session never
// pauses for a person over an outcome that is known.
func TestNotSentMutationSentAgainNotApproved(t *testing.T) {
	for _, c := range []struct {
		name      string
		unsent    int // calls that never reach the service
		want      scripthost.MutationStatus
		wantCalls int
	}{
		{"reaches the service the second time", 1, scripthost.MutationApplied, 2},
		{"never reaches it", 100, scripthost.MutationFailed, 2},
	} {
		t.Run(c.name, func(t *testing.T) {
			e := newEnv(t, fakemodel.New(
				tools(call("test_charge", map[string]int{"n": 1})),
				done("charged"),
			))
			var mu sync.Mutex
			var keys []string
			err := e.reg.Register(&hostfuncs.Tool{Namespace: "test", Method: "charge",
				InputSchema: json.RawMessage(`{"type":"object","properties":{"n":{"type":"integer"}}}`),
				Execute: func(ctx context.Context, _ json.RawMessage) (json.RawMessage, error) {
					mu.Lock()
					defer mu.Unlock()
					keys = append(keys, hostfuncs.IdempotencyKey(ctx))
					if len(keys) <= c.unsent {
						return nil, &scripthost.Error{Class: scripthost.ClassNetwork, Code: "network",
							Message: "dial tcp 127.0.0.1:1: connect: connection refused",
							Err:     &hostfuncs.NotSentError{Err: errors.New("connection refused")}}
					}
					return json.RawMessage(`{"charged":true}`), nil
				}})
			if err != nil {
				t.Fatal(err)
			}
			res := e.run(e.executor(nil), "goal: charge\nsteps:\n  - id: charge\n    title: Charge once\n")
			wantStatus(t, res, StatusCompleted, "")
			if strings.Contains(e.events.String(), EventApprovalRequested) {
				t.Errorf("got an approval requested, want none: %s", e.events.String())
			}
			muts, err := e.store.Mutations(context.Background(), ledger.MutationFilter{Workflow: Workflow(res.Session)})
			if err != nil {
				t.Fatal(err)
			}
			if len(muts) != 1 || muts[0].Status != c.want {
				t.Fatalf("got %+v, want one mutation %s", muts, c.want)
			}
			mu.Lock()
			defer mu.Unlock()
			if len(keys) != c.wantCalls || keys[0] != keys[len(keys)-1] || keys[0] != muts[0].IdempotencyKey {
				t.Errorf("got keys %q, want the mutation's key %q %d times", keys, muts[0].IdempotencyKey, c.wantCalls)
			}
		})
	}
}
