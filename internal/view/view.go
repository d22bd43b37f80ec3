// Package view holds the JSON shapes operators see, shared by the CLI's --json output
// and the HTTP API of scripthost serve, so that both print one run, mutation or event
// the same way. It also holds the operator actions both offer (retry, pause, resolve).
package view

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/scripthost/scripthost"
	"github.com/scripthost/scripthost/ledger"
	"github.com/scripthost/scripthost/runtime"
)

// Mutation is the JSON shape of a mutation in listings: the tool as one name.
type Mutation struct {
	ID                string                    `json:"id"`
	RunID             string                    `json:"run_id"`
	Workflow          string                    `json:"workflow,omitempty"`
	Handler           string                    `json:"handler,omitempty"`
	Tool              string                    `json:"tool"`
	Status            scripthost.MutationStatus `json:"status"`
	IdempotencyKey    string                    `json:"idempotency_key"`
	Params            json.RawMessage           `json:"params,omitempty"`
	Result            json.RawMessage           `json:"result"`
	Error             string                    `json:"error"`
	ErrorClass        scripthost.ErrorClass     `json:"error_class,omitempty"`
	ReconcileAttempts int                       `json:"reconcile_attempts"`
	NextReconcileAt   *time.Time                `json:"next_reconcile_at,omitempty"`
	ResolvedBy        string                    `json:"resolved_by,omitempty"`
	ResolvedAt        *time.Time                `json:"resolved_at,omitempty"`
	CreatedAt         time.Time                 `json:"created_at"`
	UpdatedAt         time.Time                 `json:"updated_at"`
}

// OfMutation is m as listings show it.
func OfMutation(m scripthost.Mutation) Mutation {
	v := Mutation{
		ID: m.ID, RunID: m.RunID, Workflow: m.Workflow, Handler: m.Handler, Tool: m.Tool(), Status: m.Status,
		IdempotencyKey: m.IdempotencyKey, Params: m.Params, Result: m.Result, Error: m.Error, ErrorClass: m.ErrorClass,
		ReconcileAttempts: m.ReconcileAttempts, ResolvedBy: m.ResolvedBy, CreatedAt: m.CreatedAt, UpdatedAt: m.UpdatedAt,
	}
	if len(v.Result) == 0 {
		v.Result = json.RawMessage("null")
	}
	if !m.NextReconcileAt.IsZero() {
		t := m.NextReconcileAt
		v.NextReconcileAt = &t
	}
	if !m.ResolvedAt.IsZero() {
		t := m.ResolvedAt
		v.ResolvedAt = &t
	}
	return v
}

// Mutations lists mutations matching f, the newest f.Limit of them (all when 0),
// oldest first.
func Mutations(ctx context.Context, store ledger.Store, f ledger.MutationFilter) ([]Mutation, error) {
	limit := f.Limit
	f.Limit = 0
	ms, err := store.Mutations(ctx, f)
	if err != nil {
		return nil, err
	}
	ms = Newest(ms, limit)
	out := make([]Mutation, 0, len(ms))
	for _, m := range ms {
		out = append(out, OfMutation(m))
	}
	return out, nil
}

// Runs lists runs matching f, the newest f.Limit of them (all when 0), oldest first.
func Runs(ctx context.Context, store ledger.Store, f ledger.RunFilter) ([]scripthost.Run, error) {
	if f.Limit > 0 {
		f.Newest = true
	}
	runs, err := store.Runs(ctx, f)
	if err != nil {
		return nil, err
	}
	if f.Newest {
		for i, j := 0, len(runs)-1; i < j; i, j = i+1, j-1 {
			runs[i], runs[j] = runs[j], runs[i]
		}
	}
	if runs == nil {
		runs = []scripthost.Run{}
	}
	return runs, nil
}

// Events lists topic events matching f, the newest f.Limit of them, oldest first.
func Events(ctx context.Context, store ledger.Store, f ledger.EventFilter) ([]scripthost.Event, error) {
	limit := f.Limit
	f.Limit = 0
	evs, err := store.Events(ctx, f)
	if err != nil {
		return nil, err
	}
	evs = Newest(evs, limit)
	if evs == nil {
		evs = []scripthost.Event{}
	}
	return evs, nil
}

// Newest keeps the last n items of an oldest-first listing (all when n is 0): a limit
// means the newest N in every listing, shown oldest first.
func Newest[T any](items []T, n int) []T {
	if n > 0 && len(items) > n {
		return items[len(items)-n:]
	}
	return items
}

// RunDetail is one run with its mutation, its snapshots and its lifecycle log.
type RunDetail struct {
	// Status is the run's status as operators see it (scripthost.Run.Shown):
	// "superseded" for a run a retry took over.
	Status string         `json:"status"`
	Run    scripthost.Run `json:"run"`
	// Events are the events the run reserved or, for a failed prepare phase, peeked
	// at, with their status now: the candidates for `events skip`.
	Events    []RunEvent              `json:"events,omitempty"`
	Mutation  *Mutation               `json:"mutation,omitempty"`
	Snapshots []ledger.Snapshot       `json:"snapshots"`
	Lifecycle []ledger.LifecycleEvent `json:"lifecycle"`
	// Warnings are what the run did that had no effect (a tool call after the
	// mutation); they do not change its status.
	Warnings []runtime.Warning `json:"warnings,omitempty"`
}

// Detail reads one run's detail.
func Detail(ctx context.Context, store ledger.Store, runID string) (RunDetail, error) {
	run, err := store.Run(ctx, runID)
	if err != nil {
		return RunDetail{}, err
	}
	d := RunDetail{Status: run.Shown(), Run: run}
	if d.Lifecycle, err = store.LifecycleEvents(ctx, ledger.LifecycleFilter{RunID: run.ID}); err != nil {
		return d, err
	}
	if d.Lifecycle == nil {
		d.Lifecycle = []ledger.LifecycleEvent{}
	}
	if d.Events, err = RunEvents(ctx, store, run, d.Lifecycle); err != nil {
		return d, err
	}
	switch m, err := store.RunMutation(ctx, run.ID); {
	case err == nil:
		v := OfMutation(m)
		d.Mutation = &v
	case !errors.Is(err, ledger.ErrNotFound):
		return d, err
	}
	if d.Snapshots, err = store.Snapshots(ctx, run.ID); err != nil {
		return d, err
	}
	if d.Snapshots == nil {
		d.Snapshots = []ledger.Snapshot{}
	}
	if d.Warnings, err = runtime.Warnings(ctx, store, run.Workflow, run.ID); err != nil {
		return d, err
	}
	return d, nil
}

// EventLine is one lifecycle event as `run --jsonl` and `show --events --json` print
// it: the keys of the plan event stream (event, time) plus the run it belongs to.
type EventLine struct {
	Event      ledger.EventType `json:"event"`
	Time       time.Time        `json:"time"`
	Seq        int64            `json:"seq"`
	RunID      string           `json:"run_id"`
	Workflow   string           `json:"workflow,omitempty"`
	Handler    string           `json:"handler,omitempty"`
	MutationID string           `json:"mutation_id,omitempty"`
	Data       json.RawMessage  `json:"data,omitempty"`
}

// LineOf is ev of run as an EventLine.
func LineOf(ev ledger.LifecycleEvent, run scripthost.Run) EventLine {
	return EventLine{Event: ev.Type, Time: ev.At, Seq: ev.Seq, RunID: ev.RunID, Workflow: run.Workflow,
		Handler: run.Handler, MutationID: ev.MutationID, Data: ev.Data}
}

// Retry creates the run that retries runID on the workflow's stored version (0: the
// newest), refusing a run whose mutation outcome is unknown and a version without
// the run's handler.
func Retry(ctx context.Context, store ledger.Store, runID string, version int) (src, retry scripthost.Run, err error) {
	if version < 0 {
		return src, retry, fmt.Errorf("version %d: want a stored version number (0: the newest)", version)
	}
	if src, err = store.Run(ctx, runID); err != nil {
		return src, retry, err
	}
	if m, err := store.RunMutation(ctx, src.ID); err == nil && m.Status.Unknown() {
		return src, retry, &ledger.TransitionError{Entity: "run", ID: src.ID, From: string(src.Status), To: "retry",
			Reason: fmt.Sprintf("its mutation %s is %s: resolve it instead of retrying", m.ID, m.Status)}
	}
	v, err := store.WorkflowVersion(ctx, src.Workflow, version)
	if err != nil {
		return src, retry, err
	}
	if def, err := runtime.ParseDefinition(v.Definition); err == nil {
		if _, ok := def.Handler(src.Handler); !ok {
			return src, retry, fmt.Errorf("run %s: version %d of workflow %s has no handler %s: pin a version that has it with --version: %w",
				src.ID, v.Version, src.Workflow, src.Handler, ledger.ErrNotFound)
		}
	}
	retry, err = store.CreateRetryRun(ctx, src.ID, ledger.RetryRun{Version: v.Version})
	return src, retry, err
}
