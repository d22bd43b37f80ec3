package agent

import (
	"context"
	"fmt"

	"github.com/scripthost/scripthost/ledger"
)

// SessionStatuses are the statuses a session can have.
var SessionStatuses = []string{StatusRunning, StatusPaused, StatusCompleted, StatusFailed}

// Transcript is a session with its model turns and tool calls, as
// `scripthost agent show --json` and the HTTP API of `scripthost serve` print it.
type Transcript struct {
	Session ledger.AgentSession    `json:"session"`
	Turns   []ledger.AgentTurn     `json:"turns"`
	Calls   []ledger.AgentToolCall `json:"calls"`
	// Usage sums the tokens of every recorded turn.
	Usage Usage `json:"usage"`
}

// LoadTranscript reads a session's transcript; ErrNotFound when there is no such session.
func LoadTranscript(ctx context.Context, as ledger.AgentStore, id string) (Transcript, error) {
	var t Transcript
	var err error
	if t.Session, err = as.AgentSession(ctx, id); err != nil {
		return t, fmt.Errorf("agent: %w", err)
	}
	if t.Turns, err = as.AgentTurns(ctx, id); err != nil {
		return t, fmt.Errorf("agent: %w", err)
	}
	if t.Calls, err = as.AgentToolCalls(ctx, id); err != nil {
		return t, fmt.Errorf("agent: %w", err)
	}
	for _, turn := range t.Turns {
		t.Usage.add(Usage{PromptTokens: turn.PromptTokens, CompletionTokens: turn.CompletionTokens})
	}
	return t, nil
}
