package runtime_test

import (
	"encoding/json"
	"testing"

	"github.com/scripthost/scripthost"
	"github.com/scripthost/scripthost/ledger"
)

// TestFailedRunRecordsItsEvents checks that a run whose prepare phase failed records,
// in its phase_failed entry, the events its Topics.peek calls answered with (it
// reserved none), and that a run failing after it reserved events records those.
func TestFailedRunRecordsItsEvents(t *testing.T) {
	h := newHarness(t)
	h.load("peek", `export default {
  topics: ['in'],
  consumers: {
    c: { subscribe: ['in'],
      async prepare() { const evs = await Topics.peek({ topic: 'in', limit: 2 });
        if (evs.length && evs[0].id === 'bad') throw new Error('cannot read ' + evs[0].id);
        return evs.length ? { reservations: [{ topic: 'in', ids: [evs[0].id] }] } : null; },
      mutate() { throw new Error('mutate broke'); } },
  },
};`)
	h.publish("peek", "in", "bad", "next", "later")
	h.runOnce("peek")
	runs := h.runs("peek")
	if len(runs) != 1 || !runs[0].Status.Failed() || len(runs[0].Reservations) != 0 {
		t.Fatalf("got runs %+v, want one failed in prepare, reserving nothing", runs)
	}
	if got := failedData(t, h, runs[0].ID); string(got.Peeked) != `[{"topic":"in","ids":["bad","next"]}]` || got.Reserved != nil {
		t.Errorf("phase_failed of the prepare phase: peeked %s reserved %s, want bad and next peeked", got.Peeked, got.Reserved)
	}

	if _, err := h.store.SkipEvent(h.ctx, "peek", "in", "bad"); err != nil {
		t.Fatal(err)
	}
	if _, err := h.store.CreateRetryRun(h.ctx, runs[0].ID, ledger.RetryRun{}); err != nil {
		t.Fatal(err)
	}
	h.runOnce("peek")
	runs = h.runs("peek")
	last := runs[len(runs)-1]
	if !last.Status.Failed() {
		t.Fatalf("retry: got %s, want failed in mutate", last.Status)
	}
	if got := failedData(t, h, last.ID); string(got.Reserved) != `[{"topic":"in","ids":["next"]}]` || got.Peeked != nil {
		t.Errorf("phase_failed of the mutate phase: reserved %s peeked %s, want next reserved", got.Reserved, got.Peeked)
	}
	if h.events("peek", "in")["bad"] != scripthost.EventSkipped {
		t.Errorf("events: %v, want bad skipped", h.events("peek", "in"))
	}
}

type failedEvents struct {
	Peeked   json.RawMessage `json:"peeked"`
	Reserved json.RawMessage `json:"reserved"`
}

// failedData reads the events of the run's phase_failed entry.
func failedData(t *testing.T, h *harness, runID string) failedEvents {
	t.Helper()
	for _, ev := range h.lifecycle(runID) {
		if ev.Type == ledger.EventPhaseFailed {
			var d failedEvents
			if err := json.Unmarshal(ev.Data, &d); err != nil {
				t.Fatal(err)
			}
			return d
		}
	}
	t.Fatalf("run %s has no phase_failed entry", runID)
	return failedEvents{}
}
