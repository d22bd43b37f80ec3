package hostfuncs

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/scripthost/scripthost"
	"github.com/scripthost/scripthost/ledger"
	"github.com/scripthost/scripthost/sandbox"
)

// mutate runs an admitted mutation: record in_flight durably, call the tool with the
// idempotency key, record the outcome. Only an applied outcome returns normally.
func (w *ToolWrapper) mutate(ctx context.Context, t *Tool, input json.RawMessage, secrets []string) (json.RawMessage, error) {
	name := t.Name()
	end := func(err error) (json.RawMessage, error) {
		return nil, sandbox.Terminate(w.scrub(withOp(err, name), secrets))
	}
	if w.store == nil {
		return end(scripthost.Errorf(scripthost.ClassInternal, CodeLedger, "no ledger to record the mutation in"))
	}
	canonical, err := scripthost.CanonicalJSON(input)
	if err != nil {
		return end(scripthost.Errorf(scripthost.ClassLogic, scripthost.CodeInvalidInput, "%v", err))
	}
	stored, err := scripthost.CanonicalJSON(w.redactor.redactJSON(canonical, t.SecretFields))
	if err != nil {
		return end(scripthost.Errorf(scripthost.ClassInternal, "", "redacting params: %v", err))
	}
	for _, s := range secrets {
		// A secret field's value may also appear under an innocent key.
		stored = []byte(strings.ReplaceAll(string(stored), jsonEscaped(s), Redacted))
	}
	hash := scripthost.InputHash(scripthost.KeyInput{
		Workflow:  w.info.Workflow,
		Handler:   w.info.Handler,
		Events:    w.info.Events,
		Namespace: t.Namespace,
		Method:    t.Method,
		Params:    canonical,
		Scope:     w.info.Scope,
	})
	failures, err := w.store.FailureCount(ctx, hash)
	if err != nil {
		return end(ledgerError("counting earlier failures", err))
	}
	key := scripthost.IdempotencyKey(hash, failures)

	bctx, cancel := context.WithTimeout(ctx, ledgerWriteTimeout)
	recorded := ledger.NewLifecycleEvent(w.info.RunID, ledger.EventMutationRecorded, map[string]any{
		"tool": t.Name(), "idempotency_key": key,
	})
	m, err := w.store.BeginMutation(ledger.WithEvents(bctx, recorded), ledger.NewMutation{
		RunID:          w.info.RunID,
		Workflow:       w.info.Workflow,
		Handler:        w.info.Handler,
		Namespace:      t.Namespace,
		Method:         t.Method,
		Params:         stored,
		InputHash:      hash,
		IdempotencyKey: key,
	})
	cancel()
	if err != nil {
		return end(ledgerError("recording the mutation before the call", err))
	}
	w.setMutation(m)
	log := w.log.With("tool", name, "mutation", m.ID, "key", key)
	log.Info("mutation in flight")

	out, execErr := w.execute(WithIdempotencyKey(ctx, key), t, input)
	// The result is stored, so the input's secret values are removed from it as they
	// were from the params (a service may echo them back).
	out = NewRedactor(secrets...).RedactSecrets(out)

	// The call was made: its outcome is recorded even if the invocation's context
	// has been cancelled meanwhile.
	wctx, wcancel := context.WithTimeout(context.WithoutCancel(ctx), ledgerWriteTimeout)
	defer wcancel()
	switch {
	case execErr == nil:
		applied, err := w.store.ApplyMutation(ledger.WithEvents(wctx, appliedEvents(m)...), m.ID, out)
		if err != nil {
			// Left in_flight: startup recovery reconciles it.
			log.Error("recording applied mutation failed", "error", w.redactor.Redact(err.Error()))
			return end(ledgerError("recording the applied mutation", err))
		}
		w.setMutation(applied)
		log.Info("mutation applied")
		if err := w.checkOutput(t, out); err != nil {
			return nil, w.scrub(err, secrets)
		}
		return out, nil

	case scripthost.IsDefinite(execErr):
		cause := asError(w.scrub(withOp(execErr, name), secrets))
		var failed scripthost.Mutation
		if w.info.FailureToNext && w.info.RunID != "" {
			evs := []ledger.LifecycleEvent{outcomeEvent(m.RunID, failedMutation(m, cause)),
				mutateEvent(m.RunID, ledger.EventPhaseCompleted, map[string]any{"outcome": scripthost.OutcomeFailed, "released": w.info.ReleaseOnFailure})}
			failed, err = w.store.FailMutationToNext(ledger.WithEvents(wctx, evs...), m.ID, cause, w.info.ReleaseOnFailure)
		} else {
			failed, err = w.store.FailMutation(ledger.WithEvents(wctx, failedEvents(m, cause)...), m.ID, cause)
		}
		if err != nil {
			log.Error("recording failed mutation failed", "error", w.redactor.Redact(err.Error()))
			return end(ledgerError("recording the failed mutation", err))
		}
		w.setMutation(failed)
		log.Info("mutation failed", "class", cause.Class, "error", cause.Error())
		return nil, sandbox.Terminate(cause)
	}

	cause := asError(w.scrub(withOp(execErr, name), secrets))
	log.Warn("mutation outcome uncertain; reconciling", "class", cause.Class, "error", cause.Error())
	var rec scripthost.Mutation
	var busy *RetryAfterError
	if errors.As(execErr, &busy) && busy.Wait > 0 && t.Reconcile != nil {
		// The service asked to be left alone: the first reconcile attempt waits too.
		reason := w.redactor.Redact(fmt.Sprintf("first reconcile after %s, as the service asked: %s", busy.Wait, cause.Message))
		rec, err = w.store.MarkNeedsReconcile(wctx, m.ID, 0, w.clock().Add(busy.Wait), reason)
	} else {
		rctx, rcancel := context.WithTimeout(context.WithoutCancel(ctx), reconcileTimeout)
		defer rcancel()
		rec, err = reconcile(rctx, w.store, w.reg, m, w.policy, w.clock(), secrets)
	}
	if err != nil {
		log.Error("recording reconcile outcome failed", "error", w.redactor.Redact(err.Error()))
		return end(ledgerError("recording the reconcile outcome", err))
	}
	w.setMutation(rec)
	log.Info("mutation reconciled", "status", rec.Status)
	switch rec.Status {
	case scripthost.MutationApplied:
		result := rec.Result
		if err := w.checkOutput(t, result); err != nil {
			return nil, w.scrub(err, secrets)
		}
		return result, nil
	case scripthost.MutationFailed:
		return end(&scripthost.Error{Class: scripthost.ClassLogic, Code: cause.Code, Message: rec.Error})
	}
	return end(&scripthost.Error{
		Class:   cause.Class,
		Code:    scripthost.CodeUncertain,
		Message: fmt.Sprintf("outcome uncertain, mutation %s is %s: %s", rec.ID, rec.Status, cause.Message),
	})
}

func ledgerError(what string, err error) error {
	return &scripthost.Error{Class: scripthost.ClassInternal, Code: CodeLedger,
		Message: fmt.Sprintf("ledger: %s: %v", what, err), Err: err}
}

// withOp names the tool on a classified error that names no operation yet.
func withOp(err error, name string) error {
	if e, ok := err.(*scripthost.Error); ok && e.Op == "" {
		c := *e
		c.Op = name
		return &c
	}
	return err
}

// asError returns err as a classified error, wrapping a plain one as internal.
func asError(err error) *scripthost.Error {
	if e, ok := err.(*scripthost.Error); ok {
		return e
	}
	return &scripthost.Error{Class: scripthost.ClassOf(err), Message: err.Error(), Err: err}
}

// scrub returns err with every secret removed from its message: registered secrets,
// credential formats and the call's own secret values. A cause whose text would leak
// is dropped from the chain.
func (w *ToolWrapper) scrub(err error, secrets []string) error {
	if err == nil {
		return nil
	}
	clean := func(s string) string {
		for _, v := range secrets {
			s = strings.ReplaceAll(s, v, Redacted)
		}
		return w.redactor.Redact(s)
	}
	e, ok := err.(*scripthost.Error)
	if !ok {
		msg := err.Error()
		c := &scripthost.Error{Class: scripthost.ClassOf(err), Message: clean(msg), Err: err}
		if c.Message != msg {
			c.Err = nil
		}
		return c
	}
	c := *e
	if c.Message == "" && c.Err != nil {
		c.Message = c.Err.Error()
	}
	c.Message = clean(c.Message)
	c.Stack = clean(c.Stack)
	if c.Err != nil && clean(c.Err.Error()) != c.Err.Error() {
		c.Err = nil
	}
	return &c
}

// minCallSecret is the shortest secret field value removed from error messages and
// results; the same bound as for registered secrets.
const minCallSecret = MinSecretLen

// callSecrets collects the string values of the input's secret fields: those the tool
// names and those whose key looks secret.
func callSecrets(v any, fields []string) []string {
	var out []string
	var walk func(v any, secret bool)
	walk = func(v any, secret bool) {
		switch t := v.(type) {
		case map[string]any:
			for k, e := range t {
				walk(e, secret || IsSecretKey(k) || containsString(fields, k))
			}
		case []any:
			for _, e := range t {
				walk(e, secret)
			}
		case string:
			if secret && len(t) >= minCallSecret {
				out = append(out, t)
			}
		}
	}
	walk(v, false)
	// Longest first, so that a secret containing another is replaced whole.
	for i := 1; i < len(out); i++ {
		for j := i; j > 0 && len(out[j]) > len(out[j-1]); j-- {
			out[j], out[j-1] = out[j-1], out[j]
		}
	}
	return out
}

func containsString(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}
