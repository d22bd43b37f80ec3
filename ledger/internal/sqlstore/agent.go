package sqlstore

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/scripthost/scripthost/ledger"
)

var _ ledger.AgentStore = (*Store)(nil)

type agentSessionRow struct {
	ID        string  `db:"id"`
	Task      string  `db:"task"`
	Spec      rawJSON `db:"spec"`
	Status    string  `db:"status"`
	State     rawJSON `db:"state"`
	CreatedAt nanos   `db:"created_at"`
	UpdatedAt nanos   `db:"updated_at"`
}

// CreateAgentSession stores a new session.
func (s *Store) CreateAgentSession(ctx context.Context, a ledger.AgentSession) error {
	if a.ID == "" || a.Status == "" {
		return fmt.Errorf("%s: create agent session: id and status are required", s.name)
	}
	for what, b := range map[string][]byte{"spec": a.Spec, "state": a.State} {
		if err := checkJSON("agent session "+what, b); err != nil {
			return err
		}
	}
	now := nanos(s.now())
	row := agentSessionRow{ID: a.ID, Task: a.Task, Spec: rawJSON(a.Spec), Status: a.Status, State: rawJSON(a.State), CreatedAt: now, UpdatedAt: now}
	return s.mustWrite(ctx, func(ctx context.Context, tx Tx) error {
		_, err := tx.NamedExecContext(ctx, `INSERT INTO agent_sessions (id, task, spec, status, state, created_at, updated_at)
			VALUES (:id, :task, :spec, :status, :state, :created_at, :updated_at)`, row)
		if s.d.UniqueViolation(err) != "" {
			return fmt.Errorf("%s: agent session %s already exists", s.name, a.ID)
		}
		return s.dbErr("create agent session", err)
	})
}

// AgentSession returns a session, or ErrNotFound.
func (s *Store) AgentSession(ctx context.Context, id string) (ledger.AgentSession, error) {
	var r agentSessionRow
	err := s.r.GetContext(ctx, &r, `SELECT id, task, spec, status, state, created_at, updated_at FROM agent_sessions WHERE id = ?`, id)
	if errors.Is(err, sql.ErrNoRows) {
		return ledger.AgentSession{}, fmt.Errorf("%s: agent session %s: %w", s.name, id, ledger.ErrNotFound)
	}
	if err != nil {
		return ledger.AgentSession{}, s.dbErr("read agent session", err)
	}
	return r.session(), nil
}

// AgentSessions lists the sessions matching f, newest first.
func (s *Store) AgentSessions(ctx context.Context, f ledger.AgentSessionFilter) ([]ledger.AgentSession, error) {
	if f.Limit < 0 {
		return nil, fmt.Errorf("%s: list agent sessions: limit %d is negative", s.name, f.Limit)
	}
	q := `SELECT id, task, spec, status, state, created_at, updated_at FROM agent_sessions`
	var where []string
	var args []any
	if f.Status != "" {
		where, args = append(where, "status = ?"), append(args, f.Status)
	}
	if f.Search != "" {
		w, a := searchWhere(f.Search, "id", "task", "status")
		where, args = append(where, w), append(args, a...)
	}
	where, args, _ = pageBy(f.Page, where, args) // newest first, paged or not
	if len(where) > 0 {
		q += ` WHERE ` + strings.Join(where, " AND ")
	}
	q += ` ORDER BY created_at DESC, id DESC`
	if f.Limit > 0 {
		q += ` LIMIT ?`
		args = append(args, f.Limit)
	}
	var rows []agentSessionRow
	if err := s.r.SelectContext(ctx, &rows, q, args...); err != nil {
		return nil, s.dbErr("list agent sessions", err)
	}
	out := make([]ledger.AgentSession, 0, len(rows))
	for _, r := range rows {
		out = append(out, r.session())
	}
	return out, nil
}

func (r agentSessionRow) session() ledger.AgentSession {
	return ledger.AgentSession{ID: r.ID, Task: r.Task, Spec: r.Spec.msg(), Status: r.Status, State: r.State.msg(),
		CreatedAt: r.CreatedAt.Time(), UpdatedAt: r.UpdatedAt.Time()}
}

// UpdateAgentSession sets a session's status and state.
func (s *Store) UpdateAgentSession(ctx context.Context, id, status string, state json.RawMessage) error {
	if err := checkJSON("agent session state", state); err != nil {
		return err
	}
	return s.mustWrite(ctx, func(ctx context.Context, tx Tx) error {
		res, err := tx.ExecContext(ctx, `UPDATE agent_sessions SET status = ?, state = ?, updated_at = ? WHERE id = ?`,
			status, rawJSON(state), nanos(s.now()), id)
		if err != nil {
			return s.dbErr("update agent session", err)
		}
		if n, err := res.RowsAffected(); err == nil && n == 0 {
			return fmt.Errorf("%s: agent session %s: %w", s.name, id, ledger.ErrNotFound)
		}
		return nil
	})
}

type agentTurnRow struct {
	Session          string  `db:"session_id"`
	StepID           string  `db:"step_id"`
	Turn             int     `db:"turn"`
	Request          rawJSON `db:"request"`
	Response         rawJSON `db:"response"`
	PromptTokens     int     `db:"prompt_tokens"`
	CompletionTokens int     `db:"completion_tokens"`
	Retries          int     `db:"retries"`
	StartedAt        nanos   `db:"started_at"`
	DurationMS       int64   `db:"duration_ms"`
	RecordedAt       nanos   `db:"recorded_at"`
}

const agentTurnColumns = `session_id, step_id, turn, request, response, prompt_tokens, completion_tokens, retries, started_at, duration_ms, recorded_at`

// AppendAgentTurn records a finished model turn.
func (s *Store) AppendAgentTurn(ctx context.Context, t ledger.AgentTurn) error {
	if t.Session == "" || t.Turn <= 0 {
		return fmt.Errorf("%s: append agent turn: session and a positive turn are required", s.name)
	}
	for what, b := range map[string][]byte{"request": t.Request, "response": t.Response} {
		if err := checkJSON("agent turn "+what, b); err != nil {
			return err
		}
	}
	row := agentTurnRow{Session: t.Session, StepID: t.StepID, Turn: t.Turn, Request: rawJSON(t.Request), Response: rawJSON(t.Response),
		PromptTokens: t.PromptTokens, CompletionTokens: t.CompletionTokens, Retries: t.Retries,
		StartedAt: nanos(norm(t.StartedAt)), DurationMS: t.DurationMS, RecordedAt: nanos(s.now())}
	return s.mustWrite(ctx, func(ctx context.Context, tx Tx) error {
		var ord int64
		if err := tx.GetContext(ctx, &ord, `SELECT COALESCE(MAX(ord), 0) + 1 FROM agent_turns WHERE session_id = ?`, t.Session); err != nil {
			return s.dbErr("append agent turn", err)
		}
		_, err := tx.ExecContext(ctx, `INSERT INTO agent_turns (ord, `+agentTurnColumns+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
			ord, row.Session, row.StepID, row.Turn, row.Request, row.Response, row.PromptTokens, row.CompletionTokens,
			row.Retries, row.StartedAt, row.DurationMS, row.RecordedAt)
		if s.d.UniqueViolation(err) != "" {
			return fmt.Errorf("%s: session %s step %q turn %d: %w", s.name, t.Session, t.StepID, t.Turn, ledger.ErrTurnExists)
		}
		return s.dbErr("append agent turn", err)
	})
}

// AgentTurns lists a session's turns in the order they were recorded.
func (s *Store) AgentTurns(ctx context.Context, session string) ([]ledger.AgentTurn, error) {
	var rows []agentTurnRow
	if err := s.r.SelectContext(ctx, &rows, `SELECT `+agentTurnColumns+` FROM agent_turns WHERE session_id = ? ORDER BY ord`, session); err != nil {
		return nil, s.dbErr("list agent turns", err)
	}
	out := make([]ledger.AgentTurn, 0, len(rows))
	for _, r := range rows {
		out = append(out, ledger.AgentTurn{Session: r.Session, StepID: r.StepID, Turn: r.Turn, Request: r.Request.msg(),
			Response: r.Response.msg(), PromptTokens: r.PromptTokens, CompletionTokens: r.CompletionTokens,
			Retries: r.Retries, StartedAt: r.StartedAt.Time(), DurationMS: r.DurationMS})
	}
	return out, nil
}

type agentCallRow struct {
	Session    string  `db:"session_id"`
	CallID     string  `db:"call_id"`
	StepID     string  `db:"step_id"`
	Turn       int     `db:"turn"`
	Seq        int     `db:"seq"`
	Tool       string  `db:"tool"`
	Arguments  rawJSON `db:"arguments"`
	Status     string  `db:"status"`
	Result     rawJSON `db:"result"`
	Error      string  `db:"error"`
	MutationID string  `db:"mutation_id"`
	Decision   string  `db:"decision"`
	DurationMS int64   `db:"duration_ms"`
	UpdatedAt  nanos   `db:"updated_at"`
}

const agentCallColumns = `session_id, call_id, step_id, turn, seq, tool, arguments, status, result, error, mutation_id, decision, duration_ms, updated_at`

// PutAgentToolCall inserts or replaces the record of a tool call.
func (s *Store) PutAgentToolCall(ctx context.Context, c ledger.AgentToolCall) error {
	if c.Session == "" || c.CallID == "" || c.Status == "" {
		return fmt.Errorf("%s: put agent tool call: session, call id and status are required", s.name)
	}
	for what, b := range map[string][]byte{"arguments": c.Arguments, "result": c.Result} {
		if err := checkJSON("agent tool call "+what, b); err != nil {
			return err
		}
	}
	now := nanos(s.now())
	write := s.mustWrite
	if c.Volatile {
		write = s.mustWriteRedo
	}
	return write(ctx, func(ctx context.Context, tx Tx) error {
		res, err := tx.ExecContext(ctx, `UPDATE agent_tool_calls SET step_id = ?, turn = ?, seq = ?, tool = ?, arguments = ?,
			status = ?, result = ?, error = ?, mutation_id = ?, decision = ?, duration_ms = ?, updated_at = ?
			WHERE session_id = ? AND call_id = ?`,
			c.StepID, c.Turn, c.Seq, c.Tool, rawJSON(c.Arguments), c.Status, rawJSON(c.Result), c.Error, c.MutationID,
			c.Decision, c.DurationMS, now, c.Session, c.CallID)
		if err != nil {
			return s.dbErr("put agent tool call", err)
		}
		if n, err := res.RowsAffected(); err != nil || n > 0 {
			return s.dbErr("put agent tool call", err)
		}
		var ord int64
		if err := tx.GetContext(ctx, &ord, `SELECT COALESCE(MAX(ord), 0) + 1 FROM agent_tool_calls WHERE session_id = ?`, c.Session); err != nil {
			return s.dbErr("put agent tool call", err)
		}
		_, err = tx.ExecContext(ctx, `INSERT INTO agent_tool_calls (ord, created_at, `+agentCallColumns+`)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
			ord, now, c.Session, c.CallID, c.StepID, c.Turn, c.Seq, c.Tool, rawJSON(c.Arguments), c.Status,
			rawJSON(c.Result), c.Error, c.MutationID, c.Decision, c.DurationMS, now)
		return s.dbErr("put agent tool call", err)
	})
}

// AgentToolCalls lists a session's tool calls in the order they were first recorded.
func (s *Store) AgentToolCalls(ctx context.Context, session string) ([]ledger.AgentToolCall, error) {
	var rows []agentCallRow
	if err := s.r.SelectContext(ctx, &rows, `SELECT `+agentCallColumns+` FROM agent_tool_calls WHERE session_id = ? ORDER BY ord`, session); err != nil {
		return nil, s.dbErr("list agent tool calls", err)
	}
	out := make([]ledger.AgentToolCall, 0, len(rows))
	for _, r := range rows {
		out = append(out, ledger.AgentToolCall{Session: r.Session, CallID: r.CallID, StepID: r.StepID, Turn: r.Turn, Seq: r.Seq,
			Tool: r.Tool, Arguments: r.Arguments.msg(), Status: r.Status, Result: r.Result.msg(), Error: r.Error,
			MutationID: r.MutationID, Decision: r.Decision, DurationMS: r.DurationMS, UpdatedAt: r.UpdatedAt.Time()})
	}
	return out, nil
}
