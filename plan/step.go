package plan

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/scripthost/scripthost"
	"github.com/scripthost/scripthost/hostfuncs"
	"github.com/scripthost/scripthost/ledger"
)

// stepRun carries one step through its checks and attempts.
type stepRun struct {
	x       *execution
	index   int
	step    Step
	tool    *hostfuncs.Tool
	args    json.RawMessage // as approved
	canon   []byte          // canonical arguments, for the key
	redArgs json.RawMessage // what is stored and printed
	op      scripthost.Operation
	hash    string
	start   time.Time
	diag    Diagnostics
}

// step runs step i of x and writes its record. It returns the step's result and
// whether the plan stops after it. An error means the plan stops without a record for
// this step: the ledger failed, or an earlier attempt's outcome is unknown (E306) and
// the execution stays open for a later resume.
func (e *Executor) step(ctx context.Context, x *execution, i int, s Step) (StepResult, bool, error) {
	if r, ok := x.done[s.StepID]; ok {
		sr := fromRecord(r)
		sr.Reused = true
		typ := EventStepComplete
		if !r.Success {
			typ = EventStepFailed
		}
		e.emit(Event{Type: typ, PlanID: x.plan.PlanID, ExecutionID: r.ExecutionID, StepID: s.StepID, Tool: s.Tool, Reused: true, Code: r.ErrorCode, Error: r.Error})
		return sr, false, nil
	}
	ns, m := ToolName(s.Tool)
	tool, ok := e.o.Registry.Lookup(ns, m)
	if !ok { // CheckTools ran before; the registry changed under us
		return StepResult{}, true, errorf(CodeE201ToolNotRegistered, s.StepID, "unknown tool %q", s.Tool)
	}
	r := &stepRun{x: x, index: i, step: s, tool: tool, args: s.args(), start: x.now(e.o.Clock)}
	var err error
	if r.canon, err = scripthost.CanonicalJSON(r.args); err != nil {
		return StepResult{}, true, &Error{Code: CodeE001InvalidPlan, StepID: s.StepID, Message: "arguments", Err: err}
	}
	if r.redArgs, err = e.redactArgs(tool, r.canon); err != nil {
		return StepResult{}, true, &Error{Code: CodeE001InvalidPlan, StepID: s.StepID, Message: "arguments", Err: err}
	}
	r.op = hostfuncs.Classify(tool, r.args)
	r.diag = Diagnostics{PlanHash: x.hash, ExecutionNumber: x.number, Operation: string(r.op), Resumed: x.resumed,
		Intent: e.o.Redactor.Redact(x.plan.Intent), Description: e.o.Redactor.Redact(s.Description)}
	if x.auth != nil {
		r.diag.AuthorizedBy, r.diag.AuthorizedAt = x.auth.By, x.auth.At
	}
	info := StepInfo{ExecutionID: ExecutionID(x.plan.PlanID, x.number, s.StepID), StepID: s.StepID, Tool: s.Tool, Index: i + 1, Total: len(x.plan.Steps)}
	e.emit(Event{Type: EventStepStart, PlanID: x.plan.PlanID, ExecutionID: info.ExecutionID, StepID: s.StepID, Tool: s.Tool})
	if e.o.Progress.StepStart != nil {
		e.o.Progress.StepStart(info)
	}

	for _, d := range s.DependsOn {
		if x.failed[d] {
			return e.finish(ctx, r, nil, errorf(CodeE305Blocked, s.StepID, "blocked: step %s it depends on did not succeed", d))
		}
	}
	if r.op == scripthost.OpMutate {
		r.hash = stepHash(x.plan.PlanID, x.number, s.StepID, tool, r.canon)
		// An earlier, interrupted run of this execution may have called the tool.
		out, reused, err := e.earlier(ctx, r)
		if err != nil {
			return StepResult{}, true, err
		}
		if reused {
			r.diag.ReusedMutation = true
			return e.finish(ctx, r, out, nil)
		}
	}
	if err := checkPrecondition(ctx, e.o.Workspace, e.o.Commands, e.o.Symbols, s.StepID, s.Precondition); err != nil {
		return e.finish(ctx, r, nil, asPlanError(s.StepID, err))
	}
	if s.RequiresConfirmation {
		ok, err := false, error(nil)
		if e.o.Confirm != nil {
			ok, err = e.o.Confirm(ctx, x.plan, s)
		}
		if err != nil || !ok {
			msg := "confirmation denied"
			if err != nil {
				msg += ": " + err.Error()
			}
			return e.finish(ctx, r, nil, &Error{Code: CodeE303ConfirmationDenied, StepID: s.StepID, Message: msg, Err: err})
		}
		r.diag.Confirmed = true
	}
	return e.attempts(ctx, r)
}

// attempts calls the tool, again after a retryable failure when the step has a retry
// policy, with exponential backoff between attempts.
func (e *Executor) attempts(ctx context.Context, r *stepRun) (StepResult, bool, error) {
	maxAttempts := 1
	if r.step.Retry != nil {
		maxAttempts = r.step.Retry.MaxAttempts
	}
	for attempt := 1; ; attempt++ {
		r.diag.Attempts = attempt
		out, ferr, err := e.attempt(ctx, r, attempt)
		if err != nil {
			return StepResult{}, true, err
		}
		if ferr == nil {
			return e.finish(ctx, r, out, nil)
		}
		r.diag.AttemptErrors = append(r.diag.AttemptErrors, e.o.Redactor.Redact(ferr.Error()))
		if attempt >= maxAttempts || (ferr.Code != CodeE301StepFailed && ferr.Code != CodeE307StepTimeout) || ctx.Err() != nil {
			return e.finish(ctx, r, out, ferr)
		}
		d := r.step.Retry.Backoff(attempt)
		r.diag.BackoffMS = append(r.diag.BackoffMS, d.Milliseconds())
		if err := e.o.Sleep(ctx, d); err != nil {
			return e.finish(ctx, r, out, &Error{Code: CodeE301StepFailed, StepID: r.step.StepID, Message: "interrupted while waiting to retry", Err: err})
		}
	}
}

// attempt makes one call. A mutation goes through the shared effect path: the
// in_flight row is written durably before the call and its outcome after; an
// uncertain outcome is reconciled once and, if it stays unknown, stops the plan with
// E306.
func (e *Executor) attempt(ctx context.Context, r *stepRun, attempt int) (json.RawMessage, *Error, error) {
	s, x := r.step, r.x
	execID := ExecutionID(x.plan.PlanID, x.number, s.StepID)
	var ferr *Error
	call := func(ctx context.Context, args json.RawMessage) (json.RawMessage, error) {
		callCtx := ctx
		if s.TimeoutMS > 0 {
			var cancel context.CancelFunc
			callCtx, cancel = context.WithTimeout(ctx, time.Duration(s.TimeoutMS)*time.Millisecond)
			defer cancel()
		}
		e.emit(Event{Type: EventToolCall, PlanID: x.plan.PlanID, ExecutionID: execID, StepID: s.StepID, Tool: s.Tool, Attempt: attempt, Arguments: r.redArgs})
		out, callErr := hostfuncs.CallTool(callCtx, r.tool, args)
		timedOut := errors.Is(callCtx.Err(), context.DeadlineExceeded) && ctx.Err() == nil
		ferr = outcome(s.StepID, out, callErr, timedOut)
		ev := Event{Type: EventToolResult, PlanID: x.plan.PlanID, ExecutionID: execID, StepID: s.StepID, Tool: s.Tool, Attempt: attempt, Result: e.redactOut(out)}
		if ferr != nil {
			ev.Code, ev.Error = ferr.Code, e.o.Redactor.Redact(ferr.Error())
		}
		e.emit(ev)
		return out, callErr
	}
	if r.op != scripthost.OpMutate {
		out, _ := call(ctx, r.args)
		return out, ferr, nil
	}

	o, err := hostfuncs.Effect{
		Store: e.o.Store, Registry: e.o.Registry, Tool: r.tool, Input: r.args,
		Record:   ledger.NewMutation{Workflow: workflowName(x.plan.PlanID), Handler: s.StepID, Params: r.redArgs, InputHash: r.hash},
		Redactor: e.o.Redactor, Policy: hostfuncs.ReconcileOnce(e.o.Redactor), Clock: e.o.Clock,
		Hooks: hostfuncs.EffectHooks{
			Execute: call,
			// A command that answered with a non-zero exit code or was killed at its
			// timeout failed definitely: the next attempt gets a fresh key.
			Judge: func(json.RawMessage) error {
				if ferr != nil {
					return ferr
				}
				return nil
			},
			Cause: func(error) *scripthost.Error {
				return &scripthost.Error{Class: scripthost.ClassLogic, Code: ferr.Code, Message: e.o.Redactor.Redact(ferr.Message)}
			},
			Began: func(m scripthost.Mutation) {
				x.muts[r.hash] = append(x.muts[r.hash], m)
				r.diag.MutationID, r.diag.IdempotencyKey = m.ID, m.IdempotencyKey
			},
		},
	}.Run(ctx)
	if err != nil {
		return nil, nil, &Error{Code: CodeE900Internal, StepID: s.StepID, Message: "record the mutation", Err: err}
	}
	m := o.Mutation
	switch o.Status() {
	case hostfuncs.EffectApplied:
		return o.Result, nil, nil
	case hostfuncs.EffectFailed:
		return o.Out, ferr, nil
	case hostfuncs.EffectNotSent:
		// Nothing reached the service: no person needs to look, the next run of the
		// plan sends it again under the same key (earlier).
		return nil, nil, &Error{Code: CodeE306NeedsReconcile, StepID: s.StepID, Err: ferr,
			Message: fmt.Sprintf("mutation %s was never sent (%s); run the plan again to send it under the same key: %s", m.ID, m.Status, e.o.Redactor.Redact(ferr.Message))}
	}
	return nil, nil, &Error{Code: CodeE306NeedsReconcile, StepID: s.StepID, Err: ferr,
		Message: fmt.Sprintf("the outcome of mutation %s is unknown (%s); resolve it, then run the plan again to resume: %s", m.ID, m.Status, e.o.Redactor.Redact(ferr.Message))}
}

// earlier looks for a mutation an interrupted run of this execution made for the step
// (hostfuncs.Earlier). Applied (or skipped by a person): its result is reused and the
// tool is not called again. Unknown after one reconcile: E306. None, or only failed
// ones: the step runs with the next key.
func (e *Executor) earlier(ctx context.Context, r *stepRun) (json.RawMessage, bool, error) {
	m, err := hostfuncs.Earlier(ctx, e.o.Store, e.o.Registry, r.x.muts[r.hash], hostfuncs.ReconcileOnce(e.o.Redactor), e.o.Clock)
	if err != nil {
		return nil, false, &Error{Code: CodeE900Internal, StepID: r.step.StepID, Message: "reconcile", Err: err}
	}
	r.diag.MutationID, r.diag.IdempotencyKey = m.ID, m.IdempotencyKey
	switch {
	case m.Status == scripthost.MutationApplied:
		return m.Result, true, nil
	case m.Status == scripthost.MutationSkipped:
		return json.RawMessage("null"), true, nil
	case m.Status.Unknown():
		return nil, false, errorf(CodeE306NeedsReconcile, r.step.StepID,
			"mutation %s of an interrupted run is %s: its outcome is unknown; resolve it, then run the plan again to resume", m.ID, m.Status)
	}
	return nil, false, nil
}

// finish writes the step's record, emits its event and reports progress.
func (e *Executor) finish(ctx context.Context, r *stepRun, out json.RawMessage, ferr *Error) (StepResult, bool, error) {
	s, x := r.step, r.x
	end := x.now(e.o.Clock)
	rec := ledger.ExecutionRecord{
		ExecutionID: ExecutionID(x.plan.PlanID, x.number, s.StepID), PlanID: x.plan.PlanID, StepID: s.StepID,
		Seq: r.index + 1, Tool: s.Tool, Arguments: r.redArgs, StartedAt: r.start.UTC(), EndedAt: end.UTC(),
		DurationMS: end.Sub(r.start).Milliseconds(), Success: ferr == nil,
	}
	if len(bytes.TrimSpace(out)) > 0 {
		rec.Result = e.redactOut(out)
		var co struct {
			ExitCode *int   `json:"exit_code"`
			Stdout   string `json:"stdout"`
			Stderr   string `json:"stderr"`
		}
		if json.Unmarshal(out, &co) == nil {
			rec.Stdout, rec.Stderr = e.o.Redactor.Redact(co.Stdout), e.o.Redactor.Redact(co.Stderr)
			if co.ExitCode != nil {
				rec.ExitCode = *co.ExitCode
			}
		}
		r.diag.Artifacts = artifacts(rec.Result)
	}
	if ferr != nil {
		// The record keeps the message; the code has its own field.
		msg := ferr.Message
		if msg == "" && ferr.Err != nil {
			msg = ferr.Err.Error()
		}
		rec.Error, rec.ErrorCode = e.o.Redactor.Redact(msg), ferr.Code
		if rec.ExitCode == 0 {
			rec.ExitCode = 1
		}
		x.failed[s.StepID] = true
	}
	if r.diag.Attempts == 0 && ferr == nil {
		r.diag.Attempts = 1
	}
	rec.Diagnostics, _ = json.Marshal(r.diag)
	wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), ledger.WriteTimeout)
	defer cancel()
	if err := e.o.Store.AppendExecution(wctx, rec); err != nil {
		return StepResult{}, true, &Error{Code: CodeE900Internal, StepID: s.StepID, Message: "write the execution record", Err: err}
	}
	sr := fromRecord(rec)
	sr.Reused = r.diag.ReusedMutation
	ev := Event{Type: EventStepComplete, PlanID: x.plan.PlanID, ExecutionID: rec.ExecutionID, StepID: s.StepID, Tool: s.Tool, Result: rec.Result}
	if ferr != nil {
		ev.Type, ev.Code, ev.Error = EventStepFailed, rec.ErrorCode, rec.Error
	}
	e.emit(ev)
	if ferr != nil && e.o.Progress.StepFailed != nil {
		e.o.Progress.StepFailed(sr)
	} else if ferr == nil && e.o.Progress.StepComplete != nil {
		e.o.Progress.StepComplete(sr)
	}
	// A blocked step never stops the plan: the failure that blocked it was allowed to
	// continue. A denied confirmation always does.
	stop := ferr != nil && ferr.Code != CodeE305Blocked && (!s.ContinueOnFailure || ferr.Code == CodeE303ConfirmationDenied)
	return sr, stop, nil
}

// fromRecord turns a record into a step result.
func fromRecord(r ledger.ExecutionRecord) StepResult {
	sr := StepResult{ExecutionID: r.ExecutionID, StepID: r.StepID, Tool: r.Tool, Status: StepSucceeded,
		ExitCode: r.ExitCode, StartedAt: r.StartedAt, EndedAt: r.EndedAt, DurationMS: r.DurationMS,
		Stdout: r.Stdout, Stderr: r.Stderr, Result: r.Result, Code: r.ErrorCode, Error: r.Error, Record: r}
	var d Diagnostics
	if json.Unmarshal(r.Diagnostics, &d) == nil {
		sr.Attempts = d.Attempts
		sr.Diagnostics = d.Artifacts
	}
	switch {
	case r.ErrorCode == CodeE305Blocked:
		sr.Status = StepBlocked
	case !r.Success:
		sr.Status = StepFailed
	}
	return sr
}

// outcome decides whether a call failed: an error, a step timeout, or a result that
// reports a command killed at its timeout or exiting non-zero.
func outcome(step string, out json.RawMessage, callErr error, timedOut bool) *Error {
	if callErr != nil {
		pe := stepError(step, callErr)
		if timedOut && pe.Code == CodeE301StepFailed {
			pe.Code = CodeE307StepTimeout
		}
		return pe
	}
	var co struct {
		ExitCode *int `json:"exit_code"`
		TimedOut bool `json:"timed_out"`
	}
	if json.Unmarshal(out, &co) != nil {
		return nil
	}
	if co.TimedOut {
		return errorf(CodeE307StepTimeout, step, "timed out and was killed")
	}
	if co.ExitCode != nil && *co.ExitCode != 0 {
		return errorf(CodeE301StepFailed, step, "exited with code %d", *co.ExitCode)
	}
	return nil
}

func asPlanError(step string, err error) *Error {
	var pe *Error
	if errors.As(err, &pe) {
		return pe
	}
	return stepError(step, err)
}

// redactArgs is what is stored and printed of canonical arguments
// (hostfuncs.StoredParams). The secret values may come back in the output (an echoed
// request): the redactor removes them wherever they appear from then on.
func (e *Executor) redactArgs(t *hostfuncs.Tool, canon []byte) (json.RawMessage, error) {
	var value any
	if err := json.Unmarshal(canon, &value); err != nil {
		return nil, err
	}
	secrets := hostfuncs.CallSecrets(value, t.SecretFields)
	e.o.Redactor.AddSecret(secrets...)
	return hostfuncs.StoredParams(t, canon, secrets, e.o.Redactor)
}

func (e *Executor) redactOut(out json.RawMessage) json.RawMessage {
	if len(bytes.TrimSpace(out)) == 0 {
		return nil
	}
	return e.o.Redactor.RedactJSON(out)
}
