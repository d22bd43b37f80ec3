package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/scripthost/scripthost"
	"github.com/scripthost/scripthost/hostfuncs"
	"github.com/scripthost/scripthost/hostfuncs/command"
	"github.com/scripthost/scripthost/ledger"
)

// Tool call statuses in the ledger.
const (
	CallRequested       = "requested"
	CallPendingApproval = "pending_approval"
	CallApproved        = "approved"
	CallDenied          = "denied"
	CallSkipped         = "skipped"
	CallRunning         = "running"
	CallDone            = "done"
	CallFailed          = "failed"
)

// finished reports whether a call with this status has its answer for the model.
func finished(status string) bool {
	switch status {
	case CallDenied, CallSkipped, CallDone, CallFailed:
		return true
	}
	return false
}

// callsOutcome is what a turn's tool calls decided for the step.
type callsOutcome struct {
	complete bool
	summary  string
	pause    string
	skip     bool
	failCode string
	failMsg  string
}

// callOutcome is one call's answer and what it decides.
type callOutcome struct {
	rec      ledger.AgentToolCall
	complete bool
	summary  string
	pause    string
	skip     bool
	violated string
	// denied fails the step: a check it needs was not approved.
	denied string
}

// runCalls runs a turn's calls: consecutive read-only calls run in parallel, every
// other call one at a time in the order given. Results go back into the conversation
// in call order.
func (e *Executor) runCalls(ctx context.Context, r *stepRun, calls []pendingCall) (callsOutcome, error) {
	outs := make([]callOutcome, len(calls))
	recorded, err := e.sessions.AgentToolCalls(ctx, r.session)
	if err != nil {
		return callsOutcome{}, fmt.Errorf("agent: %w", err)
	}
	r.prior = map[string]ledger.AgentToolCall{}
	for _, c := range recorded {
		if c.StepID == r.step.ID && c.Turn == r.turn {
			r.prior[c.CallID] = c
		}
	}
	var out callsOutcome
	for i := 0; i < len(calls); {
		j := i
		for j < len(calls) && e.readOnly(calls[j]) {
			j++
		}
		if j > i+1 {
			var wg sync.WaitGroup
			errs := make([]error, j-i)
			for k := i; k < j; k++ {
				wg.Add(1)
				go func(k int) {
					defer wg.Done()
					outs[k], errs[k-i] = e.call(ctx, r, calls[k])
				}(k)
			}
			wg.Wait()
			if err := errors.Join(errs...); err != nil {
				return out, err
			}
			i = j
			continue
		}
		var err error
		outs[i], err = e.call(ctx, r, calls[i])
		if err != nil {
			return out, err
		}
		o := outs[i]
		if o.pause != "" || o.skip || o.violated != "" || o.denied != "" {
			// The rest of the turn waits: after a pause they run on resume; after a
			// skipped or failed step they never run.
			switch {
			case o.pause != "":
				out.pause = o.pause
			case o.skip:
				out.skip = true
			case o.denied != "":
				out.failCode, out.failMsg = CodeApprovalDenied, o.denied
			default:
				out.failCode, out.failMsg = CodeSandboxViolation, o.violated
			}
			return out, nil
		}
		i++
	}
	for i, o := range outs {
		r.conv = append(r.conv, Message{Role: "tool", ToolCallID: calls[i].ID, Content: e.content(o.rec)})
		if o.complete {
			out.complete, out.summary = true, o.summary
		}
		if o.violated != "" && out.failCode == "" {
			out.failCode, out.failMsg = CodeSandboxViolation, o.violated
		}
	}
	return out, nil
}

// readOnly reports whether c is a valid call of a read-only tool.
func (e *Executor) readOnly(c pendingCall) bool {
	b, ok := e.tools.byName[c.Name]
	if !ok || !json.Valid([]byte(c.Arguments)) {
		return false
	}
	return hostfuncs.Classify(b.tool, json.RawMessage(c.Arguments)) == scripthost.OpRead
}

// content is the tool message the model gets for a finished call.
func (e *Executor) content(c ledger.AgentToolCall) string {
	var v map[string]any
	switch c.Status {
	case CallDone:
		v = map[string]any{"ok": true, "result": json.RawMessage(c.Result)}
		if len(c.Result) == 0 {
			v["result"] = nil
		}
	case CallDenied:
		v = map[string]any{"ok": false, "error": "denied: " + c.Decision + "; do not retry this call"}
	case CallSkipped:
		v = map[string]any{"ok": false, "error": "not run: " + c.Decision}
	default:
		v = map[string]any{"ok": false, "error": c.Error}
	}
	b, _ := json.Marshal(v)
	if len(b) > e.o.MaxResultBytes {
		s := strings.ToValidUTF8(string(b[:e.o.MaxResultBytes]), "")
		return s + fmt.Sprintf("\n[result truncated: %d of %d bytes shown; read a smaller part]", e.o.MaxResultBytes, len(b))
	}
	return string(b)
}

// put records a call's state.
func (e *Executor) put(ctx context.Context, c ledger.AgentToolCall) error {
	wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), ledger.WriteTimeout)
	defer cancel()
	if err := e.sessions.PutAgentToolCall(wctx, c); err != nil {
		return fmt.Errorf("agent: record tool call: %w", err)
	}
	return nil
}

// call runs one tool call through validation, approval and, for a mutation, the
// shared effect path. Errors the model can act on come back as a failed call; the
// returned error means the ledger failed.
func (e *Executor) call(ctx context.Context, r *stepRun, c pendingCall) (callOutcome, error) {
	began := e.o.Clock()
	rec := ledger.AgentToolCall{Session: r.session, CallID: c.callID, StepID: r.step.ID, Turn: r.turn, Seq: c.seq,
		Tool: c.Name, Status: CallRequested}
	if prior, ok := r.prior[c.callID]; ok {
		rec = prior // an interrupted run got this far with the call
	}
	if json.Valid([]byte(c.Arguments)) {
		rec.Arguments = e.o.Redactor.RedactJSON(json.RawMessage(c.Arguments))
	}
	e.sink.emit(Event{Type: EventToolCall, Time: began, Session: r.session, Step: r.step.ID, Turn: r.turn, Tool: c.Name, Call: c.callID})
	o := callOutcome{}
	failWith := func(msg string) (callOutcome, error) {
		rec.Status, rec.Error = CallFailed, e.o.Redactor.Redact(msg)
		return e.settle(ctx, r, rec, o, began)
	}
	args := json.RawMessage(c.Arguments)
	if !json.Valid(args) {
		return failWith(fmt.Sprintf("the arguments of %s are not valid JSON: %.200q", c.Name, c.Arguments))
	}
	if c.Name == CompleteTool {
		return e.completeStep(ctx, r, rec, args, began)
	}
	b, ok := e.tools.byName[c.Name]
	if !ok {
		return failWith(fmt.Sprintf("unknown tool %q; use one of the tools given", c.Name))
	}
	input, value, err := hostfuncs.ValidateInput(b.tool, args)
	if err != nil {
		return failWith(err.Error())
	}
	if hostfuncs.Classify(b.tool, input) == scripthost.OpRead {
		out, err := e.read(ctx, r, b, input)
		if err != nil {
			o.violated = violation(err)
			return failWith(err.Error())
		}
		rec.Status, rec.Result = CallDone, e.o.Redactor.RedactJSON(out)
		rec.Volatile = true // a read runs again if a crash loses its record
		return e.settle(ctx, r, rec, o, began)
	}

	// A mutation: the approval policy first, then the effect path.
	class := b.Class
	if class == "" {
		class = ClassTerminal
	}
	decided, o, err := e.approve(ctx, r, class, e.preview(b, input), &rec)
	if err != nil || !decided {
		return o, err
	}
	if rec.Status == CallDenied || rec.Status == CallSkipped {
		return e.settle(ctx, r, rec, o, began)
	}
	return e.mutate(ctx, r, b, rec, input, value, began)
}

// settle records a finished call and emits its result.
func (e *Executor) settle(ctx context.Context, r *stepRun, rec ledger.AgentToolCall, o callOutcome, began time.Time) (callOutcome, error) {
	rec.DurationMS = e.o.Clock().Sub(began).Milliseconds()
	if err := e.put(ctx, rec); err != nil {
		return o, err
	}
	o.rec = rec
	ev := Event{Type: EventToolResult, Time: e.o.Clock(), Session: r.session, Step: r.step.ID, Turn: r.turn, Tool: rec.Tool,
		Call: rec.CallID, Status: rec.Status, DurationMS: rec.DurationMS}
	if rec.Status != CallDone {
		ev.Message = rec.Error
		if ev.Message == "" {
			ev.Message = rec.Decision
		}
	}
	e.sink.emit(ev)
	return o, nil
}

// read runs a read-only call, retrying network failures with backoff.
func (e *Executor) read(ctx context.Context, r *stepRun, b bound, input json.RawMessage) (json.RawMessage, error) {
	p := retryOf(r.task.Retry, r.step.Retry)
	for attempt := 0; ; attempt++ {
		out, err := hostfuncs.CallTool(ctx, b.tool, input)
		if err == nil {
			out = e.o.Redactor.RedactSecrets(normalize(out))
			if err := hostfuncs.CheckOutput(b.tool, out); err != nil {
				return nil, err
			}
			return out, nil
		}
		if scripthost.ClassOf(err) != scripthost.ClassNetwork || attempt >= p.max || ctx.Err() != nil {
			return nil, err
		}
		d := p.backoff(attempt + 1)
		e.sink.emit(Event{Type: EventModelRetry, Time: e.o.Clock(), Session: r.session, Step: r.step.ID, Turn: r.turn, Tool: b.Name,
			Attempt: attempt + 1, DurationMS: d.Milliseconds(), Message: e.o.Redactor.Redact(err.Error())})
		if err := e.o.Sleep(ctx, d); err != nil {
			return nil, err
		}
	}
}

func normalize(out json.RawMessage) json.RawMessage {
	if len(strings.TrimSpace(string(out))) == 0 {
		return json.RawMessage("null")
	}
	if !json.Valid(out) {
		b, _ := json.Marshal(string(out))
		return b
	}
	return out
}

func violation(err error) string {
	var se *scripthost.Error
	if errors.As(err, &se) && se.Code == scripthost.CodeSandboxViolation {
		return err.Error()
	}
	return ""
}

// completeStep validates a completion against the step's criteria: the files it must
// produce exist and its check passes. A premature completion goes back to the model
// as an error.
func (e *Executor) completeStep(ctx context.Context, r *stepRun, rec ledger.AgentToolCall, args json.RawMessage, began time.Time) (callOutcome, error) {
	var in struct {
		Summary string `json:"summary"`
	}
	o := callOutcome{}
	refuse := func(msg string) (callOutcome, error) {
		rec.Status, rec.Error = CallFailed, "completion refused: "+msg
		e.sink.emit(Event{Type: EventCompletionRefused, Time: e.o.Clock(), Session: r.session, Step: r.step.ID, Turn: r.turn, Message: msg})
		return e.settle(ctx, r, rec, o, began)
	}
	if err := json.Unmarshal(args, &in); err != nil || strings.TrimSpace(in.Summary) == "" {
		return refuse(`give {"summary": "what was done"}`)
	}
	var missing []string
	for _, f := range r.step.Produces {
		if e.o.Workspace == nil {
			missing = append(missing, f)
			continue
		}
		if ok, _, err := e.o.Workspace.Exists("agent.complete", f); err != nil || !ok {
			missing = append(missing, f)
		}
	}
	if len(missing) > 0 {
		return refuse("the step must produce " + strings.Join(missing, ", ") + ", which does not exist yet")
	}
	if ch := r.step.Check; ch != nil {
		if e.o.Commands == nil {
			return refuse("the step's check cannot run: no command runner is configured")
		}
		req := command.Request{Program: ch.Program, Args: ch.Args}
		if e.checkNeedsApproval(req) {
			// The agent may have written this check: it runs only as a run_terminal
			// call of the same program would.
			cmdline := strings.TrimSpace(ch.Program + " " + strings.Join(ch.Args, " "))
			preview := e.o.Redactor.Redact(fmt.Sprintf("the check of step %s, from a task inside the workspace (where the agent can rewrite it):\n$ %s", r.step.ID, cmdline))
			decided, ao, err := e.approve(ctx, r, ClassTerminal, preview, &rec)
			if err != nil || !decided {
				return ao, err // paused for a decision, or the step skipped
			}
			if rec.Status == CallDenied || rec.Status == CallSkipped {
				rec.Error = e.o.Redactor.Redact(checkNotApproved(r.step, rec.Decision))
				o.denied = rec.Error
				return e.settle(ctx, r, rec, o, began)
			}
		}
		res, err := e.o.Commands.Run(ctx, req)
		if err != nil {
			return refuse("the check " + ch.Program + " could not run: " + err.Error())
		}
		if res.ExitCode != 0 {
			tail := res.Stderr + res.Stdout
			if len(tail) > 2000 {
				tail = tail[len(tail)-2000:]
			}
			return refuse(fmt.Sprintf("the check %s %s exited with code %d: %s", ch.Program, strings.Join(ch.Args, " "), res.ExitCode, e.o.Redactor.Redact(tail)))
		}
	}
	rec.Status, rec.Result = CallDone, mustJSON(map[string]string{"accepted": "step complete"})
	o.complete, o.summary = true, in.Summary
	return e.settle(ctx, r, rec, o, began)
}

// checkNotApproved is why a step fails whose check was denied or skipped.
func checkNotApproved(s Step, decision string) string {
	if s.Check == nil {
		return fmt.Sprintf("the check of step %s was not approved: %s", s.ID, decision)
	}
	cmdline := strings.TrimSpace(s.Check.Program + " " + strings.Join(s.Check.Args, " "))
	return fmt.Sprintf("the check %s of step %s runs %s, which is not read-only, from a task inside the workspace, and was not approved: %s",
		cmdline, s.ID, s.Check.Program, decision)
}

// checkNeedsApproval reports whether a step's check must go through the terminal
// approval policy: the task may have been written by the agent (it lies inside the
// workspace, or where it lay is not known) and the check's program is allowlisted
// but not read-only. A program not on the allowlist is refused when it is run.
func (e *Executor) checkNeedsApproval(req command.Request) bool {
	if e.o.Settings == nil || !e.o.Settings.TaskInWorkspace {
		return false
	}
	if !slices.Contains(e.o.Commands.Programs(), req.Program) {
		return false
	}
	t := e.o.Commands.Tool()
	return t.ReadOnly == nil || !t.ReadOnly(mustJSON(req))
}

func mustJSON(v any) json.RawMessage {
	b, _ := json.Marshal(v)
	return b
}

// approve applies the approval policy of class to a mutating call (or a check that
// needs approval), preview showing what it will do. It reports whether the call
// was decided (approved, denied or skipped: rec says which); when it was not, the
// session pauses and o carries why.
func (e *Executor) approve(ctx context.Context, r *stepRun, class, preview string, rec *ledger.AgentToolCall) (bool, callOutcome, error) {
	switch rec.Status {
	case CallApproved, CallRunning, CallDenied, CallSkipped:
		return true, callOutcome{}, nil // decided earlier (by a person or the policy)
	}
	decide := func(status, decision string) (bool, callOutcome, error) {
		rec.Status, rec.Decision = status, decision
		e.sink.emit(Event{Type: EventApprovalDecided, Time: e.o.Clock(), Session: r.session, Step: r.step.ID, Turn: r.turn,
			Tool: rec.Tool, Call: rec.CallID, Status: status, Message: decision})
		return true, callOutcome{}, e.put(ctx, *rec)
	}
	switch e.o.Approvals.For(class) {
	case Auto:
		return decide(CallApproved, "auto: "+class+" calls are approved by policy")
	case Deny:
		return decide(CallDenied, "the approval policy denies "+class+" calls")
	}
	pc := PendingCall{Session: r.session, Step: r.step.ID, CallID: rec.CallID, Tool: rec.Tool, Class: class, Preview: preview}
	if e.o.Prompter != nil {
		e.sink.emit(Event{Type: EventApprovalRequested, Time: e.o.Clock(), Session: r.session, Step: r.step.ID, Turn: r.turn, Tool: rec.Tool, Call: rec.CallID})
		ans, err := e.o.Prompter.Ask(ctx, pc)
		if err != nil {
			return false, callOutcome{}, fmt.Errorf("agent: approval prompt: %w", err)
		}
		who := "approved interactively by " + operator()
		switch ans {
		case AnswerApprove:
			return decide(CallApproved, who)
		case AnswerSkipStep:
			_, _, err := decide(CallSkipped, "step skipped interactively by "+operator())
			return false, callOutcome{skip: true}, err
		}
		return decide(CallDenied, "denied interactively by "+operator())
	}
	switch e.o.Approvals.NonInteractivePolicy {
	case NonInteractiveAuto:
		return decide(CallApproved, "non-interactive: approved by non_interactive_policy auto")
	case NonInteractiveSkip:
		return decide(CallSkipped, "needs approval and the session is non-interactive (non_interactive_policy skip)")
	}
	rec.Status = CallPendingApproval
	if err := e.put(ctx, *rec); err != nil {
		return false, callOutcome{}, err
	}
	e.sink.emit(Event{Type: EventApprovalRequested, Time: e.o.Clock(), Session: r.session, Step: r.step.ID, Turn: r.turn, Tool: rec.Tool, Call: rec.CallID, Message: pc.Preview})
	return false, callOutcome{pause: fmt.Sprintf("call %s (%s) needs approval: scripthost agent approve|deny %s %s, then resume", rec.CallID, rec.Tool, r.session, rec.CallID)}, nil
}

// preview shows what a mutating call will do.
func (e *Executor) preview(b bound, input json.RawMessage) string {
	var in struct {
		Path    string            `json:"path"`
		Content string            `json:"content"`
		Diff    string            `json:"diff"`
		Edits   []json.RawMessage `json:"edits"`
		Program string            `json:"program"`
		Args    []string          `json:"args"`
	}
	_ = json.Unmarshal(input, &in)
	var s string
	switch {
	case in.Program != "":
		s = "$ " + in.Program + " " + strings.Join(in.Args, " ")
	case in.Diff != "":
		s = in.Path + ":\n" + in.Diff
	case len(in.Edits) > 0:
		s = in.Path + ": edits " + string(mustJSON(in.Edits))
	case in.Path != "":
		lines := strings.SplitN(in.Content, "\n", 21)
		if len(lines) > 20 {
			lines = append(lines[:20], "…")
		}
		s = in.Path + ":\n" + strings.Join(lines, "\n")
	default:
		s = string(input)
	}
	return e.o.Redactor.Redact(s)
}

func operator() string {
	if u := os.Getenv("USER"); u != "" {
		return u
	}
	return "operator"
}
