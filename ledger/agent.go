package ledger

import (
	"context"
	"encoding/json"
	"errors"
	"time"
)

// ErrTurnExists: the session already has a record of this model turn. An executor that
// sees it after a crash knows the turn was answered and must not be sent again.
var ErrTurnExists = errors.New("ledger: agent turn already recorded")

// AgentStore records agent sessions: the task, every model turn (request and response,
// redacted) and every tool call with its approval decision and outcome. Mutating tool
// calls are also mutations (Store.BeginMutation …); a tool call names its mutation.
// Both bundled stores implement it.
type AgentStore interface {
	// CreateAgentSession stores a new session; its ID must be unused.
	CreateAgentSession(ctx context.Context, s AgentSession) error
	// AgentSession returns a session, or ErrNotFound.
	AgentSession(ctx context.Context, id string) (AgentSession, error)
	// AgentSessions lists the sessions matching f, newest first.
	AgentSessions(ctx context.Context, f AgentSessionFilter) ([]AgentSession, error)
	// UpdateAgentSession sets a session's status and state.
	UpdateAgentSession(ctx context.Context, id, status string, state json.RawMessage) error
	// AppendAgentTurn records a finished model turn; ErrTurnExists when the session
	// already has one for the step and turn number.
	AppendAgentTurn(ctx context.Context, t AgentTurn) error
	// AgentTurns lists a session's turns in the order they were recorded.
	AgentTurns(ctx context.Context, session string) ([]AgentTurn, error)
	// PutAgentToolCall inserts or replaces the record of a tool call (session, call id).
	PutAgentToolCall(ctx context.Context, c AgentToolCall) error
	// AgentToolCalls lists a session's tool calls in the order they were first recorded.
	AgentToolCalls(ctx context.Context, session string) ([]AgentToolCall, error)
}

// AgentSession is one run of an agent task.
type AgentSession struct {
	ID     string          `json:"id"`
	Task   string          `json:"task"`   // the task's name or path
	Spec   json.RawMessage `json:"spec"`   // the validated task, redacted
	Status string          `json:"status"` // running, paused, completed, failed
	// State is the executor's own record of step statuses and token usage.
	State     json.RawMessage `json:"state,omitempty"`
	CreatedAt time.Time       `json:"created_at"`
	UpdatedAt time.Time       `json:"updated_at"`
}

// AgentSessionFilter selects sessions; zero fields match everything.
type AgentSessionFilter struct {
	Status string
	// Limit keeps the newest Limit sessions; 0 keeps all.
	Limit int
	// Search selects sessions whose id, task or status contains it (ignoring case).
	Search string
	// Page, when set, starts after Page.After (sessions are listed newest first by
	// (created_at, id)).
	Page *Page
}

// AgentTurn is one model request and its answer.
type AgentTurn struct {
	Session          string          `json:"session"`
	StepID           string          `json:"step_id"`
	Turn             int             `json:"turn"`
	Request          json.RawMessage `json:"request"`
	Response         json.RawMessage `json:"response"`
	PromptTokens     int             `json:"prompt_tokens"`
	CompletionTokens int             `json:"completion_tokens"`
	Retries          int             `json:"retries"`
	StartedAt        time.Time       `json:"started_at"`
	DurationMS       int64           `json:"duration_ms"`
}

// AgentToolCall is one tool call a model asked for.
type AgentToolCall struct {
	Session   string          `json:"session"`
	CallID    string          `json:"call_id"`
	StepID    string          `json:"step_id"`
	Turn      int             `json:"turn"`
	Seq       int             `json:"seq"`
	Tool      string          `json:"tool"`
	Arguments json.RawMessage `json:"arguments,omitempty"`
	// Status: requested, pending_approval, approved, denied, skipped, running, done, failed.
	Status     string          `json:"status"`
	Result     json.RawMessage `json:"result,omitempty"`
	Error      string          `json:"error,omitempty"`
	MutationID string          `json:"mutation_id,omitempty"`
	// Decision records the approval: "auto", "approved by …", "denied by …", "policy: …".
	Decision   string    `json:"decision,omitempty"`
	DurationMS int64     `json:"duration_ms"`
	UpdatedAt  time.Time `json:"updated_at"`
	// Volatile marks a record a crash may lose because losing it costs nothing (a
	// read-only call, which runs again): it is committed without waiting for the disk
	// and made durable by the next write that waits.
	Volatile bool `json:"-"`
}
