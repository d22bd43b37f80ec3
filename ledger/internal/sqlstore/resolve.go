package sqlstore

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/jmoiron/sqlx"

	"github.com/scripthost/scripthost"
	"github.com/scripthost/scripthost/ledger"
)

// Resolve applies a person's resolution of a mutation whose outcome is unknown.
func (s *Store) Resolve(ctx context.Context, mutationID string, r ledger.Resolution) (scripthost.Mutation, error) {
	if err := checkJSON("resolution result", r.Result); err != nil {
		return scripthost.Mutation{}, err
	}
	var out scripthost.Mutation
	err := s.mustWrite(ctx, func(ctx context.Context, tx Tx) error {
		from := []scripthost.MutationStatus{scripthost.MutationIndeterminate}
		if r.Force {
			from = append(from, scripthost.MutationNeedsReconcile)
		}
		m, err := s.outcomeTx(ctx, tx, mutationID, "resolved as "+string(r.As), from...)
		if err != nil {
			return err
		}
		now := s.now()
		m.ResolvedBy, m.ResolvedAt, m.UpdatedAt = r.By, now, now
		switch r.As {
		case scripthost.MutationApplied:
			m.Status, m.Result, m.Error, m.ErrorClass = scripthost.MutationApplied, r.Result, "", ""
			if m.RunID != "" {
				err = s.applyRun(ctx, tx, m.RunID, scripthost.Outcome{Status: scripthost.OutcomeApplied, Result: r.Result}, now)
			}
		case scripthost.MutationFailed:
			msg := "resolved as failed by " + by(r.By)
			m.Status, m.Error, m.ErrorClass = scripthost.MutationFailed, msg, scripthost.ClassLogic
			if m.RunID != "" {
				err = s.failRun(ctx, tx, m.RunID, scripthost.StatusFailedLogic, msg, scripthost.ClassLogic, now)
			}
		case scripthost.MutationSkipped:
			m.Status, m.Error, m.ErrorClass = scripthost.MutationSkipped, "skipped by "+by(r.By), ""
			if m.RunID != "" {
				if err = s.setRunEvents(ctx, tx, m.RunID, scripthost.EventSkipped); err == nil {
					err = s.applyRun(ctx, tx, m.RunID, scripthost.Outcome{Status: scripthost.OutcomeSkipped}, now)
				}
			}
		default:
			return refuse("mutation", mutationID, m.Status, r.As, "a resolution is applied, failed or skipped")
		}
		if err != nil {
			return err
		}
		out = m
		return s.saveMutation(ctx, tx, m)
	})
	return out, err
}

// Mutation returns one mutation.
func (s *Store) Mutation(ctx context.Context, id string) (scripthost.Mutation, error) {
	return s.getMutation(ctx, s.r, id)
}

// RunMutation returns the run's mutation, or ErrNotFound.
func (s *Store) RunMutation(ctx context.Context, runID string) (scripthost.Mutation, error) {
	m, found, err := s.runMutation(ctx, s.r, runID)
	if err != nil {
		return m, err
	}
	if !found {
		return m, fmt.Errorf("%w: mutation of run %q", ledger.ErrNotFound, runID)
	}
	return m, nil
}

// Mutations lists mutations matching f, oldest first.
func (s *Store) Mutations(ctx context.Context, f ledger.MutationFilter) ([]scripthost.Mutation, error) {
	var where []string
	var args []any
	if f.RunID != "" {
		where, args = append(where, "run_id = ?"), append(args, f.RunID)
	}
	if f.Workflow != "" {
		where, args = append(where, "workflow = ?"), append(args, f.Workflow)
	}
	if f.Status != "" {
		where, args = append(where, "status = ?"), append(args, string(f.Status))
	}
	if f.Search != "" {
		w, a := searchWhere(f.Search, "id", "run_id", "workflow", "handler", "namespace || '.' || method", "status",
			"idempotency_key", "error")
		where, args = append(where, w), append(args, a...)
	}
	where, args, order := pageBy(f.Page, where, args)
	return s.listMutations(ctx, where, args, f.Limit, order)
}

// listMutations lists the mutations where holds, oldest first or in order when given.
func (s *Store) listMutations(ctx context.Context, where []string, args []any, limit int, order ...string) ([]scripthost.Mutation, error) {
	q := `SELECT ` + mutationColumns + ` FROM mutations`
	if len(where) > 0 {
		q += ` WHERE ` + strings.Join(where, " AND ")
	}
	if len(order) > 0 && order[0] != "" {
		q += ` ORDER BY ` + order[0]
	} else {
		q += ` ORDER BY created_at, ` + s.d.Order
	}
	if limit > 0 {
		q += fmt.Sprintf(" LIMIT %d", limit)
	}
	var rows []mutationRow
	if err := s.r.SelectContext(ctx, &rows, q, args...); err != nil {
		return nil, s.dbErr("list mutations", err)
	}
	out := make([]scripthost.Mutation, 0, len(rows))
	for _, r := range rows {
		out = append(out, r.mutation())
	}
	return out, nil
}

// DueReconciles lists needs_reconcile mutations whose next attempt is due at now.
func (s *Store) DueReconciles(ctx context.Context, now time.Time) ([]scripthost.Mutation, error) {
	return s.listMutations(ctx, []string{"status = 'needs_reconcile'",
		"(next_reconcile_at IS NULL OR next_reconcile_at <= ?)"}, []any{norm(now).UnixNano()}, 0)
}

// FailureCount counts definitely failed mutations with this input hash.
func (s *Store) FailureCount(ctx context.Context, inputHash string) (int, error) {
	return s.failureCount(ctx, s.r, inputHash)
}

// failureCount counts them inside a transaction or from the read pool.
func (s *Store) failureCount(ctx context.Context, q sqlx.QueryerContext, inputHash string) (int, error) {
	var n int
	if err := sqlx.GetContext(ctx, q, &n, `SELECT COUNT(*) `+failedInputs, inputHash); err != nil {
		return 0, s.dbErr("count failures", err)
	}
	return n, nil
}

// failedInputs selects the definite failures of the mutations of an input hash, the
// status a literal so that the partial index of failures serves it.
const failedInputs = `FROM mutations WHERE input_hash = ? AND status = 'failed'`

// keyFailures is the failure count of the inputs that a new mutation's key is derived
// from, in tx. A transaction that takes it on trust (Truster) counts none, almost
// always so, and checks that with its write instead of reading it first: one round trip
// fewer; when inputs that failed before run again, the write fails whole and runs again
// reading the count.
func (s *Store) keyFailures(ctx context.Context, tx Tx, inputHash string) (int, error) {
	if t, ok := unwrapped(tx).(Truster); ok && t.Trusts() {
		t.Expect(`SELECT 1 `+failedInputs, []any{inputHash}, 0)
		return 0, nil
	}
	return s.failureCount(ctx, tx, inputHash)
}

func by(who string) string {
	if who == "" {
		return "an operator"
	}
	return who
}
