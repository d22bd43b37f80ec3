package plan

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/scripthost/scripthost"
	"github.com/scripthost/scripthost/hostfuncs"
	"github.com/scripthost/scripthost/hostfuncs/workspace"
	"github.com/scripthost/scripthost/ledger"
)

// ConfirmFunc asks whether a step that requires confirmation may run.
type ConfirmFunc func(ctx context.Context, p *Plan, s Step) (bool, error)

// Progress receives step start, completion and failure as they happen. Nil fields are
// skipped.
type Progress struct {
	StepStart    func(StepInfo)
	StepComplete func(StepResult)
	StepFailed   func(StepResult)
}

// StepInfo describes a step about to run.
type StepInfo struct {
	ExecutionID string
	StepID      string
	Tool        string
	// Index is the step's 1-based position; Total the plan's step count.
	Index, Total int
}

// Options configure an Executor. Store and Registry are required.
type Options struct {
	Store ledger.Store
	// Registry is the whitelist of tools a plan may name.
	Registry *hostfuncs.Registry
	// Workspace and Commands serve the preconditions.
	Workspace *workspace.Workspace
	Commands  Commands
	// Symbols serves codegraph_exists and symbol_exists; nil fails them with E103.
	Symbols Symbols
	// Redactor removes secrets from everything stored or printed; nil applies the
	// credential patterns only.
	Redactor *hostfuncs.Redactor
	// Confirm decides steps that require confirmation; nil denies them all.
	Confirm  ConfirmFunc
	Progress Progress
	// Events, when set, receives the JSONL event stream.
	Events io.Writer
	// Clock and Sleep are injected for tests; defaults time.Now and a timer.
	Clock func() time.Time
	Sleep func(ctx context.Context, d time.Duration) error
	// Fresh starts a new execution even when the last one of the plan is unfinished.
	Fresh bool
}

// Executor runs approved plans. It is safe for concurrent use on different plans.
type Executor struct {
	o  Options
	mu sync.Mutex // serializes event writes
}

// New returns an executor.
func New(o Options) (*Executor, error) {
	if o.Store == nil || o.Registry == nil {
		return nil, errors.New("plan: executor needs a store and a registry")
	}
	if o.Clock == nil {
		o.Clock = time.Now
	}
	if o.Sleep == nil {
		o.Sleep = hostfuncs.Sleep
	}
	o.Redactor = o.Registry.Redactor(o.Redactor)
	return &Executor{o: o}, nil
}

// Step statuses in a Result.
const (
	StepSucceeded = "succeeded"
	StepFailed    = "failed"
	StepBlocked   = "blocked"
)

// StepResult is the outcome of one step of an execution.
type StepResult struct {
	ExecutionID string `json:"execution_id"`
	StepID      string `json:"step_id"`
	Tool        string `json:"tool"`
	Status      string `json:"status"`
	// Reused marks a step completed by an earlier, interrupted run of this
	// execution; it was not executed again.
	Reused     bool            `json:"reused,omitempty"`
	Attempts   int             `json:"attempts"`
	ExitCode   int             `json:"exit_code"`
	StartedAt  time.Time       `json:"started_at"`
	EndedAt    time.Time       `json:"ended_at"`
	DurationMS int64           `json:"duration_ms"`
	Stdout     string          `json:"stdout,omitempty"`
	Stderr     string          `json:"stderr,omitempty"`
	Result     json.RawMessage `json:"result,omitempty"`
	// Diagnostics are the checker findings the step's tool reported (lsp_check).
	Diagnostics []Artifact `json:"diagnostics,omitempty"`
	Code        string     `json:"code,omitempty"`
	Error       string     `json:"error,omitempty"`
	// Record is the step's evidence as the ledger holds it.
	Record ledger.ExecutionRecord `json:"record"`
}

// Result is the outcome of a plan execution. Steps holds one entry per step that was
// reached, in plan order; it ends at the step that stopped the plan.
type Result struct {
	PlanID   string `json:"plan_id"`
	PlanHash string `json:"plan_hash"`
	Intent   string `json:"intent,omitempty"`
	// ExecutionID names this execution of the plan: "<plan_id>/<number>".
	ExecutionID string `json:"execution_id"`
	Number      int    `json:"number"`
	Resumed     bool   `json:"resumed"`
	Status      string `json:"status"` // completed or failed
	Code        string `json:"code,omitempty"`
	// TotalDurationMS is the wall time of this run, from the first check to the
	// last record.
	TotalDurationMS int64        `json:"total_duration_ms"`
	Steps           []StepResult `json:"steps"`
}

// ExecutionID returns the id of execution number n of plan planID, and with a step id
// the id of that step's record in it: "<plan_id>/<n>" and "<plan_id>/<n>/<step_id>".
// Plan and step ids cannot contain '/', so the id is unambiguous; execution numbers
// count up per plan, so ids are unique in a ledger and the same on every re-read.
func ExecutionID(planID string, n int, stepID string) string {
	id := planID + "/" + strconv.Itoa(n)
	if stepID != "" {
		id += "/" + stepID
	}
	return id
}

// ParseExecutionID splits an execution id into its parts; n is 0 and step "" for the
// parts it does not have.
func ParseExecutionID(id string) (planID string, n int, stepID string, err error) {
	parts := strings.Split(id, "/")
	if len(parts) > 3 || parts[0] == "" {
		return "", 0, "", fmt.Errorf("plan: execution id %q: want PLAN[/N[/STEP]]", id)
	}
	planID = parts[0]
	if len(parts) > 1 {
		if n, err = strconv.Atoi(parts[1]); err != nil || n < 1 {
			return "", 0, "", fmt.Errorf("plan: execution id %q: bad execution number", id)
		}
	}
	if len(parts) > 2 {
		stepID = parts[2]
	}
	return planID, n, stepID, nil
}

// Check makes every refusal check without running anything: the plan is valid (E001),
// auth approves it (E002, E003), its tools are registered (E201) and its arguments
// match their schemas (E202).
func (e *Executor) Check(p *Plan, auth *Authorization) error {
	if err := p.Validate(); err != nil {
		return err
	}
	if err := Authorize(p, auth); err != nil {
		return err
	}
	return CheckTools(p, e.o.Registry)
}

// Run executes p as authorized by auth: every refusal is checked before anything runs,
// then the steps run one at a time in order, each leaving an execution record. If the
// plan's latest execution was interrupted (a crash), Run resumes it after its last
// recorded step instead of starting a new one. The error is an *Error whose code says
// why the plan was refused or stopped; the Result is nil only for a refusal.
func (e *Executor) Run(ctx context.Context, p *Plan, auth *Authorization) (*Result, error) {
	if err := e.Check(p, auth); err != nil {
		e.emit(Event{Type: EventPlanComplete, PlanID: p.PlanID, Status: "refused", Code: CodeOf(err), Error: e.o.Redactor.Redact(err.Error())})
		return nil, err
	}
	start := e.o.Clock()
	x, err := e.begin(ctx, p, auth)
	if err != nil {
		return nil, err
	}
	defer e.unclaim(p.PlanID, x.number)
	if start.After(x.last) {
		x.last = start
	}
	res := &Result{PlanID: p.PlanID, PlanHash: x.hash, Intent: e.o.Redactor.Redact(p.Intent), ExecutionID: x.id, Number: x.number, Resumed: x.resumed, Status: "completed"}
	defer func() { res.TotalDurationMS = x.now(e.o.Clock).Sub(start).Milliseconds() }()
	var first *Error
	for i, s := range p.Steps {
		sr, stop, err := e.step(ctx, x, i, s)
		if err != nil {
			res.Status, res.Code = "failed", CodeOf(err)
			e.emit(Event{Type: EventPlanComplete, PlanID: p.PlanID, ExecutionID: x.id, Status: res.Status, Code: res.Code, Error: e.o.Redactor.Redact(err.Error())})
			return res, err
		}
		res.Steps = append(res.Steps, sr)
		if sr.Status != StepSucceeded && first == nil {
			first = &Error{Code: sr.Code, StepID: s.StepID, Message: sr.Error}
		}
		if stop {
			break
		}
	}
	ev := Event{Type: EventPlanComplete, PlanID: p.PlanID, ExecutionID: x.id, Status: "completed"}
	if first != nil {
		res.Status, res.Code = "failed", first.Code
		ev.Status, ev.Code, ev.Error = res.Status, res.Code, first.Message
	}
	e.emit(ev)
	if first != nil {
		return res, first
	}
	return res, nil
}

// execution is the state of one plan execution while it runs.
type execution struct {
	plan    *Plan
	auth    *Authorization
	hash    string
	number  int
	id      string
	resumed bool
	// done holds the records an interrupted run of this execution left, by step.
	done map[string]ledger.ExecutionRecord
	// failed marks steps that failed or were blocked in this execution.
	failed map[string]bool
	// muts holds the plan's mutations by input hash, oldest first.
	muts map[string][]scripthost.Mutation
	// last is the latest time handed out by now.
	last time.Time
}

// now reads the clock, never earlier than a time it returned before: step times stay
// in order when the wall clock is set back.
func (x *execution) now(clock func() time.Time) time.Time {
	t := clock()
	if t.Before(x.last) {
		t = x.last
	}
	x.last = t
	return t
}

// begin picks the execution: the latest one of the plan when it is unfinished and ran
// the same plan content, otherwise a new one numbered after the latest.
func (e *Executor) begin(ctx context.Context, p *Plan, auth *Authorization) (*execution, error) {
	x := &execution{plan: p, auth: auth, hash: p.Hash(), done: map[string]ledger.ExecutionRecord{}, failed: map[string]bool{}, muts: map[string][]scripthost.Mutation{}}
	recs, err := e.o.Store.Executions(ctx, ledger.ExecutionFilter{PlanID: p.PlanID})
	if err != nil {
		return nil, &Error{Code: CodeE900Internal, Message: "read the execution log", Err: err}
	}
	byNumber := map[int][]ledger.ExecutionRecord{}
	latest := 0
	for _, r := range recs {
		pid, n, _, err := ParseExecutionID(r.ExecutionID)
		if err != nil || pid != p.PlanID || n == 0 {
			continue
		}
		byNumber[n] = append(byNumber[n], r)
		latest = max(latest, n)
	}
	muts, err := e.o.Store.Mutations(ctx, ledger.MutationFilter{Workflow: workflowName(p.PlanID)})
	if err != nil {
		return nil, &Error{Code: CodeE900Internal, Message: "read the plan's mutations", Err: err}
	}
	for _, m := range muts {
		x.muts[m.InputHash] = append(x.muts[m.InputHash], m)
	}
	switch last := byNumber[latest]; {
	case e.o.Fresh:
	case latest > 0 && unfinished(p, x.hash, last) && e.claim(p.PlanID, latest):
		x.number, x.resumed = latest, true
		for _, r := range last {
			x.done[r.StepID] = r
			// A resumed execution's new steps start after the ones it already has.
			if r.EndedAt.After(x.last) {
				x.last = r.EndedAt
			}
			if !r.Success {
				x.failed[r.StepID] = true
			}
		}
	case e.began(p, latest+1, x.muts) && e.claim(p.PlanID, latest+1):
		// The next execution called a tool and stopped before its first record.
		x.number, x.resumed = latest+1, true
	}
	if !x.resumed {
		// The number is reserved in the ledger, not derived from what was read above:
		// two executors starting the plan at once must not both take latest+1.
		if x.number, err = e.o.Store.ReserveExecution(ctx, p.PlanID); err != nil {
			return nil, &Error{Code: CodeE900Internal, Message: "reserve an execution number", Err: err}
		}
		e.claim(p.PlanID, x.number) // a number just reserved: nobody runs it yet
	}
	x.id = ExecutionID(p.PlanID, x.number, "")
	return x, nil
}

// running holds the plan executions that a Run of this process is executing, by
// ledger, plan and number. In the ledger an execution being run looks like one a
// crash interrupted (steps without records), so begin resumes one only when it can
// claim it here: two Runs of a plan started at once each run their own execution
// instead of both resuming the first.
var running sync.Map // runningKey → struct{}

type runningKey struct {
	store  ledger.Store
	plan   string
	number int
}

// claim marks execution number of plan as run by the caller, or reports false when a
// Run of this process already has it. A store whose type cannot be a map key (never
// a pointer) is not tracked.
func (e *Executor) claim(plan string, number int) bool {
	if !reflect.TypeOf(e.o.Store).Comparable() {
		return true
	}
	_, taken := running.LoadOrStore(runningKey{e.o.Store, plan, number}, struct{}{})
	return !taken
}

// unclaim ends the caller's claim on execution number of plan.
func (e *Executor) unclaim(plan string, number int) {
	if reflect.TypeOf(e.o.Store).Comparable() {
		running.Delete(runningKey{e.o.Store, plan, number})
	}
}

// began reports whether execution n of p recorded a mutation for one of its steps.
func (e *Executor) began(p *Plan, n int, muts map[string][]scripthost.Mutation) bool {
	for _, s := range p.Steps {
		ns, m := ToolName(s.Tool)
		tool, ok := e.o.Registry.Lookup(ns, m)
		if !ok {
			continue
		}
		canon, err := scripthost.CanonicalJSON(s.args())
		if err == nil && len(muts[stepHash(p.PlanID, n, s.StepID, tool, canon)]) > 0 {
			return true
		}
	}
	return false
}

// stepHash is the input hash of step stepID's mutation in execution n of plan planID.
func stepHash(planID string, n int, stepID string, tool *hostfuncs.Tool, canon json.RawMessage) string {
	return hostfuncs.Key{Workflow: workflowName(planID), Handler: stepID, Scope: scope(planID, n, stepID)}.Hash(tool, canon)
}

// unfinished reports whether the records of one execution show it was interrupted:
// they ran the plan with this hash, not every step has a record, and no recorded
// failure stopped the plan.
func unfinished(p *Plan, hash string, recs []ledger.ExecutionRecord) bool {
	seen := map[string]bool{}
	for _, r := range recs {
		if diagHash(r.Diagnostics) != hash {
			return false
		}
		seen[r.StepID] = true
		s, ok := p.Step(r.StepID)
		if !ok {
			return false
		}
		if !r.Success && (!s.ContinueOnFailure || r.ErrorCode == CodeE303ConfirmationDenied || r.ErrorCode == CodeE306NeedsReconcile) && r.ErrorCode != CodeE305Blocked {
			return false
		}
	}
	return len(seen) < len(p.Steps)
}

func workflowName(planID string) string {
	return hostfuncs.CallerWorkflow(hostfuncs.CallerPlan, planID)
}

// scope is the idempotency scope of a step: one per step of one execution.
func scope(planID string, n int, stepID string) string {
	return "plan/" + planID + "/" + strconv.Itoa(n) + "/" + stepID
}
