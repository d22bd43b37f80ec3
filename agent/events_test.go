package agent

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestEventKeyedAsEvent: a JSONL line names its type under "event", as the run and
// plan streams do, and keeps "type" for readers of the earlier key.
func TestEventKeyedAsEvent(t *testing.T) {
	b, err := json.Marshal(Event{Type: EventStepStart, Session: "s1", Step: "a"})
	if err != nil {
		t.Fatal(err)
	}
	var got map[string]any
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatal(err)
	}
	if got["event"] != EventStepStart || got["type"] != EventStepStart || got["step"] != "a" {
		t.Errorf("event line: %s", b)
	}
	if !strings.HasPrefix(string(b), `{"event":`) {
		t.Errorf("event line %s: want the event key first", b)
	}
}
