package sqlstore

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jmoiron/sqlx"

	"github.com/scripthost/scripthost"
	"github.com/scripthost/scripthost/ledger"
)

type mutationRow struct {
	ID                string    `db:"id"`
	RunID             optString `db:"run_id"`
	Workflow          string    `db:"workflow"`
	Handler           string    `db:"handler"`
	Namespace         string    `db:"namespace"`
	Method            string    `db:"method"`
	Params            rawJSON   `db:"params"`
	InputHash         string    `db:"input_hash"`
	IdempotencyKey    string    `db:"idempotency_key"`
	Status            string    `db:"status"`
	Result            rawJSON   `db:"result"`
	Error             string    `db:"error"`
	ErrorClass        string    `db:"error_class"`
	ReconcileAttempts int       `db:"reconcile_attempts"`
	NextReconcileAt   nanos     `db:"next_reconcile_at"`
	ResolvedBy        string    `db:"resolved_by"`
	ResolvedAt        nanos     `db:"resolved_at"`
	CreatedAt         nanos     `db:"created_at"`
	UpdatedAt         nanos     `db:"updated_at"`
}

const mutationColumns = `id, run_id, workflow, handler, namespace, method, params, input_hash,
	idempotency_key, status, result, error, error_class, reconcile_attempts, next_reconcile_at,
	resolved_by, resolved_at, created_at, updated_at`

func (r mutationRow) mutation() scripthost.Mutation {
	return scripthost.Mutation{
		ID: r.ID, RunID: string(r.RunID), Workflow: r.Workflow, Handler: r.Handler,
		Namespace: r.Namespace, Method: r.Method, Params: r.Params.msg(), InputHash: r.InputHash,
		IdempotencyKey: r.IdempotencyKey, Status: scripthost.MutationStatus(r.Status),
		Result: r.Result.msg(), Error: r.Error, ErrorClass: scripthost.ErrorClass(r.ErrorClass),
		ReconcileAttempts: r.ReconcileAttempts, NextReconcileAt: r.NextReconcileAt.Time(),
		ResolvedBy: r.ResolvedBy, ResolvedAt: r.ResolvedAt.Time(),
		CreatedAt: r.CreatedAt.Time(), UpdatedAt: r.UpdatedAt.Time(),
	}
}

func mutationToRow(m scripthost.Mutation) mutationRow {
	return mutationRow{
		ID: m.ID, RunID: optString(m.RunID), Workflow: m.Workflow, Handler: m.Handler,
		Namespace: m.Namespace, Method: m.Method, Params: rawJSON(m.Params), InputHash: m.InputHash,
		IdempotencyKey: m.IdempotencyKey, Status: string(m.Status), Result: rawJSON(m.Result),
		Error: m.Error, ErrorClass: string(m.ErrorClass), ReconcileAttempts: m.ReconcileAttempts,
		NextReconcileAt: nanos(m.NextReconcileAt), ResolvedBy: m.ResolvedBy,
		ResolvedAt: nanos(m.ResolvedAt), CreatedAt: nanos(m.CreatedAt), UpdatedAt: nanos(m.UpdatedAt),
	}
}

// values are the row's values in the order of mutationColumns, for binding.
func (r *mutationRow) values() []any { return valuesOf(r.fields()) }

// insertMutationSQL records a mutation.
var insertMutationSQL = insertSQL("mutations", mutationColumns)

// fields are pointers to the row's fields in the order of mutationColumns, for a Scan
// without sqlx's reflection (see runRow.fields).
func (r *mutationRow) fields() []any {
	return []any{&r.ID, &r.RunID, &r.Workflow, &r.Handler, &r.Namespace, &r.Method, &r.Params,
		&r.InputHash, &r.IdempotencyKey, &r.Status, &r.Result, &r.Error, &r.ErrorClass,
		&r.ReconcileAttempts, &r.NextReconcileAt, &r.ResolvedBy, &r.ResolvedAt, &r.CreatedAt, &r.UpdatedAt}
}

// getMutation loads a mutation inside a transaction or from the read pool (see
// readRow).
func (s *Store) getMutation(ctx context.Context, q sqlx.QueryerContext, id string) (scripthost.Mutation, error) {
	row, err := readRow[mutationRow](ctx, s, q, "mutation", "mutations", mutationColumns, id)
	if err != nil {
		return scripthost.Mutation{}, err
	}
	return row.mutation(), nil
}

// runMutation returns the run's mutation and whether it has one.
func (s *Store) runMutation(ctx context.Context, q sqlx.QueryerContext, runID string) (scripthost.Mutation, bool, error) {
	var row mutationRow
	err := q.QueryRowxContext(ctx, `SELECT `+mutationColumns+` FROM mutations WHERE run_id = ?`+s.forUpdate(q), runID).Scan(row.fields()...)
	if errors.Is(err, sql.ErrNoRows) {
		return scripthost.Mutation{}, false, nil
	}
	if err != nil {
		return scripthost.Mutation{}, false, s.dbErr("read mutation", err)
	}
	return row.mutation(), true, nil
}

// updateMutation sets the columns an outcome or a reconciliation may change; the
// others, among them the run and the idempotency key, each with its unique index, are
// fixed when the mutation is recorded (see runUpdates).
var updateMutation = updateOf("mutations", mutationColumns, "id", "run_id", "workflow", "handler",
	"namespace", "method", "params", "input_hash", "idempotency_key", "created_at")

func (s *Store) saveMutation(ctx context.Context, tx Tx, m scripthost.Mutation) error {
	row := mutationToRow(m)
	if err := s.guardedExec(ctx, tx, RowKey{"mutations", m.ID}, guardMutation, "update mutation", updateMutation.q, updateMutation.args(row.values())); err != nil {
		return err
	}
	cacheMutation(tx, row)
	noteMutation(tx, m.ID, m.RunID)
	return nil
}

// runHasMutation refuses a second mutation of a run with ErrMutationExists, naming the
// first.
func (s *Store) runHasMutation(ctx context.Context, tx Tx, runID string) error {
	old, found, err := s.runMutation(ctx, tx, runID)
	if err != nil {
		return err
	}
	if found {
		return fmt.Errorf("%w: run %s has mutation %s (%s)", ledger.ErrMutationExists, runID, old.ID, old.Status)
	}
	return nil
}

// keyUsed refuses an idempotency key another mutation has with ErrDuplicateKey,
// naming that mutation.
func (s *Store) keyUsed(ctx context.Context, tx Tx, key string) error {
	var other string
	err := tx.GetContext(ctx, &other, `SELECT id FROM mutations WHERE idempotency_key = ?`, key)
	if err == nil {
		return fmt.Errorf("%w: key %q is used by mutation %s", ledger.ErrDuplicateKey, key, other)
	}
	if !errors.Is(err, sql.ErrNoRows) {
		return s.dbErr("begin mutation", err)
	}
	return nil
}

// BeginMutation durably records an in_flight mutation, deriving its idempotency key
// from the earlier failures of its inputs when none is given, and logs
// mutation_recorded with the key.
func (s *Store) BeginMutation(ctx context.Context, nm ledger.NewMutation) (scripthost.Mutation, error) {
	if nm.Namespace == "" || nm.Method == "" || (nm.IdempotencyKey == "" && nm.InputHash == "") {
		return scripthost.Mutation{}, fmt.Errorf("%s: begin mutation %s.%s: namespace, method and an idempotency key or an input hash are required",
			s.name, nm.Namespace, nm.Method)
	}
	if err := checkJSON("mutation params", nm.Params); err != nil {
		return scripthost.Mutation{}, err
	}
	var created runRec
	var via []scripthost.Run
	if nm.Run != nil {
		var err error
		if created, via, err = s.newRun(*nm.Run); err != nil {
			return scripthost.Mutation{}, err
		}
		if created.ID != nm.RunID || created.Phase != scripthost.RunMutating {
			return scripthost.Mutation{}, refuse("run", created.ID, created.Phase, "mutation",
				"a mutation creates only its own run (%q), and one that reaches phase mutating", nm.RunID)
		}
	}
	m := scripthost.Mutation{
		ID: s.opts.NewID(), RunID: nm.RunID, Workflow: nm.Workflow, Handler: nm.Handler,
		Namespace: nm.Namespace, Method: nm.Method, Params: nm.Params, InputHash: nm.InputHash,
		IdempotencyKey: nm.IdempotencyKey, Status: scripthost.MutationInFlight,
	}
	err := s.mustWrite(ctx, func(ctx context.Context, tx Tx) error {
		// Stamped at each attempt: a write that waited out a database restart must not
		// look older than it is to a host judging whether its call may still be live.
		now := s.now()
		m.CreatedAt, m.UpdatedAt = now, now
		m.IdempotencyKey = nm.IdempotencyKey
		if m.IdempotencyKey == "" {
			// Counted in the transaction that records the mutation: the key and the
			// record see one ledger, and the caller reads nothing before the write.
			// Counted first, so that the writes after go together; or taken on trust
			// and checked by the write (keyFailures).
			n, err := s.keyFailures(ctx, tx, nm.InputHash)
			if err != nil {
				return err
			}
			m.IdempotencyKey = scripthost.IdempotencyKey(nm.InputHash, n)
		}
		if nm.Run != nil {
			if err := s.insertNewRun(ctx, tx, created, via); err != nil {
				return err
			}
		}
		if nm.RunID != "" {
			rec, err := s.getRun(ctx, tx, nm.RunID)
			if err != nil {
				return err
			}
			if rec.Status != scripthost.StatusActive || rec.Phase != scripthost.RunMutating {
				return refuse("run", rec.ID, rec.Phase, "mutation",
					"a mutation needs an active run in phase mutating; run is %s in %s", rec.Status, rec.Phase)
			}
			if m.Workflow == "" {
				m.Workflow = rec.Workflow
			}
			if m.Handler == "" {
				m.Handler = rec.Handler
			}
		}
		// A mutation already recorded for the run, or another with the key, is refused
		// naming it. The unique indexes on both find a conflict at the INSERT, and the
		// lookups that name it run only then: where a refused statement leaves the
		// transaction usable (SQLite), after the refusal; elsewhere the INSERT does
		// nothing on a conflict, which leaves it usable too.
		conflict := func() error {
			if nm.RunID != "" {
				if err := s.runHasMutation(ctx, tx, nm.RunID); err != nil {
					return err
				}
			}
			return s.keyUsed(ctx, tx, m.IdempotencyKey)
		}
		row := mutationToRow(m)
		q := insertMutationSQL
		if !s.d.TxSurvivesErrors {
			q += ` ON CONFLICT DO NOTHING`
		}
		if !s.d.TxSurvivesErrors {
			key := m.IdempotencyKey
			err := s.execLater(ctx, tx, "begin mutation", q, row.values(), 1, func() error {
				if err := conflict(); err != nil {
					return err
				}
				return fmt.Errorf("%w: key %q is used by another mutation", ledger.ErrDuplicateKey, key)
			})
			if err != nil {
				return err
			}
		}
		var err error
		if s.d.TxSurvivesErrors {
			_, err = tx.ExecContext(ctx, q, row.values()...)
		}
		if s.d.TxSurvivesErrors && s.d.UniqueViolation(err) != "" {
			if err := conflict(); err != nil {
				return err
			}
		}
		switch s.d.UniqueViolation(err) {
		case "":
		case "mutations_idempotency_key_key", "mutations.idempotency_key":
			return fmt.Errorf("%w: key %q is used by another mutation", ledger.ErrDuplicateKey, m.IdempotencyKey)
		case "mutations_run_id_key", "mutations.run_id":
			return fmt.Errorf("%w: run %s", ledger.ErrMutationExists, nm.RunID)
		}
		if err != nil {
			return s.dbErr("begin mutation", err)
		}
		cacheMutation(tx, row)
		noteMutation(tx, m.ID, m.RunID)
		if m.RunID == "" {
			return nil
		}
		ev := ledger.NewLifecycleEvent(m.RunID, ledger.EventMutationRecorded, map[string]any{
			"tool": m.Tool(), "idempotency_key": m.IdempotencyKey,
		})
		ev.MutationID = m.ID
		return s.logOwn(ctx, tx, ev)
	})
	if err != nil {
		return scripthost.Mutation{}, err
	}
	return m, nil
}

// outcomeTx loads a mutation whose outcome is about to be recorded and checks that its
// status is one of from.
func (s *Store) outcomeTx(ctx context.Context, tx Tx, id string, to any, from ...scripthost.MutationStatus) (scripthost.Mutation, error) {
	m, err := s.getMutation(ctx, tx, id)
	if err != nil {
		return m, err
	}
	for _, f := range from {
		if m.Status == f {
			return m, nil
		}
	}
	return m, refuse("mutation", id, m.Status, to, "allowed only from %s", joinStatuses(from))
}

func joinStatuses(ss []scripthost.MutationStatus) string {
	var parts []string
	for _, s := range ss {
		parts = append(parts, string(s))
	}
	return strings.Join(parts, " or ")
}

var unknownOutcome = []scripthost.MutationStatus{
	scripthost.MutationInFlight, scripthost.MutationNeedsReconcile, scripthost.MutationIndeterminate,
}

// applyRun records an applied (or skipped) mutation on its run: outcome, status
// active, on through mutated to emitting.
func (s *Store) applyRun(ctx context.Context, tx Tx, runID string, outcome scripthost.Outcome, now time.Time) error {
	rec, err := s.getRun(ctx, tx, runID)
	if err != nil {
		return err
	}
	if rec.Phase != scripthost.RunMutating {
		return refuse("run", runID, rec.Phase, scripthost.RunMutated, "run is in phase %s, not mutating", rec.Phase)
	}
	_, err = s.saveOutcome(ctx, tx, rec, outcome, now)
	return err
}

// failRun releases the run's events and gives it status with the error. A cancel
// requested while the outcome was unknown lapses: the run is failed or paused, and
// what takes it over (a retry run) is a run of its own, which an operator cancels anew.
func (s *Store) failRun(ctx context.Context, tx Tx, runID string, status scripthost.RunStatus, msg string, class scripthost.ErrorClass, now time.Time) error {
	rec, err := s.getRun(ctx, tx, runID)
	if err != nil {
		return err
	}
	if err := s.setRunEvents(ctx, tx, runID, scripthost.EventPending); err != nil {
		return err
	}
	rec.Status, rec.Error, rec.ErrorClass, rec.cancel = status, msg, class, nil
	rec.UpdatedAt = now
	return s.saveRun(ctx, tx, rec)
}

// ApplyMutation marks the mutation applied and moves its run to mutated.
func (s *Store) ApplyMutation(ctx context.Context, mutationID string, result json.RawMessage) (scripthost.Mutation, error) {
	if err := checkJSON("mutation result", result); err != nil {
		return scripthost.Mutation{}, err
	}
	var out scripthost.Mutation
	err := s.mustWriteRedo(ctx, func(ctx context.Context, tx Tx) error {
		m, err := s.outcomeTx(ctx, tx, mutationID, scripthost.MutationApplied, unknownOutcome...)
		if err != nil {
			return err
		}
		now := s.now()
		m.Status, m.Result, m.Error, m.ErrorClass, m.UpdatedAt = scripthost.MutationApplied, result, "", "", now
		if err := s.saveMutation(ctx, tx, m); err != nil {
			return err
		}
		if m.RunID != "" {
			if err := s.applyRun(ctx, tx, m.RunID, scripthost.Outcome{Status: scripthost.OutcomeApplied, Result: result}, now); err != nil {
				return err
			}
		}
		out = m
		return nil
	})
	return out, err
}

// FailMutation marks the mutation failed, releases its run's events and gives the run
// the status of the cause's class.
func (s *Store) FailMutation(ctx context.Context, mutationID string, cause *scripthost.Error) (scripthost.Mutation, error) {
	return s.failMutation(ctx, mutationID, cause, func(ctx context.Context, tx Tx, runID string, now time.Time) error {
		return s.failRun(ctx, tx, runID, cause.Class.Info().Status, cause.Error(), cause.Class, now)
	})
}

// FailMutationToNext marks the mutation failed and moves its run on to next with the
// failure as its outcome, releasing the run's events first when release is set.
func (s *Store) FailMutationToNext(ctx context.Context, mutationID string, cause *scripthost.Error, release bool) (scripthost.Mutation, error) {
	return s.failMutation(ctx, mutationID, cause, func(ctx context.Context, tx Tx, runID string, now time.Time) error {
		if release {
			if err := s.setRunEvents(ctx, tx, runID, scripthost.EventPending); err != nil {
				return err
			}
		}
		msg := cause.Message
		if msg == "" {
			msg = cause.Error()
		}
		return s.applyRun(ctx, tx, runID, scripthost.Outcome{Status: scripthost.OutcomeFailed,
			Error: &scripthost.OutcomeError{Class: cause.Class, Code: cause.Code, Message: msg}}, now)
	})
}

// failMutation records a definite failure of the mutation and lets then move its run.
func (s *Store) failMutation(ctx context.Context, mutationID string, cause *scripthost.Error,
	then func(ctx context.Context, tx Tx, runID string, now time.Time) error) (scripthost.Mutation, error) {
	if cause == nil {
		return scripthost.Mutation{}, fmt.Errorf("%s: fail mutation %s: a cause is required", s.name, mutationID)
	}
	var out scripthost.Mutation
	err := s.mustWriteRedo(ctx, func(ctx context.Context, tx Tx) error {
		m, err := s.outcomeTx(ctx, tx, mutationID, scripthost.MutationFailed, unknownOutcome...)
		if err != nil {
			return err
		}
		now := s.now()
		m.Status, m.Error, m.ErrorClass, m.UpdatedAt = scripthost.MutationFailed, cause.Error(), cause.Class, now
		if err := s.saveMutation(ctx, tx, m); err != nil {
			return err
		}
		if m.RunID != "" {
			if err := then(ctx, tx, m.RunID, now); err != nil {
				return err
			}
		}
		out = m
		return nil
	})
	return out, err
}

// MarkNeedsReconcile records a reconcile attempt that could not decide; the run waits
// in paused:reconciliation until the next attempt.
func (s *Store) MarkNeedsReconcile(ctx context.Context, mutationID string, attempts int, next time.Time, reason string) (scripthost.Mutation, error) {
	var out scripthost.Mutation
	err := s.mustWriteRedo(ctx, func(ctx context.Context, tx Tx) error {
		m, err := s.outcomeTx(ctx, tx, mutationID, scripthost.MutationNeedsReconcile,
			scripthost.MutationInFlight, scripthost.MutationNeedsReconcile)
		if err != nil {
			return err
		}
		now := s.now()
		m.Status, m.ReconcileAttempts, m.NextReconcileAt = scripthost.MutationNeedsReconcile, attempts, norm(next)
		m.Error, m.UpdatedAt = reason, now
		out = m
		if err := s.saveMutation(ctx, tx, m); err != nil {
			return err
		}
		if m.RunID == "" {
			return nil
		}
		rec, err := s.getRun(ctx, tx, m.RunID)
		if err != nil {
			return err
		}
		rec.Status, rec.Error, rec.ErrorClass, rec.NotBefore = scripthost.StatusPausedReconciliation, reason, "", norm(next)
		rec.UpdatedAt = now
		return s.saveRun(ctx, tx, rec)
	})
	return out, err
}

// MarkIndeterminate hands the mutation to a person and pauses its run for
// reconciliation; the run keeps its events.
func (s *Store) MarkIndeterminate(ctx context.Context, mutationID string, reason string) (scripthost.Mutation, error) {
	var out scripthost.Mutation
	err := s.mustWriteRedo(ctx, func(ctx context.Context, tx Tx) error {
		m, err := s.outcomeTx(ctx, tx, mutationID, scripthost.MutationIndeterminate,
			scripthost.MutationInFlight, scripthost.MutationNeedsReconcile)
		if err != nil {
			return err
		}
		now := s.now()
		m.Status, m.Error, m.UpdatedAt = scripthost.MutationIndeterminate, reason, now
		if err := s.saveMutation(ctx, tx, m); err != nil {
			return err
		}
		if m.RunID != "" {
			rec, err := s.getRun(ctx, tx, m.RunID)
			if err != nil {
				return err
			}
			rec.Status, rec.Error, rec.ErrorClass = scripthost.StatusPausedReconciliation, reason, ""
			rec.UpdatedAt = now
			if err := s.saveRun(ctx, tx, rec); err != nil {
				return err
			}
		}
		out = m
		return nil
	})
	return out, err
}
