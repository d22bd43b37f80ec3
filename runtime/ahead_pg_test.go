package runtime_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/scripthost/scripthost/ledger"
)

// seenCounter takes the oldest pending event a run, makes the Counter.add mutation
// and records the ids it consumed in its state, in order.
const seenCounter = `export default { topics: ['in'], consumers: { c: { subscribe: ['in'],
  async prepare() { const e = await Topics.peek({ topic: 'in', limit: 1 });
    return e.length ? { reservations: [{ topic: 'in', ids: [e[0].id] }], data: e[0].id } : null; },
  async mutate(id) { await Counter.add({ id }); },
  next(id) { return { seen: ((__state__ && __state__.seen) || []).concat([id]) }; } } } };`

// TestBacklogReadsPendingEventsAhead: on a PostgreSQL ledger, the consumer runs of a
// workflow with a backlog run the pending-events SELECT about once per readAhead runs
// (the scheduler keeps what it read for the next runs), not before every run, and
// every event is consumed once, oldest first. The server counts the statements
// (pg_stat_statements), so the test starts a server of its own.
func TestBacklogReadsPendingEventsAhead(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute) // a bound, not a measure
	defer cancel()
	c0 := newCounted(ctx, t, "w", []byte(seenCounter))
	st := c0.st
	const runs = 40
	var evs []ledger.NewEvent
	for i := range runs {
		evs = append(evs, ledger.NewEvent{Workflow: "w", Topic: "in", MessageID: eventID(i), Payload: []byte(`{}`)})
	}
	if _, err := st.Publish(ctx, evs...); err != nil {
		t.Fatal(err)
	}
	c := c0.runMetered(ctx, t, []string{"w"}, runs)
	hs, err := st.HandlerState(ctx, "w", "c")
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"seen":["` + strings.Join(ids(0, runs), `","`) + `"]}`; string(hs.State) != want {
		t.Errorf("consumed in order %s, want %s", hs.State, want)
	}
	selects := int64(0)
	for _, sc := range c.ByStatement {
		// The server shows the literal 'pending' as a parameter.
		if strings.Contains(sc.Query, "FROM events WHERE workflow = $1 AND topic = $2 AND status = ") &&
			strings.Contains(sc.Query, "ORDER BY seq LIMIT") {
			selects += sc.Calls
			t.Logf("%d × %s", sc.Calls, sc.Query)
		}
	}
	if selects == 0 {
		t.Fatal("no pending-events SELECT counted: the statement's text changed?")
	}
	if selects > runs/8+3 {
		t.Errorf("%d pending-events SELECTs for %d runs, want at most %d", selects, runs, runs/8+3)
	}
	t.Logf("%d statements for %d runs, %d of them pending-events SELECTs", c.Statements, runs, selects)
}
