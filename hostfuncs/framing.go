package hostfuncs

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/scripthost/scripthost"
	"github.com/scripthost/scripthost/ledger"
)

// Caller names who runs an effect outside a workflow: an approved plan or an agent
// session. Their mutations are recorded under a workflow name built by CallerWorkflow.
type Caller string

// The callers of Effect that are not workflows.
const (
	CallerPlan  Caller = "plan"
	CallerAgent Caller = "agent"
)

// CallerWorkflow is the one naming scheme of the ledger workflow name of a plan's or
// an agent session's mutations: "plan:PLAN" and "agent/SESSION", the names ledgers
// already hold.
func CallerWorkflow(c Caller, id string) string {
	if c == CallerPlan {
		return "plan:" + id
	}
	return string(c) + "/" + id
}

// ReconcileOnce is the reconcile policy of plans and agents: one attempt, then a
// person decides (hostfuncs.Resolve).
func ReconcileOnce(red *Redactor) ReconcilePolicy {
	return ReconcilePolicy{MaxAttempts: 1, Redactor: red}
}

// Key is what an effect's idempotency key is derived from besides the tool and its
// canonical input: the workflow name, the handler (a step), the run's events and the
// idempotency scope (a plan step's execution, an agent call).
type Key struct {
	Workflow string
	Handler  string
	Events   []string
	Scope    string
}

// Hash is the input hash of the tool's call with this canonical input: the one key
// input of workflows, plans and agents (scripthost.InputHash).
func (k Key) Hash(t *Tool, canonical []byte) string {
	return scripthost.InputHash(scripthost.KeyInput{
		Workflow: k.Workflow, Handler: k.Handler, Events: k.Events,
		Namespace: t.Namespace, Method: t.Method, Params: canonical, Scope: k.Scope,
	})
}

// StoredParams is the one recipe for the params stored with a mutation (workflows,
// plans and agents), from the call's canonical input: with a redactor, the values of
// the tool's secret fields (whatever their type) and of secret-looking keys (strings,
// objects and arrays) are replaced and the registered secrets and credential formats
// removed from every string, as storedResult does for the result; then the call's own
// secret values (CallSecrets) are removed wherever they appear, a short one where it
// is a whole value. Without secrets it is canonical JSON. A read's logged input
// (noteRead) is made by the same recipe.
func StoredParams(t *Tool, canonical []byte, secrets []string, red *Redactor) (json.RawMessage, error) {
	dec := json.NewDecoder(bytes.NewReader(canonical))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, fmt.Errorf("hostfuncs: stored params: %w", err)
	}
	return storedParams(t, v, secrets, red, callRedactor(secrets))
}

// storedParams is StoredParams of a value decoded as encoding/json decodes with
// UseNumber, which it changes in place; call is callRedactor(secrets), which the
// wrapper has already made for the call.
func storedParams(t *Tool, v any, secrets []string, red, call *Redactor) (json.RawMessage, error) {
	if red != nil {
		v = red.redactValue(v, t.SecretFields)
	}
	stored, err := scripthost.CanonicalValue(v)
	if err != nil {
		return nil, fmt.Errorf("hostfuncs: stored params: %w", err)
	}
	for _, s := range secrets {
		// A secret field's value may also appear under an innocent key.
		if len(s) >= minSubstring {
			stored = []byte(strings.ReplaceAll(string(stored), jsonEscaped(s), Redacted))
		}
	}
	// A short one only where it is a whole value: inside other text it cannot be told
	// from that text.
	return call.RedactSecrets(stored), nil
}

// storedResult is the one recipe for the result stored with an applied mutation: the
// call's own secret values removed, then, with a redactor (plans and agents), the
// credential formats and secret-looking fields; an empty answer is stored as null.
func storedResult(out json.RawMessage, red *Redactor) json.RawMessage {
	if len(out) == 0 {
		out = json.RawMessage("null")
	}
	if red != nil {
		out = red.RedactJSON(out)
	}
	return out
}

// Earlier is the one look-up of an earlier call with the same key input: of muts, the
// mutations with one input hash in the order they were recorded, the latest whose
// outcome a new call must honour. One in flight or waiting to be reconciled is
// reconciled once first (a mutation never sent is sent again under its key) and
// replaced in muts. Failed ones are passed over (the call runs again under the next
// key); none left gives the zero Mutation.
func Earlier(ctx context.Context, store ledger.Store, reg *Registry, muts []scripthost.Mutation, p ReconcilePolicy, clock func() time.Time) (scripthost.Mutation, error) {
	for i := len(muts) - 1; i >= 0; i-- {
		m := muts[i]
		if m.Status == scripthost.MutationInFlight || m.Status == scripthost.MutationNeedsReconcile {
			var err error
			if m, err = Reconcile(ctx, store, reg, m, p, clock()); err != nil {
				return m, err
			}
			muts[i] = m
		}
		if m.Status != scripthost.MutationFailed {
			return m, nil
		}
	}
	return scripthost.Mutation{}, nil
}

// EffectStatus is what the caller of an effect sees of its outcome.
type EffectStatus int

// The outcomes a caller tells apart.
const (
	// EffectApplied: the mutation happened; Result holds its result.
	EffectApplied EffectStatus = iota
	// EffectFailed: the mutation did not happen; Cause says why.
	EffectFailed
	// EffectNotSent: the call never reached the service; the mutation waits to be sent
	// again under the same key at its NextReconcileAt.
	EffectNotSent
	// EffectIndeterminate: nobody can tell yet whether the mutation happened.
	EffectIndeterminate
)

// Status is the one outcome switch: the mutation's status after the call, as the
// caller sees it.
func (o EffectOutcome) Status() EffectStatus {
	switch m := o.Mutation; {
	case m.Status == scripthost.MutationApplied:
		return EffectApplied
	case m.Status == scripthost.MutationFailed:
		return EffectFailed
	case m.Status == scripthost.MutationNeedsReconcile && IsNotSent(o.CallErr):
		return EffectNotSent
	}
	return EffectIndeterminate
}
