package sqlite

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"

	"github.com/mattn/go-sqlite3"

	"github.com/scripthost/scripthost/ledger"
)

type versionRow struct {
	Workflow   string  `db:"workflow"`
	Version    int     `db:"version"`
	Language   string  `db:"language"`
	Path       string  `db:"path"`
	Source     []byte  `db:"source"`
	Hash       string  `db:"hash"`
	Definition rawJSON `db:"definition"`
	CreatedAt  nanos   `db:"created_at"`
}

func (r versionRow) version() ledger.WorkflowVersion {
	return ledger.WorkflowVersion{
		Workflow: r.Workflow, Version: r.Version, Language: r.Language, Path: r.Path,
		Source: r.Source, Hash: r.Hash, Definition: r.Definition.msg(), CreatedAt: r.CreatedAt.Time(),
	}
}

const versionColumns = `workflow, version, language, path, source, hash, definition, created_at`

type workflowRow struct {
	Name          string `db:"name"`
	LatestVersion int    `db:"latest_version"`
	Paused        bool   `db:"paused"`
	CreatedAt     nanos  `db:"created_at"`
}

func (r workflowRow) workflow() ledger.Workflow {
	return ledger.Workflow{Name: r.Name, LatestVersion: r.LatestVersion, Paused: r.Paused, CreatedAt: r.CreatedAt.Time()}
}

// PutWorkflow stores a new version of a workflow unless its hash and origin equal the
// latest version's, in which case the latest version is returned unchanged. A version
// from another origin is refused unless v.Replace is set. An empty Hash is computed
// from Source.
func (s *Store) PutWorkflow(ctx context.Context, v ledger.WorkflowVersion) (ledger.WorkflowVersion, error) {
	if v.Workflow == "" {
		return v, errors.New("sqlite: put workflow: name is required")
	}
	if err := checkJSON("workflow definition", v.Definition); err != nil {
		return v, err
	}
	if v.Hash == "" {
		sum := sha256.Sum256(v.Source)
		v.Hash = hex.EncodeToString(sum[:])
	}
	var out ledger.WorkflowVersion
	err := s.write(ctx, func(ctx context.Context, tx *wtx) error {
		now := s.now()
		var latest versionRow
		err := tx.GetContext(ctx, &latest, `SELECT `+versionColumns+` FROM workflow_versions
			WHERE workflow = ? ORDER BY version DESC LIMIT 1`, v.Workflow)
		moved := err == nil && v.Path != "" && latest.Path != "" && latest.Path != v.Path
		switch {
		case moved && !v.Replace:
			return &ledger.OriginError{Workflow: v.Workflow, Have: latest.Path, Want: v.Path}
		case err == nil && latest.Hash == v.Hash && !moved:
			out = latest.version()
			return nil
		case err == nil:
			v.Version = latest.Version + 1
		case errors.Is(err, sql.ErrNoRows):
			v.Version = 1
		default:
			return s.dbErr("put workflow", err)
		}
		v.CreatedAt = now
		if _, err := tx.ExecContext(ctx, `INSERT INTO workflows (name, latest_version, paused, created_at) VALUES (?, ?, 0, ?)
			ON CONFLICT (name) DO UPDATE SET latest_version = excluded.latest_version`,
			v.Workflow, v.Version, nanos(now)); err != nil {
			return s.dbErr("put workflow", err)
		}
		row := versionRow{Workflow: v.Workflow, Version: v.Version, Language: v.Language, Path: v.Path,
			Source: v.Source, Hash: v.Hash, Definition: rawJSON(v.Definition), CreatedAt: nanos(now)}
		if row.Source == nil {
			row.Source = []byte{}
		}
		if _, err := tx.NamedExecContext(ctx, `INSERT INTO workflow_versions (`+versionColumns+`) VALUES (`+namedList(versionColumns)+`)`, row); err != nil {
			return s.dbErr("put workflow", err)
		}
		out = v
		return nil
	})
	return out, err
}

// WorkflowVersion returns one stored version; version 0 means the latest.
func (s *Store) WorkflowVersion(ctx context.Context, workflow string, version int) (ledger.WorkflowVersion, error) {
	var row versionRow
	var err error
	if version == 0 {
		err = s.r.GetContext(ctx, &row, `SELECT `+versionColumns+` FROM workflow_versions
			WHERE workflow = ? ORDER BY version DESC LIMIT 1`, workflow)
	} else {
		err = s.r.GetContext(ctx, &row, `SELECT `+versionColumns+` FROM workflow_versions
			WHERE workflow = ? AND version = ?`, workflow, version)
	}
	if errors.Is(err, sql.ErrNoRows) {
		return ledger.WorkflowVersion{}, fmt.Errorf("%w: workflow %q version %d", ledger.ErrNotFound, workflow, version)
	}
	if err != nil {
		return ledger.WorkflowVersion{}, s.dbErr("read workflow", err)
	}
	return row.version(), nil
}

// Workflow returns the current state of a workflow.
func (s *Store) Workflow(ctx context.Context, name string) (ledger.Workflow, error) {
	var row workflowRow
	err := s.r.GetContext(ctx, &row, `SELECT name, latest_version, paused, created_at FROM workflows WHERE name = ?`, name)
	if errors.Is(err, sql.ErrNoRows) {
		return ledger.Workflow{}, fmt.Errorf("%w: workflow %q", ledger.ErrNotFound, name)
	}
	if err != nil {
		return ledger.Workflow{}, s.dbErr("read workflow", err)
	}
	return row.workflow(), nil
}

// Workflows lists all workflows by name.
func (s *Store) Workflows(ctx context.Context) ([]ledger.Workflow, error) {
	var rows []workflowRow
	if err := s.r.SelectContext(ctx, &rows, `SELECT name, latest_version, paused, created_at FROM workflows ORDER BY name`); err != nil {
		return nil, s.dbErr("list workflows", err)
	}
	out := make([]ledger.Workflow, 0, len(rows))
	for _, r := range rows {
		out = append(out, r.workflow())
	}
	return out, nil
}

// SetWorkflowPaused pauses or unpauses a workflow.
func (s *Store) SetWorkflowPaused(ctx context.Context, name string, paused bool) error {
	return s.write(ctx, func(ctx context.Context, tx *wtx) error {
		r, err := tx.ExecContext(ctx, `UPDATE workflows SET paused = ? WHERE name = ?`, paused, name)
		if err != nil {
			return s.dbErr("pause workflow", err)
		}
		if n, _ := r.RowsAffected(); n == 0 {
			return fmt.Errorf("%w: workflow %q", ledger.ErrNotFound, name)
		}
		return nil
	})
}

type executionRow struct {
	ExecutionID string  `db:"execution_id"`
	PlanID      string  `db:"plan_id"`
	StepID      string  `db:"step_id"`
	Seq         int     `db:"seq"`
	Tool        string  `db:"tool"`
	Arguments   rawJSON `db:"arguments"`
	StartedAt   nanos   `db:"started_at"`
	EndedAt     nanos   `db:"ended_at"`
	DurationMS  int64   `db:"duration_ms"`
	Success     bool    `db:"success"`
	ExitCode    int     `db:"exit_code"`
	Stdout      string  `db:"stdout"`
	Stderr      string  `db:"stderr"`
	Error       string  `db:"error"`
	ErrorCode   string  `db:"error_code"`
	Result      rawJSON `db:"result"`
	Diagnostics rawJSON `db:"diagnostics"`
}

const executionColumns = `execution_id, plan_id, step_id, seq, tool, arguments, started_at, ended_at,
	duration_ms, success, exit_code, stdout, stderr, error, error_code, result, diagnostics`

// AppendExecution appends a record to the execution log.
func (s *Store) AppendExecution(ctx context.Context, r ledger.ExecutionRecord) error {
	if r.ExecutionID == "" {
		return errors.New("sqlite: append execution: execution id is required")
	}
	for what, b := range map[string][]byte{"arguments": r.Arguments, "result": r.Result, "diagnostics": r.Diagnostics} {
		if err := checkJSON("execution "+what, b); err != nil {
			return err
		}
	}
	row := executionRow{
		ExecutionID: r.ExecutionID, PlanID: r.PlanID, StepID: r.StepID, Seq: r.Seq, Tool: r.Tool,
		Arguments: rawJSON(r.Arguments), StartedAt: nanos(norm(r.StartedAt)), EndedAt: nanos(norm(r.EndedAt)),
		DurationMS: r.DurationMS, Success: r.Success, ExitCode: r.ExitCode, Stdout: r.Stdout, Stderr: r.Stderr,
		Error: r.Error, ErrorCode: r.ErrorCode, Result: rawJSON(r.Result), Diagnostics: rawJSON(r.Diagnostics),
	}
	return s.mustWrite(ctx, func(ctx context.Context, tx *wtx) error {
		_, err := tx.NamedExecContext(ctx, `INSERT INTO execution_log (`+executionColumns+`) VALUES (`+namedList(executionColumns)+`)`, row)
		if isUnique(err) {
			return fmt.Errorf("sqlite: append execution %s step %q: %w", r.ExecutionID, r.StepID, ledger.ErrExecutionExists)
		}
		return s.dbErr("append execution", err)
	})
}

// isUnique reports a UNIQUE constraint violation.
func isUnique(err error) bool {
	var se sqlite3.Error
	return errors.As(err, &se) && se.ExtendedCode == sqlite3.ErrConstraintUnique
}

// ReserveExecution reserves the next execution number of planID: one more than any
// reserved or recorded.
func (s *Store) ReserveExecution(ctx context.Context, planID string) (int, error) {
	if planID == "" {
		return 0, errors.New("sqlite: reserve execution: plan id is required")
	}
	var n int
	err := s.mustWrite(ctx, func(ctx context.Context, tx *wtx) error {
		err := tx.GetContext(ctx, &n, `SELECT COALESCE(MAX(n), 0) + 1 FROM (
			SELECT number AS n FROM plan_executions WHERE plan_id = ?
			UNION ALL
			SELECT CAST(substr(execution_id, length(plan_id) + 2) AS INTEGER) FROM execution_log
			WHERE plan_id = ? AND substr(execution_id, 1, length(plan_id) + 1) = plan_id || '/')`, planID, planID)
		if err != nil {
			return s.dbErr("reserve execution", err)
		}
		_, err = tx.ExecContext(ctx, `INSERT INTO plan_executions (plan_id, number, reserved_at) VALUES (?, ?, ?)`,
			planID, n, nanos(s.now()))
		return s.dbErr("reserve execution", err)
	})
	return n, err
}

// Executions lists execution records matching f in the order they were appended.
func (s *Store) Executions(ctx context.Context, f ledger.ExecutionFilter) ([]ledger.ExecutionRecord, error) {
	var where []string
	var args []any
	if f.ExecutionID != "" {
		where, args = append(where, "execution_id = ?"), append(args, f.ExecutionID)
	}
	if f.PlanID != "" {
		where, args = append(where, "plan_id = ?"), append(args, f.PlanID)
	}
	q := `SELECT ` + executionColumns + ` FROM execution_log`
	if len(where) > 0 {
		q += ` WHERE ` + strings.Join(where, " AND ")
	}
	q += ` ORDER BY id`
	var rows []executionRow
	if err := s.r.SelectContext(ctx, &rows, q, args...); err != nil {
		return nil, s.dbErr("list executions", err)
	}
	out := make([]ledger.ExecutionRecord, 0, len(rows))
	for _, r := range rows {
		out = append(out, ledger.ExecutionRecord{
			ExecutionID: r.ExecutionID, PlanID: r.PlanID, StepID: r.StepID, Seq: r.Seq, Tool: r.Tool,
			Arguments: r.Arguments.msg(), StartedAt: r.StartedAt.Time(), EndedAt: r.EndedAt.Time(),
			DurationMS: r.DurationMS, Success: r.Success, ExitCode: r.ExitCode, Stdout: r.Stdout,
			Stderr: r.Stderr, Error: r.Error, ErrorCode: r.ErrorCode, Result: r.Result.msg(),
			Diagnostics: r.Diagnostics.msg(),
		})
	}
	return out, nil
}
