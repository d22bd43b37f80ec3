package agent

import (
	"context"
	"errors"
	"fmt"

	"github.com/scripthost/scripthost"
	"github.com/scripthost/scripthost/hostfuncs"
	"github.com/scripthost/scripthost/ledger"
)

// ErrNotPending: the call is not waiting for a decision (it was decided already, or
// never needed one).
var ErrNotPending = errors.New("agent: call not waiting for approval")

// Decide records a person's decision on a call that waits for approval; Resume then
// continues from that call without asking the model again. Approving a call whose
// earlier outcome is unknown resolves that mutation as not having happened, so the
// call runs again; denying it resolves it as skipped.
func Decide(ctx context.Context, store ledger.Store, session, call string, approve bool, by string) error {
	as, ok := store.(ledger.AgentStore)
	if !ok {
		return fmt.Errorf("agent: store %T cannot record agent sessions", store)
	}
	calls, err := as.AgentToolCalls(ctx, session)
	if err != nil {
		return fmt.Errorf("agent: %w", err)
	}
	for _, c := range calls {
		if c.CallID != call {
			continue
		}
		if c.Status != CallPendingApproval {
			return fmt.Errorf("%w: call %s of session %s is %s", ErrNotPending, call, session, c.Status)
		}
		if c.MutationID != "" {
			m, err := store.Mutation(ctx, c.MutationID)
			if err != nil {
				return fmt.Errorf("agent: %w", err)
			}
			if m.Status.Unknown() {
				as := scripthost.MutationFailed
				if !approve {
					as = scripthost.MutationSkipped
				}
				if _, err := hostfuncs.Resolve(ctx, store, m.ID, ledger.Resolution{As: as, By: by, Force: true}); err != nil {
					return fmt.Errorf("agent: resolve mutation %s: %w", m.ID, err)
				}
			}
		}
		if approve {
			c.Status, c.Decision = CallApproved, "approved by "+by
		} else {
			c.Status, c.Decision = CallDenied, "denied by "+by
		}
		c.Error = ""
		return as.PutAgentToolCall(ctx, c)
	}
	return fmt.Errorf("agent: session %s has no call %s: %w", session, call, ledger.ErrNotFound)
}
