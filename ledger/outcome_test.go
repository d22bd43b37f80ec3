package ledger_test

import (
	"encoding/json"
	"testing"

	"github.com/scripthost/scripthost"
	"github.com/scripthost/scripthost/ledger"
)

// TestPhaseEventData checks that NewPhaseEvent's data, built by hand, is the bytes
// json.Marshal gives the map {phase, attempt}: the log's entries compare equal with the
// ones written before.
func TestPhaseEventData(t *testing.T) {
	for _, phase := range []string{"prepare", "mutate", "next", "", "a<b", "é", "q\"uote", "back\\slash", "tab\t", "&"} {
		for _, attempt := range []int{0, 1, 12, -3} {
			run := scripthost.Run{ID: "r1", Attempt: attempt}
			ev := ledger.NewPhaseEvent(run, ledger.EventPhaseStarted, phase)
			want, err := json.Marshal(map[string]any{"phase": phase, "attempt": attempt})
			if err != nil {
				t.Fatal(err)
			}
			if string(ev.Data) != string(want) {
				t.Errorf("phase %q attempt %d: data %s, want %s", phase, attempt, ev.Data, want)
			}
			if ev.RunID != "r1" || ev.Type != ledger.EventPhaseStarted {
				t.Errorf("event %+v", ev)
			}
		}
	}
}
