package hostfuncs_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/scripthost/scripthost"
	"github.com/scripthost/scripthost/hostfuncs"
	"github.com/scripthost/scripthost/ledger"
)

func TestTopicsPeek(t *testing.T) {
	s, _ := openStore(t)
	ctx := context.Background()
	for i := range 3 {
		_, err := s.Publish(ctx, ledger.NewEvent{Workflow: "wf", Topic: "in", MessageID: fmt.Sprintf("m%d", i), Payload: json.RawMessage(fmt.Sprintf(`{"n":%d}`, i))})
		if err != nil {
			t.Fatal(err)
		}
	}
	s.Publish(ctx, ledger.NewEvent{Workflow: "other", Topic: "in", MessageID: "x", Payload: json.RawMessage(`1`)})
	s.Publish(ctx, ledger.NewEvent{Workflow: "wf", Topic: "audit", MessageID: "y", Payload: json.RawMessage(`1`)})

	w := wrapperFor(hostfuncs.NewRegistry(), s, nil, hostfuncs.WrapperOptions{})
	w.SetPhase(scripthost.PhasePrepare)
	tests := []struct {
		name, input, want, wantErr string
	}{
		{"all, oldest first", `{"topic":"in"}`, `[{"id":"m0","topic":"in","payload":{"n":0},"attempt":0},{"id":"m1","topic":"in","payload":{"n":1},"attempt":0},{"id":"m2","topic":"in","payload":{"n":2},"attempt":0}]`, ""},
		{"limit", `{"topic":"in","limit":1}`, `[{"id":"m0","topic":"in","payload":{"n":0},"attempt":0}]`, ""},
		{"not subscribed", `{"topic":"audit"}`, "", `topic "audit" is not among the handler's subscriptions`},
		{"bad limit", `{"topic":"in","limit":0}`, "", "/limit: minimum"},
		{"missing topic", `{}`, "", "missing property 'topic'"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, err := w.Call(ctx, "Topics", "peek", json.RawMessage(tt.input))
			if tt.wantErr != "" {
				if err == nil || !scripthost.IsLogic(err) || !contains(err.Error(), tt.wantErr) {
					t.Errorf("got %v, want a logic error containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil || string(out) != tt.want {
				t.Errorf("got %s (%v), want %s", out, err, tt.want)
			}
		})
	}
}

func TestTopicsPublish(t *testing.T) {
	s, _ := openStore(t)
	ctx := context.Background()
	w := wrapperFor(hostfuncs.NewRegistry(), s, nil, hostfuncs.WrapperOptions{})
	w.SetPhase(scripthost.PhaseNext)
	call := func(in string) (string, error) {
		out, err := w.Call(ctx, "Topics", "publish", json.RawMessage(in))
		return string(out), err
	}
	a, err := call(`{"topic":"out","payload":{"b":1,"a":[1,2]}}`)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := call(`{"topic":"out","payload":{"a":[1,2], "b":1}}`) // same payload, other key order
	if a != b {
		t.Errorf("default ids differ for equal payloads: %s vs %s", a, b)
	}
	canon := []byte(`{"a":[1,2],"b":1}`)
	if want := fmt.Sprintf(`{"id":%q,"topic":"out"}`, hostfuncs.EventID("out", canon)); a != want {
		t.Errorf("got %s, want %s", a, want)
	}
	call(`{"topic":"audit","payload":{"b":1,"a":[1,2]}}`) // same payload, other topic: another event
	call(`{"topic":"out","id":"fixed","payload":1}`)
	call(`{"topic":"out","id":"fixed","payload":2}`) // same id: the first wins
	if _, err := call(`{"topic":"secret-topic","payload":1}`); err == nil || !scripthost.IsLogic(err) || !contains(err.Error(), `"secret-topic"`) {
		t.Errorf("undeclared topic: got %v, want a logic error naming the topic", err)
	}
	if _, err := call(`{"topic":"out"}`); errCode(err) != scripthost.CodeInvalidInput {
		t.Errorf("missing payload: got %v, want invalid_input", err)
	}

	got := w.Published()
	if len(got) != 3 {
		t.Fatalf("got %d buffered events, want 3: %+v", len(got), got)
	}
	wantTopics := []string{"out", "audit", "out"}
	for i, e := range got {
		if e.Topic != wantTopics[i] || e.Workflow != "wf" {
			t.Errorf("event %d: got %s/%s, want wf/%s", i, e.Workflow, e.Topic, wantTopics[i])
		}
	}
	if got[2].MessageID != "fixed" || string(got[2].Payload) != "1" || string(got[0].Payload) != string(canon) {
		t.Errorf("got %+v, want the first 'fixed' and canonical payloads", got)
	}
	// Buffered only: the ledger has nothing until the runtime commits.
	if evs, _ := s.Events(ctx, ledger.EventFilter{Workflow: "wf"}); len(evs) != 0 {
		t.Errorf("got %d events in the ledger, want 0", len(evs))
	}
	// Published returns a copy, and the buffer outlives a phase change.
	got[0].Topic = "changed"
	w.SetPhase(scripthost.PhaseNone)
	if w.Published()[0].Topic != "out" {
		t.Errorf("Published returned the buffer itself or SetPhase cleared it")
	}
}

func TestTopicToolsOutsideWrapper(t *testing.T) {
	_, err := hostfuncs.TopicsPeek.Execute(context.Background(), json.RawMessage(`{"topic":"in"}`))
	if !scripthost.IsInternal(err) {
		t.Errorf("got %v, want an internal error", err)
	}
}
