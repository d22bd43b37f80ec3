package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/scripthost/scripthost/ledger"
)

// stepRun is one step being run.
type stepRun struct {
	session string
	task    *Task
	step    Step
	res     *StepResult
	st      *state
	conv    []Message
	turn    int
	// prior holds the ledger's records of the current turn's calls when they run.
	prior map[string]ledger.AgentToolCall
	// completed is the summary of an accepted complete_step found by rebuild: the step
	// was complete when the process stopped.
	completed *string
	// checkDenied is why the step fails: rebuild found its last complete_step denied
	// or skipped (its check needed an approval it did not get).
	checkDenied string
}

// fail ends the step with code and message.
func (e *Executor) fail(r *stepRun, code, msg string) {
	r.res.Status, r.res.Code, r.res.Error = StatusFailed, code, e.o.Redactor.Redact(msg)
	r.res.Turns = r.turn
	e.sink.emit(Event{Type: EventStepFailed, Time: e.o.Clock(), Session: r.session, Step: r.step.ID, Turn: r.turn,
		Code: code, Message: r.res.Error, Tokens: &r.res.Usage})
}

// runStep runs the agentic loop of step s until it completes, fails, or pauses for an
// approval (the returned message). An error means the ledger failed.
func (e *Executor) runStep(ctx context.Context, session string, t *Task, s Step, st *state) (string, error) {
	res := st.Steps[s.ID]
	start := e.o.Clock()
	if res.Status == StatusPending {
		res.StartedAt = start.UnixMilli()
		e.sink.emit(Event{Type: EventStepStart, Time: start, Session: session, Step: s.ID, Message: s.Title})
	}
	res.Status = StatusRunning
	if s.TimeoutMS > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, time.Duration(s.TimeoutMS)*time.Millisecond)
		defer cancel()
	}
	defer func() { res.DurationMS += e.o.Clock().Sub(start).Milliseconds() }()

	r := &stepRun{session: session, task: t, step: s, res: res, st: st}
	pending, err := e.rebuild(ctx, r)
	if err != nil {
		return "", err
	}
	limit := firstPositive(s.TurnLimit, t.TurnLimit, DefaultTurnLimit)
	budget := mergeBudget(t.Budget, s.Budget)
	for {
		if r.checkDenied != "" && len(pending) == 0 {
			e.fail(r, CodeApprovalDenied, r.checkDenied)
			return "", nil
		}
		if r.completed != nil && len(pending) == 0 {
			// Accepted before the process stopped: not asked again.
			res.Status, res.Summary, res.Turns = StatusCompleted, e.o.Redactor.Redact(*r.completed), r.turn
			e.sink.emit(Event{Type: EventStepComplete, Time: e.o.Clock(), Session: session, Step: s.ID, Turn: r.turn,
				Tokens: &res.Usage, Message: res.Summary})
			return "", nil
		}
		if len(pending) > 0 {
			out, err := e.runCalls(ctx, r, pending)
			if err != nil {
				return "", err
			}
			pending = nil
			switch {
			case out.pause != "":
				return out.pause, nil
			case out.complete:
				res.Status, res.Summary, res.Turns = StatusCompleted, e.o.Redactor.Redact(out.summary), r.turn
				e.sink.emit(Event{Type: EventStepComplete, Time: e.o.Clock(), Session: session, Step: s.ID, Turn: r.turn,
					Tokens: &res.Usage, Message: res.Summary})
				return "", nil
			case out.skip:
				res.Status, res.Code, res.Error, res.Turns = StatusSkipped, CodeApprovalDenied, "skipped by a person at an approval prompt", r.turn
				e.sink.emit(Event{Type: EventStepFailed, Time: e.o.Clock(), Session: session, Step: s.ID, Code: res.Code, Message: res.Error})
				return "", nil
			case out.failCode != "":
				e.fail(r, out.failCode, out.failMsg)
				return "", nil
			}
			continue
		}
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			e.fail(r, CodeStepTimeout, fmt.Sprintf("step timed out after %d ms", s.TimeoutMS))
			return "", nil
		}
		if r.turn >= limit {
			e.fail(r, CodeTurnLimit, fmt.Sprintf("turn limit: %d turns without a valid completion", limit))
			return "", nil
		}
		if budget.StepTokens > 0 && res.Usage.Total() >= budget.StepTokens {
			e.fail(r, CodeBudget, fmt.Sprintf("step token budget exhausted: used %d of %d", res.Usage.Total(), budget.StepTokens))
			return "", nil
		}
		if budget.TaskTokens > 0 && st.Usage.Total() >= budget.TaskTokens {
			e.fail(r, CodeBudget, fmt.Sprintf("task token budget exhausted: used %d of %d", st.Usage.Total(), budget.TaskTokens))
			return "", nil
		}
		r.turn++
		msgs, removed, est := trim(r.conv, e.tools.defs, budget.ContextTokens)
		if removed > 0 {
			res.Trimmed += removed
			e.sink.emit(Event{Type: EventContextTrimmed, Time: e.o.Clock(), Session: session, Step: s.ID, Turn: r.turn,
				Message: fmt.Sprintf("%d oldest tool results removed; about %d tokens now", removed, est)})
		}
		if budget.ContextTokens > 0 && est > budget.ContextTokens {
			e.fail(r, CodeBudget, fmt.Sprintf("the context needs about %d tokens with every tool result trimmed; the budget is %d", est, budget.ContextTokens))
			return "", nil
		}
		req := Request{Model: e.o.Model, Messages: msgs, Tools: e.tools.defs}
		e.sink.emit(Event{Type: EventModelRequest, Time: e.o.Clock(), Session: session, Step: s.ID, Turn: r.turn, Tokens: &Usage{PromptTokens: est}})
		began := e.o.Clock()
		resp, retries, err := e.complete(ctx, r, req, retryOf(t.Retry, s.Retry))
		res.Retries += retries
		if err != nil {
			r.turn--
			code := CodeModel
			if errors.Is(ctx.Err(), context.DeadlineExceeded) {
				code = CodeStepTimeout
			}
			e.fail(r, code, err.Error())
			return "", nil
		}
		if msg := e.oversized(resp); msg != "" {
			// Neither stored nor shown: only its size is.
			r.turn--
			e.fail(r, CodeModel, msg)
			return "", nil
		}
		if resp.Usage.Total() == 0 {
			// The server gave no usage: count the estimate.
			resp.Usage = Usage{PromptTokens: est, CompletionTokens: EstimateTokens([]Message{resp.Message}, nil)}
		}
		resp.Message.Role = "assistant"
		if err := e.recordTurn(ctx, r, req, resp, retries, began); err != nil {
			return "", err
		}
		res.Usage.add(resp.Usage)
		st.Usage.add(resp.Usage)
		e.sink.emit(Event{Type: EventModelResponse, Time: e.o.Clock(), Session: session, Step: s.ID, Turn: r.turn,
			Tokens: &resp.Usage, DurationMS: e.o.Clock().Sub(began).Milliseconds(), Attempt: retries + 1})
		res.Turns = r.turn
		r.conv = append(r.conv, resp.Message)
		if len(resp.Message.ToolCalls) == 0 {
			r.conv = append(r.conv, nudge)
			continue
		}
		pending = callsOf(s.ID, r.turn, resp.Message)
	}
}

// oversized says why an answer is larger than the caps allow, or "" when it is not.
func (e *Executor) oversized(resp Response) string {
	total := int64(len(resp.Message.Content))
	for _, c := range resp.Message.ToolCalls {
		n := int64(len(c.Arguments))
		if n > e.o.MaxArgumentBytes {
			return fmt.Sprintf("the model's call of %.64q has %d bytes of arguments, more than the %d-byte cap (max_argument_bytes); refused, not stored", c.Name, n, e.o.MaxArgumentBytes)
		}
		total += n + int64(len(c.Name)+len(c.ID))
	}
	if total > e.o.MaxResponseBytes {
		return fmt.Sprintf("the model's answer has %d bytes, more than the %d-byte cap (max_response_bytes); refused, not stored", total, e.o.MaxResponseBytes)
	}
	return ""
}

// nudge answers a turn without tool calls.
var nudge = Message{Role: "user", Content: "No tool was called. Use the tools to do the step, then call complete_step with a summary."}

// pendingCall is a tool call of the current turn not yet finished.
type pendingCall struct {
	ToolCall
	callID string
	seq    int
}

func callID(step string, turn, seq int) string { return fmt.Sprintf("%s/%d/%d", step, turn, seq) }

func callsOf(step string, turn int, m Message) []pendingCall {
	out := make([]pendingCall, 0, len(m.ToolCalls))
	for i, c := range m.ToolCalls {
		out = append(out, pendingCall{ToolCall: c, callID: callID(step, turn, i+1), seq: i + 1})
	}
	return out
}

// recordTurn stores a finished turn, redacted, before any of its tool calls run: after
// a crash it is replayed from the ledger, never sent again.
func (e *Executor) recordTurn(ctx context.Context, r *stepRun, req Request, resp Response, retries int, began time.Time) error {
	reqJSON, _ := json.Marshal(req)
	respJSON, _ := json.Marshal(resp)
	turn := ledger.AgentTurn{Session: r.session, StepID: r.step.ID, Turn: r.turn,
		Request: e.o.Redactor.RedactJSON(reqJSON), Response: e.o.Redactor.RedactJSON(respJSON),
		PromptTokens: resp.Usage.PromptTokens, CompletionTokens: resp.Usage.CompletionTokens, Retries: retries,
		StartedAt: began, DurationMS: e.o.Clock().Sub(began).Milliseconds()}
	wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), ledger.WriteTimeout)
	defer cancel()
	if err := e.sessions.AppendAgentTurn(wctx, turn); err != nil {
		return fmt.Errorf("agent: record turn: %w", err)
	}
	return nil
}

// rebuild prepares the step's conversation: the system prompt, the step with the
// files it names, then every recorded turn with the results of its finished calls.
// It returns the calls of the last turn that have not finished.
func (e *Executor) rebuild(ctx context.Context, r *stepRun) ([]pendingCall, error) {
	files := map[string]string{}
	for _, f := range r.step.Files {
		if e.o.Workspace == nil {
			files[f] = "(no workspace)"
			continue
		}
		b, err := e.o.Workspace.Read("agent.context", f)
		if err != nil {
			files[f] = "(cannot be read: " + err.Error() + ")"
			continue
		}
		files[f] = e.o.Redactor.Redact(string(b))
	}
	r.conv = []Message{{Role: "system", Content: systemPrompt}, {Role: "user", Content: stepPrompt(r.task, r.step, files)}}
	turns, err := e.sessions.AgentTurns(ctx, r.session)
	if err != nil {
		return nil, fmt.Errorf("agent: %w", err)
	}
	calls, err := e.sessions.AgentToolCalls(ctx, r.session)
	if err != nil {
		return nil, fmt.Errorf("agent: %w", err)
	}
	done := map[string]ledger.AgentToolCall{}
	for _, c := range calls {
		if c.StepID == r.step.ID {
			done[c.CallID] = c
		}
	}
	var pending []pendingCall
	for _, t := range turns {
		if t.StepID != r.step.ID {
			continue
		}
		var resp Response
		if err := json.Unmarshal(t.Response, &resp); err != nil {
			return nil, fmt.Errorf("agent: session %s step %s turn %d: stored response: %w", r.session, r.step.ID, t.Turn, err)
		}
		resp.Message.Role = "assistant"
		r.turn = t.Turn
		r.conv = append(r.conv, resp.Message)
		if len(resp.Message.ToolCalls) == 0 {
			r.conv = append(r.conv, nudge)
			continue
		}
		pending, r.checkDenied = nil, ""
		for _, pc := range callsOf(r.step.ID, t.Turn, resp.Message) {
			if c, ok := done[pc.callID]; ok && c.Tool == CompleteTool && (c.Status == CallDenied || c.Status == CallSkipped) {
				// Only a check's approval denies or skips a completion.
				r.checkDenied = c.Error
				if r.checkDenied == "" {
					r.checkDenied = e.o.Redactor.Redact(checkNotApproved(r.step, c.Decision))
				}
			}
			if c, ok := done[pc.callID]; ok && c.Tool == CompleteTool && c.Status == CallDone {
				var in struct {
					Summary string `json:"summary"`
				}
				_ = json.Unmarshal([]byte(pc.Arguments), &in)
				r.completed = &in.Summary
			}
			if c, ok := done[pc.callID]; ok && finished(c.Status) {
				r.conv = append(r.conv, Message{Role: "tool", ToolCallID: pc.ID, Content: e.content(c)})
				continue
			}
			pending = append(pending, pc)
		}
	}
	return pending, nil
}

// complete calls the model, retrying transient failures with exponential backoff.
func (e *Executor) complete(ctx context.Context, r *stepRun, req Request, p retryPolicy) (Response, int, error) {
	for attempt := 0; ; attempt++ {
		resp, err := e.o.Driver.Complete(ctx, req)
		if err == nil {
			return resp, attempt, nil
		}
		var te *TransientError
		if !errors.As(err, &te) || attempt >= p.max || ctx.Err() != nil {
			if attempt > 0 {
				err = fmt.Errorf("%w (after %d retries)", err, attempt)
			}
			return Response{}, attempt, err
		}
		d := p.backoff(attempt + 1)
		if te.RetryAfter > d {
			d = te.RetryAfter
		}
		e.sink.emit(Event{Type: EventModelRetry, Time: e.o.Clock(), Session: r.session, Step: r.step.ID, Turn: r.turn,
			Attempt: attempt + 1, DurationMS: d.Milliseconds(), Message: e.o.Redactor.Redact(err.Error())})
		if err := e.o.Sleep(ctx, d); err != nil {
			return Response{}, attempt, err
		}
	}
}

type retryPolicy struct {
	max  int
	base time.Duration
}

// backoff is the wait before retry n (1-based): base·2^(n-1).
func (p retryPolicy) backoff(n int) time.Duration { return p.base << (n - 1) }

func retryOf(rs ...*Retry) retryPolicy {
	p := retryPolicy{max: 3, base: time.Second}
	for _, r := range rs {
		if r == nil {
			continue
		}
		if r.MaxRetries != nil {
			p.max = *r.MaxRetries
		}
		if r.BaseMS > 0 {
			p.base = time.Duration(r.BaseMS) * time.Millisecond
		}
	}
	return p
}

func mergeBudget(bs ...*Budget) Budget {
	var out Budget
	for _, b := range bs {
		if b == nil {
			continue
		}
		if b.ContextTokens > 0 {
			out.ContextTokens = b.ContextTokens
		}
		if b.StepTokens > 0 {
			out.StepTokens = b.StepTokens
		}
		if b.TaskTokens > 0 {
			out.TaskTokens = b.TaskTokens
		}
	}
	return out
}

func firstPositive(v ...int) int {
	for _, n := range v {
		if n > 0 {
			return n
		}
	}
	return 0
}
