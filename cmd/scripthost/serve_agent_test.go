package main

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/scripthost/scripthost/agent"
	"github.com/scripthost/scripthost/internal/fakemodel"
	"github.com/scripthost/scripthost/ledger"
	"github.com/scripthost/scripthost/ledger/sqlite"
)

// pendingAgent is an agent session paused on a file write that waits for approval,
// made by the real `scripthost agent run` against the fake model server.
type pendingAgent struct {
	db, ws, session, call string
	model                 *fakemodel.Server
}

// newPendingAgent runs a task whose model asks to write notes.txt, with file writes
// set to prompt and nobody to ask: the session pauses (exit 33).
func newPendingAgent(t *testing.T, db string) *pendingAgent {
	t.Helper()
	p := &pendingAgent{db: db, ws: t.TempDir(), call: "notes/1/1", model: fakemodel.New(
		fakemodel.Answer{Calls: []fakemodel.Call{agentCall("write_file", map[string]string{"path": "notes.txt", "content": "approved\n"})}},
		fakemodel.Answer{Calls: []fakemodel.Call{agentCall(agent.CompleteTool, map[string]string{"summary": "wrote notes"})}},
	)}
	t.Cleanup(p.model.Close)
	t.Setenv(modelURLEnv, p.model.URL)
	cfgHome := t.TempDir()
	t.Setenv("XDG_CONFIG_HOME", cfgHome)
	if err := os.MkdirAll(filepath.Join(cfgHome, "scripthost"), 0o755); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(cfgHome, "scripthost", "agent.yaml"), []byte("approvals:\n  file_write: prompt\n"), 0o644)
	task := filepath.Join(t.TempDir(), "notes.yaml")
	os.WriteFile(task, []byte("goal: take notes\nsteps: [{id: notes, title: Write the notes}]\n"), 0o644)
	code, out, errOut := cli(t, "", "--db", db, "agent", "run", task, "--workspace", p.ws)
	if code != 33 {
		t.Fatalf("agent run: exit %d, want 33 (waiting for approval)\n%s%s", code, out, errOut)
	}
	ss := p.sessions(t, ledger.AgentSessionFilter{})
	if len(ss) == 0 {
		t.Fatalf("agent run: no session recorded\n%s%s", out, errOut)
	}
	p.session = ss[0].ID
	return p
}

func (p *pendingAgent) sessions(t *testing.T, f ledger.AgentSessionFilter) []ledger.AgentSession {
	t.Helper()
	store, err := sqlite.Open(context.Background(), p.db, sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	ss, err := store.AgentSessions(context.Background(), f)
	if err != nil {
		t.Fatal(err)
	}
	return ss
}

// callRecord reads the pending call's record from the ledger.
func (p *pendingAgent) callRecord(t *testing.T) ledger.AgentToolCall {
	t.Helper()
	store, err := sqlite.Open(context.Background(), p.db, sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	calls, err := store.AgentToolCalls(context.Background(), p.session)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range calls {
		if c.CallID == p.call {
			return c
		}
	}
	t.Fatalf("session %s has no call %s: %+v", p.session, p.call, calls)
	return ledger.AgentToolCall{}
}

// TestServeAgentAPI: agent sessions and their transcripts over the API are what
// `scripthost agent list|show --json` print; approve and deny refuse what they must,
// record the decision and who made it, and the approved call runs on resume.
func TestServeAgentAPI(t *testing.T) {
	db := filepath.Join(t.TempDir(), "ledger.db")
	p := newPendingAgent(t, db)
	s := startServe(t, db, "--token", testServeToken)

	if code, _ := s.call("GET", "/api/v1/agent/sessions", "", nil); code != http.StatusUnauthorized {
		t.Errorf("sessions without a token: got %d, want 401", code)
	}
	if code, _ := s.call("POST", "/api/v1/agent/sessions/"+p.session+"/approve", "wrong-token-0123456789", map[string]string{"call": p.call}); code != http.StatusUnauthorized {
		t.Errorf("approve with a wrong token: got %d, want 401", code)
	}
	sameAsCLI(t, s, "/api/v1/agent/sessions", db, "agent", "list", "--json")
	sameAsCLI(t, s, "/api/v1/agent/sessions?status=paused&limit=1", db, "agent", "list", "--json", "--status", "paused", "--limit", "1")
	sameAsCLI(t, s, "/api/v1/agent/sessions/"+p.session, db, "agent", "show", p.session, "--json")
	var none []ledger.AgentSession
	s.get("/api/v1/agent/sessions?status=completed", &none)
	if len(none) != 0 {
		t.Errorf("completed sessions: got %d, want none yet", len(none))
	}
	s.want("GET", "/api/v1/agent/sessions?status=done", nil, http.StatusBadRequest, nil)
	if code, _, errOut := cli(t, "", "--db", db, "agent", "list", "--status", "done"); code != 2 || !strings.Contains(errOut, `--status "done"`) {
		t.Errorf("agent list --status done: exit %d, want 2: %s", code, errOut)
	}
	s.want("GET", "/api/v1/agent/sessions/nope", nil, http.StatusNotFound, nil)

	var tr agent.Transcript
	s.get("/api/v1/agent/sessions/"+p.session, &tr)
	if tr.Session.Status != agent.StatusPaused || len(tr.Turns) != 1 || len(tr.Calls) != 1 ||
		tr.Calls[0].Status != agent.CallPendingApproval || tr.Usage.PromptTokens == 0 || tr.Usage.PromptTokens != tr.Turns[0].PromptTokens {
		t.Fatalf("transcript of the paused session: %+v", tr)
	}

	approve := "/api/v1/agent/sessions/" + p.session + "/approve"
	s.want("POST", approve, map[string]string{"by": "erin"}, http.StatusBadRequest, nil)
	s.want("POST", approve, map[string]string{"call": "notes/9/9", "by": "erin"}, http.StatusNotFound, nil)
	s.want("POST", "/api/v1/agent/sessions/nope/deny", map[string]string{"call": p.call}, http.StatusNotFound, nil)
	var got struct {
		Call ledger.AgentToolCall `json:"call"`
		Next string               `json:"next"`
	}
	s.want("POST", approve, map[string]string{"call": p.call, "by": "erin"}, http.StatusOK, &got)
	if got.Call.Status != agent.CallApproved || got.Call.Decision != "approved by erin" || !strings.Contains(got.Next, "agent resume "+p.session) {
		t.Errorf("approve answered %+v", got)
	}
	if c := p.callRecord(t); c.Status != agent.CallApproved || c.Decision != "approved by erin" {
		t.Errorf("ledger after approve: %s (%s)", c.Status, c.Decision)
	}
	// Decided once: a second decision is refused and changes nothing.
	s.want("POST", "/api/v1/agent/sessions/"+p.session+"/deny", map[string]string{"call": p.call, "by": "frank"}, http.StatusConflict, nil)
	if code, _, errOut := cli(t, "", "--db", db, "agent", "deny", p.session, p.call); code != exitRefused || !strings.Contains(errOut, "is approved") {
		t.Errorf("agent deny of the approved call: exit %d, want %d: %s", code, exitRefused, errOut)
	}
	if c := p.callRecord(t); c.Status != agent.CallApproved {
		t.Errorf("ledger after the refused deny: %s (%s)", c.Status, c.Decision)
	}

	var acts []struct {
		Action, Target, By string
		Success            bool
	}
	s.get("/api/v1/actions", &acts)
	var log []string
	for _, a := range acts {
		if strings.HasPrefix(a.Target, "agent session "+p.session) {
			log = append(log, a.Action+" "+a.By+" "+map[bool]string{true: "ok", false: "refused"}[a.Success])
		}
	}
	// The CLI's refused deny is in the same trail, by the operator the CLI names.
	if want := "approve erin refused,approve erin ok,deny frank refused,deny " + approver("") + " refused"; strings.Join(log, ",") != want {
		t.Errorf("recorded actions: got %q, want %q", strings.Join(log, ","), want)
	}

	// The approved call runs when the session resumes; the model is not asked again
	// for the turn that asked for it.
	if code, out, errOut := cli(t, "", "--db", db, "agent", "resume", p.session, "--workspace", p.ws); code != 0 {
		t.Fatalf("agent resume: exit %d\n%s%s", code, out, errOut)
	}
	if b, _ := os.ReadFile(filepath.Join(p.ws, "notes.txt")); string(b) != "approved\n" {
		t.Errorf("notes.txt after the approved call ran: %q", b)
	}
	var done []ledger.AgentSession
	s.get("/api/v1/agent/sessions?status=completed", &done)
	if len(done) != 1 || done[0].ID != p.session {
		t.Errorf("completed sessions after resume: %+v", done)
	}
}

// TestServeAgentDeny: a denied call never runs; the model is told so on resume.
func TestServeAgentDeny(t *testing.T) {
	db := filepath.Join(t.TempDir(), "ledger.db")
	p := newPendingAgent(t, db)
	s := startServe(t, db, "--token", testServeToken)
	var got struct {
		Call ledger.AgentToolCall `json:"call"`
	}
	s.want("POST", "/api/v1/agent/sessions/"+p.session+"/deny", map[string]string{"call": p.call, "by": "gus"}, http.StatusOK, &got)
	if got.Call.Status != agent.CallDenied || got.Call.Decision != "denied by gus" {
		t.Errorf("deny answered %+v", got.Call)
	}
	if c := p.callRecord(t); c.Status != agent.CallDenied || c.Decision != "denied by gus" {
		t.Errorf("ledger after deny: %s (%s)", c.Status, c.Decision)
	}
	if code, out, errOut := cli(t, "", "--db", db, "agent", "resume", p.session, "--workspace", p.ws); code != 0 {
		t.Fatalf("agent resume: exit %d\n%s%s", code, out, errOut)
	}
	if _, err := os.Stat(filepath.Join(p.ws, "notes.txt")); !os.IsNotExist(err) {
		t.Errorf("notes.txt exists after its write was denied (%v)", err)
	}
	reqs := p.model.Requests()
	if len(reqs) != 2 {
		t.Fatalf("model requests: got %d, want 2", len(reqs))
	}
	last := reqs[1].Messages[len(reqs[1].Messages)-1]
	if last.Role != "tool" || !strings.Contains(strings.ToLower(string(last.Content)), "denied") {
		t.Errorf("the model was not told the call was denied: %s %s", last.Role, last.Content)
	}
	var raw []json.RawMessage
	s.get("/api/v1/agent/sessions?status=completed", &raw)
	if len(raw) != 1 {
		t.Errorf("completed sessions after resume: %d", len(raw))
	}
}
