package ledgertest

import (
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/scripthost/scripthost/ledger"
)

// testAgentSessions: sessions, turns (unique per step and number, in recorded order)
// and tool calls (upserted, in first-recorded order), on every store.
func testAgentSessions(f *fixture) {
	t, ctx := f.t, f.ctx
	as, ok := f.s.(ledger.AgentStore)
	if !ok {
		t.Fatalf("store %T does not implement ledger.AgentStore", f.s)
	}
	f.n++
	id := fmt.Sprintf("sess-%d", f.n)
	if _, err := as.AgentSession(ctx, id); !errors.Is(err, ledger.ErrNotFound) {
		t.Fatalf("unknown session: got %v, want ErrNotFound", err)
	}
	if err := as.CreateAgentSession(ctx, ledger.AgentSession{ID: id, Task: "t.yaml", Spec: json.RawMessage(`{"goal":"g"}`), Status: "running"}); err != nil {
		t.Fatal(err)
	}
	if err := as.CreateAgentSession(ctx, ledger.AgentSession{ID: id, Task: "t.yaml", Status: "running"}); err == nil {
		t.Fatal("second session with one id: got nil error")
	}
	if err := as.UpdateAgentSession(ctx, id, "paused", json.RawMessage(`{"steps":{"a":"done"}}`)); err != nil {
		t.Fatal(err)
	}
	if err := as.UpdateAgentSession(ctx, id, "paused", json.RawMessage(`{not json`)); err == nil {
		t.Fatal("state that is not JSON: got nil error")
	}
	got, err := as.AgentSession(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if got.Status != "paused" || string(got.State) != `{"steps":{"a":"done"}}` || string(got.Spec) != `{"goal":"g"}` {
		t.Fatalf("session: got %+v", got)
	}

	start := time.Unix(1700000000, 5).UTC()
	for _, turn := range []ledger.AgentTurn{
		{Session: id, StepID: "b", Turn: 1, Request: json.RawMessage(`{"m":1}`), Response: json.RawMessage(`{"r":1}`), PromptTokens: 10, CompletionTokens: 3, StartedAt: start, DurationMS: 7},
		{Session: id, StepID: "a", Turn: 1, Request: json.RawMessage(`{"m":2}`), Response: json.RawMessage(`{"r":2}`), Retries: 2, StartedAt: start},
	} {
		if err := as.AppendAgentTurn(ctx, turn); err != nil {
			t.Fatal(err)
		}
	}
	err = as.AppendAgentTurn(ctx, ledger.AgentTurn{Session: id, StepID: "b", Turn: 1, StartedAt: start})
	if !errors.Is(err, ledger.ErrTurnExists) {
		t.Fatalf("turn recorded twice: got %v, want ErrTurnExists", err)
	}
	turns, err := as.AgentTurns(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if len(turns) != 2 || turns[0].StepID != "b" || turns[1].StepID != "a" || turns[0].PromptTokens != 10 ||
		turns[1].Retries != 2 || !turns[0].StartedAt.Equal(start) || string(turns[0].Response) != `{"r":1}` {
		t.Fatalf("turns: got %+v", turns)
	}

	for _, c := range []ledger.AgentToolCall{
		{Session: id, CallID: "b/1/1", StepID: "b", Turn: 1, Seq: 1, Tool: "write_file", Arguments: json.RawMessage(`{"path":"x"}`), Status: "running", MutationID: "m1"},
		{Session: id, CallID: "a/1/1", StepID: "a", Turn: 1, Seq: 1, Tool: "read_file", Status: "done", Result: json.RawMessage(`{"content":""}`)},
		{Session: id, CallID: "b/1/1", StepID: "b", Turn: 1, Seq: 1, Tool: "write_file", Arguments: json.RawMessage(`{"path":"x"}`), Status: "done", MutationID: "m1", Decision: "auto", Result: json.RawMessage(`{"bytes":1}`)},
	} {
		if err := as.PutAgentToolCall(ctx, c); err != nil {
			t.Fatal(err)
		}
	}
	calls, err := as.AgentToolCalls(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if len(calls) != 2 || calls[0].CallID != "b/1/1" || calls[0].Status != "done" || calls[0].Decision != "auto" ||
		calls[0].MutationID != "m1" || string(calls[0].Result) != `{"bytes":1}` || calls[1].Tool != "read_file" {
		t.Fatalf("tool calls: got %+v", calls)
	}
	if other, err := as.AgentToolCalls(ctx, id+"-other"); err != nil || len(other) != 0 {
		t.Fatalf("another session's calls: got %v, %v", other, err)
	}
}
