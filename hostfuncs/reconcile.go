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

// Default reconcile policy values, used for the zero fields of a ReconcilePolicy.
const (
	DefaultReconcileAttempts = 5
	DefaultReconcileBase     = time.Second
	DefaultReconcileMax      = 5 * time.Minute
)

// ReconcilePolicy bounds how often a mutation with an uncertain outcome is reconciled
// before it is handed to a person. Zero fields take the defaults: 5 attempts, a 1s
// base delay doubling per attempt, capped at 5m.
type ReconcilePolicy struct {
	// MaxAttempts is the number of reconcile attempts before the mutation becomes
	// indeterminate.
	MaxAttempts int
	// BaseDelay is the wait after the first undecided attempt; it doubles per attempt.
	BaseDelay time.Duration
	// MaxDelay caps the wait between attempts.
	MaxDelay time.Duration
	// Redactor, when set, redacts the reasons stored in the ledger; the tool's
	// Secrets are added to it. Without one, a fresh Redactor with the tool's Secrets
	// is used.
	Redactor *Redactor
}

// WithDefaults returns p with every zero field set to its default.
func (p ReconcilePolicy) WithDefaults() ReconcilePolicy {
	if p.MaxAttempts <= 0 {
		p.MaxAttempts = DefaultReconcileAttempts
	}
	if p.BaseDelay <= 0 {
		p.BaseDelay = DefaultReconcileBase
	}
	if p.MaxDelay <= 0 {
		p.MaxDelay = DefaultReconcileMax
	}
	return p
}

// Backoff returns the wait after the given number of undecided attempts (1 for the
// first): BaseDelay·2^(attempts-1), capped at MaxDelay.
func (p ReconcilePolicy) Backoff(attempts int) time.Duration {
	p = p.WithDefaults()
	d := p.BaseDelay
	for i := 1; i < attempts; i++ {
		d *= 2
		if d >= p.MaxDelay || d <= 0 {
			return p.MaxDelay
		}
	}
	return min(d, p.MaxDelay)
}

// Reconcile asks m's tool what became of m and records the answer: applied (with the
// tool's result), failed (a logic error "reconciled as failed: reason"), indeterminate
// when the tool says it never can tell, or, when the tool cannot tell yet or its
// Reconcile fails, another attempt due after the policy's backoff (or the tool's
// RetryAfter, when longer). A tool without a reconciler, or a mutation whose attempts are used up,
// becomes indeterminate and waits for a person. A panicking Reconcile counts as an
// undecided attempt. The returned error is a ledger error; the mutation is returned as
// the ledger holds it after the call.
//
// The runtime uses Reconcile for the immediate attempt after an uncertain call, for
// in_flight mutations found at startup, and for due needs_reconcile mutations.
func Reconcile(ctx context.Context, store ledger.Store, reg *Registry, m scripthost.Mutation, p ReconcilePolicy, now time.Time) (scripthost.Mutation, error) {
	return reconcile(ctx, store, reg, m, p, now, nil)
}

// reconcile is Reconcile with the secret values of the call's input, which the wrapper
// knows and the stored (redacted) params no longer show, removed from the result too.
func reconcile(ctx context.Context, store ledger.Store, reg *Registry, m scripthost.Mutation, p ReconcilePolicy, now time.Time, callSecrets []string) (scripthost.Mutation, error) {
	p = p.WithDefaults()
	redactor := p.Redactor
	if redactor == nil {
		redactor = NewRedactor()
	}
	wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), ledger.WriteTimeout)
	defer cancel()
	wrapLedger := func(out scripthost.Mutation, err error) (scripthost.Mutation, error) {
		return settledMeanwhile(wctx, store, m, out, err)
	}

	var tool *Tool
	if reg != nil {
		tool, _ = reg.Lookup(m.Namespace, m.Method)
	}
	if tool != nil {
		redactor.AddSecret(tool.Secrets...)
	}
	redact := redactor.Redact
	// A mutation whose request never reached the service is sent again, under its key,
	// when it can be: the stored params are its input unless they hold a redacted value.
	notSent := m.Status == scripthost.MutationNeedsReconcile && strings.HasPrefix(m.Error, NotSent+":")
	resend := notSent && tool != nil && !bytes.Contains(m.Params, []byte(Redacted))
	failed := func(attempt, reason string) (scripthost.Mutation, error) {
		cause := scripthost.LogicError("%s: %s", ReconciledFailed, redact(reason))
		cause.Op = m.Tool()
		evs := append([]ledger.LifecycleEvent{attemptEvent(m, m.ReconcileAttempts+1, attempt, cause.Message, nil)}, failedEvents(m, cause)...)
		return wrapLedger(store.FailMutation(ledger.WithEvents(wctx, evs...), m.ID, cause))
	}
	if notSent && !resend {
		// Known not to have happened, and not to be sent again from the ledger: a
		// failure, which prepares the run again; the service never saw the key.
		return failed("failed", fmt.Sprintf("%s: the request never reached the service, and the stored params cannot be sent again (they hold redacted values, or the tool is not registered)", NotSent))
	}
	if !resend && (tool == nil || tool.Reconcile == nil) {
		reason := fmt.Sprintf("no reconciler for %s: the outcome must be resolved by a person", m.Tool())
		evs := waitingEvents(m, scripthost.MutationIndeterminate, reason, nil)
		return wrapLedger(store.MarkIndeterminate(ledger.WithEvents(wctx, evs...), m.ID, reason))
	}

	attempts := m.ReconcileAttempts + 1
	// A run that waited for this attempt goes on when it decides.
	decided := func(evs ...ledger.LifecycleEvent) context.Context {
		if m.Status == scripthost.MutationNeedsReconcile {
			evs = append(evs, resumedEvent(m, ""))
		}
		return ledger.WithEvents(wctx, evs...)
	}
	var rec scripthost.Reconciliation
	var err error
	if resend {
		rec, err = sendAgain(WithIdempotencyKey(ctx, m.IdempotencyKey), tool, m)
	} else {
		rec, err = callReconcile(WithIdempotencyKey(ctx, m.IdempotencyKey), tool, m)
	}
	var wait time.Duration
	if err == nil {
		switch rec.Outcome {
		case scripthost.ReconcileApplied:
			result := rec.Result
			if len(result) == 0 || !json.Valid(result) {
				b, _ := json.Marshal(string(result))
				if len(result) == 0 {
					b = []byte("null")
				}
				result = b
			}
			result = NewRedactor(callSecrets...).RedactSecrets(redactor.RedactSecrets(result))
			evs := append([]ledger.LifecycleEvent{attemptEvent(m, attempts, "applied", "", nil)}, appliedEvents(m)...)
			return wrapLedger(store.ApplyMutation(decided(evs...), m.ID, result))
		case scripthost.ReconcileFailed:
			return failed("failed", rec.Reason)
		case scripthost.ReconcileIndeterminate:
			reason := redact(fmt.Sprintf("%s cannot tell what became of the mutation: %s", m.Tool(), rec.Reason))
			evs := append([]ledger.LifecycleEvent{attemptEvent(m, attempts, "indeterminate", reason, nil)},
				waitingEvents(m, scripthost.MutationIndeterminate, reason, nil)...)
			return wrapLedger(store.MarkIndeterminate(ledger.WithEvents(wctx, evs...), m.ID, reason))
		case scripthost.ReconcileRetryLater:
			err = fmt.Errorf("retry later: %s", rec.Reason)
			wait = rec.RetryAfter
		default:
			err = fmt.Errorf("unknown reconcile outcome %q", rec.Outcome)
		}
	}
	if resend && IsNotSent(err) {
		// Still nothing reached the service. Once the attempts are used up the mutation
		// is known not to have happened: a failure, not a question for a person.
		if attempts >= p.MaxAttempts {
			return failed("not_sent", fmt.Sprintf("%s: sent again %d times, never reached the service: %v", NotSent, attempts, err))
		}
		next := now.Add(p.Backoff(attempts + 1))
		reason := redact(notSentReason(fmt.Sprintf("attempt %d of %d: %v", attempts, p.MaxAttempts, err), next))
		evs := []ledger.LifecycleEvent{attemptEvent(m, attempts, "not_sent", reason, next)}
		return wrapLedger(store.MarkNeedsReconcile(ledger.WithEvents(wctx, evs...), m.ID, attempts, next, reason))
	}
	reason := redact(fmt.Sprintf("reconcile attempt %d of %d: %v", attempts, p.MaxAttempts, err))
	if attempts >= p.MaxAttempts {
		evs := append([]ledger.LifecycleEvent{attemptEvent(m, attempts, "undecided", reason, nil)},
			waitingEvents(m, scripthost.MutationIndeterminate, reason, nil)...)
		return wrapLedger(store.MarkIndeterminate(ledger.WithEvents(wctx, evs...), m.ID, reason))
	}
	next := now.Add(max(p.Backoff(attempts), wait))
	evs := []ledger.LifecycleEvent{attemptEvent(m, attempts, "retry_later", reason, next)}
	if m.Status == scripthost.MutationInFlight {
		evs = append(evs, waitingEvents(m, scripthost.MutationNeedsReconcile, reason, next)...)
	}
	return wrapLedger(store.MarkNeedsReconcile(ledger.WithEvents(wctx, evs...), m.ID, attempts, next, reason))
}

// sendAgain calls the tool again with m's stored params under m's key (in ctx), for a
// mutation whose request never reached the service: an answer is applied, a definite
// failure failed; an error that leaves the outcome unknown (or the request unsent
// again) is returned. A panic is an error.
func sendAgain(ctx context.Context, t *Tool, m scripthost.Mutation) (rec scripthost.Reconciliation, err error) {
	out, err := CallTool(ctx, t, m.Params)
	switch {
	case err == nil:
		return scripthost.Reconciliation{Outcome: scripthost.ReconcileApplied, Result: out}, nil
	case scripthost.IsDefinite(err):
		return scripthost.Reconciliation{Outcome: scripthost.ReconcileFailed,
			Reason: fmt.Sprintf("sent again under the same key: %v", err)}, nil
	}
	return rec, fmt.Errorf("sent again under the same key: %w", err)
}

// RetryAfterError is the cause of a tool error from a service that asked to be left
// alone for a while (HTTP Retry-After): a mutation whose outcome it leaves unknown is
// first reconciled after Wait instead of at once.
type RetryAfterError struct {
	Wait time.Duration
}

func (e *RetryAfterError) Error() string {
	return fmt.Sprintf("the service asked to be asked again after %s", e.Wait)
}

// ReconciledFailed starts the error of a mutation that reconciliation found not to
// have happened; the runtime prepares such a run again.
const ReconciledFailed = "reconciled as failed"

// callReconcile runs the tool's Reconcile, turning a panic into an error.
func callReconcile(ctx context.Context, t *Tool, m scripthost.Mutation) (rec scripthost.Reconciliation, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%s reconcile panicked: %v", t.Name(), r)
		}
	}()
	return t.Reconcile(ctx, m)
}

// settledMeanwhile finishes the write of a reconcile outcome for m. A write refused
// because m is no longer in the status it was read in means someone else settled it
// meanwhile (a person resolving it while the look-up was under way): their answer
// stands, the late one is dropped, and the mutation is returned as the ledger holds it.
func settledMeanwhile(ctx context.Context, store ledger.Store, m, out scripthost.Mutation, err error) (scripthost.Mutation, error) {
	if err == nil {
		return out, nil
	}
	if ledger.IsIllegalTransition(err) {
		if cur, gerr := store.Mutation(ctx, m.ID); gerr == nil && cur.Status != m.Status {
			return cur, nil
		}
	}
	return out, fmt.Errorf("hostfuncs: reconcile: %w", err)
}
