package agent

import (
	"encoding/json"
	"fmt"
	"io"
	"sync"
	"time"
)

// Event types of the JSONL stream.
const (
	EventSessionStart      = "session_start"
	EventStage             = "stage" // status enter, execute or exit
	EventStepStart         = "step_start"
	EventModelRequest      = "model_request"
	EventModelResponse     = "model_response"
	EventModelRetry        = "model_retry"
	EventContextTrimmed    = "context_trimmed"
	EventToolCall          = "tool_call"
	EventToolResult        = "tool_result"
	EventApprovalRequested = "approval_requested"
	EventApprovalDecided   = "approval_decided"
	EventCompletionRefused = "completion_refused"
	EventStepComplete      = "step_complete"
	EventStepFailed        = "step_failed"
	EventStepBlocked       = "step_blocked"
	EventSessionPaused     = "session_paused"
	EventSessionEnd        = "session_end"
)

// Event is one line of the JSONL stream.
type Event struct {
	Type       string    `json:"type"`
	Time       time.Time `json:"time"`
	Session    string    `json:"session"`
	Step       string    `json:"step,omitempty"`
	Turn       int       `json:"turn,omitempty"`
	Tool       string    `json:"tool,omitempty"`
	Call       string    `json:"call,omitempty"`
	Status     string    `json:"status,omitempty"`
	Tokens     *Usage    `json:"tokens,omitempty"`
	DurationMS int64     `json:"duration_ms,omitempty"`
	Attempt    int       `json:"attempt,omitempty"`
	Code       string    `json:"code,omitempty"`
	Message    string    `json:"message,omitempty"`
}

// MarshalJSON writes the event with its type under "event", as the run and plan
// streams name it, and under "type" as well, the name this stream used first.
func (e Event) MarshalJSON() ([]byte, error) {
	type plain Event
	return json.Marshal(struct {
		Event string `json:"event"`
		plain
	}{e.Type, plain(e)})
}

// sink writes events as JSONL and/or human progress lines.
type sink struct {
	mu       sync.Mutex
	jsonl    io.Writer
	progress io.Writer
	verbose  bool
}

func (s *sink) emit(e Event) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.jsonl != nil {
		b, _ := json.Marshal(e)
		s.jsonl.Write(append(b, '\n'))
	}
	if s.progress == nil {
		return
	}
	var line string
	switch e.Type {
	case EventStepStart:
		line = fmt.Sprintf("step %s: %s", e.Step, e.Message)
	case EventToolCall:
		line = fmt.Sprintf("  tool %s (turn %d)", e.Tool, e.Turn)
	case EventToolResult:
		line = fmt.Sprintf("  result %s: %s", e.Tool, e.Status)
		if e.Message != "" {
			line += ": " + e.Message
		}
	case EventStepComplete:
		line = fmt.Sprintf("step %s complete (%d turns, %d tokens): %s", e.Step, e.Turn, tokens(e.Tokens), e.Message)
	case EventStepFailed:
		line = fmt.Sprintf("step %s failed [%s]: %s", e.Step, e.Code, e.Message)
	case EventStepBlocked:
		line = fmt.Sprintf("step %s blocked: %s", e.Step, e.Message)
	case EventApprovalRequested:
		line = fmt.Sprintf("  approval needed for %s (call %s)", e.Tool, e.Call)
	case EventSessionPaused:
		line = fmt.Sprintf("session %s paused: %s", e.Session, e.Message)
	case EventSessionEnd:
		line = fmt.Sprintf("session %s %s (%d tokens)", e.Session, e.Status, tokens(e.Tokens))
	default:
		if !s.verbose {
			return
		}
		line = fmt.Sprintf("  %s %s %s", e.Type, e.Step, e.Message)
	}
	fmt.Fprintln(s.progress, line)
}

func tokens(u *Usage) int {
	if u == nil {
		return 0
	}
	return u.Total()
}
