package hostfuncs

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/scripthost/scripthost"
	"github.com/scripthost/scripthost/ledger"
	"github.com/scripthost/scripthost/sandbox"
)

// mutate runs an admitted mutation: record in_flight durably, call the tool with the
// idempotency key, record the outcome. Only an applied outcome returns normally.
func (w *ToolWrapper) mutate(ctx context.Context, t *Tool, input json.RawMessage, value any, secrets []string, call *Redactor) (json.RawMessage, error) {
	name := t.Name()
	end := func(err error) (json.RawMessage, error) {
		return nil, sandbox.Terminate(w.scrub(withOp(err, name), call))
	}
	if w.store == nil {
		return end(scripthost.Errorf(scripthost.ClassInternal, CodeLedger, "no ledger to record the mutation in"))
	}
	canonical, err := scripthost.CanonicalValue(value)
	if err != nil {
		return end(scripthost.Errorf(scripthost.ClassLogic, scripthost.CodeInvalidInput, "%v", err))
	}
	// The value is the input validation decoded; from here it is redacted in place.
	stored, err := storedParams(t, value, secrets, w.redactor, call)
	if err != nil {
		return end(scripthost.Errorf(scripthost.ClassInternal, "", "redacting params: %v", err))
	}
	hash := Key{Workflow: w.info.Workflow, Handler: w.info.Handler, Events: w.info.Events, Scope: w.info.Scope}.Hash(t, canonical)
	// The mutation's records carry the tool, then the mutation and its key once known.
	var mid, key string
	log := func(level slog.Level, msg string, args ...any) {
		if !w.logging(level) {
			return
		}
		attrs := []any{"tool", name}
		if mid != "" {
			attrs = append(attrs, "mutation", mid, "key", key)
		}
		w.logf(level, msg, append(attrs, args...)...)
	}
	o, err := Effect{
		Store: w.store, Registry: w.reg, Tool: t, Input: input,
		Record: ledger.NewMutation{
			RunID: w.info.RunID, Workflow: w.info.Workflow, Handler: w.info.Handler,
			Namespace: t.Namespace, Method: t.Method, Params: stored, InputHash: hash,
			Run: w.info.Create,
		},
		BeginEvents: w.info.CreateEvents,
		Secrets:     secrets, Policy: w.policy, Clock: w.clock,
		FailureToNext: w.info.FailureToNext, ReleaseOnFailure: w.info.ReleaseOnFailure,
		Hooks: EffectHooks{
			Execute: func(ctx context.Context, in json.RawMessage) (json.RawMessage, error) {
				return w.execute(ctx, t, in)
			},
			Cause: func(err error) *scripthost.Error { return asError(w.scrub(withOp(err, name), call)) },
			Began: func(m scripthost.Mutation) {
				w.setMutation(m)
				mid, key = m.ID, m.IdempotencyKey
				log(slog.LevelInfo, "mutation in flight")
			},
		},
	}.Run(ctx)
	if o.Mutation.ID != "" {
		w.setMutation(o.Mutation)
	}
	if err != nil {
		level, msg := slog.LevelError, "recording the mutation failed"
		if errors.Is(err, ledger.ErrStateChanged) || errors.Is(err, ledger.ErrLeaseLost) {
			// Not a failure: another run of the handler committed first, or another
			// host took the workflow over; nothing was recorded or sent, and the
			// runtime says which.
			level, msg = slog.LevelInfo, "mutation not recorded: its run was refused"
		}
		log(level, msg, "error", w.redactor.Redact(err.Error()))
		return end(err)
	}
	rec, cause := o.Mutation, o.Cause
	st := o.Status()
	switch {
	case o.CallErr == nil:
		log(slog.LevelInfo, "mutation applied")
	case st == EffectFailed && scripthost.IsDefinite(o.CallErr):
		log(slog.LevelInfo, "mutation failed", "class", cause.Class, "error", cause.Error())
		return nil, sandbox.Terminate(cause)
	default:
		log(slog.LevelInfo, "mutation reconciled", "status", rec.Status, "class", cause.Class, "error", cause.Error())
	}
	switch st {
	case EffectApplied:
		if err := w.checkOutput(t, o.Result); err != nil {
			return nil, w.scrub(err, call)
		}
		return o.Result, nil
	case EffectFailed:
		return end(&scripthost.Error{Class: scripthost.ClassLogic, Code: cause.Code, Message: rec.Error})
	case EffectNotSent:
		return end(&scripthost.Error{Class: cause.Class, Code: CodeNotSent,
			Message: fmt.Sprintf("the request never reached the service; mutation %s is sent again under the same key at %s: %s",
				rec.ID, rec.NextReconcileAt.UTC().Format(time.RFC3339), cause.Message)})
	}
	return end(&scripthost.Error{
		Class:   cause.Class,
		Code:    scripthost.CodeUncertain,
		Message: fmt.Sprintf("outcome uncertain, mutation %s is %s: %s", rec.ID, rec.Status, cause.Message),
	})
}

func ledgerError(what string, err error) error {
	class := scripthost.ClassInternal
	if errors.Is(err, ledger.ErrUnavailable) {
		class = scripthost.ClassNetwork // the run waits and tries again
	}
	return &scripthost.Error{Class: class, Code: CodeLedger,
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
// credential formats and the call's own secret values (call, nil when it has none). A
// cause whose text would leak is dropped from the chain.
func (w *ToolWrapper) scrub(err error, call *Redactor) error {
	if err == nil {
		return nil
	}
	clean := func(s string) string {
		return w.redactor.Redact(call.replaceSecrets(s))
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

// callRedactor knows a call's own secret values (callSecrets); nil when there are none.
// A mutation builds it once, for its stored params and every error it scrubs.
func callRedactor(secrets []string) *Redactor {
	if len(secrets) == 0 {
		return nil
	}
	return NewRedactor(secrets...)
}

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
			// However short: a Redactor replaces a short one where it stands alone.
			if secret && strings.TrimSpace(t) != "" {
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

// CallSecrets returns the string values of a decoded input's secret fields: those
// named in fields and those whose key looks secret, longest first. They are removed
// from whatever is stored or shown of the call.
func CallSecrets(v any, fields []string) []string { return callSecrets(v, fields) }
