package serve

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"sort"
	"strings"
	"unicode"

	"github.com/scripthost/scripthost/internal/view"
	"github.com/scripthost/scripthost/ledger"
	"github.com/scripthost/scripthost/plan"
)

// auditPlan is the plan id under which the execution log keeps operator actions (see
// view.AuditPlan).
const auditPlan = view.AuditPlan

// action is one recorded operator action, as /api/v1/actions lists it.
type action struct {
	ID      string          `json:"id"`
	Action  string          `json:"action"`
	Target  string          `json:"target"`
	By      string          `json:"by"`
	At      string          `json:"at"`
	Success bool            `json:"success"`
	Error   string          `json:"error,omitempty"`
	Request json.RawMessage `json:"request,omitempty"`
	number  int
}

// operator is who an action is recorded as: the name the request gives, else "api".
func operator(by string) string {
	by = strings.Map(func(r rune) rune {
		if unicode.IsControl(r) {
			return -1
		}
		return r
	}, strings.TrimSpace(by))
	if len(by) > 80 {
		by = by[:80]
	}
	if by == "" {
		return "api"
	}
	return by
}

// act runs an operator action and records it, done or refused, in the audit trail
// (view.RecordAction) with who asked for it; it answers with the action's result.
func (s *Server) act(w http.ResponseWriter, r *http.Request, name, target, by string, req any,
	do func(ctx context.Context) (any, error)) error {
	ctx := r.Context()
	by = operator(by)
	started := s.cfg.Clock()
	res, err := do(ctx)
	rerr := view.RecordAction(ctx, s.cfg.Store, view.Action{Name: name, Target: target, By: by, Request: req,
		Result: res, Err: err, Started: started, Ended: s.cfg.Clock()})
	if rerr != nil {
		// The action happened (or was refused): say so, and that its record is missing.
		s.cfg.Logger.Error("operator action not recorded", "action", name, "target", target, "by", by, "err", rerr)
		if err == nil {
			return fmt.Errorf("serve: %s %s done, but recording it failed: %w", name, target, rerr)
		}
	}
	if err != nil {
		return err
	}
	s.cfg.Logger.Info("operator action", "action", name, "target", target, "by", by)
	writeJSON(w, http.StatusOK, res)
	return nil
}

func (s *Server) actions(w http.ResponseWriter, r *http.Request) error {
	recs, err := s.cfg.Store.Executions(r.Context(), ledger.ExecutionFilter{PlanID: auditPlan})
	if err != nil {
		return err
	}
	limit, err := query{r}.limit()
	if err != nil {
		return err
	}
	out := make([]action, 0, len(recs))
	for _, rec := range recs {
		var args struct {
			Target  string          `json:"target"`
			By      string          `json:"by"`
			Request json.RawMessage `json:"request"`
		}
		if err := json.Unmarshal(rec.Arguments, &args); err != nil {
			return fmt.Errorf("serve: operator action %s: %w", rec.ExecutionID, err)
		}
		if string(args.Request) == "null" {
			args.Request = nil
		}
		_, n, _, _ := plan.ParseExecutionID(rec.ExecutionID)
		out = append(out, action{number: n, ID: rec.ExecutionID, Action: rec.StepID, Target: args.Target, By: args.By,
			At: rec.StartedAt.Format("2006-01-02T15:04:05.000Z07:00"), Success: rec.Success, Error: rec.Error, Request: args.Request})
	}
	// Oldest first, by when they happened (the log is ordered by id, in which
	// _operator/10 sorts before _operator/9).
	sort.SliceStable(out, func(i, j int) bool { return out[i].number < out[j].number })
	writeJSON(w, http.StatusOK, view.Newest(out, limit))
	return nil
}
