package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/scripthost/scripthost"
	"github.com/scripthost/scripthost/hostfuncs"
	"github.com/scripthost/scripthost/internal/fakemodel"
	"github.com/scripthost/scripthost/ledger"
)

const oneStep = `
goal: write a greeting
steps:
  - id: greet
    title: Write hello.txt
    produces: [hello.txt]
`

func TestSingleStepWritesAFile(t *testing.T) {
	e := newEnv(t, fakemodel.New(
		tools(call("write_file", map[string]string{"path": "hello.txt", "content": "hello\n"})),
		done("wrote hello.txt"),
	))
	res := e.run(e.executor(nil), oneStep)
	wantStatus(t, res, StatusCompleted, "")
	if got := e.file("hello.txt"); got != "hello\n" {
		t.Fatalf("got %q, want hello", got)
	}
	reqs := e.srv.Requests()
	if len(reqs) != 2 {
		t.Fatalf("got %d model requests, want 2", len(reqs))
	}
	names := reqs[0].ToolNames()
	for _, want := range []string{"read_file", "write_file", "modify_file", "list_directory", "search_code", "run_terminal", CompleteTool} {
		if !slices.Contains(names, want) {
			t.Errorf("tools sent: got %v, want %s among them", names, want)
		}
	}
	for _, tl := range reqs[0].Tools {
		if tl.Function.Name == "write_file" && !strings.Contains(string(tl.Function.Parameters), `"content"`) {
			t.Errorf("write_file schema: got %s", tl.Function.Parameters)
		}
	}
	if r := toolResults(reqs[1]); len(r) != 1 || !strings.Contains(r[0], `"ok":true`) {
		t.Fatalf("tool results sent back: got %v", r)
	}
	// The write went through the ledger as a mutation.
	muts, err := e.store.Mutations(context.Background(), ledger.MutationFilter{Workflow: Workflow(res.Session)})
	if err != nil || len(muts) != 1 || muts[0].Status != scripthost.MutationApplied || muts[0].IdempotencyKey == "" {
		t.Fatalf("mutations: got %+v, %v", muts, err)
	}
	if res.Steps[0].Usage.Total() == 0 || res.Usage.Total() != res.Steps[0].Usage.Total() {
		t.Fatalf("usage: got %+v", res)
	}
}

func TestMultiStepRunsInDependencyOrder(t *testing.T) {
	e := newEnv(t, fakemodel.NewFunc(func(r fakemodel.Request) fakemodel.Answer {
		step := strings.SplitN(strings.SplitN(r.Text(1), "Current step ", 2)[1], ":", 2)[0]
		if len(toolResults(r)) == 0 {
			return tools(call("write_file", map[string]string{"path": step + ".txt", "content": step}))
		}
		return done(step)
	}))
	res := e.run(e.executor(nil), `
goal: three files
steps:
  - {id: c, title: C, depends_on: [b]}
  - {id: a, title: A}
  - {id: b, title: B, depends_on: [a]}
`)
	wantStatus(t, res, StatusCompleted, "")
	var order []string
	for _, r := range e.srv.Requests() {
		if len(toolResults(r)) == 0 {
			order = append(order, strings.SplitN(strings.SplitN(r.Text(1), "Current step ", 2)[1], ":", 2)[0])
		}
	}
	if strings.Join(order, ",") != "a,b,c" {
		t.Fatalf("step order: got %v, want a,b,c", order)
	}
}

func TestFileReadAndStepFilesInContext(t *testing.T) {
	e := newEnv(t, fakemodel.New(
		tools(call("read_file", map[string]string{"path": "notes.md"})),
		done("read it"),
	))
	os.WriteFile(filepath.Join(e.dir, "notes.md"), []byte("remember the milk"), 0o644)
	os.WriteFile(filepath.Join(e.dir, "spec.md"), []byte("the spec text"), 0o644)
	res := e.run(e.executor(nil), `
goal: read
steps:
  - {id: r, title: Read notes, files: [spec.md]}
`)
	wantStatus(t, res, StatusCompleted, "")
	reqs := e.srv.Requests()
	if !strings.Contains(reqs[0].Text(1), "the spec text") {
		t.Fatalf("step files not in the context: %q", reqs[0].Text(1))
	}
	if r := toolResults(reqs[1]); len(r) != 1 || !strings.Contains(r[0], "remember the milk") {
		t.Fatalf("read result: got %v", r)
	}
}

func TestPathTraversalIsRefused(t *testing.T) {
	e := newEnv(t, fakemodel.New(
		tools(call("write_file", map[string]string{"path": "../escape.txt", "content": "x"})),
		done("never"),
	))
	res := e.run(e.executor(nil), oneStep)
	wantStatus(t, res, StatusFailed, CodeSandboxViolation)
	if res.ExitCode() != 32 {
		t.Fatalf("exit code: got %d, want 32", res.ExitCode())
	}
	if _, err := os.Stat(filepath.Join(filepath.Dir(e.dir), "escape.txt")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("file outside the workspace: got %v, want none", err)
	}
}

func TestModelRetriesWithBackoff(t *testing.T) {
	e := newEnv(t, fakemodel.New(
		fakemodel.Answer{Status: 429}, fakemodel.Answer{Status: 500}, fakemodel.Answer{Status: 503},
		tools(call("write_file", map[string]string{"path": "hello.txt", "content": "hi"})),
		done("ok"),
	))
	res := e.run(e.executor(nil), oneStep)
	wantStatus(t, res, StatusCompleted, "")
	if fmt.Sprint(e.sleeps) != "[1s 2s 4s]" {
		t.Fatalf("backoff: got %v, want [1s 2s 4s]", e.sleeps)
	}
	if res.Steps[0].Retries != 3 {
		t.Fatalf("retries recorded: got %d, want 3", res.Steps[0].Retries)
	}
	turns, _ := e.store.(ledger.AgentStore).AgentTurns(context.Background(), res.Session)
	if len(turns) == 0 || turns[0].Retries != 3 {
		t.Fatalf("turn retries: got %+v", turns)
	}
}

func TestPersistentModelFailureFailsTheStep(t *testing.T) {
	e := newEnv(t, fakemodel.New(fakemodel.Answer{Status: 500}, fakemodel.Answer{Status: 500}, fakemodel.Answer{Status: 500}, fakemodel.Answer{Status: 500}))
	res := e.run(e.executor(nil), oneStep)
	wantStatus(t, res, StatusFailed, CodeModel)
	if e.srv.Count() != 4 || len(e.sleeps) != 3 {
		t.Fatalf("got %d requests and sleeps %v, want 4 and 3 sleeps", e.srv.Count(), e.sleeps)
	}
}

func TestTurnLimit(t *testing.T) {
	var script []fakemodel.Answer
	for range 3 {
		script = append(script, fakemodel.Answer{Text: "thinking"})
	}
	e := newEnv(t, fakemodel.New(script...))
	res := e.run(e.executor(nil), `
goal: g
turn_limit: 3
steps: [{id: s, title: S}]
`)
	wantStatus(t, res, StatusFailed, CodeTurnLimit)
	if res.ExitCode() != 31 || e.srv.Count() != 3 {
		t.Fatalf("exit %d after %d requests, want 31 after 3", res.ExitCode(), e.srv.Count())
	}
}

func TestPrematureCompletionIsAnErrorTurn(t *testing.T) {
	e := newEnv(t, fakemodel.New(
		done("too early"),
		tools(call("write_file", map[string]string{"path": "hello.txt", "content": "hi"})),
		done("now"),
	))
	res := e.run(e.executor(nil), oneStep)
	wantStatus(t, res, StatusCompleted, "")
	r := toolResults(e.srv.Requests()[1])
	if len(r) != 1 || !strings.Contains(r[0], "completion refused") || !strings.Contains(r[0], "hello.txt") {
		t.Fatalf("premature completion answer: got %v", r)
	}
	if res.Steps[0].Turns != 3 {
		t.Fatalf("turns: got %d, want 3", res.Steps[0].Turns)
	}
}

func TestCheckCommandGatesCompletion(t *testing.T) {
	e := newEnv(t, fakemodel.New(done("a"), done("b")))
	res := e.run(e.executor(nil), `
goal: g
turn_limit: 2
steps: [{id: s, title: S, check: {program: "false"}}]
`)
	wantStatus(t, res, StatusFailed, CodeTurnLimit)
	if r := toolResults(e.srv.Requests()[1]); !strings.Contains(r[0], "exited with code 1") {
		t.Fatalf("got %v", r)
	}
}

func TestDependencyBlocking(t *testing.T) {
	e := newEnv(t, fakemodel.New(fakemodel.Answer{Text: "no"}, done("independent")))
	res := e.run(e.executor(nil), `
goal: g
steps:
  - {id: a, title: A, turn_limit: 1}
  - {id: b, title: B, depends_on: [a]}
  - {id: c, title: C}
`)
	got := map[string]string{}
	for _, s := range res.Steps {
		got[s.ID] = s.Status
	}
	if got["a"] != StatusFailed || got["b"] != StatusBlocked || got["c"] != StatusCompleted {
		t.Fatalf("statuses: got %v", got)
	}
	if res.Code != CodeTurnLimit {
		t.Fatalf("code: got %s", res.Code)
	}
}

func TestMalformedAndInvalidToolCallsCostATurn(t *testing.T) {
	e := newEnv(t, fakemodel.New(
		tools(fakemodel.Call{Name: "write_file", Args: `{"path": "x.txt", "content": `}),
		tools(call("write_file", map[string]any{"path": "x.txt", "content": 5})),
		tools(call("no_such_tool", map[string]any{})),
		tools(call("write_file", map[string]string{"path": "hello.txt", "content": "ok"})),
		done("ok"),
	))
	res := e.run(e.executor(nil), oneStep)
	wantStatus(t, res, StatusCompleted, "")
	reqs := e.srv.Requests()
	for i, want := range []string{"not valid JSON", "invalid input", "unknown tool"} {
		r := toolResults(reqs[i+1])
		if !strings.Contains(r[len(r)-1], want) {
			t.Errorf("answer %d: got %v, want %q", i+1, r[len(r)-1], want)
		}
	}
	if res.Steps[0].Turns != 5 {
		t.Fatalf("turns: got %d, want 5", res.Steps[0].Turns)
	}
}

func TestApprovalGatePausesAndResumesWithoutAskingTheModel(t *testing.T) {
	e := newEnv(t, fakemodel.New(
		tools(call("run_terminal", map[string]any{"program": "sh", "args": []string{"-c", "echo ran >> log.txt"}})),
		done("ran"),
	))
	x := e.executor(func(o *Options) { o.Approvals = Approvals{Terminal: Prompt, NonInteractivePolicy: NonInteractiveFail} })
	res := e.run(x, `
goal: g
steps: [{id: s, title: S, produces: [log.txt]}]
`)
	wantStatus(t, res, StatusPaused, CodeApprovalPending)
	if res.ExitCode() != 33 || e.srv.Count() != 1 {
		t.Fatalf("exit %d after %d requests, want 33 after 1", res.ExitCode(), e.srv.Count())
	}
	if _, err := os.Stat(filepath.Join(e.dir, "log.txt")); err == nil {
		t.Fatal("the command ran before approval")
	}
	// Resuming without a decision pauses again, without a model call.
	if res2, err := x.Resume(context.Background(), res.Session); err != nil || res2.Code != CodeApprovalPending || e.srv.Count() != 1 {
		t.Fatalf("resume undecided: got %+v, %v, %d requests", res2, err, e.srv.Count())
	}
	if err := Decide(context.Background(), e.store, res.Session, "s/1/1", true, "alice"); err != nil {
		t.Fatal(err)
	}
	res, err := x.Resume(context.Background(), res.Session)
	if err != nil {
		t.Fatal(err)
	}
	wantStatus(t, res, StatusCompleted, "")
	if e.file("log.txt") != "ran\n" || e.srv.Count() != 2 {
		t.Fatalf("log %q after %d requests, want ran after 2", e.file("log.txt"), e.srv.Count())
	}
	calls, _ := e.store.(ledger.AgentStore).AgentToolCalls(context.Background(), res.Session)
	if calls[0].Decision != "approved by alice" || calls[0].Status != CallDone {
		t.Fatalf("decision: got %+v", calls[0])
	}
}

func TestApprovalDeniedGoesBackToTheModel(t *testing.T) {
	e := newEnv(t, fakemodel.New(
		tools(call("delete_file", map[string]any{"path": "keep.txt"})),
		done("gave up deleting"),
	))
	os.WriteFile(filepath.Join(e.dir, "keep.txt"), []byte("k"), 0o644)
	x := e.executor(func(o *Options) {
		o.Approvals = Approvals{FileDelete: Prompt, NonInteractivePolicy: NonInteractiveFail}
	})
	res := e.run(x, `{"goal": "g", "steps": [{"id": "s", "title": "S"}]}`)
	wantStatus(t, res, StatusPaused, CodeApprovalPending)
	if err := Decide(context.Background(), e.store, res.Session, "s/1/1", false, "bob"); err != nil {
		t.Fatal(err)
	}
	res, err := x.Resume(context.Background(), res.Session)
	if err != nil {
		t.Fatal(err)
	}
	wantStatus(t, res, StatusCompleted, "")
	if e.file("keep.txt") != "k" {
		t.Fatal("denied delete ran")
	}
	if r := toolResults(e.srv.Requests()[1]); !strings.Contains(r[0], "denied by bob") {
		t.Fatalf("got %v", r)
	}
}

func TestApprovalPolicies(t *testing.T) {
	for _, tc := range []struct {
		name    string
		a       Approvals
		ran     bool
		message string
	}{
		{"deny", Approvals{FileWrite: Deny}, false, "approval policy denies"},
		{"skip when non-interactive", Approvals{FileWrite: Prompt, NonInteractivePolicy: NonInteractiveSkip}, false, "non-interactive"},
		{"auto when non-interactive", Approvals{FileWrite: Prompt, NonInteractivePolicy: NonInteractiveAuto}, true, `"ok":true`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, fakemodel.New(tools(call("write_file", map[string]string{"path": "f.txt", "content": "x"})), done("d")))
			res := e.run(e.executor(func(o *Options) { o.Approvals = tc.a }), `{"goal": "g", "steps": [{"id": "s", "title": "S"}]}`)
			wantStatus(t, res, StatusCompleted, "")
			_, err := os.Stat(filepath.Join(e.dir, "f.txt"))
			if (err == nil) != tc.ran {
				t.Fatalf("file written: got %v, want %v", err == nil, tc.ran)
			}
			if r := toolResults(e.srv.Requests()[1]); !strings.Contains(r[0], tc.message) {
				t.Fatalf("got %v, want %q", r, tc.message)
			}
		})
	}
}

type answerPrompter struct {
	ans  Answer
	seen []PendingCall
}

func (p *answerPrompter) Ask(_ context.Context, c PendingCall) (Answer, error) {
	p.seen = append(p.seen, c)
	return p.ans, nil
}

func TestInteractivePromptShowsAPreview(t *testing.T) {
	e := newEnv(t, fakemodel.New(tools(call("write_file", map[string]string{"path": "f.txt", "content": "line one\nline two"})), done("d")))
	p := &answerPrompter{ans: AnswerApprove}
	res := e.run(e.executor(func(o *Options) { o.Approvals = Approvals{FileWrite: Prompt}; o.Prompter = p }), `{"goal": "g", "steps": [{"id": "s", "title": "S"}]}`)
	wantStatus(t, res, StatusCompleted, "")
	if len(p.seen) != 1 || !strings.Contains(p.seen[0].Preview, "f.txt:\nline one\nline two") {
		t.Fatalf("prompted with %+v", p.seen)
	}
	p2 := &answerPrompter{ans: AnswerSkipStep}
	e2 := newEnv(t, fakemodel.New(tools(call("write_file", map[string]string{"path": "f.txt", "content": "x"}))))
	res = e2.run(e2.executor(func(o *Options) { o.Approvals = Approvals{FileWrite: Prompt}; o.Prompter = p2 }), `{"goal": "g", "steps": [{"id": "s", "title": "S"}]}`)
	if res.Steps[0].Status != StatusSkipped || res.ExitCode() != 33 {
		t.Fatalf("skip step: got %+v exit %d", res.Steps[0], res.ExitCode())
	}
}

func TestJSONLEvents(t *testing.T) {
	e := newEnv(t, fakemodel.New(
		tools(call("write_file", map[string]string{"path": "hello.txt", "content": "hi"})),
		done("ok"),
	))
	var progress strings.Builder
	res := e.run(e.executor(func(o *Options) { o.Progress = &progress }), oneStep)
	wantStatus(t, res, StatusCompleted, "")
	got := e.eventTypes()
	if !strings.Contains(strings.Join(got, ","), "session_start,stage,stage,step_start") || !strings.Contains(strings.Join(got, ","), "step_complete,stage,session_end") {
		t.Errorf("lifecycle: got %v, want enter and execute before the steps, exit after", got)
	}
	for _, want := range []string{EventSessionStart, EventStepStart, EventModelRequest, EventModelResponse, EventToolCall, EventApprovalDecided, EventToolResult, EventStepComplete, EventSessionEnd} {
		if !slices.Contains(got, want) {
			t.Errorf("events: got %v, want %s", got, want)
		}
	}
	for _, l := range strings.Split(strings.TrimSpace(e.events.String()), "\n") {
		var ev Event
		json.Unmarshal([]byte(l), &ev)
		if ev.Session != res.Session {
			t.Fatalf("event without the session: %s", l)
		}
		if ev.Type == EventToolResult && ev.Tool == "write_file" && (ev.Step != "greet" || ev.Turn != 1 || ev.Call != "greet/1/1") {
			t.Fatalf("tool_result fields: %s", l)
		}
		if (ev.Type == EventStepComplete || ev.Type == EventModelResponse) && (ev.Tokens == nil || ev.Tokens.Total() == 0) {
			t.Fatalf("step_complete without tokens: %s", l)
		}
	}
	for _, want := range []string{"step greet: Write hello.txt", "tool write_file (turn 1)", "step greet complete"} {
		if !strings.Contains(progress.String(), want) {
			t.Errorf("progress: got %q, want %q", progress.String(), want)
		}
	}
}

func TestBudgetTrimsOldestToolResults(t *testing.T) {
	big := strings.Repeat("x", 4000)
	e := newEnv(t, fakemodel.New(
		tools(call("read_file", map[string]string{"path": "a.txt"})),
		tools(call("read_file", map[string]string{"path": "b.txt"})),
		tools(call("write_file", map[string]string{"path": "hello.txt", "content": "hi"})),
		done("ok"),
	))
	os.WriteFile(filepath.Join(e.dir, "a.txt"), []byte("AAAA"+big), 0o644)
	os.WriteFile(filepath.Join(e.dir, "b.txt"), []byte("BBBB"+big), 0o644)
	res := e.run(e.executor(nil), oneStep+"budget: {context_tokens: 2400}\n")
	wantStatus(t, res, StatusCompleted, "")
	reqs := e.srv.Requests()
	last := strings.Join(toolResults(reqs[3]), "\n")
	if strings.Contains(last, "AAAA") || !strings.Contains(last, trimmedNote) || !strings.Contains(last, "BBBB") {
		t.Fatalf("request 4 tool results: want a.txt trimmed and b.txt kept, got %.300s", last)
	}
	if !strings.Contains(reqs[3].Text(1), "Write hello.txt") || reqs[3].Messages[0].Role != "system" {
		t.Fatal("the step or system prompt was trimmed")
	}
	if res.Steps[0].Trimmed == 0 || !slices.Contains(e.eventTypes(), EventContextTrimmed) {
		t.Fatalf("trimming not recorded: %+v", res.Steps[0])
	}
	turns, _ := e.store.(ledger.AgentStore).AgentTurns(context.Background(), res.Session)
	if !strings.Contains(string(turns[3].Request), "removed to stay within the context budget") {
		t.Fatal("the recorded request is not the trimmed one")
	}
}

func TestStepTokenBudget(t *testing.T) {
	e := newEnv(t, fakemodel.New(fakemodel.Answer{Text: "a", PromptTokens: 900, CompletionTokens: 200}, fakemodel.Answer{Text: "b"}))
	res := e.run(e.executor(nil), `{"goal": "g", "budget": {"step_tokens": 1000}, "steps": [{"id": "s", "title": "S"}]}`)
	wantStatus(t, res, StatusFailed, CodeBudget)
	if e.srv.Count() != 1 {
		t.Fatalf("requests: got %d, want 1", e.srv.Count())
	}
}

func TestSecretsAreRedacted(t *testing.T) {
	const key = "sk-live-abcdefghijklmnopqrstuvwx"
	e := newEnv(t, fakemodel.New(
		fakemodel.Answer{Text: "the key is " + key, Calls: []fakemodel.Call{call("write_file", map[string]string{"path": "cfg.txt", "content": "api_key=" + key})}},
		done("stored "+key),
	))
	red := hostfuncs.NewRedactor(key)
	var progress strings.Builder
	res := e.run(e.executor(func(o *Options) { o.Redactor = red; o.Progress = &progress }), `{"goal": "g", "steps": [{"id": "s", "title": "S"}]}`)
	wantStatus(t, res, StatusCompleted, "")
	as := e.store.(ledger.AgentStore)
	turns, _ := as.AgentTurns(context.Background(), res.Session)
	calls, _ := as.AgentToolCalls(context.Background(), res.Session)
	muts, _ := e.store.Mutations(context.Background(), ledger.MutationFilter{Workflow: Workflow(res.Session)})
	sess, _ := as.AgentSession(context.Background(), res.Session)
	stored := fmt.Sprint(turns, calls, muts, string(sess.State), e.events.String(), progress.String())
	for _, tr := range turns {
		stored += string(tr.Request) + string(tr.Response)
	}
	for _, c := range calls {
		stored += string(c.Arguments) + string(c.Result)
	}
	for _, m := range muts {
		stored += string(m.Params) + string(m.Result)
	}
	if strings.Contains(stored, key) {
		t.Fatal("the secret is stored or shown")
	}
	if !strings.Contains(stored, hostfuncs.Redacted) {
		t.Fatal("nothing was redacted")
	}
}

func TestHundredSteps(t *testing.T) {
	e := newEnv(t, fakemodel.NewFunc(func(r fakemodel.Request) fakemodel.Answer {
		step := strings.SplitN(strings.SplitN(r.Text(1), "Current step ", 2)[1], ":", 2)[0]
		if len(toolResults(r)) == 0 {
			return tools(call("write_file", map[string]string{"path": "out/" + step + ".txt", "content": step}))
		}
		return done(step)
	}))
	var b strings.Builder
	b.WriteString(`{"goal": "many", "steps": [`)
	for i := range 100 {
		if i > 0 {
			fmt.Fprintf(&b, `,{"id": "s%03d", "title": "T", "depends_on": ["s%03d"], "produces": ["out/s%03d.txt"]}`, i, i-1, i)
		} else {
			b.WriteString(`{"id": "s000", "title": "T", "produces": ["out/s000.txt"]}`)
		}
	}
	b.WriteString(`]}`)
	tk, err := ParseTask("t.json", []byte(b.String()))
	if err != nil {
		t.Fatal(err)
	}
	res, err := e.executor(nil).Run(context.Background(), "t.json", tk)
	if err != nil {
		t.Fatal(err)
	}
	wantStatus(t, res, StatusCompleted, "")
	if len(res.Steps) != 100 || e.srv.Count() != 200 {
		t.Fatalf("got %d steps, %d requests; want 100, 200", len(res.Steps), e.srv.Count())
	}
	if e.file("out/s099.txt") != "s099" {
		t.Fatal("last step's file missing")
	}
}

func TestManyToolCallsInOneStep(t *testing.T) {
	var calls []fakemodel.Call
	for i := range 6 {
		calls = append(calls, call("read_file", map[string]string{"path": fmt.Sprintf("in%d.txt", i)}))
	}
	var writes []fakemodel.Call
	for i := range 6 {
		writes = append(writes, call("write_file", map[string]string{"path": "log.txt", "content": fmt.Sprint(i)}))
	}
	e := newEnv(t, fakemodel.New(tools(calls...), tools(writes...), done("ok")))
	for i := range 6 {
		os.WriteFile(filepath.Join(e.dir, fmt.Sprintf("in%d.txt", i)), []byte(fmt.Sprintf("content %d", i)), 0o644)
	}
	res := e.run(e.executor(nil), `{"goal": "g", "steps": [{"id": "s", "title": "S"}]}`)
	wantStatus(t, res, StatusCompleted, "")
	reqs := e.srv.Requests()
	r := toolResults(reqs[1])
	for i := range 6 {
		if !strings.Contains(r[i], fmt.Sprintf("content %d", i)) {
			t.Fatalf("read result %d out of order: %v", i, r[i])
		}
	}
	// Mutations ran one at a time, in order: the last write wins.
	if e.file("log.txt") != "5" {
		t.Fatalf("log.txt: got %q, want 5", e.file("log.txt"))
	}
	cs, _ := e.store.(ledger.AgentStore).AgentToolCalls(context.Background(), res.Session)
	if len(cs) != 13 {
		t.Fatalf("tool calls recorded: got %d, want 13", len(cs))
	}
}

func TestLargeFileRead(t *testing.T) {
	e := newEnv(t, fakemodel.New(tools(call("read_file", map[string]string{"path": "big.txt"})), done("ok")))
	big := strings.Repeat("0123456789abcdef\n", 1<<16) // 1 MiB
	os.WriteFile(filepath.Join(e.dir, "big.txt"), []byte(big), 0o644)
	res := e.run(e.executor(nil), `{"goal": "g", "steps": [{"id": "s", "title": "S"}]}`)
	wantStatus(t, res, StatusCompleted, "")
	r := toolResults(e.srv.Requests()[1])
	if len(r[0]) > 70<<10 || !strings.Contains(r[0], "result truncated") {
		t.Fatalf("result sent: %d bytes, want truncated under 70 KiB", len(r[0]))
	}
	cs, _ := e.store.(ledger.AgentStore).AgentToolCalls(context.Background(), res.Session)
	if len(cs[0].Result) < 1<<20 {
		t.Fatalf("stored result: got %d bytes, want the whole file", len(cs[0].Result))
	}
}

func TestModifyFileRefusesMismatch(t *testing.T) {
	e := newEnv(t, fakemodel.New(
		tools(call("modify_file", map[string]any{"path": "m.txt", "edits": []map[string]string{{"search": "absent", "replace": "x"}}})),
		tools(call("modify_file", map[string]any{"path": "m.txt", "diff": "@@ -1,1 +1,1 @@\n-one\n+ONE\n"})),
		done("ok"),
	))
	os.WriteFile(filepath.Join(e.dir, "m.txt"), []byte("one\n"), 0o644)
	res := e.run(e.executor(nil), `{"goal": "g", "steps": [{"id": "s", "title": "S"}]}`)
	wantStatus(t, res, StatusCompleted, "")
	if r := toolResults(e.srv.Requests()[1]); !strings.Contains(r[0], "search text not found") {
		t.Fatalf("got %v", r)
	}
	if e.file("m.txt") != "ONE\n" {
		t.Fatalf("got %q", e.file("m.txt"))
	}
}

func TestRefusesRemoteModelServers(t *testing.T) {
	for _, u := range []string{"http://127.0.0.1:8080/v1", "http://localhost:11434/v1", "http://[::1]:1/v1"} {
		if err := CheckBaseURL(u, nil); err != nil {
			t.Errorf("%s: got %v", u, err)
		}
	}
	if err := CheckBaseURL("https://api.openai.com/v1", nil); !errors.Is(err, ErrNotLoopback) {
		t.Errorf("remote: got %v, want ErrNotLoopback", err)
	}
	if err := CheckBaseURL("http://gpu-box:8000/v1", []string{"gpu-box"}); err != nil {
		t.Errorf("allowed host: got %v", err)
	}
}

func TestTaskErrorsNameTheLine(t *testing.T) {
	for _, tc := range []struct{ name, file, src, want string }{
		{"unknown key", "t.yaml", "goal: g\nsteps:\n  - id: s\n    title: S\n    bogus: 1\n", "line 5: /steps/0: additional properties 'bogus'"},
		{"wrong type", "t.yaml", "goal: g\nturn_limit: many\nsteps: [{id: s, title: S}]\n", "line 2: /turn_limit"},
		{"missing", "t.yaml", "goal: g\n", "missing property 'steps'"},
		{"cycle", "t.yaml", "goal: g\nsteps: [{id: a, title: A, depends_on: [b]}, {id: b, title: B, depends_on: [a]}]\n", "form a cycle"},
		{"unknown dependency", "t.json", `{"goal": "g", "steps": [{"id": "a", "title": "A", "depends_on": ["z"]}]}`, `unknown step "z"`},
		{"yaml syntax", "t.yaml", "goal: [g\nsteps: 1\n", "yaml: line"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseTask(tc.file, []byte(tc.src))
			if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), tc.file) {
				t.Fatalf("got %v, want %q", err, tc.want)
			}
		})
	}
}

// TestResumeAfterAcceptedCompletion: a session stopped after complete_step was accepted
// but before the step's status was saved finishes the step without asking the model.
func TestResumeAfterAcceptedCompletion(t *testing.T) {
	e := newEnv(t, fakemodel.New(done("all done")))
	x := e.executor(nil)
	res := e.run(x, `{"goal": "g", "steps": [{"id": "s", "title": "S"}]}`)
	wantStatus(t, res, StatusCompleted, "")
	// Put the stored state back to where a crash before the save would leave it.
	as := e.store.(ledger.AgentStore)
	if err := as.UpdateAgentSession(context.Background(), res.Session, StatusRunning, json.RawMessage(`{"steps":{"s":{"id":"s","status":"running"}}}`)); err != nil {
		t.Fatal(err)
	}
	res, err := x.Resume(context.Background(), res.Session)
	if err != nil {
		t.Fatal(err)
	}
	wantStatus(t, res, StatusCompleted, "")
	if e.srv.Count() != 1 || res.Steps[0].Summary != "all done" {
		t.Fatalf("got %d requests, summary %q; want 1, all done", e.srv.Count(), res.Steps[0].Summary)
	}
}
