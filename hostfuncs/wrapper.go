package hostfuncs

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"
	"slices"
	"sync"
	"time"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/scripthost/scripthost"
	"github.com/scripthost/scripthost/ledger"
	"github.com/scripthost/scripthost/sandbox"
)

// Codes the wrapper reports besides the root package's.
const (
	// CodeInvalidOutput: a tool's result does not match its OutputSchema.
	CodeInvalidOutput = "invalid_output"
	// CodeInvalidSchema: a tool's own schema does not compile.
	CodeInvalidSchema = "invalid_schema"
	// CodeLedger: the ledger refused or failed a write around a mutation.
	CodeLedger = "ledger_error"
	// CodeNotSent: a mutation's request never reached the service; it is sent again
	// under the same idempotency key.
	CodeNotSent = "not_sent"
)

// reconcileTimeout bounds the immediate reconcile after an uncertain call. It runs on
// a context detached from the invocation, which may already be past its deadline.
const reconcileTimeout = 30 * time.Second

// RunInfo names the run a ToolWrapper serves.
type RunInfo struct {
	RunID    string
	Workflow string
	Handler  string
	// Events are the reserved input events as "topic/message-id".
	Events []string
	// Scope names the mutation when there are no events (see scripthost.KeyInput);
	// empty means the run id.
	Scope string
	// Subscribes are the topics the handler declares it reads: Topics.peek accepts
	// only these.
	Subscribes []string
	// Publishes are the topics the handler declares it writes: Topics.publish accepts
	// only these.
	Publishes []string
	// FailureToNext sends a definite failure of the run's mutation on to next
	// (onMutationFailure: 'next') instead of failing the run; ReleaseOnFailure then
	// releases the run's events at once instead of consuming them at commit.
	FailureToNext    bool
	ReleaseOnFailure bool
	// Peeked, when set, holds pending events the caller read just before the run's
	// phase; Topics.peek answers from it when it holds enough.
	Peeked *Peeked
	// Create, when set, is the run itself, not yet in the ledger: the in-flight record
	// of its mutate phase's mutation creates it in the same transaction
	// (ledger.NewMutation.Run), logging CreateEvents first. Whether it was created is
	// whether the wrapper holds a mutation (Mutation).
	Create       *ledger.NewRun
	CreateEvents []ledger.LifecycleEvent
}

// Peeked is what a scheduler read of a workflow's pending events before it started a
// run: the oldest pending events of each topic listed, oldest first, at least Limit of
// them unless fewer were pending (a read of Limit events, or events kept from an
// earlier read, each list holding Limit or more). A Topics.peek on one of those topics
// is answered from it when it can tell the answer (the peek asks for at most as many
// events as the list holds, or the list holds fewer than Limit: all that were
// pending), which is the answer the ledger would give unless events changed between
// the two reads, a race a script cannot tell from reading a moment earlier. A peek on
// a topic not listed reads the ledger.
type Peeked struct {
	Events map[string][]scripthost.Event
	Limit  int
}

// answer returns the first limit pending events of topic when p holds them.
func (p *Peeked) answer(topic string, limit int) ([]scripthost.Event, bool) {
	if p == nil {
		return nil, false
	}
	evs, ok := p.Events[topic]
	if !ok || (limit > len(evs) && len(evs) >= p.Limit) {
		return nil, false
	}
	return evs[:min(limit, len(evs))], true
}

// WrapperOptions configure a ToolWrapper. Zero fields take defaults.
type WrapperOptions struct {
	// Clock gives the time for reconcile scheduling; nil means time.Now.
	Clock func() time.Time
	// Redactor removes secrets from stored params, logs and error messages; nil
	// applies the credential patterns only.
	Redactor *Redactor
	// ReconcilePolicy bounds the reconcile attempts of an uncertain mutation.
	ReconcilePolicy ReconcilePolicy
	// Logger receives one record per call and per mutation transition; nil discards.
	Logger *slog.Logger
}

// ToolWrapper is the sandbox.Tools of one run. Every call is looked up, validated
// against the tool's input schema, classified, and checked against the current phase
// before anything runs. A mutation is recorded in_flight in the ledger, durably,
// before the tool is called, and its outcome is recorded after: applied, failed, or
// reconciled when uncertain. Topics.publish calls are buffered for the runtime to store
// with the commit. A ToolWrapper is safe for concurrent use, though a mutate phase
// admits only one mutation however its calls are interleaved.
type ToolWrapper struct {
	reg      *Registry
	store    ledger.Store
	info     RunInfo
	clock    func() time.Time
	redactor *Redactor
	policy   ReconcilePolicy
	// log is the logger as given; runLog is it with the run's attributes, built at
	// the first record that is logged (most wrappers never log, and With allocates).
	log     *slog.Logger
	logOnce sync.Once
	runLog  *slog.Logger

	mu          sync.Mutex
	phase       scripthost.Phase
	mutated     bool // a mutation was admitted in this mutate phase
	mutation    scripthost.Mutation
	hasMutation bool
	published   []ledger.NewEvent
	seen        map[string]bool // topic + "\x00" + message id
	refusals    []Refusal       // refused calls not yet taken, in call order

	// peeks are the events Topics.peek answered with, by topic (see Peeks).
	peeks []scripthost.Reservation
}

// NewToolWrapper returns a wrapper for one run, with no phase set.
func NewToolWrapper(reg *Registry, store ledger.Store, info RunInfo, opts WrapperOptions) *ToolWrapper {
	w := &ToolWrapper{
		reg:      reg,
		store:    store,
		info:     info,
		clock:    opts.Clock,
		redactor: opts.Redactor,
		policy:   opts.ReconcilePolicy.WithDefaults(),
		log:      opts.Logger,
		seen:     map[string]bool{},
	}
	if w.reg == nil {
		w.reg = NewRegistry()
	}
	if w.clock == nil {
		w.clock = time.Now
	}
	if w.log == nil {
		w.log = slog.New(slog.DiscardHandler)
	}
	w.redactor = w.reg.Redactor(w.redactor)
	if w.policy.Redactor == nil {
		w.policy.Redactor = w.redactor
	}
	if w.info.Scope == "" {
		w.info.Scope = w.info.RunID
	}
	return w
}

// logging reports whether a record at level would be logged, so that a hot path can
// skip building its attributes.
func (w *ToolWrapper) logging(level slog.Level) bool {
	return w.log.Enabled(context.Background(), level)
}

// logf logs one record with the run's attributes.
func (w *ToolWrapper) logf(level slog.Level, msg string, args ...any) {
	if !w.logging(level) {
		return
	}
	w.logOnce.Do(func() {
		w.runLog = w.log.With("run", w.info.RunID, "workflow", w.info.Workflow, "handler", w.info.Handler)
	})
	w.runLog.Log(context.Background(), level, msg, args...)
}

var _ sandbox.Tools = (*ToolWrapper)(nil)

// SetPhase enters phase p and resets the mutation flags: a new mutate phase admits one
// mutation again. The publish buffer is kept.
func (w *ToolWrapper) SetPhase(p scripthost.Phase) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.phase = p
	w.mutated = false
	w.mutation = scripthost.Mutation{}
	w.hasMutation = false
}

// Phase returns the current phase.
func (w *ToolWrapper) Phase() scripthost.Phase {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.phase
}

// CheckPhaseAllowed reports whether op may run now: nil, or a logic error naming the
// operation and the phase (code phase_violation), or second_mutation when the mutate
// phase already made its mutation.
func (w *ToolWrapper) CheckPhaseAllowed(op scripthost.Operation) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.checkLocked(op)
}

func (w *ToolWrapper) checkLocked(op scripthost.Operation) error {
	if err := scripthost.CheckAllowed(w.phase, op); err != nil {
		return err
	}
	if op == scripthost.OpMutate && w.mutated {
		return scripthost.Errorf(scripthost.ClassLogic, scripthost.CodeSecondMutation,
			"Only one mutation allowed per mutate phase")
	}
	return nil
}

// List names every tool of the registry plus the built-in topic tools, sorted.
func (w *ToolWrapper) List() []sandbox.ToolName {
	_, names := w.reg.snapshot() // never changed once built (see Registry.snapshot)
	return names
}

func (w *ToolWrapper) lookup(namespace, method string) *Tool {
	if t, ok := w.reg.Lookup(namespace, method); ok {
		return t
	}
	for _, t := range TopicTools() {
		if t.Namespace == namespace && t.Method == method {
			return t
		}
	}
	return nil
}

// Published returns a copy of the events buffered by Topics.publish, in call order,
// one per topic and message id.
func (w *ToolWrapper) Published() []ledger.NewEvent {
	w.mu.Lock()
	defer w.mu.Unlock()
	return slices.Clone(w.published)
}

func (w *ToolWrapper) publish(e ledger.NewEvent) {
	w.mu.Lock()
	defer w.mu.Unlock()
	k := e.Topic + "\x00" + e.MessageID
	if w.seen[k] {
		return
	}
	w.seen[k] = true
	w.published = append(w.published, e)
}

// Mutation returns the mutation made in the current mutate phase, as the ledger last
// recorded it, and whether there is one.
func (w *ToolWrapper) Mutation() (scripthost.Mutation, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.mutation, w.hasMutation
}

func (w *ToolWrapper) setMutation(m scripthost.Mutation) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.mutation, w.hasMutation = m, true
}

// Call runs one tool call; see ToolWrapper. After the mutate phase's mutation, whatever
// its outcome, every further call ends the invocation (sandbox.Terminate), and so does
// a mutation that did not apply. Errors never carry the call's secret values.
func (w *ToolWrapper) Call(ctx context.Context, namespace, method string, input json.RawMessage) (json.RawMessage, error) {
	name := namespace + "." + method
	w.mu.Lock()
	phase, ended := w.phase, w.phase == scripthost.PhaseMutate && w.mutated
	w.mu.Unlock()

	tool := w.lookup(namespace, method)
	if tool == nil {
		err := scripthost.Errorf(scripthost.ClassLogic, scripthost.CodeUnknownTool,
			"unknown tool %s: the host offers no tool of that name", name)
		return nil, w.refuse(ctx, name, phase, err, ended, nil)
	}
	input, value, err := w.validateInput(tool, input)
	if err != nil {
		return nil, w.refuse(ctx, name, phase, err, ended, nil)
	}
	secrets := callSecrets(value, tool.SecretFields)
	op := Classify(tool, input)

	w.mu.Lock()
	ended = w.phase == scripthost.PhaseMutate && w.mutated
	err = w.checkLocked(op)
	if err == nil && op == scripthost.OpMutate {
		w.mutated = true
	}
	w.mu.Unlock()
	if err != nil {
		return nil, w.refuse(ctx, name, phase, withOp(err, name), ended, callRedactor(secrets))
	}
	if w.logging(slog.LevelDebug) {
		w.logf(slog.LevelDebug, "tool call", "tool", name, "op", op, "phase", phase.String())
	}

	if op == scripthost.OpMutate {
		return w.mutate(ctx, tool, input, value, secrets, callRedactor(secrets))
	}
	out, err := w.execute(ctx, tool, input)
	if err != nil {
		err = w.scrub(withOp(err, name), callRedactor(secrets))
		w.logf(slog.LevelInfo, "tool call failed", "tool", name, "op", op, "error", err.Error())
		w.noteRead(ctx, tool, phase, value, secrets, nil, err)
		return nil, err
	}
	if err := w.checkOutput(tool, out); err != nil {
		return nil, w.scrub(err, callRedactor(secrets))
	}
	w.noteRead(ctx, tool, phase, value, secrets, out, nil)
	return out, nil
}

// refuse scrubs err, records the refusal (TakeRefusals) with where in the script the
// call was made, and, when the mutate phase has made its mutation, ends the invocation
// with it.
func (w *ToolWrapper) refuse(ctx context.Context, name string, phase scripthost.Phase, err error, ended bool, call *Redactor) error {
	err = w.scrub(err, call)
	r := Refusal{Tool: name, Phase: phase, Reason: refusalReason(err), Message: err.Error(), Ended: ended}
	var se *scripthost.Error
	if errors.As(err, &se) {
		r.Message = se.Message
		if where, ok := sandbox.Caller(ctx); ok {
			r.Where = where
			if se.Line == 0 {
				se.File, se.Line, se.Column = where.File, where.Line, where.Column
			}
		}
	}
	w.logf(slog.LevelInfo, "tool call refused", "tool", name, "phase", phase.String(), "reason", r.Reason,
		"at", r.Where.String(), "error", r.Message)
	w.mu.Lock()
	w.refusals = append(w.refusals, r)
	w.mu.Unlock()
	if ended {
		return sandbox.Terminate(err)
	}
	return err
}

// TakeRefusals returns the tool calls the wrapper refused since it was last asked, in
// call order, and forgets them. Nothing of a refused call ran; the script saw an error
// it may have caught, or, for a call after the mutate phase's mutation, its invocation
// ended (Refusal.Ended). The caller records them on the run.
func (w *ToolWrapper) TakeRefusals() []Refusal {
	w.mu.Lock()
	defer w.mu.Unlock()
	rs := w.refusals
	w.refusals = nil
	return rs
}

// validateInput parses input (empty means null) and checks it against the tool's
// input schema. It returns the input and its decoded value.
func (w *ToolWrapper) validateInput(t *Tool, input json.RawMessage) (json.RawMessage, any, error) {
	return ValidateInput(t, input)
}

// ValidateInput parses input (empty means null) and checks it against the tool's input
// schema: an invalid_input logic error lists every problem. It returns the input and
// its decoded value. Every caller of a tool validates through it.
func ValidateInput(t *Tool, input json.RawMessage) (json.RawMessage, any, error) {
	if len(bytes.TrimSpace(input)) == 0 {
		input = json.RawMessage("null")
	}
	value, err := jsonschema.UnmarshalJSON(bytes.NewReader(input))
	if err != nil {
		return nil, nil, &scripthost.Error{Class: scripthost.ClassLogic, Code: scripthost.CodeInvalidInput,
			Op: t.Name(), Message: "input is not valid JSON: " + err.Error()}
	}
	sch, err := compileSchema(t.InputSchema)
	if err != nil {
		return nil, nil, &scripthost.Error{Class: scripthost.ClassInternal, Code: CodeInvalidSchema,
			Op: t.Name(), Message: "input schema: " + err.Error()}
	}
	problems, err := validateValue(sch, value)
	if err != nil {
		return nil, nil, &scripthost.Error{Class: scripthost.ClassInternal, Code: CodeInvalidSchema, Op: t.Name(), Message: err.Error()}
	}
	if len(problems) > 0 {
		return nil, nil, &scripthost.Error{Class: scripthost.ClassLogic, Code: scripthost.CodeInvalidInput,
			Op: t.Name(), Message: fmt.Sprintf("invalid input: %s", joinProblems(problems))}
	}
	return input, value, nil
}

func joinProblems(p []string) string {
	var b bytes.Buffer
	for i, s := range p {
		if i > 0 {
			b.WriteString("; ")
		}
		b.WriteString(s)
	}
	return b.String()
}

// checkOutput validates a successful result against the tool's output schema.
func (w *ToolWrapper) checkOutput(t *Tool, out json.RawMessage) error {
	err := CheckOutput(t, out)
	if err != nil {
		w.logf(slog.LevelWarn, "tool output invalid", "tool", t.Name(), "error", w.redactor.Redact(err.Error()))
	}
	return err
}

// CheckOutput validates a successful result against the tool's output schema
// (code invalid_output).
func CheckOutput(t *Tool, out json.RawMessage) error {
	if len(t.OutputSchema) == 0 {
		return nil
	}
	sch, err := compileSchema(t.OutputSchema)
	if err != nil {
		return &scripthost.Error{Class: scripthost.ClassInternal, Code: CodeInvalidSchema, Op: t.Name(), Message: "output schema: " + err.Error()}
	}
	value, err := jsonschema.UnmarshalJSON(bytes.NewReader(out))
	if err != nil {
		return &scripthost.Error{Class: scripthost.ClassLogic, Code: CodeInvalidOutput, Op: t.Name(), Message: "output is not JSON"}
	}
	problems, err := validateValue(sch, value)
	if err == nil && len(problems) > 0 {
		err = &scripthost.Error{Class: scripthost.ClassLogic, Code: CodeInvalidOutput, Op: t.Name(),
			Message: "output does not match the tool's schema: " + joinProblems(problems)}
	}
	return err
}

// execute calls the tool with the wrapper in ctx, recovering a panic as an internal
// error, and normalizes the result to one JSON value.
func (w *ToolWrapper) execute(ctx context.Context, t *Tool, input json.RawMessage) (out json.RawMessage, err error) {
	defer func() {
		if r := recover(); r != nil {
			w.logf(slog.LevelError, "tool panicked", "tool", t.Name(), "panic", w.redactor.Redact(fmt.Sprint(r)),
				"stack", w.redactor.Redact(string(debug.Stack())))
			out, err = nil, &scripthost.Error{Class: scripthost.ClassInternal, Code: scripthost.CodeToolPanic,
				Op: t.Name(), Message: fmt.Sprintf("tool panicked: %v", r)}
		}
	}()
	out, err = t.Execute(withWrapper(ctx, w), input)
	if err != nil {
		return nil, err
	}
	return w.normalize(t, out), nil
}

// normalize makes out one JSON value (empty is null, text that is not JSON becomes a
// JSON string) without the host's registered secrets.
func (w *ToolWrapper) normalize(t *Tool, out json.RawMessage) json.RawMessage {
	if len(bytes.TrimSpace(out)) == 0 {
		return json.RawMessage("null")
	}
	if !json.Valid(out) {
		w.logf(slog.LevelWarn, "tool returned text that is not JSON; wrapped as a string", "tool", t.Name())
		out, _ = json.Marshal(string(out))
	}
	// A service that echoes a credential must not hand it to the script or the ledger.
	return w.redactor.RedactSecrets(out)
}
