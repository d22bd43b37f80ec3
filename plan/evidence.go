package plan

import (
	"bytes"
	"context"
	"encoding/json"
	"time"

	"github.com/scripthost/scripthost/ledger"
)

// Event types of the JSONL stream.
const (
	EventStepStart    = "step_start"
	EventToolCall     = "tool_call"
	EventToolResult   = "tool_result"
	EventStepComplete = "step_complete"
	EventStepFailed   = "step_failed"
	EventPlanComplete = "plan_complete"
)

// Event is one line of the JSONL event stream. Arguments, results and errors are
// redacted.
type Event struct {
	Type        string          `json:"event"`
	Time        time.Time       `json:"time"`
	PlanID      string          `json:"plan_id"`
	ExecutionID string          `json:"execution_id,omitempty"`
	StepID      string          `json:"step_id,omitempty"`
	Tool        string          `json:"tool,omitempty"`
	Attempt     int             `json:"attempt,omitempty"`
	Arguments   json.RawMessage `json:"arguments,omitempty"`
	Result      json.RawMessage `json:"result,omitempty"`
	Reused      bool            `json:"reused,omitempty"`
	Status      string          `json:"status,omitempty"`
	Code        string          `json:"code,omitempty"`
	Error       string          `json:"error,omitempty"`
}

// emit writes one event line. A failing writer does not stop the plan: the ledger,
// not the stream, is the evidence.
func (e *Executor) emit(ev Event) {
	if e.o.Events == nil {
		return
	}
	if ev.Time.IsZero() {
		ev.Time = e.o.Clock().UTC()
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if enc.Encode(ev) != nil {
		return
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	_, _ = e.o.Events.Write(buf.Bytes())
}

// Diagnostics is what an execution record's diagnostics field holds.
type Diagnostics struct {
	PlanHash        string    `json:"plan_hash"`
	ExecutionNumber int       `json:"execution_number"`
	Operation       string    `json:"operation,omitempty"`
	Attempts        int       `json:"attempts"`
	AttemptErrors   []string  `json:"attempt_errors,omitempty"`
	BackoffMS       []int64   `json:"backoff_ms,omitempty"`
	MutationID      string    `json:"mutation_id,omitempty"`
	IdempotencyKey  string    `json:"idempotency_key,omitempty"`
	ReusedMutation  bool      `json:"reused_mutation,omitempty"`
	Confirmed       bool      `json:"confirmed,omitempty"`
	AuthorizedBy    string    `json:"authorized_by,omitempty"`
	AuthorizedAt    time.Time `json:"authorized_at,omitzero"`
	Resumed         bool      `json:"resumed,omitempty"`
	// Intent is the plan's intent and Description the step's: why it ran.
	Intent      string `json:"intent,omitempty"`
	Description string `json:"description,omitempty"`
	// Artifacts are what the step produced beyond its result: the diagnostics of a
	// checker, one artifact each.
	Artifacts []Artifact `json:"artifacts,omitempty"`
}

// ArtifactDiagnostic is the kind of an artifact holding one checker diagnostic.
const ArtifactDiagnostic = "diagnostic"

// Artifact is one thing a step produced, kept in its evidence. A diagnostic says
// what the checker found where: level (error, warning, note), message, file, line,
// column and the checker's code.
type Artifact struct {
	Kind    string `json:"kind"`
	Checker string `json:"checker,omitempty"`
	Level   string `json:"level,omitempty"`
	Message string `json:"message,omitempty"`
	File    string `json:"file,omitempty"`
	Line    int    `json:"line,omitempty"`
	Column  int    `json:"column,omitempty"`
	Code    string `json:"code,omitempty"`
}

// artifacts reads the diagnostics a tool result reports ({"checker", "diagnostics":
// [{level, message, file, line, column, code}]}) as diagnostic artifacts.
func artifacts(result json.RawMessage) []Artifact {
	var out struct {
		Checker     string     `json:"checker"`
		Diagnostics []Artifact `json:"diagnostics"`
	}
	if json.Unmarshal(result, &out) != nil {
		return nil
	}
	var arts []Artifact
	for _, d := range out.Diagnostics {
		if d.Message == "" {
			continue
		}
		d.Kind, d.Checker = ArtifactDiagnostic, out.Checker
		arts = append(arts, d)
	}
	return arts
}

func diagHash(raw json.RawMessage) string {
	var d Diagnostics
	if json.Unmarshal(raw, &d) != nil {
		return ""
	}
	return d.PlanHash
}

// Records returns the execution records an execution id names, in order: one step's
// record ("<plan>/<n>/<step>"), every step of one execution ("<plan>/<n>"), or every
// execution of a plan ("<plan>").
func Records(ctx context.Context, store ledger.Store, id string) ([]ledger.ExecutionRecord, error) {
	planID, n, stepID, err := ParseExecutionID(id)
	if err != nil {
		return nil, err
	}
	if stepID != "" {
		return store.Executions(ctx, ledger.ExecutionFilter{ExecutionID: id})
	}
	recs, err := store.Executions(ctx, ledger.ExecutionFilter{PlanID: planID})
	if err != nil || n == 0 {
		return recs, err
	}
	out := recs[:0]
	for _, r := range recs {
		if _, rn, _, err := ParseExecutionID(r.ExecutionID); err == nil && rn == n {
			out = append(out, r)
		}
	}
	return out, nil
}
