package runtime

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/scripthost/scripthost"
	"github.com/scripthost/scripthost/ledger"
)

// WarningPlan is the plan id under which a run's warnings are kept in the execution
// log: "workflow:" + the workflow's name, with the run's id as the execution id. The
// log is the ledger's append-only audit record, so warnings need no table of their own.
func WarningPlan(workflow string) string { return "workflow:" + workflow }

// Warning is something a run did that had no effect but that its author should know:
// a tool call after the mutate phase's one mutation, which ended the phase unexecuted,
// or another call the host refused in a mutate phase that made its mutation.
type Warning struct {
	RunID   string    `json:"run_id"`
	Handler string    `json:"handler"`
	Phase   string    `json:"phase"`
	Tool    string    `json:"tool,omitempty"`
	Code    string    `json:"code,omitempty"`
	Message string    `json:"message"`
	At      time.Time `json:"at"`
}

// The warnings of refused calls (see warnRefused): what begins their message.
const (
	droppedWarning = "not executed: the mutate phase had made its one mutation"
	refusedWarning = "refused"
)

// warn records a warning on the run, its message what followed by the cause, and logs
// it. Lifecycle events attached to ctx are logged with it.
func (rt *Runtime) warn(ctx context.Context, run scripthost.Run, phase scripthost.Phase, what string, cause error) error {
	msg := rt.redact(cause.Error())
	var se *scripthost.Error
	code, tool := "", ""
	if errors.As(cause, &se) {
		code, tool = se.Code, se.Op
	}
	rt.cfg.Logger.Warn("tool call "+what, "run", run.ID, "handler", run.Handler, "err", msg)
	now := rt.now()
	err := rt.cfg.Store.AppendExecution(context.WithoutCancel(ctx), ledger.ExecutionRecord{
		ExecutionID: run.ID, PlanID: WarningPlan(run.Workflow), StepID: run.Handler + "/" + phase.String(),
		Tool: tool, StartedAt: now, EndedAt: now, ErrorCode: code,
		Error: what + ": " + msg,
	})
	if err != nil {
		return fmt.Errorf("runtime: run %s: record warning: %w", run.ID, err)
	}
	return nil
}

// Warnings lists the warnings recorded on a workflow's runs (runID "" for all), oldest
// first.
func Warnings(ctx context.Context, store ledger.Store, workflow, runID string) ([]Warning, error) {
	recs, err := store.Executions(ctx, ledger.ExecutionFilter{PlanID: WarningPlan(workflow), ExecutionID: runID})
	if err != nil {
		return nil, err
	}
	out := make([]Warning, 0, len(recs))
	for _, r := range recs {
		handler, phase := r.StepID, ""
		for i := len(r.StepID) - 1; i >= 0; i-- {
			if r.StepID[i] == '/' {
				handler, phase = r.StepID[:i], r.StepID[i+1:]
				break
			}
		}
		out = append(out, Warning{RunID: r.ExecutionID, Handler: handler, Phase: phase, Tool: r.Tool, Code: r.ErrorCode, Message: r.Error, At: r.StartedAt})
	}
	return out, nil
}
