package agent

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"time"

	"github.com/scripthost/scripthost"
	"github.com/scripthost/scripthost/hostfuncs"
	"github.com/scripthost/scripthost/ledger"
)

// Workflow names the mutations of a session in the ledger ("agent/SESSION",
// hostfuncs.CallerWorkflow).
func Workflow(session string) string { return hostfuncs.CallerWorkflow(hostfuncs.CallerAgent, session) }

// mutate runs an approved mutating call through the shared effect path: the
// mutation is recorded in flight with its idempotency key before the tool runs. A
// mutation an earlier, interrupted run of this call left behind is used instead: its
// result when applied, a reconcile when in flight, a person's decision when unknown.
func (e *Executor) mutate(ctx context.Context, r *stepRun, b bound, rec ledger.AgentToolCall, input json.RawMessage, value any, began time.Time) (callOutcome, error) {
	o := callOutcome{}
	canon, err := scripthost.CanonicalJSON(input)
	if err != nil {
		rec.Status, rec.Error = CallFailed, err.Error()
		return e.settle(ctx, r, rec, o, began)
	}
	hash := hostfuncs.Key{Workflow: Workflow(r.session), Handler: r.step.ID, Scope: rec.CallID}.Hash(b.tool, canon)
	prev, err := e.earlier(ctx, r.session, hash)
	if err != nil {
		return o, err
	}
	if prev.ID != "" {
		rec.MutationID = prev.ID
		switch {
		case prev.Status == scripthost.MutationApplied:
			rec.Status, rec.Result = CallDone, prev.Result
			return e.settle(ctx, r, rec, o, began)
		case prev.Status == scripthost.MutationSkipped:
			rec.Status, rec.Decision = CallSkipped, "a person resolved the unknown outcome as skipped"
			return e.settle(ctx, r, rec, o, began)
		case prev.Status.Unknown():
			return e.unknown(ctx, r, rec, prev)
		}
		// Failed: run again, with the next idempotency key.
	}

	secrets := hostfuncs.CallSecrets(value, b.tool.SecretFields)
	params, err := hostfuncs.StoredParams(b.tool, canon, secrets, e.o.Redactor)
	if err != nil {
		rec.Status, rec.Error = CallFailed, err.Error()
		return e.settle(ctx, r, rec, o, began)
	}
	out, err := hostfuncs.Effect{
		Store: e.o.Store, Registry: e.o.Registry, Tool: b.tool, Input: input,
		Record:  ledger.NewMutation{Workflow: Workflow(r.session), Handler: r.step.ID, Params: params, InputHash: hash},
		Secrets: secrets, Redactor: e.o.Redactor, Policy: hostfuncs.ReconcileOnce(e.o.Redactor), Clock: e.o.Clock,
		Hooks: hostfuncs.EffectHooks{
			Cause: func(err error) *scripthost.Error {
				c := asError(err)
				c.Message = e.o.Redactor.Redact(c.Message)
				return c
			},
			Began: func(m scripthost.Mutation) {
				rec.Status, rec.MutationID = CallRunning, m.ID
				_ = e.put(ctx, rec) // the mutation row is the durable record; this is for show
			},
		},
	}.Run(ctx)
	if err != nil {
		return o, fmt.Errorf("agent: %w", err)
	}
	m := out.Mutation
	rec.MutationID = m.ID
	if out.Status() == hostfuncs.EffectNotSent {
		// Nothing reached the service: after the backoff it is sent again under the same
		// key (Reconcile), and if it still cannot be sent it is failed and the model told;
		// no person is asked about an outcome that is known.
		if err := e.o.Sleep(ctx, m.NextReconcileAt.Sub(e.o.Clock())); err != nil {
			return o, err
		}
		if m, err = hostfuncs.Reconcile(ctx, e.o.Store, e.o.Registry, m, hostfuncs.ReconcileOnce(e.o.Redactor), e.o.Clock()); err != nil {
			return o, fmt.Errorf("agent: reconcile: %w", err)
		}
		out.Mutation, out.Result, out.Cause, out.CallErr = m, m.Result, nil, nil
	}
	switch out.Status() {
	case hostfuncs.EffectApplied:
		res := e.o.Redactor.RedactSecrets(normalize(out.Result))
		if err := hostfuncs.CheckOutput(b.tool, res); err != nil {
			rec.Status, rec.Error = CallFailed, err.Error()
		} else {
			rec.Status, rec.Result = CallDone, e.o.Redactor.RedactJSON(res)
		}
	case hostfuncs.EffectFailed:
		msg := m.Error
		if out.Cause != nil {
			msg = out.Cause.Error()
			if v := violation(out.Cause); v != "" {
				o.violated = v
			}
		}
		rec.Status, rec.Error = CallFailed, e.o.Redactor.Redact(msg)
	default:
		return e.unknown(ctx, r, rec, m)
	}
	return e.settle(ctx, r, rec, o, began)
}

// earlier returns the latest mutation of the session with this input hash that a
// new call must honour (hostfuncs.Earlier).
func (e *Executor) earlier(ctx context.Context, session, hash string) (scripthost.Mutation, error) {
	all, err := e.o.Store.Mutations(ctx, ledger.MutationFilter{Workflow: Workflow(session)})
	if err != nil {
		return scripthost.Mutation{}, fmt.Errorf("agent: %w", err)
	}
	var muts []scripthost.Mutation
	for _, c := range all {
		if c.InputHash == hash {
			muts = append(muts, c)
		}
	}
	sort.SliceStable(muts, func(i, j int) bool { return muts[i].CreatedAt.Before(muts[j].CreatedAt) })
	m, err := hostfuncs.Earlier(ctx, e.o.Store, e.o.Registry, muts, hostfuncs.ReconcileOnce(e.o.Redactor), e.o.Clock)
	if err != nil {
		return m, fmt.Errorf("agent: reconcile: %w", err)
	}
	return m, nil
}

// unknown pauses on a call whose outcome nobody can tell (a command killed mid-run):
// it is not run again unless a person approves.
func (e *Executor) unknown(ctx context.Context, r *stepRun, rec ledger.AgentToolCall, m scripthost.Mutation) (callOutcome, error) {
	rec.Status, rec.MutationID = CallPendingApproval, m.ID
	rec.Error = fmt.Sprintf("outcome unknown (mutation %s is %s): approve to run it again, deny to tell the model it did not run", m.ID, m.Status)
	if err := e.put(ctx, rec); err != nil {
		return callOutcome{}, err
	}
	e.sink.emit(Event{Type: EventApprovalRequested, Time: e.o.Clock(), Session: r.session, Step: r.step.ID, Turn: r.turn,
		Tool: rec.Tool, Call: rec.CallID, Message: rec.Error})
	return callOutcome{pause: fmt.Sprintf("call %s (%s): %s; scripthost agent approve|deny %s %s, then resume",
		rec.CallID, rec.Tool, rec.Error, r.session, rec.CallID)}, nil
}

func asError(err error) *scripthost.Error {
	if se, ok := err.(*scripthost.Error); ok {
		c := *se
		return &c
	}
	return &scripthost.Error{Class: scripthost.ClassOf(err), Message: err.Error()}
}
