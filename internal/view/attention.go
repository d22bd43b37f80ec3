package view

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"github.com/scripthost/scripthost"
	"github.com/scripthost/scripthost/agent"
	"github.com/scripthost/scripthost/ledger"
	"github.com/scripthost/scripthost/runtime"
)

// Attention is what waits for a person, in one report: `scripthost attention --json`
// and GET /api/v1/attention print it alike.
type Attention struct {
	// At is the time the report was made (the injected clock's).
	At time.Time `json:"at"`
	// Blocked are the handlers whose newest run failed or paused and that nothing
	// retries by itself, each with the actions that unblock it.
	Blocked []Blocked `json:"blocked"`
	// Indeterminate are the mutations whose outcome nobody knows, with their params
	// (redacted as stored), workflow and age.
	Indeterminate []Indeterminate `json:"indeterminate"`
	// FailedRuns are the failed runs no retry took over, newest last.
	FailedRuns []scripthost.Run `json:"failed_runs"`
	// Approvals are the agent tool calls that wait for a person's approval.
	Approvals []Approval `json:"approvals"`
	// StaleHosts are the leases whose holder stopped renewing them (shared PostgreSQL
	// ledgers only): the host is gone or cut off, and its workflows wait for another
	// host to take them over.
	StaleHosts []StaleLease `json:"stale_hosts"`
	Counts     Counts       `json:"counts"`
}

// Counts are the lengths of the report's lists, for a glance (the UI's nav).
type Counts struct {
	Blocked       int `json:"blocked"`
	Indeterminate int `json:"indeterminate"`
	FailedRuns    int `json:"failed_runs"`
	Approvals     int `json:"approvals"`
	StaleHosts    int `json:"stale_hosts"`
	// Total is the number of items that need attention.
	Total int `json:"total"`
}

// Blocked is a handler that starts no new run until a person acts.
type Blocked struct {
	Workflow string `json:"workflow"`
	Handler  string `json:"handler"`
	RunID    string `json:"run_id"`
	// Status is the blocking run's status; Reason its error.
	Status   scripthost.RunStatus `json:"status"`
	Reason   string               `json:"reason"`
	Since    time.Time            `json:"since"`
	Mutation *Mutation            `json:"mutation,omitempty"`
	// Actions are what unblocks the handler, the first the likeliest.
	Actions []Unblock `json:"actions"`
}

// Unblock is one action that unblocks a handler.
type Unblock struct {
	// Kind is resolve (the mutation Target), retry (the run Target) or skip_event
	// (the event Target, workflow/topic/id).
	Kind   string `json:"kind"`
	Target string `json:"target"`
	// Hint says when the action is the right one; Command is the CLI's way to take it.
	Hint    string `json:"hint"`
	Command string `json:"command"`
}

// Indeterminate is a mutation whose outcome is unknown, and how long it has been.
type Indeterminate struct {
	Mutation
	AgeSeconds int64 `json:"age_seconds"`
}

// Approval is an agent tool call waiting for approval.
type Approval struct {
	Session    string          `json:"session"`
	Task       string          `json:"task"`
	Call       string          `json:"call_id"`
	Tool       string          `json:"tool"`
	Arguments  json.RawMessage `json:"arguments,omitempty"`
	AgeSeconds int64           `json:"age_seconds"`
	UpdatedAt  time.Time       `json:"updated_at"`
}

// StaleLease is a lease still held by a host whose renewals stopped.
type StaleLease struct {
	ledger.Lease
	// ExpiredSeconds is how long ago the lease ran out.
	ExpiredSeconds int64 `json:"expired_seconds"`
}

// AttentionOptions tunes the report to the host that reads it.
type AttentionOptions struct {
	// Clock defaults to time.Now.
	Clock func() time.Time
	// TransientRetries is the host's cap on automatic retries (0: the default).
	TransientRetries int
	// FailedLimit keeps the newest FailedLimit failed runs (0: 100).
	FailedLimit int
}

// NeedsAttention gathers what waits for a person across every stored workflow.
func NeedsAttention(ctx context.Context, store ledger.Store, o AttentionOptions) (Attention, error) {
	if o.Clock == nil {
		o.Clock = time.Now
	}
	if o.FailedLimit == 0 {
		o.FailedLimit = 100
	}
	now := o.Clock()
	a := Attention{At: now, Blocked: []Blocked{}, Indeterminate: []Indeterminate{}, FailedRuns: []scripthost.Run{},
		Approvals: []Approval{}, StaleHosts: []StaleLease{}}
	wfs, err := store.Workflows(ctx)
	if err != nil {
		return a, err
	}
	names := make([]string, 0, len(wfs))
	for _, wf := range wfs {
		names = append(names, wf.Name)
	}
	out, err := runtime.OutstandingIn(ctx, store, o.Clock, o.TransientRetries, names)
	if err != nil {
		return a, fmt.Errorf("attention: %w", err)
	}
	for _, s := range out.Blocked {
		b, err := blockedOf(ctx, store, s)
		if err != nil {
			return a, err
		}
		a.Blocked = append(a.Blocked, b)
	}
	ms, err := store.Mutations(ctx, ledger.MutationFilter{Status: scripthost.MutationIndeterminate})
	if err != nil {
		return a, err
	}
	for _, m := range ms {
		a.Indeterminate = append(a.Indeterminate, Indeterminate{Mutation: OfMutation(m), AgeSeconds: seconds(now.Sub(m.CreatedAt))})
	}
	if a.FailedRuns, err = failedRuns(ctx, store, o.FailedLimit); err != nil {
		return a, err
	}
	if a.Approvals, err = approvals(ctx, store, now); err != nil {
		return a, err
	}
	if a.StaleHosts, err = staleLeases(ctx, store, now); err != nil {
		return a, err
	}
	a.Counts = Counts{Blocked: len(a.Blocked), Indeterminate: len(a.Indeterminate), FailedRuns: len(a.FailedRuns),
		Approvals: len(a.Approvals), StaleHosts: len(a.StaleHosts)}
	a.Counts.Total = a.Counts.Blocked + a.Counts.Indeterminate + a.Counts.FailedRuns + a.Counts.Approvals + a.Counts.StaleHosts
	return a, nil
}

func seconds(d time.Duration) int64 {
	if d < 0 {
		return 0
	}
	return int64(d / time.Second)
}

// blockedOf is s with the actions that unblock its handler.
func blockedOf(ctx context.Context, store ledger.Store, s runtime.Stuck) (Blocked, error) {
	r := s.Run
	b := Blocked{Workflow: r.Workflow, Handler: r.Handler, RunID: r.ID, Status: r.Status, Reason: r.Error, Since: r.UpdatedAt}
	if s.Mutation != nil {
		m := OfMutation(*s.Mutation)
		b.Mutation = &m
		if b.Reason == "" {
			b.Reason = fmt.Sprintf("mutation %s (%s) is %s: nobody knows whether the side effect happened", m.ID, m.Tool, m.Status)
		}
		b.Actions = append(b.Actions, Unblock{Kind: "resolve", Target: m.ID,
			Hint:    "find out whether the side effect happened, then resolve the mutation as applied, failed or skipped",
			Command: fmt.Sprintf("scripthost resolve %s --as applied|failed|skipped", m.ID)})
		return b, nil
	}
	hint := "fix the workflow and store the fix (scripthost run FILE), then retry the run (it runs the newest version)"
	switch r.Status {
	case scripthost.StatusPausedApproval:
		hint = "fix the credentials or permissions the tool refused, then retry the run"
	case scripthost.StatusPausedTransient:
		hint = "automatic retries are used up: once the service answers, retry the run"
	case scripthost.StatusPausedReconciliation:
		hint = "retry the run"
	}
	b.Actions = append(b.Actions, Unblock{Kind: "retry", Target: r.ID, Hint: hint, Command: "scripthost retry " + r.ID})
	if r.Kind != scripthost.KindConsumer || !r.Status.Failed() {
		return b, nil
	}
	evs, err := RunEvents(ctx, store, r, nil)
	if err != nil {
		return b, err
	}
	for _, e := range evs {
		if e.Status == scripthost.EventSkipped || e.Status == scripthost.EventConsumed {
			continue
		}
		target := r.Workflow + "/" + e.Topic + "/" + e.ID
		b.Actions = append(b.Actions, Unblock{Kind: "skip_event", Target: target,
			Hint:    "when this event is the cause (a poison event), set it aside: the handler prepares again without it",
			Command: fmt.Sprintf("scripthost events skip %s %s %s", r.Workflow, e.Topic, e.ID)})
	}
	return b, nil
}

// failedRuns lists the newest limit failed runs no retry took over, oldest first.
func failedRuns(ctx context.Context, store ledger.Store, limit int) ([]scripthost.Run, error) {
	var runs []scripthost.Run
	for _, st := range []scripthost.RunStatus{scripthost.StatusFailedLogic, scripthost.StatusFailedInternal} {
		rs, err := store.Runs(ctx, ledger.RunFilter{Status: st})
		if err != nil {
			return nil, err
		}
		for _, r := range rs {
			if r.SupersededBy == "" {
				runs = append(runs, r)
			}
		}
	}
	slices.SortStableFunc(runs, func(a, b scripthost.Run) int {
		if c := a.CreatedAt.Compare(b.CreatedAt); c != 0 {
			return c
		}
		return cmpString(a.ID, b.ID)
	})
	runs = Newest(runs, limit)
	if runs == nil {
		runs = []scripthost.Run{}
	}
	return runs, nil
}

func cmpString(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// approvals lists the agent tool calls pending approval, in the sessions' order.
func approvals(ctx context.Context, store ledger.Store, now time.Time) ([]Approval, error) {
	out := []Approval{}
	as, ok := store.(ledger.AgentStore)
	if !ok {
		return out, nil
	}
	sessions, err := as.AgentSessions(ctx, ledger.AgentSessionFilter{})
	if err != nil {
		return nil, err
	}
	for _, s := range sessions {
		if s.Status == "completed" || s.Status == "failed" {
			continue
		}
		calls, err := as.AgentToolCalls(ctx, s.ID)
		if err != nil {
			return nil, err
		}
		for _, c := range calls {
			if c.Status != agent.CallPendingApproval {
				continue
			}
			out = append(out, Approval{Session: s.ID, Task: s.Task, Call: c.CallID, Tool: c.Tool, Arguments: c.Arguments,
				AgeSeconds: seconds(now.Sub(c.UpdatedAt)), UpdatedAt: c.UpdatedAt})
		}
	}
	return out, nil
}

// staleLeases lists the held leases that ran out by now: their holder stopped
// renewing them and no host has taken them over yet.
func staleLeases(ctx context.Context, store ledger.Store, now time.Time) ([]StaleLease, error) {
	out := []StaleLease{}
	l, ok := store.(ledger.Leaser)
	if !ok {
		return out, nil
	}
	leases, err := l.Leases(ctx)
	if err != nil {
		return nil, fmt.Errorf("attention: leases: %w", err)
	}
	return append(out, staleOf(leases, now)...), nil
}

// staleOf picks the held leases that ran out by now. The hosts report marks their
// holders with it.
func staleOf(leases []ledger.Lease, now time.Time) []StaleLease {
	var out []StaleLease
	for _, x := range leases {
		if x.Owner != "" && x.ExpiresAt.Before(now) {
			out = append(out, StaleLease{Lease: x, ExpiredSeconds: seconds(now.Sub(x.ExpiresAt))})
		}
	}
	return out
}
