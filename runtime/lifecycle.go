package runtime

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

// Steps of a phase that can fail, as the lifecycle log names them.
const (
	stepGuard    = "guard"
	stepBefore   = "before"
	stepAfter    = "after"
	stepHandler  = "handler"
	stepResult   = "result"
	stepOnRetry  = "onRetry"
	phaseGuard   = "guard"
	codeOnRetry  = "on_retry_failed"
	codeBadGuard = "invalid_guard_result"
)

// with attaches lifecycle events to the ledger call made with the returned context,
// after the refused tool calls waiting in ctx's box (see noteRefusals), which it
// empties: they happened before what the call records.
func with(ctx context.Context, evs ...ledger.LifecycleEvent) context.Context {
	if refused := refusedEvents(ctx); len(refused) > 0 {
		evs = append(refused, evs...)
	}
	return ledger.WithEvents(ctx, evs...)
}

func phaseEvent(run scripthost.Run, t ledger.EventType, phase any) ledger.LifecycleEvent {
	return ledger.NewPhaseEvent(run, t, fmt.Sprint(phase))
}

// failure describes an error for the lifecycle log: class, code, message and, for a
// script error, where in the script it was raised.
func failure(err error) map[string]any {
	out := map[string]any{"class": scripthost.ClassOf(err), "message": err.Error()}
	var se *scripthost.Error
	if errors.As(err, &se) {
		out["code"] = se.Code
		if se.Message != "" {
			out["message"] = se.Message
		}
		if se.Line > 0 {
			out["file"], out["line"], out["column"] = se.File, se.Line, se.Column
		}
	}
	return out
}

// stepError is the error of one step of a phase: the phase function, a hook or the
// check of a result.
type stepError struct {
	step string
	err  error
}

func (e *stepError) Error() string { return e.err.Error() }
func (e *stepError) Unwrap() error { return e.err }

func stepOf(err error) string {
	var se *stepError
	if errors.As(err, &se) {
		return se.step
	}
	return stepHandler
}

// guardResult reads a guard's return value: a boolean, nothing else.
func guardResult(res json.RawMessage, where string) (bool, error) {
	switch strings.TrimSpace(string(res)) {
	case "true":
		return true, nil
	case "false":
		return false, nil
	}
	return false, &scripthost.Error{Class: scripthost.ClassLogic, Code: codeBadGuard,
		Message: fmt.Sprintf("guard of %s must return a boolean (or a promise of one), got %s", where, truncate(string(res), 60))}
}

func handlerName(run scripthost.Run) string { return string(run.Kind) + " " + run.Handler }

// retryState runs the handler's onError.onRetry for the retry of run, in the sandbox,
// with no tools and no phase: onRetry(error, state) returns the state the retry starts
// from (undefined keeps it). A run without onRetry keeps its state.
func (rt *Runtime) retryState(ctx context.Context, run scripthost.Run) (json.RawMessage, error) {
	// The retry runs the newest stored version, so its onRetry is the one that runs.
	wf, err := rt.cfg.Store.Workflow(ctx, run.Workflow)
	if err != nil {
		return nil, err
	}
	l, err := rt.program(ctx, run.Workflow, wf.LatestVersion)
	if err != nil {
		return nil, err
	}
	lc, ok := lifecycleOf(l.def, run.Handler)
	if !ok || lc.OnError.OnRetry == "" {
		return nil, nil
	}
	cause := map[string]any{"class": run.ErrorClass, "message": run.Error, "attempt": run.Attempt}
	if code := rt.lastFailureCode(ctx, run.ID); code != "" {
		cause["code"] = code
	}
	arg, err := json.Marshal(cause)
	if err != nil {
		return nil, fmt.Errorf("runtime: run %s: onRetry argument: %w", run.ID, err)
	}
	state := stateOrNull(run.InputState)
	res, err := rt.call(ctx, l, run, rt.wrapper(run, nil, nil), scripthost.PhaseNone, lc.OnError.OnRetry,
		sandbox.Globals{State: state}, arg, state)
	if err != nil {
		return nil, &stepError{step: stepOnRetry, err: err}
	}
	return newState(res.Value, run.InputState), nil
}

// lastFailureCode returns the code of the run's newest phase_failed event.
func (rt *Runtime) lastFailureCode(ctx context.Context, runID string) string {
	evs, err := rt.cfg.Store.LifecycleEvents(ctx, ledger.LifecycleFilter{RunID: runID})
	if err != nil {
		return ""
	}
	for i := len(evs) - 1; i >= 0; i-- {
		if evs[i].Type == ledger.EventPhaseFailed {
			var d struct {
				Code string `json:"code"`
			}
			_ = json.Unmarshal(evs[i].Data, &d)
			return d.Code
		}
	}
	return ""
}

// onRetryFailed reports whether the run's onRetry already failed: such a run is not
// retried automatically again.
func (rt *Runtime) onRetryFailed(ctx context.Context, runID string) (bool, error) {
	evs, err := rt.cfg.Store.LifecycleEvents(ctx, ledger.LifecycleFilter{RunID: runID})
	if err != nil {
		return false, err
	}
	if len(evs) == 0 || evs[len(evs)-1].Type != ledger.EventPhaseFailed {
		return false, nil
	}
	var d struct {
		Step string `json:"step"`
	}
	_ = json.Unmarshal(evs[len(evs)-1].Data, &d)
	return d.Step == stepOnRetry, nil
}

// createRetry creates the retry run of run, with the state its onRetry returns. When
// onRetry fails, the retry is created already failed with onRetry's error (logged as a
// phase_failed of step onRetry), and no automatic retry follows it.
func (rt *Runtime) createRetry(ctx context.Context, run scripthost.Run, byPolicy bool) (scripthost.Run, error) {
	var retry ledger.RetryRun
	d := map[string]any{"retry_of": run.ID, "attempt": run.Attempt + 1}
	evs := []ledger.LifecycleEvent{{Type: ledger.EventRetryStarted}}
	if byPolicy {
		state, err := rt.retryState(ctx, run)
		var se *stepError
		switch {
		case errors.As(err, &se):
			msg := rt.redact(fmt.Sprintf("onError.onRetry of %s failed: %v (retrying after: %s)", handlerName(run), se.err, run.Error))
			f := failure(se.err)
			f["phase"], f["step"], f["message"], f["attempt"] = stepOnRetry, stepOnRetry, msg, run.Attempt+1
			if f["code"] == nil || f["code"] == "" {
				f["code"] = codeOnRetry
			}
			evs = append(evs, ledger.NewLifecycleEvent("", ledger.EventPhaseFailed, f))
			retry.Failed = &ledger.StatusChange{Status: scripthost.StatusFailedLogic, Error: msg, ErrorClass: scripthost.ClassLogic}
		case err != nil:
			return scripthost.Run{}, err
		case state != nil:
			retry.State, d["state"] = state, state
		}
	}
	evs[0].Data, _ = json.Marshal(d)
	return rt.cfg.Store.CreateRetryRun(with(ctx, evs...), run.ID, retry)
}
