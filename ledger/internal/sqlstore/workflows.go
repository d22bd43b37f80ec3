package sqlstore

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"

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
	Manifest   rawJSON `db:"manifest"`
	CreatedAt  nanos   `db:"created_at"`
}

func (r versionRow) version() (ledger.WorkflowVersion, error) {
	v := ledger.WorkflowVersion{
		Workflow: r.Workflow, Version: r.Version, Language: r.Language, Path: r.Path,
		Source: r.Source, Hash: r.Hash, Definition: r.Definition.msg(), CreatedAt: r.CreatedAt.Time(),
	}
	if len(r.Manifest) > 0 {
		if err := json.Unmarshal(r.Manifest, &v.Manifest); err != nil {
			return v, fmt.Errorf("ledger: workflow %q version %d: manifest: %w", r.Workflow, r.Version, err)
		}
	}
	return v, nil
}

const versionColumns = `workflow, version, language, path, source, hash, definition, manifest, created_at`

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
		return v, fmt.Errorf("%s: put workflow: name is required", s.name)
	}
	if err := checkJSON("workflow definition", v.Definition); err != nil {
		return v, err
	}
	if v.Hash == "" {
		sum := sha256.Sum256(v.Source)
		v.Hash = hex.EncodeToString(sum[:])
	}
	var out ledger.WorkflowVersion
	err := s.write(ctx, func(ctx context.Context, tx Tx) error {
		now := s.now()
		if s.d.LockWorkflow != "" {
			// Two hosts loading one workflow at once take turns: the second sees the
			// first's version.
			if _, err := tx.ExecContext(ctx, s.d.LockWorkflow, v.Workflow); err != nil {
				return s.dbErr("put workflow", err)
			}
		}
		var latest versionRow
		err := tx.GetContext(ctx, &latest, `SELECT `+versionColumns+` FROM workflow_versions
			WHERE workflow = ? ORDER BY version DESC LIMIT 1`, v.Workflow)
		moved := err == nil && v.Path != "" && latest.Path != "" && latest.Path != v.Path
		switch {
		case moved && !v.Replace:
			return &ledger.OriginError{Workflow: v.Workflow, Have: latest.Path, Want: v.Path}
		case err == nil && latest.Hash == v.Hash && !moved:
			out, err = latest.version()
			return err
		case err == nil:
			v.Version = latest.Version + 1
		case errors.Is(err, sql.ErrNoRows):
			v.Version = 1
		default:
			return s.dbErr("put workflow", err)
		}
		v.CreatedAt = now
		if _, err := tx.ExecContext(ctx, `INSERT INTO workflows (name, latest_version, paused, created_at) VALUES (?, ?, ?, ?)
			ON CONFLICT (name) DO UPDATE SET latest_version = excluded.latest_version`,
			v.Workflow, v.Version, false, nanos(now)); err != nil {
			return s.dbErr("put workflow", err)
		}
		row := versionRow{Workflow: v.Workflow, Version: v.Version, Language: v.Language, Path: v.Path,
			Source: v.Source, Hash: v.Hash, Definition: rawJSON(v.Definition), CreatedAt: nanos(now)}
		if len(v.Manifest) > 0 {
			m, err := json.Marshal(v.Manifest)
			if err != nil {
				return fmt.Errorf("%s: put workflow: manifest: %w", s.name, err)
			}
			row.Manifest = m
		}
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
	return row.version()
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
	return s.write(ctx, func(ctx context.Context, tx Tx) error {
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
		return fmt.Errorf("%s: append execution: execution id is required", s.name)
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
	return s.mustWrite(ctx, func(ctx context.Context, tx Tx) error {
		_, err := tx.NamedExecContext(ctx, `INSERT INTO execution_log (`+executionColumns+`) VALUES (`+namedList(executionColumns)+`)`, row)
		if s.d.UniqueViolation(err) != "" {
			return fmt.Errorf("%s: append execution %s step %q: %w", s.name, r.ExecutionID, r.StepID, ledger.ErrExecutionExists)
		}
		return s.dbErr("append execution", err)
	})
}

// ReserveExecution reserves the next execution number of planID: one more than any
// reserved or recorded. Writers racing on one plan take the next free number: a
// number another transaction reserved first is skipped.
func (s *Store) ReserveExecution(ctx context.Context, planID string) (int, error) {
	if planID == "" {
		return 0, fmt.Errorf("%s: reserve execution: plan id is required", s.name)
	}
	var n int
	err := s.mustWrite(ctx, func(ctx context.Context, tx Tx) error {
		var reserved []int
		if err := tx.SelectContext(ctx, &reserved, `SELECT number FROM plan_executions WHERE plan_id = ?`, planID); err != nil {
			return s.dbErr("reserve execution", err)
		}
		var ids []string
		if err := tx.SelectContext(ctx, &ids, `SELECT execution_id FROM execution_log WHERE plan_id = ?`, planID); err != nil {
			return s.dbErr("reserve execution", err)
		}
		n = 0
		for _, r := range reserved {
			n = max(n, r)
		}
		for _, id := range ids {
			n = max(n, executionNumber(planID, id))
		}
		for {
			n++
			res, err := tx.ExecContext(ctx, `INSERT INTO plan_executions (plan_id, number, reserved_at) VALUES (?, ?, ?)
				ON CONFLICT DO NOTHING`, planID, n, nanos(s.now()))
			if err != nil {
				return s.dbErr("reserve execution", err)
			}
			if k, err := res.RowsAffected(); err != nil || k == 1 {
				return s.dbErr("reserve execution", err)
			}
		}
	})
	return n, err
}

// executionNumber is the number in an execution id "PLAN/N…" of planID (the leading
// digits after the slash), or 0.
func executionNumber(planID, id string) int {
	rest, ok := strings.CutPrefix(id, planID+"/")
	if !ok {
		return 0
	}
	end := 0
	for end < len(rest) && rest[end] >= '0' && rest[end] <= '9' {
		end++
	}
	n, err := strconv.Atoi(rest[:end])
	if err != nil {
		return 0
	}
	return n
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
