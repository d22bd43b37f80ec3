package agent

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/scripthost/scripthost/hostfuncs"
	"github.com/scripthost/scripthost/hostfuncs/command"
	"github.com/scripthost/scripthost/hostfuncs/workspace"
	"github.com/scripthost/scripthost/ledger"
)

// DefaultTurnLimit is the turns a step may take unless the task says otherwise.
const DefaultTurnLimit = 10

// Step and session statuses.
const (
	StatusPending   = "pending"
	StatusRunning   = "running"
	StatusCompleted = "completed"
	StatusFailed    = "failed"
	StatusBlocked   = "blocked"
	StatusSkipped   = "skipped"
	StatusPaused    = "paused"
)

// Codes of a failed step or session, each with its exit code (ExitCode).
const (
	CodeStepFailed       = "step_failed"
	CodeTurnLimit        = "turn_limit"
	CodeSandboxViolation = "sandbox_violation"
	CodeApprovalPending  = "approval_pending"
	CodeApprovalDenied   = "approval_denied"
	CodeStepTimeout      = "step_timeout"
	CodeBudget           = "budget_exceeded"
	CodeModel            = "model_error"
	CodeBlocked          = "blocked"
)

// ExitCode maps a code to the CLI's exit code: 0 success, 30 step failed, 31 turn
// limit, 32 sandbox violation, 33 approval denied or pending, 34 step timeout.
func ExitCode(code string) int {
	switch code {
	case "":
		return 0
	case CodeTurnLimit:
		return 31
	case CodeSandboxViolation:
		return 32
	case CodeApprovalPending, CodeApprovalDenied:
		return 33
	case CodeStepTimeout:
		return 34
	}
	return 30
}

// Options configure an Executor. Store (which must also be a ledger.AgentStore),
// Registry and Driver are required.
type Options struct {
	Store    ledger.Store
	Registry *hostfuncs.Registry
	// Bindings name registry tools for the model; nil means DefaultBindings.
	Bindings []Binding
	Driver   Driver
	Model    string
	// Workspace checks the files a step must produce; Commands runs its check.
	Workspace *workspace.Workspace
	Commands  *command.Runner
	Approvals Approvals
	// Prompter asks a person about calls whose class is set to prompt; nil is
	// non-interactive (Approvals.NonInteractivePolicy decides).
	Prompter Prompter
	// Redactor removes secrets from everything stored, logged or shown.
	Redactor *hostfuncs.Redactor
	// Events receives the JSONL event stream; Progress human progress lines.
	Events   io.Writer
	Progress io.Writer
	Verbose  bool
	// MaxResultBytes caps a tool result sent to the model (default 64 KiB); the
	// ledger keeps it whole.
	MaxResultBytes int
	// MaxResponseBytes caps one model answer (its content and tool call arguments
	// together) and MaxArgumentBytes one tool call's arguments, default
	// DefaultMaxResponseBytes and DefaultMaxArgumentBytes: a larger answer fails the
	// step and is not stored. NewOpenAI enforces its own cap while reading.
	MaxResponseBytes int64
	MaxArgumentBytes int64
	// Settings, when set, are stored with a new session, and a resume is refused
	// unless the session's stored settings permit them (Settings.Permits). They also
	// supply Approvals and the caps.
	Settings *Settings
	// Clock and Sleep are injected for tests.
	Clock func() time.Time
	Sleep func(ctx context.Context, d time.Duration) error
	NewID func() string
}

// Executor runs agent tasks. It is safe for concurrent use on different sessions.
type Executor struct {
	o        Options
	sessions ledger.AgentStore
	tools    *toolset
	sink     *sink
}

// New returns an executor.
func New(o Options) (*Executor, error) {
	if o.Store == nil || o.Registry == nil || o.Driver == nil {
		return nil, errors.New("agent: executor needs a store, a tool registry and a model driver")
	}
	as, ok := o.Store.(ledger.AgentStore)
	if !ok {
		return nil, fmt.Errorf("agent: store %T cannot record agent sessions", o.Store)
	}
	if o.Settings != nil {
		o.Approvals = o.Settings.Approvals
		o.MaxResponseBytes, o.MaxArgumentBytes = o.Settings.MaxResponseBytes, o.Settings.MaxArgumentBytes
	}
	if err := o.Approvals.Validate(); err != nil {
		return nil, err
	}
	if o.MaxResponseBytes <= 0 {
		o.MaxResponseBytes = DefaultMaxResponseBytes
	}
	if o.MaxArgumentBytes <= 0 {
		o.MaxArgumentBytes = DefaultMaxArgumentBytes
	}
	o.Approvals = o.Approvals.withDefaults()
	if o.Bindings == nil {
		o.Bindings = DefaultBindings
	}
	o.Redactor = o.Registry.Redactor(o.Redactor)
	if o.MaxResultBytes <= 0 {
		o.MaxResultBytes = 64 << 10
	}
	if o.Clock == nil {
		o.Clock = time.Now
	}
	if o.Sleep == nil {
		o.Sleep = hostfuncs.Sleep
	}
	if o.NewID == nil {
		o.NewID = newID
	}
	ts, err := newToolset(o.Registry, o.Bindings)
	if err != nil {
		return nil, err
	}
	return &Executor{o: o, sessions: as, tools: ts, sink: &sink{jsonl: o.Events, progress: o.Progress, verbose: o.Verbose}}, nil
}

func newID() string {
	b := make([]byte, 8)
	rand.Read(b)
	return "as-" + hex.EncodeToString(b)
}

// StepResult is what became of a step.
type StepResult struct {
	ID         string `json:"id"`
	Status     string `json:"status"`
	Code       string `json:"code,omitempty"`
	Error      string `json:"error,omitempty"`
	Summary    string `json:"summary,omitempty"`
	Turns      int    `json:"turns"`
	Usage      Usage  `json:"usage"`
	Trimmed    int    `json:"trimmed,omitempty"`
	Retries    int    `json:"retries,omitempty"`
	StartedAt  int64  `json:"started_at_ms,omitempty"`
	DurationMS int64  `json:"duration_ms"`
}

// Result is what became of a session.
type Result struct {
	Session string       `json:"session"`
	Status  string       `json:"status"`
	Code    string       `json:"code,omitempty"`
	Message string       `json:"message,omitempty"`
	Steps   []StepResult `json:"steps"`
	Usage   Usage        `json:"usage"`
}

// ExitCode is the CLI exit code of the result.
func (r Result) ExitCode() int { return ExitCode(r.Code) }

// state is the session's record of its steps, stored with the session.
type state struct {
	Steps map[string]*StepResult `json:"steps"`
	Usage Usage                  `json:"usage"`
}

// Run starts a new session for t (name is its file or label) and runs it.
func (e *Executor) Run(ctx context.Context, name string, t *Task) (Result, error) {
	id := e.o.NewID()
	taskJSON, err := json.Marshal(t)
	if err != nil {
		return Result{}, fmt.Errorf("agent: encode task: %w", err)
	}
	// The settings are not redacted: they hold names and paths, never a secret's
	// value, and a resume needs them as they are.
	spec, err := encodeSpec(e.o.Redactor.RedactJSON(taskJSON), e.o.Settings)
	if err != nil {
		return Result{}, err
	}
	st := &state{Steps: map[string]*StepResult{}}
	for _, s := range t.Steps {
		st.Steps[s.ID] = &StepResult{ID: s.ID, Status: StatusPending}
	}
	b, _ := json.Marshal(st)
	if err := e.sessions.CreateAgentSession(ctx, ledger.AgentSession{ID: id, Task: name,
		Spec: spec, Status: StatusRunning, State: b}); err != nil {
		return Result{}, fmt.Errorf("agent: %w", err)
	}
	e.sink.emit(Event{Type: EventSessionStart, Time: e.o.Clock(), Session: id, Message: t.Goal})
	e.removeTemps(id)
	e.sink.emit(Event{Type: EventStage, Time: e.o.Clock(), Session: id, Status: "enter", Message: fmt.Sprintf("task %s validated: %d steps", name, len(t.Steps))})
	return e.execute(ctx, id, t, st)
}

// Resume continues a session after a crash, an approval or a denial. Finished model
// turns are not sent again; tool calls found in flight are reconciled.
func (e *Executor) Resume(ctx context.Context, id string) (Result, error) {
	sess, err := e.sessions.AgentSession(ctx, id)
	if err != nil {
		return Result{}, fmt.Errorf("agent: resume: %w", err)
	}
	t, stored, err := SessionSpec(sess)
	if err != nil {
		return Result{}, err
	}
	switch {
	case stored != nil && e.o.Settings == nil:
		return Result{}, fmt.Errorf("agent: resume %s: the session was started with settings (workspace, model, programs, approvals); give them in Options.Settings", id)
	case stored != nil:
		if err := stored.Permits(*e.o.Settings); err != nil {
			return Result{}, fmt.Errorf("agent: resume %s: %w", id, err)
		}
	}
	st := &state{}
	if err := json.Unmarshal(sess.State, st); err != nil || st.Steps == nil {
		return Result{}, fmt.Errorf("agent: resume %s: stored state is unreadable", id)
	}
	e.sink.emit(Event{Type: EventSessionStart, Time: e.o.Clock(), Session: id, Status: "resumed", Message: t.Goal})
	e.sink.emit(Event{Type: EventStage, Time: e.o.Clock(), Session: id, Status: "enter", Message: fmt.Sprintf("task %s loaded from the ledger: %d steps", sess.Task, len(t.Steps))})
	e.removeTemps(id)
	return e.execute(ctx, id, t, st)
}

// removeTemps removes the temporary files a file write killed midway left in the
// workspace (only names of the writer's own pattern), and says so.
func (e *Executor) removeTemps(id string) {
	if e.o.Workspace == nil {
		return
	}
	removed, err := e.o.Workspace.RemoveTemps()
	if len(removed) > 0 {
		e.sink.emit(Event{Type: EventStage, Time: e.o.Clock(), Session: id, Status: "enter",
			Message: fmt.Sprintf("removed %d temporary files an interrupted write left: %s", len(removed), strings.Join(removed, ", "))})
	}
	if err != nil {
		e.sink.emit(Event{Type: EventStage, Time: e.o.Clock(), Session: id, Status: "enter",
			Message: "temporary files of interrupted writes not all removed: " + e.o.Redactor.Redact(err.Error())})
	}
}

func (e *Executor) save(ctx context.Context, id, status string, st *state) error {
	b, err := json.Marshal(st)
	if err != nil {
		return fmt.Errorf("agent: encode state: %w", err)
	}
	wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), ledger.WriteTimeout)
	defer cancel()
	if err := e.sessions.UpdateAgentSession(wctx, id, status, b); err != nil {
		return fmt.Errorf("agent: %w", err)
	}
	return nil
}

// execute runs the steps not yet finished, in dependency order.
func (e *Executor) execute(ctx context.Context, id string, t *Task, st *state) (Result, error) {
	order, err := t.Order()
	if err != nil {
		return Result{}, err
	}
	res := Result{Session: id}
	e.sink.emit(Event{Type: EventStage, Time: e.o.Clock(), Session: id, Status: "execute"})
	for _, s := range order {
		sr := st.Steps[s.ID]
		if sr == nil {
			sr = &StepResult{ID: s.ID, Status: StatusPending}
			st.Steps[s.ID] = sr
		}
		switch sr.Status {
		case StatusCompleted, StatusFailed, StatusBlocked, StatusSkipped:
			continue
		}
		for _, d := range s.DependsOn {
			if st.Steps[d].Status != StatusCompleted {
				sr.Status, sr.Code = StatusBlocked, CodeBlocked
				sr.Error = fmt.Sprintf("blocked: step %s it depends on is %s", d, st.Steps[d].Status)
				e.sink.emit(Event{Type: EventStepBlocked, Time: e.o.Clock(), Session: id, Step: s.ID, Code: CodeBlocked, Message: sr.Error})
				break
			}
		}
		if sr.Status == StatusBlocked {
			if err := e.save(ctx, id, StatusRunning, st); err != nil {
				return res, err
			}
			continue
		}
		paused, err := e.runStep(ctx, id, t, s, st)
		if serr := e.save(ctx, id, StatusRunning, st); serr != nil && err == nil {
			err = serr
		}
		if err != nil {
			return res, err
		}
		if paused != "" {
			res.Status, res.Code, res.Message = StatusPaused, CodeApprovalPending, paused
			e.finish(&res, t, st)
			e.sink.emit(Event{Type: EventSessionPaused, Time: e.o.Clock(), Session: id, Step: s.ID, Code: res.Code, Message: paused})
			e.sink.emit(Event{Type: EventStage, Time: e.o.Clock(), Session: id, Status: "exit", Code: res.Code, Tokens: &res.Usage})
			return res, e.save(ctx, id, StatusPaused, st)
		}
	}
	res.Status = StatusCompleted
	e.finish(&res, t, st)
	if res.Code != "" {
		res.Status = StatusFailed
	}
	e.sink.emit(Event{Type: EventStage, Time: e.o.Clock(), Session: id, Status: "exit", Code: res.Code, Tokens: &res.Usage})
	e.sink.emit(Event{Type: EventSessionEnd, Time: e.o.Clock(), Session: id, Status: res.Status, Code: res.Code, Tokens: &res.Usage})
	return res, e.save(ctx, id, res.Status, st)
}

// finish fills the steps, usage and the first failure's code into res.
func (e *Executor) finish(res *Result, t *Task, st *state) {
	res.Steps = res.Steps[:0]
	res.Usage = st.Usage
	for _, s := range t.Steps {
		sr := *st.Steps[s.ID]
		res.Steps = append(res.Steps, sr)
		if res.Code == "" && sr.Code != "" && sr.Code != CodeBlocked {
			res.Code, res.Message = sr.Code, fmt.Sprintf("step %s: %s", sr.ID, sr.Error)
		}
	}
	if res.Code == "" {
		for _, sr := range res.Steps {
			if sr.Status == StatusBlocked || sr.Status == StatusSkipped {
				res.Code, res.Message = CodeStepFailed, fmt.Sprintf("step %s: %s", sr.ID, sr.Error)
				break
			}
		}
	}
}
