package sqlstore

import (
	"context"
	"fmt"
	"strings"

	"github.com/scripthost/scripthost/ledger"
)

// touched records which run and mutation one write created or changed, so that the
// lifecycle events attached to the write can name them when the caller could not.
type touched struct {
	createdRun  string
	changedRun  string
	mutation    string
	mutationRun string
}

func (t *touched) run() string {
	switch {
	case t.createdRun != "":
		return t.createdRun
	case t.changedRun != "":
		return t.changedRun
	}
	return t.mutationRun
}

// eventTx is a write transaction that carries lifecycle events: it notes what the
// transitions touch, and holds the snapshots and the events a transition logs itself
// until the caller's are written.
type eventTx struct {
	Tx
	touched touched
	snaps   []ledger.LifecycleEvent
	own     []ledger.LifecycleEvent
}

// withEvents wraps fn so that the lifecycle events attached to ctx are appended in
// fn's transaction, after fn's own work and only when it succeeded. A backend that
// runs fn again (a retried transaction) starts from a fresh record each time. Where
// the log holds the snapshots (Dialect.Embedded) every write is wrapped, so that a
// transition's snapshots and events are one INSERT.
func (s *Store) withEvents(ctx context.Context, fn WriteFunc) WriteFunc {
	evs := ledger.EventsFrom(ctx)
	if len(evs) == 0 && !s.d.Embedded {
		return fn
	}
	return func(ctx context.Context, tx Tx) error {
		t := &eventTx{Tx: tx}
		if err := fn(ctx, t); err != nil {
			return err
		}
		return s.appendEvents(ctx, tx, &t.touched, t.snaps, evs, t.own)
	}
}

// logOwn logs ev, an event the transition writes itself because it describes what the
// transition decided (the key it derived, a phase it moved the run on to): after the
// events the caller attached, which describe the change that led there.
func (s *Store) logOwn(ctx context.Context, tx Tx, ev ledger.LifecycleEvent) error {
	if et, ok := tx.(*eventTx); ok {
		et.own = append(et.own, ev)
		return nil
	}
	return s.appendEvents(ctx, tx, nil, nil, nil, []ledger.LifecycleEvent{ev})
}

// appendEvents writes the transition's snapshots (where the log holds them), the
// caller's events, completed with what t says the write touched, then the
// transition's own, which name what they are about; numbered in the order given, the
// events at one time, each snapshot at its run's, in one statement where the dialect
// is Embedded.
func (s *Store) appendEvents(ctx context.Context, tx Tx, t *touched, snaps, evs, own []ledger.LifecycleEvent) error {
	now := nanos(s.now())
	args := make([]any, 0, (len(snaps)+len(evs)+len(own))*logColumns)
	for _, sn := range snaps { // made by snapshot: a run, a type, valid JSON
		args = append(args, sn.RunID, string(sn.Type), sn.MutationID, rawJSON(sn.Data), nanos(sn.At))
	}
	for i := range len(evs) + len(own) {
		caller := i < len(evs) // else one of the transition's own
		var ev ledger.LifecycleEvent
		if caller {
			ev = evs[i]
		} else {
			ev = own[i-len(evs)]
		}
		if caller && ev.RunID == "" {
			ev.RunID = t.run()
		}
		if caller && ev.MutationID == "" {
			ev.MutationID = t.mutation
		}
		if ev.RunID == "" {
			continue // an event about no run (a plan step's mutation) has no log
		}
		if ev.Type == "" || ev.Type == snapshotType {
			return fmt.Errorf("%s: lifecycle event of run %s: type %q is not one to log", s.name, ev.RunID, ev.Type)
		}
		if err := checkJSON("lifecycle event data", ev.Data); err != nil {
			return err
		}
		at := now
		if caller && !ev.At.IsZero() {
			at = nanos(ev.At) // a caller's event that happened before its write
		}
		args = append(args, ev.RunID, string(ev.Type), ev.MutationID, rawJSON(ev.Data), at)
	}
	for len(args) > 0 {
		n := min(len(args)/logColumns, maxLogRowsPerInsert)
		if !s.d.Embedded {
			n = 1
		}
		if _, err := tx.ExecContext(ctx, insertEventsSQL[n], args[:n*logColumns]...); err != nil {
			return s.dbErr("append lifecycle event", err)
		}
		args = args[n*logColumns:]
	}
	return nil
}

// logColumns is the number of values of a lifecycle event row; maxLogRowsPerInsert
// bounds the rows of one INSERT (and so its parameters, and the statements a
// connection keeps for it).
const logColumns, maxLogRowsPerInsert = 5, 16

// insertEventsSQL[n] is the INSERT of n lifecycle events, built once.
var insertEventsSQL = func() (q [maxLogRowsPerInsert + 1]string) {
	for n := 1; n <= maxLogRowsPerInsert; n++ {
		q[n] = `INSERT INTO lifecycle_events (run_id, type, mutation_id, data, at) VALUES ` +
			strings.TrimSuffix(strings.Repeat("(?, ?, ?, ?, ?), ", n), ", ")
	}
	return q
}()

// noteRun records, on a transaction carrying lifecycle events, a run it created or
// changed.
func noteRun(tx Tx, id string, created bool) {
	et, ok := tx.(*eventTx)
	switch {
	case !ok:
	case created && et.touched.createdRun == "":
		et.touched.createdRun = id
	case !created && et.touched.changedRun == "":
		et.touched.changedRun = id
	}
}

// noteMutation records, on a transaction carrying lifecycle events, a mutation it
// created or changed.
func noteMutation(tx Tx, id, runID string) {
	if et, ok := tx.(*eventTx); ok && et.touched.mutation == "" {
		et.touched.mutation, et.touched.mutationRun = id, runID
	}
}

type lifecycleRow struct {
	Seq        int64   `db:"seq"`
	RunID      string  `db:"run_id"`
	Type       string  `db:"type"`
	MutationID string  `db:"mutation_id"`
	Data       rawJSON `db:"data"`
	At         nanos   `db:"at"`
}

// LifecycleEvents lists lifecycle events in Seq order.
func (s *Store) LifecycleEvents(ctx context.Context, f ledger.LifecycleFilter) ([]ledger.LifecycleEvent, error) {
	var where []string
	var args []any
	if f.RunID != "" {
		where, args = append(where, "run_id = ?"), append(args, f.RunID)
	}
	if f.AfterSeq > 0 {
		where, args = append(where, "seq > ?"), append(args, f.AfterSeq)
	}
	if s.d.Embedded { // the log holds the snapshots too (see Snapshots)
		where = append(where, "type <> '"+snapshotType+"'")
	}
	q := `SELECT seq, run_id, type, mutation_id, data, at FROM lifecycle_events`
	if len(where) > 0 {
		q += " WHERE " + strings.Join(where, " AND ")
	}
	q += " ORDER BY seq"
	if f.Limit > 0 {
		q += fmt.Sprintf(" LIMIT %d", f.Limit)
	}
	var rows []lifecycleRow
	if err := s.r.SelectContext(ctx, &rows, q, args...); err != nil {
		return nil, s.dbErr("list lifecycle events", err)
	}
	out := make([]ledger.LifecycleEvent, len(rows))
	for i, r := range rows {
		out[i] = ledger.LifecycleEvent{
			Seq: r.Seq, RunID: r.RunID, Type: ledger.EventType(r.Type), MutationID: r.MutationID,
			Data: r.Data.msg(), At: r.At.Time(),
		}
	}
	return out, nil
}
