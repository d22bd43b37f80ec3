package sqlstore

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

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
	// tableSnaps are the snapshots of a dialect that keeps them in a table of their own
	// (not Dialect.Embedded), written with the events in one statement.
	tableSnaps []tableSnap
	own        []ledger.LifecycleEvent
}

// tableSnap is a snapshot bound for the run_snapshots table: run is the run's JSON or
// what changed since its snapshot before (see encodeSnapshot), seq its number, 0 when
// the database numbers it one past the run's last.
type tableSnap struct {
	runID, phase, status string
	seq                  int
	run                  []byte
	at                   nanos
}

// args are the arguments of snapshotSQL for the snapshot, a row of its own.
func (sn tableSnap) args() []any {
	return []any{sn.runID, seqArg(sn.seq), sn.phase, sn.status, string(sn.run), sn.at, nil, sn.runID}
}

// packedSnap is a snapshot of a run_snapshots row after its first, in the row's more
// column.
type packedSnap struct {
	Run json.RawMessage `json:"run"`
	At  int64           `json:"at"`
}

// snapRows returns the values of the run_snapshots rows of appendLog's statement that
// hold snaps, and their number: a row per run's consecutive snapshots (packs), the
// first's values and the others' in more, numbered on from the first's seq. A row
// whose number the database gives (seq NULL) takes it one past the run's last plus
// n-1, n counting on over the run's snapshots in the rows before it.
func (s *Store) snapRows(snaps []tableSnap) ([]any, int, error) {
	spans := packs(len(snaps), func(i int) string { return snaps[i].runID })
	rows := make([]any, 0, len(spans)*snapColumns)
	before := map[string]int{}
	for _, sp := range spans {
		first := snaps[sp.from]
		var more any // NULL: the row's one snapshot
		if sp.to > sp.from+1 {
			ps := make([]packedSnap, 0, sp.to-sp.from-1)
			for _, sn := range snaps[sp.from+1 : sp.to] {
				ps = append(ps, packedSnap{Run: sn.run, At: sn.at.Time().UnixNano()})
			}
			b, err := json.Marshal(ps)
			if err != nil {
				return nil, 0, fmt.Errorf("%s: pack snapshots of run %s: %w", s.name, first.runID, err)
			}
			more = string(b)
		}
		rows = append(rows, first.runID, seqArg(first.seq), before[first.runID]+1, first.phase, first.status,
			string(first.run), first.at, more)
		before[first.runID] += sp.to - sp.from
	}
	return rows, len(spans), nil
}

// span is entries from to to (not included) of a write's log, one row of a packed log.
type span struct{ from, to int }

// packs splits a write's n log entries, run(i) naming the run of entry i, into the
// rows of a packed log: each a run's consecutive entries, at most maxPacked.
func packs(n int, run func(i int) string) []span {
	var out []span
	for i := 0; i < n; {
		j := i + 1
		for j < n && j-i < maxPacked && run(j) == run(i) {
			j++
		}
		out = append(out, span{i, j})
		i = j
	}
	return out
}

// withEvents wraps fn so that the lifecycle events attached to ctx are appended in
// fn's transaction, after fn's own work and only when it succeeded. A backend that
// runs fn again (a retried transaction) starts from a fresh record each time. Every
// write is wrapped, so that a transition's snapshots and events are one statement at
// its end.
func (s *Store) withEvents(ctx context.Context, fn WriteFunc) WriteFunc {
	evs := ledger.EventsFrom(ctx)
	return func(ctx context.Context, tx Tx) error {
		t := &eventTx{Tx: tx}
		if err := fn(ctx, t); err != nil {
			return err
		}
		if err := s.confirmGuards(ctx, tx); err != nil {
			return err
		}
		if err := s.checkEventRuns(ctx, tx, t, evs); err != nil {
			return err
		}
		if len(t.tableSnaps) > 0 {
			return s.appendLog(ctx, tx, &t.touched, t.tableSnaps, evs, t.own)
		}
		return s.appendEvents(ctx, tx, &t.touched, t.snaps, evs, t.own)
	}
}

// checkEventRuns refuses the write when one of the caller's events names a run that
// does not exist. PostgreSQL's log tables have no foreign key into runs (its check
// cost a lookup and a row lock per log row; SQLite keeps its own), so the store
// answers for the run a row names: the write's snapshots and its own events are about
// runs its transaction wrote or read, and a caller's event naming a run the write did
// not write is looked up here. Runs are never deleted: one found stays.
func (s *Store) checkEventRuns(ctx context.Context, tx Tx, t *eventTx, evs []ledger.LifecycleEvent) error {
	var found []string
	for _, ev := range evs {
		id := ev.RunID
		if id == "" || t.wrote(id) || slices.Contains(found, id) {
			continue // an event naming no run takes the write's (see eventArgs)
		}
		var one int
		err := tx.GetContext(ctx, &one, `SELECT 1 FROM runs WHERE id = ?`, id)
		if errors.Is(err, sql.ErrNoRows) {
			return fmt.Errorf("%s: lifecycle event %s: %w: run %q", s.name, ev.Type, ledger.ErrNotFound, id)
		}
		if err != nil {
			return s.dbErr("read run of lifecycle event", err)
		}
		found = append(found, id)
	}
	return nil
}

// wrote reports whether the transaction wrote run id, or a mutation of it: created or
// changed it (and so snapshotted it), or wrote a mutation whose foreign key names it.
func (t *eventTx) wrote(id string) bool {
	if id == t.touched.createdRun || id == t.touched.changedRun || id == t.touched.mutationRun {
		return true
	}
	for _, sn := range t.tableSnaps {
		if sn.runID == id {
			return true
		}
	}
	for _, sn := range t.snaps {
		if sn.RunID == id {
			return true
		}
	}
	return false
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
	args := make([]any, 0, (len(snaps)+len(evs)+len(own))*logColumns)
	for _, sn := range snaps { // made by snapshot: a run, a type, valid JSON
		args = append(args, sn.RunID, string(sn.Type), sn.MutationID, rawJSON(sn.Data), nanos(sn.At))
	}
	args, err := s.eventArgs(args, t, evs, own)
	if err != nil {
		return err
	}
	return s.insertEventRows(ctx, tx, args)
}

// insertEventRows inserts the lifecycle events args (logColumns values each) as rows
// of the log (see eventRows), in as few statements as maxLogRowsPerInsert allows.
func (s *Store) insertEventRows(ctx context.Context, tx Tx, args []any) error {
	args, _, err := s.eventRows(args)
	if err != nil {
		return err
	}
	cols := s.rowColumns()
	for len(args) > 0 {
		n := min(len(args)/cols, maxLogRowsPerInsert)
		if _, err := tx.ExecContext(ctx, s.eventsSQL(n), args[:n*cols]...); err != nil {
			return s.dbErr("append lifecycle event", err)
		}
		args = args[n*cols:]
	}
	return nil
}

// maxPacked bounds the events of one row of a packed log (Dialect.PackedLog), which
// number seq to seq+maxPacked-1: the step of the log's sequence.
const maxPacked = 16

// packedColumns is the number of values of a row of a packed log: an event's and
// the row's more.
const packedColumns = logColumns + 1

// rowColumns is the number of values of a row of the store's lifecycle log.
func (s *Store) rowColumns() int {
	if s.d.PackedLog {
		return packedColumns
	}
	return logColumns
}

// eventsSQL is the INSERT of n rows of the store's lifecycle log.
func (s *Store) eventsSQL(n int) string {
	if s.d.PackedLog {
		return insertPackedSQL[n]
	}
	return insertEventsSQL[n]
}

// packedEvent is an event of a packed log's row after its first, in the row's more
// column: the values of its columns.
type packedEvent struct {
	Type       string          `json:"type"`
	MutationID string          `json:"mutation_id,omitempty"`
	Data       json.RawMessage `json:"data,omitempty"`
	At         int64           `json:"at"`
}

// eventRows returns the values of the log's rows that hold the lifecycle events args
// (logColumns values each, in order), and their number: a row per event, or, where
// the log packs them (Dialect.PackedLog), a row per run's consecutive events (packs),
// the first's values and the others' in more.
func (s *Store) eventRows(args []any) ([]any, int, error) {
	n := len(args) / logColumns
	if !s.d.PackedLog || n == 0 {
		return args, n, nil
	}
	event := func(i int) []any { return args[i*logColumns : (i+1)*logColumns] }
	spans := packs(n, func(i int) string { return event(i)[0].(string) })
	rows := make([]any, 0, len(spans)*packedColumns)
	for _, sp := range spans {
		var more any // NULL: the row's one event
		if sp.to > sp.from+1 {
			evs := make([]packedEvent, 0, sp.to-sp.from-1)
			for k := sp.from + 1; k < sp.to; k++ {
				ev := event(k)
				evs = append(evs, packedEvent{Type: ev[1].(string), MutationID: ev[2].(string),
					Data: ev[3].(rawJSON).msg(), At: ev[4].(nanos).Time().UnixNano()})
			}
			b, err := json.Marshal(evs)
			if err != nil {
				return nil, 0, fmt.Errorf("%s: pack lifecycle events: %w", s.name, err)
			}
			more = string(b)
		}
		rows = append(append(rows, event(sp.from)...), more)
	}
	return rows, len(spans), nil
}

// eventArgs appends to args the values of the caller's events, completed with what t
// says the write touched, then of the transition's own (see appendEvents).
func (s *Store) eventArgs(args []any, t *touched, evs, own []ledger.LifecycleEvent) ([]any, error) {
	now := nanos(s.now())
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
			return nil, fmt.Errorf("%s: lifecycle event of run %s: type %q is not one to log", s.name, ev.RunID, ev.Type)
		}
		if err := checkJSON("lifecycle event data", ev.Data); err != nil {
			return nil, err
		}
		at := now
		if caller && !ev.At.IsZero() {
			at = nanos(ev.At) // a caller's event that happened before its write
		}
		args = append(args, ev.RunID, string(ev.Type), ev.MutationID, rawJSON(ev.Data), at)
	}
	return args, nil
}

// appendLog writes, in one statement, the transition's snapshots into run_snapshots,
// each numbered as it says or, when it does not, one past its run's last, and its
// lifecycle events as appendEvents does (where snapshots have a table of their own:
// not Dialect.Embedded).
func (s *Store) appendLog(ctx context.Context, tx Tx, t *touched, snaps []tableSnap, evs, own []ledger.LifecycleEvent) error {
	snapArgs, nsnaps, err := s.snapRows(snaps)
	if err != nil {
		return err
	}
	evVals, err := s.eventArgs(nil, t, evs, own)
	if err != nil {
		return err
	}
	evArgs, nevs, err := s.eventRows(evVals)
	if err != nil {
		return err
	}
	d, deferrer := tx.(Deferrer)
	if nsnaps > maxLogRowsPerInsert || nevs > maxLogRowsPerInsert || !deferrer {
		// More than one statement holds: each its own (a retry's or a resolution's
		// many events, rarely).
		for _, sn := range snaps {
			if _, err := tx.ExecContext(ctx, snapshotSQL, sn.args()...); err != nil {
				return s.dbErr("snapshot run", err)
			}
		}
		return s.insertEventRows(ctx, tx, evVals)
	}
	// Each its own part of the transaction's last statement.
	if nsnaps > 0 {
		d.Defer(snapshotsSQL[nsnaps], snapArgs, -1, nil)
	}
	if nevs > 0 {
		d.Defer(s.eventsSQL(nevs), evArgs, -1, nil)
	}
	return nil
}

// snapColumns is the number of values of a run_snapshots row in appendLog's
// statement (see snapRows).
const snapColumns = 8

// snapshotsSQL[n] is the INSERT of n run_snapshots rows of appendLog's statement,
// built once: each numbered as it says, or one past its run's last snapshot (a row's
// last is its seq plus the snapshots in its more) plus n-1.
var snapshotsSQL = func() (q [maxLogRowsPerInsert + 1]string) {
	for n := 1; n <= maxLogRowsPerInsert; n++ {
		q[n] = `INSERT INTO run_snapshots (run_id, seq, phase, status, run, at, more)
	SELECT v.run_id, COALESCE(v.seq, COALESCE((SELECT MAX(r.seq + ` + packedCount("r.more") + `) FROM run_snapshots r WHERE r.run_id = v.run_id), 0) + v.n), v.phase, v.status, v.run, v.at, v.more
	FROM (VALUES ` + strings.TrimSuffix(strings.Repeat(`(CAST(? AS TEXT), CAST(? AS INTEGER), CAST(? AS INTEGER), CAST(? AS TEXT), CAST(? AS TEXT), CAST(? AS TEXT), CAST(? AS BIGINT), CAST(? AS TEXT)), `, n), ", ") +
			`) AS v (run_id, seq, n, phase, status, run, at, more)`
	}
	return q
}()

// packedCount is the SQL of the number of entries in a packed row's more column.
func packedCount(more string) string {
	return `COALESCE(json_array_length(` + more + `::json), 0)`
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

// insertPackedSQL[n] is the INSERT of n rows of a packed log (Dialect.PackedLog),
// built once.
var insertPackedSQL = func() (q [maxLogRowsPerInsert + 1]string) {
	for n := 1; n <= maxLogRowsPerInsert; n++ {
		q[n] = `INSERT INTO lifecycle_events (run_id, type, mutation_id, data, at, more) VALUES ` +
			strings.TrimSuffix(strings.Repeat("(?, ?, ?, ?, ?, ?), ", n), ", ")
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

// LastLifecycleSeq returns the sequence number of the lifecycle log's last entry, 0
// when it is empty (see ledger.LogTail).
func (s *Store) LastLifecycleSeq(ctx context.Context) (int64, error) {
	q := `SELECT COALESCE(MAX(seq), 0) FROM lifecycle_events`
	if s.d.PackedLog { // the last row's last event
		q = `SELECT COALESCE((SELECT seq + ` + packedCount("more") + ` FROM lifecycle_events ORDER BY seq DESC LIMIT 1), 0)`
	}
	var seq int64
	if err := s.r.GetContext(ctx, &seq, q); err != nil {
		return 0, s.dbErr("last lifecycle seq", err)
	}
	return seq, nil
}

// LifecycleEvents lists lifecycle events in Seq order.
func (s *Store) LifecycleEvents(ctx context.Context, f ledger.LifecycleFilter) ([]ledger.LifecycleEvent, error) {
	if s.d.PackedLog {
		return s.packedEvents(ctx, f)
	}
	var where []string
	var args []any
	if f.RunID != "" {
		where, args = append(where, "run_id = ?"), append(args, f.RunID)
	}
	if f.AfterSeq > 0 {
		where, args = append(where, "seq > ?"), append(args, f.AfterSeq)
	}
	if f.Type != "" {
		where, args = append(where, "type = ?"), append(args, string(f.Type))
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
		out[i] = r.event()
	}
	return out, nil
}

func (r lifecycleRow) event() ledger.LifecycleEvent {
	return ledger.LifecycleEvent{Seq: r.Seq, RunID: r.RunID, Type: ledger.EventType(r.Type), MutationID: r.MutationID,
		Data: r.Data.msg(), At: r.At.Time()}
}

// packedRow is a row of a packed log (Dialect.PackedLog).
type packedRow struct {
	lifecycleRow
	More sql.NullString `db:"more"`
}

// packedEvents is LifecycleEvents on a packed log: it reads the rows that may hold
// the events asked for, a page of f.Limit rows at a time, and lists their events.
func (s *Store) packedEvents(ctx context.Context, f ledger.LifecycleFilter) ([]ledger.LifecycleEvent, error) {
	var out []ledger.LifecycleEvent
	// A row holds events seq to seq+maxPacked-1 at most: one before AfterSeq by less
	// than maxPacked may hold events after it.
	rowAfter := f.AfterSeq - maxPacked + 1
	for {
		where, args := []string{"seq > ?"}, []any{rowAfter}
		if f.RunID != "" {
			where, args = append(where, "run_id = ?"), append(args, f.RunID)
		}
		if f.Type != "" {
			where, args = append(where, "(type = ? OR more IS NOT NULL)"), append(args, string(f.Type))
		}
		q := `SELECT seq, run_id, type, mutation_id, data, at, more FROM lifecycle_events WHERE ` +
			strings.Join(where, " AND ") + " ORDER BY seq"
		if f.Limit > 0 {
			q += fmt.Sprintf(" LIMIT %d", f.Limit)
		}
		var rows []packedRow
		if err := s.r.SelectContext(ctx, &rows, q, args...); err != nil {
			return nil, s.dbErr("list lifecycle events", err)
		}
		for _, r := range rows {
			evs, err := r.events()
			if err != nil {
				return nil, fmt.Errorf("%s: lifecycle log row %d: %w", s.name, r.Seq, err)
			}
			for _, ev := range evs {
				if ev.Seq <= f.AfterSeq || (f.Type != "" && ev.Type != f.Type) {
					continue
				}
				if out = append(out, ev); f.Limit > 0 && len(out) == f.Limit {
					return out, nil
				}
			}
		}
		if f.Limit <= 0 || len(rows) < f.Limit {
			return out, nil
		}
		rowAfter = rows[len(rows)-1].Seq
	}
}

// events lists the events of a packed log's row, numbered on from its seq.
func (r packedRow) events() ([]ledger.LifecycleEvent, error) {
	first := r.event()
	if !r.More.Valid {
		return []ledger.LifecycleEvent{first}, nil
	}
	var more []packedEvent
	if err := json.Unmarshal([]byte(r.More.String), &more); err != nil {
		return nil, fmt.Errorf("more: %w", err)
	}
	evs := make([]ledger.LifecycleEvent, 0, 1+len(more))
	evs = append(evs, first)
	for i, m := range more {
		evs = append(evs, ledger.LifecycleEvent{Seq: r.Seq + int64(i) + 1, RunID: r.RunID, Type: ledger.EventType(m.Type),
			MutationID: m.MutationID, Data: m.Data, At: time.Unix(0, m.At).UTC()})
	}
	return evs, nil
}
