package hostfuncs

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/scripthost/scripthost"
	"github.com/scripthost/scripthost/ledger"
)

// Effect is one admitted mutating tool call carried through the ledger. It is the one
// implementation of the ledger's promise that workflows (ToolWrapper), approved plans
// and agent runs share: the idempotency key is derived from the input hash and the
// count of earlier definite failures (by the ledger, in the transaction of the
// record), the mutation is recorded in_flight durably before the call, the tool is called with the key in its context, and the outcome is
// recorded after: applied, failed, or reconciled when uncertain.
//
// Validation, classification and the phase or approval check happen before an Effect
// is built: they differ per caller (a script's phase, a plan's approval, an agent's
// approval policy); what happens from the in_flight record on does not.
type Effect struct {
	Store ledger.Store
	// Registry finds the tool's reconciler when the outcome is uncertain.
	Registry *Registry
	Tool     *Tool
	// Input is the validated input the tool is called with.
	Input json.RawMessage
	// Record names the mutation: its identity, Params as StoredParams gives them and
	// InputHash (Key.Hash).
	// IdempotencyKey is ignored: the ledger derives it (ledger.NewMutation).
	Record ledger.NewMutation
	// Secrets are the call's own secret values, removed from the stored result.
	Secrets []string
	// Redactor, when set, also removes credentials from the stored result (plans and
	// agents; storedResult).
	Redactor *Redactor
	// Policy bounds the reconcile attempts of an uncertain outcome.
	Policy ReconcilePolicy
	// Clock gives the time for reconcile scheduling; nil means time.Now.
	Clock func() time.Time
	// Hooks are the caller's part of the call; each may be left nil.
	Hooks EffectHooks
	// FailureToNext records a definite failure with ledger.Store.FailMutationToNext
	// (the run's next phase handles it); ReleaseOnFailure is passed along.
	FailureToNext    bool
	ReleaseOnFailure bool
	// BeginEvents are lifecycle events logged in the transaction of the in-flight
	// record, before it: those of the run's creation when Record.Run creates it.
	BeginEvents []ledger.LifecycleEvent
}

// EffectHooks are the callbacks through which a caller takes part in an Effect.
type EffectHooks struct {
	// Execute calls the tool; nil means Tool.Execute with a panic turned into an
	// internal error. ctx carries the idempotency key.
	Execute func(ctx context.Context, input json.RawMessage) (json.RawMessage, error)
	// Judge, when set, inspects a result returned without error: a non-nil error makes
	// the call a definite failure (a command that answered with a non-zero exit code).
	Judge func(out json.RawMessage) error
	// Cause turns the call's error into the cause stored with a failure, with secrets
	// removed; nil classifies the error as it is.
	Cause func(err error) *scripthost.Error
	// Began, when set, sees the in_flight mutation once it is durable.
	Began func(scripthost.Mutation)
}

// EffectOutcome is what became of an Effect.
type EffectOutcome struct {
	// Mutation is the mutation as the ledger holds it after the call: applied, failed,
	// or in_flight, needs_reconcile or indeterminate when the outcome stays unknown.
	Mutation scripthost.Mutation
	// Result is the applied result (the tool's answer or the reconciler's).
	Result json.RawMessage
	// Out is what the tool answered, also on a judged failure.
	Out json.RawMessage
	// CallErr is the tool's error, nil when it answered.
	CallErr error
	// Cause is the stored cause of a definite failure or of an uncertain outcome.
	Cause *scripthost.Error
}

// Applied reports whether the mutation is known to have happened.
func (o EffectOutcome) Applied() bool { return o.Mutation.Status == scripthost.MutationApplied }

// Run carries the effect through the ledger. The error is a ledger error (code
// ledger_error): the outcome could not be recorded, and whatever is in the ledger is
// reconciled at the next start.
func (e Effect) Run(ctx context.Context) (EffectOutcome, error) {
	var o EffectOutcome
	if e.Store == nil {
		return o, scripthost.Errorf(scripthost.ClassInternal, CodeLedger, "no ledger to record the mutation in")
	}
	clock := e.Clock
	if clock == nil {
		clock = time.Now
	}
	h := e.Hooks
	cause := h.Cause
	if cause == nil {
		cause = asError
	}
	// The store derives the key in the transaction of the in-flight record, from the
	// failures of these inputs it counts there (no key given), and logs it.
	nm := e.Record
	nm.IdempotencyKey = ""
	if nm.Namespace == "" {
		nm.Namespace, nm.Method = e.Tool.Namespace, e.Tool.Method
	}

	bctx, cancel := context.WithTimeout(ctx, ledger.WriteTimeout)
	m, err := e.Store.BeginMutation(ledger.WithEvents(bctx, e.BeginEvents...), nm)
	cancel()
	if err != nil {
		return o, ledgerError("recording the mutation before the call", err)
	}
	o.Mutation = m
	if h.Began != nil {
		h.Began(m)
	}

	call := h.Execute
	if call == nil {
		call = func(ctx context.Context, in json.RawMessage) (json.RawMessage, error) {
			return CallTool(ctx, e.Tool, in)
		}
	}
	out, callErr := call(WithIdempotencyKey(ctx, m.IdempotencyKey), e.Input)
	// The result is stored, so the input's secret values are removed from it as they
	// were from the params (a service may echo them back).
	out = NewRedactor(e.Secrets...).RedactSecrets(out)
	o.Out, o.CallErr = out, callErr
	judged := callErr
	if judged == nil && h.Judge != nil {
		judged = h.Judge(out)
	}

	// The call was made: its outcome is recorded even if the caller's context has been
	// cancelled meanwhile.
	wctx, wcancel := context.WithTimeout(context.WithoutCancel(ctx), ledger.WriteTimeout)
	defer wcancel()
	switch {
	case judged == nil:
		applied, err := e.Store.ApplyMutation(ledger.WithEvents(wctx, appliedEvents(m)...), m.ID, storedResult(out, e.Redactor))
		if err != nil {
			// Left in_flight: startup recovery reconciles it.
			return o, ledgerError("recording the applied mutation", err)
		}
		o.Mutation, o.Result = applied, out
		return o, nil

	case callErr == nil || scripthost.IsDefinite(callErr):
		c := cause(judged)
		o.Cause = c
		var failed scripthost.Mutation
		if e.FailureToNext && nm.RunID != "" {
			evs := []ledger.LifecycleEvent{outcomeEvent(m.RunID, failedMutation(m, c)),
				mutateEvent(m.RunID, ledger.EventPhaseCompleted, map[string]any{"outcome": scripthost.OutcomeFailed, "released": e.ReleaseOnFailure})}
			failed, err = e.Store.FailMutationToNext(ledger.WithEvents(wctx, evs...), m.ID, c, e.ReleaseOnFailure)
		} else {
			failed, err = e.Store.FailMutation(ledger.WithEvents(wctx, failedEvents(m, c)...), m.ID, c)
		}
		if err != nil {
			return o, ledgerError("recording the failed mutation", err)
		}
		o.Mutation = failed
		return o, nil
	}

	c := cause(callErr)
	o.Cause = c
	var rec scripthost.Mutation
	var busy *RetryAfterError
	if IsNotSent(callErr) {
		// Nothing reached the service: the mutation did not happen, and the service never
		// saw its key. It is sent again under the same key after a backoff (a failure
		// recorded now would change the key and restart the run for nothing), and no
		// person is asked about an outcome that is known.
		next := clock().Add(e.Policy.Backoff(1))
		reason := notSentReason(c.Message, next)
		if e.Policy.Redactor != nil {
			reason = e.Policy.Redactor.Redact(reason)
		}
		evs := waitingEvents(m, scripthost.MutationNeedsReconcile, reason, next)
		rec, err = e.Store.MarkNeedsReconcile(ledger.WithEvents(wctx, evs...), m.ID, 0, next, reason)
	} else if errors.As(callErr, &busy) && busy.Wait > 0 && e.Tool.Reconcile != nil {
		// The service asked to be left alone: the first reconcile attempt waits too.
		reason := fmt.Sprintf("first reconcile after %s, as the service asked: %s", busy.Wait, c.Message)
		if e.Policy.Redactor != nil {
			reason = e.Policy.Redactor.Redact(reason)
		}
		rec, err = e.Store.MarkNeedsReconcile(wctx, m.ID, 0, clock().Add(busy.Wait), reason)
	} else {
		rctx, rcancel := context.WithTimeout(context.WithoutCancel(ctx), reconcileTimeout)
		defer rcancel()
		rec, err = reconcile(rctx, e.Store, e.Registry, m, e.Policy, clock(), e.Secrets)
	}
	if err != nil {
		return o, ledgerError("recording the reconcile outcome", err)
	}
	o.Mutation = rec
	if rec.Status == scripthost.MutationApplied {
		o.Result = rec.Result
	}
	return o, nil
}

// NotSentError is the cause of a tool error from a call that certainly never reached
// the service: the connection was never made (the name did not resolve, the
// connection was refused or had no route, the TLS handshake or a proxy's CONNECT
// failed) or not one byte of the request was written on it. A mutation whose call
// failed so did not happen, and its idempotency key was never seen: the effect path
// sends it again under the same key after a backoff (Reconcile), rather than asking
// the service or a person what became of it. A tool returns it only when it knows; a
// failure after any byte of the request was written stays an uncertain outcome.
type NotSentError struct {
	Err error
}

func (e *NotSentError) Error() string { return "the request was never sent: " + e.Err.Error() }

// Unwrap returns the transport's error.
func (e *NotSentError) Unwrap() error { return e.Err }

// IsNotSent reports whether err's chain holds a NotSentError: the call never reached
// the service.
func IsNotSent(err error) bool {
	var ns *NotSentError
	return errors.As(err, &ns)
}

// NotSent starts the reason stored on a mutation whose request never reached the
// service; Reconcile sends such a mutation again under its key instead of asking the
// tool what became of it.
const NotSent = "not sent"

// notSentReason is the reason stored on a mutation whose call never reached the
// service, sent again at next.
func notSentReason(cause string, next time.Time) string {
	return fmt.Sprintf("%s: %s; sent again under the same key at %s", NotSent, cause, next.UTC().Format(time.RFC3339Nano))
}

// CallTool calls t.Execute, turning a panic into an internal error (code tool_panic).
func CallTool(ctx context.Context, t *Tool, input json.RawMessage) (out json.RawMessage, err error) {
	defer func() {
		if r := recover(); r != nil {
			out, err = nil, &scripthost.Error{Class: scripthost.ClassInternal, Code: scripthost.CodeToolPanic,
				Op: t.Name(), Message: fmt.Sprintf("tool panicked: %v", r)}
		}
	}()
	return t.Execute(ctx, input)
}

// Classify runs the tool's read-only predicate; a panicking predicate makes the call
// a mutation, the strictest classification.
func Classify(t *Tool, input json.RawMessage) (op scripthost.Operation) {
	defer func() {
		if recover() != nil {
			op = scripthost.OpMutate
		}
	}()
	return t.Classify(input)
}
