package view

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/scripthost/scripthost"
	"github.com/scripthost/scripthost/hostfuncs"
	"github.com/scripthost/scripthost/ledger"
)

// Bulk actions: cancel, retry or resolve every item a filter selects, in two steps.
// The first (BulkPreview) lists exactly what would change and a token that is the hash
// of that list; the second (ApplyBulk) takes the token, lists again, refuses when the
// list changed (ErrBulkChanged), and otherwise applies the one-item action (Cancel,
// Retry, hostfuncs.Resolve) to each item, recording each in the audit trail.
const (
	BulkCancel  = "cancel"
	BulkRetry   = "retry"
	BulkResolve = "resolve"
)

// BulkMax bounds the items of one bulk action: a filter that selects more is refused,
// to be narrowed.
const BulkMax = 500

// ErrBulkChanged refuses a confirmation whose token no longer matches what the filter
// selects.
var ErrBulkChanged = errors.New("the selection changed since it was listed")

// ErrBadBulk refuses a bulk request for what it asked.
var ErrBadBulk = errors.New("bad bulk request")

// BulkFilter selects the items of a bulk action: runs (cancel, retry) or mutations
// (resolve) of a workflow and handler, in a status, matching a search. Zero fields
// match everything the action applies to.
type BulkFilter struct {
	Workflow string `json:"workflow,omitempty"`
	Handler  string `json:"handler,omitempty"`
	Status   string `json:"status,omitempty"`
	Search   string `json:"q,omitempty"`
	// Phase, Since and Until narrow runs as the runs listing does (cancel, retry).
	Phase string     `json:"phase,omitempty"`
	Since *time.Time `json:"since,omitempty"`
	Until *time.Time `json:"until,omitempty"`
}

// BulkItem is one run or mutation a bulk action changes.
type BulkItem struct {
	ID       string `json:"id"`
	Workflow string `json:"workflow"`
	Handler  string `json:"handler"`
	Status   string `json:"status"`
	// RunID and Tool are a mutation's run and tool (resolve).
	RunID     string    `json:"run_id,omitempty"`
	Tool      string    `json:"tool,omitempty"`
	Error     string    `json:"error,omitempty"`
	CreatedAt time.Time `json:"created_at"`
	updatedAt time.Time
}

// BulkPlan is what a bulk action would change: the items and the token that confirms
// exactly them.
type BulkPlan struct {
	Action string     `json:"action"`
	Filter BulkFilter `json:"filter"`
	Items  []BulkItem `json:"items"`
	Count  int        `json:"count"`
	Token  string     `json:"token"`
}

// BulkRequest is what a bulk action applies with each item: who asks and why, and for
// resolve the outcome (and result) to record.
type BulkRequest struct {
	By     string                    `json:"by"`
	Reason string                    `json:"reason"`
	As     scripthost.MutationStatus `json:"as,omitempty"`
	Result json.RawMessage           `json:"result,omitempty"`
}

// BulkResult is what the action did to one item: its answer, or why it was refused.
type BulkResult struct {
	BulkItem
	OK     bool   `json:"ok"`
	Error  string `json:"error,omitempty"`
	Result any    `json:"result,omitempty"`
}

// BulkDone is the answer of an applied bulk action.
type BulkDone struct {
	Action  string       `json:"action"`
	Token   string       `json:"token"`
	Done    int          `json:"done"`
	Failed  int          `json:"failed"`
	Results []BulkResult `json:"results"`
}

// CheckBulkFilter refuses an unknown action and a filter that does not fit it: what a
// listing of the items needs.
func CheckBulkFilter(action string, f BulkFilter) error {
	switch action {
	case BulkCancel, BulkRetry:
		if f.Status != "" && f.Status != scripthost.StatusSuperseded && !scripthost.RunStatus(f.Status).Valid() {
			return fmt.Errorf("%w: status %q is not a run status", ErrBadBulk, f.Status)
		}
	case BulkResolve:
		if f.Status != "" && f.Status != string(scripthost.MutationIndeterminate) {
			return fmt.Errorf("%w: status %q: resolve applies to indeterminate mutations", ErrBadBulk, f.Status)
		}
		if f.Phase != "" || f.Since != nil || f.Until != nil {
			return fmt.Errorf("%w: phase, since and until go with cancel and retry", ErrBadBulk)
		}
	default:
		return fmt.Errorf("%w: action %q: want cancel, retry or resolve", ErrBadBulk, action)
	}
	return nil
}

// CheckBulk refuses what CheckBulkFilter refuses and a request that does not fit the
// action: resolve needs an outcome (applied, failed or skipped) and a reason.
func CheckBulk(action string, f BulkFilter, r BulkRequest) error {
	if err := CheckBulkFilter(action, f); err != nil {
		return err
	}
	switch action {
	case BulkCancel, BulkRetry:
		if r.As != "" || len(r.Result) > 0 {
			return fmt.Errorf("%w: as and result go with resolve", ErrBadBulk)
		}
	case BulkResolve:
		switch r.As {
		case scripthost.MutationApplied, scripthost.MutationFailed, scripthost.MutationSkipped:
		default:
			return fmt.Errorf("%w: as %q: want applied, failed or skipped", ErrBadBulk, r.As)
		}
		if len(r.Result) > 0 && string(r.Result) != "null" && r.As != scripthost.MutationApplied {
			return fmt.Errorf("%w: result goes with as applied", ErrBadBulk)
		}
		if strings.TrimSpace(r.Reason) == "" {
			return fmt.Errorf("%w: a resolve needs a reason (what was checked, for the audit trail)", ErrBadBulk)
		}
	}
	return nil
}

// PlanBulk lists what action would change for f, and the token that confirms it.
func PlanBulk(ctx context.Context, store ledger.Store, action string, f BulkFilter) (BulkPlan, error) {
	if err := CheckBulkFilter(action, f); err != nil {
		return BulkPlan{}, err
	}
	var items []BulkItem
	var err error
	if action == BulkResolve {
		items, err = resolvable(ctx, store, f)
	} else {
		items, err = bulkRuns(ctx, store, action, f)
	}
	if err != nil {
		return BulkPlan{}, err
	}
	if len(items) > BulkMax {
		return BulkPlan{}, fmt.Errorf("%w: the filter selects %d items, more than %d: narrow it (workflow, handler, status, q)",
			ErrBadBulk, len(items), BulkMax)
	}
	if items == nil {
		items = []BulkItem{}
	}
	return BulkPlan{Action: action, Filter: f, Items: items, Count: len(items), Token: bulkToken(action, items)}, nil
}

// bulkToken hashes the list: each item's id, status and last change.
func bulkToken(action string, items []BulkItem) string {
	h := sha256.New()
	fmt.Fprintf(h, "%s\n", action)
	for _, it := range items {
		fmt.Fprintf(h, "%s %s %d\n", it.ID, it.Status, it.updatedAt.UnixNano())
	}
	return hex.EncodeToString(h.Sum(nil))[:32]
}

// bulkRuns lists the runs f selects that action applies to: cancel takes runs whose
// status is not final, retry failed and paused ones; neither a run a retry took over.
func bulkRuns(ctx context.Context, store ledger.Store, action string, f BulkFilter) ([]BulkItem, error) {
	rf := ledger.RunFilter{Workflow: f.Workflow, Handler: f.Handler, Status: scripthost.RunStatus(f.Status), Search: f.Search,
		Phase: scripthost.RunPhase(f.Phase)}
	if f.Since != nil {
		rf.Since = *f.Since
	}
	if f.Until != nil {
		rf.Until = *f.Until
	}
	if f.Status == "" && action == BulkCancel {
		rf.Unfinished = true
	}
	if f.Status == scripthost.StatusSuperseded {
		return nil, nil // nothing to cancel or retry
	}
	runs, err := store.Runs(ctx, rf)
	if err != nil {
		return nil, err
	}
	var out []BulkItem
	for _, r := range runs {
		if r.SupersededBy != "" {
			continue
		}
		if action == BulkCancel && r.Status.Final() || action == BulkRetry && !(r.Status.Failed() || r.Status.Paused()) {
			continue
		}
		out = append(out, BulkItem{ID: r.ID, Workflow: r.Workflow, Handler: r.Handler, Status: r.Shown(), Error: r.Error,
			CreatedAt: r.CreatedAt, updatedAt: r.UpdatedAt})
	}
	return out, nil
}

// resolvable lists the indeterminate mutations f selects.
func resolvable(ctx context.Context, store ledger.Store, f BulkFilter) ([]BulkItem, error) {
	ms, err := store.Mutations(ctx, ledger.MutationFilter{Workflow: f.Workflow, Status: scripthost.MutationIndeterminate, Search: f.Search})
	if err != nil {
		return nil, err
	}
	var out []BulkItem
	for _, m := range ms {
		if f.Handler != "" && m.Handler != f.Handler {
			continue
		}
		out = append(out, BulkItem{ID: m.ID, Workflow: m.Workflow, Handler: m.Handler, Status: string(m.Status), RunID: m.RunID,
			Tool: m.Tool(), Error: m.Error, CreatedAt: m.CreatedAt, updatedAt: m.UpdatedAt})
	}
	return out, nil
}

// BulkChangedError is a refused confirmation, with what the filter selects now.
type BulkChangedError struct{ Now BulkPlan }

func (e *BulkChangedError) Error() string {
	return fmt.Sprintf("%v: the filter selects %d items now (token %s): list them again and confirm that list", ErrBulkChanged, e.Now.Count, e.Now.Token)
}

// Unwrap lets errors.Is(err, ErrBulkChanged) match.
func (e *BulkChangedError) Unwrap() error { return ErrBulkChanged }

// ApplyBulk applies action to every item f selects, when token still confirms them
// (else a *BulkChangedError and nothing done). Each item goes through the one-item
// action and into the audit trail under the action's own name, with r.By, r.Reason and
// the token; an item refused is reported with its reason and the others go on. wake,
// when set, is called with the workflow of each item changed.
func ApplyBulk(ctx context.Context, store ledger.Store, clock func() time.Time, action string, f BulkFilter, token string,
	r BulkRequest, wake func(string)) (BulkDone, error) {
	if err := CheckBulk(action, f, r); err != nil {
		return BulkDone{}, err
	}
	plan, err := PlanBulk(ctx, store, action, f)
	if err != nil {
		return BulkDone{}, err
	}
	if plan.Token != token {
		return BulkDone{}, &BulkChangedError{Now: plan}
	}
	done := BulkDone{Action: action, Token: token, Results: make([]BulkResult, 0, len(plan.Items))}
	for _, it := range plan.Items {
		req := map[string]any{"bulk": token, "reason": r.Reason}
		if action == BulkResolve {
			req["as"], req["result"] = r.As, r.Result
		}
		started := clock()
		res, err := bulkOne(ctx, store, action, it.ID, r)
		if rerr := RecordAction(ctx, store, Action{Name: action, Target: it.ID, By: r.By, Request: req, Result: res, Err: err,
			Started: started, Ended: clock()}); rerr != nil && err == nil {
			err = fmt.Errorf("%s %s done, but recording it in the audit trail failed: %w", action, it.ID, rerr)
		}
		out := BulkResult{BulkItem: it, OK: err == nil, Result: res}
		if err != nil {
			out.Error = err.Error()
			done.Failed++
		} else {
			done.Done++
			if wake != nil {
				wake(it.Workflow)
			}
		}
		done.Results = append(done.Results, out)
	}
	return done, nil
}

// bulkOne applies the one-item action.
func bulkOne(ctx context.Context, store ledger.Store, action, id string, r BulkRequest) (any, error) {
	switch action {
	case BulkCancel:
		c, err := Cancel(ctx, store, id, ledger.Cancel{Reason: r.Reason, By: r.By})
		if err != nil {
			return nil, err
		}
		return c, nil
	case BulkRetry:
		src, retry, err := Retry(ctx, store, id, 0)
		if err != nil {
			return nil, err
		}
		return Retried{Source: src, Retry: retry}, nil
	case BulkResolve:
		m, err := hostfuncs.Resolve(ctx, store, id, ledger.Resolution{As: r.As, Result: r.Result, By: r.By})
		if err != nil {
			return nil, err
		}
		return OfMutation(m), nil
	}
	return nil, fmt.Errorf("%w: action %q", ErrBadBulk, action)
}
