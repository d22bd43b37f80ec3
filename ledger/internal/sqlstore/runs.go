package sqlstore

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/jmoiron/sqlx"

	"github.com/scripthost/scripthost"
	"github.com/scripthost/scripthost/ledger"
)

// runRow is a row of runs.
type runRow struct {
	ID                string    `db:"id"`
	Workflow          string    `db:"workflow"`
	Version           int       `db:"version"`
	Handler           string    `db:"handler"`
	Kind              string    `db:"kind"`
	Phase             string    `db:"phase"`
	Status            string    `db:"status"`
	RetryOf           optString `db:"retry_of"`
	SupersededBy      optString `db:"superseded_by"`
	Attempt           int       `db:"attempt"`
	RetryFromEmitting bool      `db:"retry_from_emitting"`
	Prepared          rawJSON   `db:"prepared"`
	Reservations      rawJSON   `db:"reservations"`
	WakeAt            nanos     `db:"wake_at"`
	InputState        rawJSON   `db:"input_state"`
	OutputState       rawJSON   `db:"output_state"`
	Outcome           rawJSON   `db:"outcome"`
	Error             string    `db:"error"`
	ErrorClass        string    `db:"error_class"`
	NotBefore         nanos     `db:"not_before"`
	CreatedAt         nanos     `db:"created_at"`
	UpdatedAt         nanos     `db:"updated_at"`
	CancelRequest     rawJSON   `db:"cancel_request"`
}

const runColumns = `id, workflow, version, handler, kind, phase, status, retry_of, superseded_by,
	attempt, retry_from_emitting, prepared, reservations, wake_at, input_state, output_state,
	outcome, error, error_class, not_before, created_at, updated_at, cancel_request`

// runRec is a run as transitions see it: the public fields plus the store's own.
type runRec struct {
	scripthost.Run
	// WakeAt is the prepare phase's requested wake-up, saved with the state at commit.
	WakeAt time.Time
	// cancel is an operator's request to cancel the run made while its mutation's
	// outcome was unknown (CancelRun), nil when there is none: the transition that
	// records the outcome cancels the run in its own transaction (saveOutcome).
	cancel *cancelRequest
	// stored is the row's version when it was read (zero for a run not read from its
	// row): saveRun leaves the status column alone when it did not change, and the
	// run's last snapshot is the base of the next only when it was taken of this
	// version (see snapshotBase).
	stored runVersion
	// stateFrom is the handler state a new run begins from (ledger.NewRun.StateFrom),
	// checked when the run is inserted (checkStateFrom); nil: not checked.
	stateFrom *ledger.HandlerState
}

// runVersion is what tells one stored state of a run from the next: every transition
// sets updated_at, and a guarded update matches the row only at the version cached
// (guardRun).
type runVersion struct {
	phase     scripthost.RunPhase
	status    scripthost.RunStatus
	updatedAt time.Time
}

// versionOf is run's version.
func versionOf(run *scripthost.Run) runVersion {
	return runVersion{phase: run.Phase, status: run.Status, updatedAt: run.UpdatedAt}
}

// same reports whether two versions are one.
func (v runVersion) same(o runVersion) bool {
	return v.phase == o.phase && v.status == o.status && v.updatedAt.Equal(o.updatedAt)
}

func (r runRow) rec() (runRec, error) {
	rec := runRec{
		Run: scripthost.Run{
			ID: r.ID, Workflow: r.Workflow, Version: r.Version, Handler: r.Handler,
			Kind: scripthost.HandlerKind(r.Kind), Phase: scripthost.RunPhase(r.Phase),
			Status: scripthost.RunStatus(r.Status), RetryOf: string(r.RetryOf),
			SupersededBy: string(r.SupersededBy), Attempt: r.Attempt,
			RetryFromEmitting: r.RetryFromEmitting, Prepared: r.Prepared.msg(),
			InputState: r.InputState.msg(), OutputState: r.OutputState.msg(), Error: r.Error,
			ErrorClass: scripthost.ErrorClass(r.ErrorClass), NotBefore: r.NotBefore.Time(),
			CreatedAt: r.CreatedAt.Time(), UpdatedAt: r.UpdatedAt.Time(),
		},
		WakeAt: r.WakeAt.Time(),
	}
	rec.stored = versionOf(&rec.Run)
	if len(r.CancelRequest) > 0 {
		rec.cancel = new(cancelRequest)
		if err := json.Unmarshal(r.CancelRequest, rec.cancel); err != nil {
			return runRec{}, fmt.Errorf("ledger: run %s: cancel_request: %w", r.ID, err)
		}
	}
	if len(r.Reservations) > 0 {
		if err := json.Unmarshal(r.Reservations, &rec.Reservations); err != nil {
			return runRec{}, fmt.Errorf("ledger: run %s: reservations: %w", r.ID, err)
		}
	}
	if len(r.Outcome) > 0 {
		rec.Outcome = new(scripthost.Outcome)
		if err := json.Unmarshal(r.Outcome, rec.Outcome); err != nil {
			return runRec{}, fmt.Errorf("ledger: run %s: outcome: %w", r.ID, err)
		}
	}
	return rec, nil
}

func (rec runRec) row() (runRow, error) {
	r := runRow{
		ID: rec.ID, Workflow: rec.Workflow, Version: rec.Version, Handler: rec.Handler,
		Kind: string(rec.Kind), Phase: string(rec.Phase), Status: string(rec.Status),
		RetryOf: optString(rec.RetryOf), SupersededBy: optString(rec.SupersededBy),
		Attempt: rec.Attempt, RetryFromEmitting: rec.RetryFromEmitting,
		Prepared: rawJSON(rec.Prepared), WakeAt: nanos(rec.WakeAt),
		InputState: rawJSON(rec.InputState), OutputState: rawJSON(rec.OutputState),
		Error: rec.Error, ErrorClass: string(rec.ErrorClass), NotBefore: nanos(rec.NotBefore),
		CreatedAt: nanos(rec.CreatedAt), UpdatedAt: nanos(rec.UpdatedAt),
	}
	var err error
	if len(rec.Reservations) > 0 {
		if r.Reservations, err = jsonValue(rec.Reservations); err != nil {
			return runRow{}, err
		}
	}
	if rec.Outcome != nil {
		if r.Outcome, err = jsonValue(rec.Outcome); err != nil {
			return runRow{}, err
		}
	}
	if rec.cancel != nil {
		if r.CancelRequest, err = jsonValue(rec.cancel); err != nil {
			return runRow{}, err
		}
	}
	return r, nil
}

// fields are pointers to the row's fields in the order of runColumns, for a Scan:
// sqlx.Get maps columns to fields by reflection at every row, which the writer's
// transitions, each reading its run, paid for. TestRowFieldsFollowColumns holds the
// order.
func (r *runRow) fields() []any {
	return []any{&r.ID, &r.Workflow, &r.Version, &r.Handler, &r.Kind, &r.Phase, &r.Status,
		&r.RetryOf, &r.SupersededBy, &r.Attempt, &r.RetryFromEmitting, &r.Prepared,
		&r.Reservations, &r.WakeAt, &r.InputState, &r.OutputState, &r.Outcome, &r.Error,
		&r.ErrorClass, &r.NotBefore, &r.CreatedAt, &r.UpdatedAt, &r.CancelRequest}
}

// getRun loads a run inside a transaction or from the read pool (see readRow).
func (s *Store) getRun(ctx context.Context, q sqlx.QueryerContext, id string) (runRec, error) {
	row, err := readRow[runRow](ctx, s, q, "run", "runs", runColumns, id)
	if err != nil {
		return runRec{}, err
	}
	return row.rec()
}

// insertRun stores a new run and its first snapshot; via are states the run passed
// through on its way to rec in the same transaction, each snapshotted before rec.
func (s *Store) insertRun(ctx context.Context, tx Tx, rec runRec, via ...scripthost.Run) error {
	row, err := rec.row()
	if err != nil {
		return err
	}
	if err := s.execLater(ctx, tx, "create run", insertRunSQL, row.values(), -1, nil); err != nil {
		return err
	}
	cacheRun(tx, row)
	noteRun(tx, rec.ID, true)
	return s.snapshots(ctx, tx, rec, true, via)
}

var insertRunSQL = insertSQL("runs", runColumns)

// values are the row's values in the order of runColumns, for binding.
func (r *runRow) values() []any { return valuesOf(r.fields()) }

// runUpdates[i] is the UPDATE of a run's columns that a transition may change. The
// others are fixed when the run is created; leaving them out of SET keeps the indexes
// on them (the primary key, runs_workflow) out of the update: SQLite rewrites each
// index whose columns are SET, changed or not, and every index of the table when a
// SET column is a foreign key into the table itself. So superseded_by is SET (bit 0)
// only once a retry has set it, and status (bit 1) where the dialect does not rewrite
// unchanged indexes or where the transition changes it.
// Three to four pages fewer to write per transition in SQLite, and room for
// heap-only updates in PostgreSQL.
var runUpdates = func() (q [4]update) {
	for i := range q {
		fixed := []string{"id", "workflow", "version", "handler", "kind", "retry_of", "created_at"}
		if i&1 == 0 {
			fixed = append(fixed, "superseded_by")
		}
		if i&2 == 0 {
			fixed = append(fixed, "status")
		}
		q[i] = updateOf("runs", runColumns, fixed...)
	}
	return q
}()

// update is an UPDATE of a row by its id (the first column) setting every column but
// some, with positional parameters: its arguments are picked from the row's values in
// column order. sqlx's named parameters found each value by reflection at every
// statement, which the writer paid for in every transition.
type update struct {
	q string
	// set are the indexes, in column order, of the columns set, in the order of the
	// statement's parameters; the id comes last.
	set []int
}

// updateOf is the update of table by id setting every column of cols except fixed.
func updateOf(table, cols string, fixed ...string) update {
	var u update
	var sets []string
	for i, c := range columnList(cols) {
		if !slices.Contains(fixed, c) {
			sets = append(sets, c+" = ?")
			u.set = append(u.set, i)
		}
	}
	u.q = `UPDATE ` + table + ` SET ` + strings.Join(sets, ", ") + ` WHERE id = ?`
	return u
}

// args are the statement's arguments from values, the row's values in column order,
// the id first.
func (u update) args(values []any) []any {
	args := make([]any, 0, len(u.set)+1)
	for _, i := range u.set {
		args = append(args, values[i])
	}
	return append(args, values[0])
}

// insertSQL is an INSERT of every column of cols with positional parameters.
func insertSQL(table, cols string) string {
	return `INSERT INTO ` + table + ` (` + cols + `) VALUES (` +
		strings.TrimSuffix(strings.Repeat("?, ", len(columnList(cols))), ", ") + `)`
}

// saveRun writes every column of a changed run and a snapshot of it: all run
// transitions end here, so every transition leaves a snapshot in its transaction.
// via are states the run passed through on its way to rec in the same transaction
// (two transitions made in one), each snapshotted before rec.
func (s *Store) saveRun(ctx context.Context, tx Tx, rec runRec, via ...scripthost.Run) error {
	row, err := rec.row()
	if err != nil {
		return err
	}
	i := 0
	if rec.SupersededBy != "" { // never unset: the stored column is NULL when rec's is ""
		i |= 1
	}
	if !s.d.RewritesSetIndexes || rec.Status != rec.stored.status {
		i |= 2
	}
	if err := s.guardedExec(ctx, tx, RowKey{"runs", rec.ID}, guardRun, "update run", runUpdates[i].q, runUpdates[i].args(row.values())); err != nil {
		return err
	}
	cacheRun(tx, row)
	noteRun(tx, rec.ID, false)
	return s.snapshots(ctx, tx, rec, false, via)
}

// snapshots logs the snapshots of a transition of rec (created: the transition
// created it): via, the states the run passed through, then the run. Each is logged
// as what changed since the one before it (see encodeSnapshot), the first since the
// run's last snapshot before the transition where snapshotBase finds it, else whole;
// the last is then kept in the row cache, under snapshotKey, as the next one's base.
func (s *Store) snapshots(ctx context.Context, tx Tx, rec runRec, created bool, via []scripthost.Run) error {
	last, err := s.snapshotBase(ctx, tx, rec, created)
	if err != nil {
		return err
	}
	run := rec.Run
	for i := range via {
		if last, err = s.snapshot(ctx, tx, last, &via[i]); err != nil {
			return err
		}
	}
	if last, err = s.snapshot(ctx, tx, last, &run); err != nil {
		return err
	}
	if c := rowCache(tx); c != nil {
		// Kept as it is, not copied: run is this call's own copy of the struct, never
		// changed after this, and the store and its callers give a run new values
		// rather than change its JSON in place. Were a value changed in place, the next
		// transition, whose run is read from its row, would see it differ and log it
		// again; only the same changed value put back into the same field could be
		// missed, and SCRIPTHOST_VERIFY_ROW_CACHE (make test) would catch it.
		c.CacheRow(snapshotKey(run.ID), last)
	}
	return nil
}

// lastSnapshot is a run's last snapshot as the row cache keeps it, under snapshotKey:
// the base from which the next one is logged as a change.
type lastSnapshot struct {
	run *scripthost.Run
	// next is the number the run's next snapshot takes in run_snapshots (not
	// Dialect.Embedded): one past run's; 0 when run's is not known, run having been
	// numbered by the database (one past the run's last then).
	next int
}

// snapshotBase returns the base of the first snapshot of a transition of rec: for a
// run the transition created, none, the snapshots numbered from 1; else the run's last
// snapshot as the row cache keeps it (put there when this process logged it), when it
// is one to log a change from. Else none, and the snapshot is logged whole: when this
// process did not log the run's last snapshot, or it aged out of the cache, or the
// transaction runs without the cache (run again after it met a changed row).
//
// A change is only right against the snapshot stored before it. Where the database
// has other writers (PostgreSQL: other hosts, an operator's command), the cached one
// may not be the last any more, so a change from it is logged only when
//   - it is the snapshot of the run's version the transition read and will write over
//     (rec.stored), which the guarded update of the run, in the same statement, or
//     the row lock of a read holds until the commit: a run moved by another host
//     since is written whole at once, and
//   - its number is known, the change then numbered one past it: the primary key of
//     run_snapshots, (run_id, seq), refuses it where another writer logged a snapshot
//     after the base, whatever the run's row says, and the transaction runs again
//     without the cache. A run whose last snapshot the database numbered goes on
//     whole, except for the snapshots after it in the same write.
func (s *Store) snapshotBase(ctx context.Context, tx Tx, rec runRec, created bool) (lastSnapshot, error) {
	if created {
		return lastSnapshot{next: 1}, nil
	}
	c := rowCache(tx)
	if c == nil {
		return lastSnapshot{}, nil
	}
	key := snapshotKey(rec.ID)
	v, ok := c.CachedRow(key)
	takeGuard(tx, key) // checked by its number (above), not as a row
	if !ok {
		return lastSnapshot{}, nil
	}
	last := v.(lastSnapshot)
	if !rec.stored.same(versionOf(last.run)) {
		return lastSnapshot{}, nil
	}
	if !s.d.Embedded && last.next == 0 && !snapshotInWrite(tx, rec.ID) {
		return lastSnapshot{}, nil
	}
	if c.VerifySnapshots() {
		if err := s.verifyLastSnapshot(ctx, tx, last); err != nil {
			return lastSnapshot{}, err
		}
	}
	return last, nil
}

// snapshotInWrite reports whether tx's write has logged a snapshot of the run already.
func snapshotInWrite(tx Tx, runID string) bool {
	et, ok := tx.(*eventTx)
	if !ok {
		return false
	}
	for _, sn := range et.tableSnaps {
		if sn.runID == runID {
			return true
		}
	}
	return false
}

// snapshotKey is where the row cache keeps a run's last snapshot (see snapshots).
func snapshotKey(runID string) RowKey { return RowKey{Table: "snapshot", ID: runID} }

// snapshotType is the lifecycle-log type of a snapshot where the log holds them
// (Dialect.Embedded): an entry LifecycleEvents leaves out and callers cannot log.
const snapshotType = "snapshot"

// snapshotSQL inserts a snapshot numbered as given, or when the number is NULL one
// past the run's last, where snapshots have a table of their own (not
// Dialect.Embedded).
var snapshotSQL = `INSERT INTO run_snapshots (run_id, seq, phase, status, run, at, more)
	SELECT CAST(? AS TEXT), COALESCE(CAST(? AS INTEGER), COALESCE(MAX(seq + ` + packedCount("more") + `), 0) + 1), CAST(? AS TEXT), CAST(? AS TEXT), CAST(? AS TEXT), CAST(? AS BIGINT), CAST(? AS TEXT)
	FROM run_snapshots WHERE run_id = ?`

// seqArg is a snapshot's number as a statement's argument: NULL when the database
// numbers it (0).
func seqArg(seq int) any {
	if seq == 0 {
		return nil
	}
	return seq
}

// snapshot logs one snapshot of run as a change from last's (whole when last has no
// run) and returns it as the next one's base.
func (s *Store) snapshot(ctx context.Context, tx Tx, last lastSnapshot, run *scripthost.Run) (lastSnapshot, error) {
	b, err := encodeSnapshot(last.run, run)
	if err != nil {
		return lastSnapshot{}, fmt.Errorf("%s: %w", s.name, err)
	}
	next := lastSnapshot{run: run}
	if last.next > 0 {
		next.next = last.next + 1
	}
	if s.d.Embedded {
		// An entry of the run's lifecycle log, written with the transaction's events
		// in their one INSERT (see withEvents), or by itself outside one.
		snap := ledger.LifecycleEvent{RunID: run.ID, Type: snapshotType, Data: b, At: run.UpdatedAt}
		if et, ok := tx.(*eventTx); ok {
			et.snaps = append(et.snaps, snap)
			return next, nil
		}
		return next, s.appendEvents(ctx, tx, nil, []ledger.LifecycleEvent{snap}, nil, nil)
	}
	sn := tableSnap{runID: run.ID, seq: last.next, phase: string(run.Phase), status: string(run.Status), run: b, at: nanos(run.UpdatedAt)}
	if et, ok := tx.(*eventTx); ok { // written with the events, at the write's end
		et.tableSnaps = append(et.tableSnaps, sn)
		return next, nil
	}
	if _, err := tx.ExecContext(ctx, snapshotSQL, sn.args()...); err != nil {
		return lastSnapshot{}, s.dbErr("snapshot run", err)
	}
	return next, nil
}

func columnList(cols string) []string {
	var out []string
	for _, c := range strings.Split(cols, ",") {
		out = append(out, strings.TrimSpace(c))
	}
	return out
}

func namedList(cols string) string {
	cs := columnList(cols)
	for i, c := range cs {
		cs[i] = ":" + c
	}
	return strings.Join(cs, ", ")
}

// refuse builds the error of an illegal transition.
func refuse(entity, id string, from, to any, format string, args ...any) error {
	return &ledger.TransitionError{
		Entity: entity, ID: id, From: fmt.Sprint(from), To: fmt.Sprint(to),
		Reason: fmt.Sprintf(format, args...),
	}
}

// CreateRun creates a run in phase pending and status active.
func (s *Store) CreateRun(ctx context.Context, nr ledger.NewRun) (scripthost.Run, error) {
	rec, via, err := s.newRun(nr)
	if err != nil {
		return scripthost.Run{}, err
	}
	out := rec
	err = s.writeRedo(ctx, func(ctx context.Context, tx Tx) error {
		if err := s.insertNewRun(ctx, tx, rec, via); err != nil {
			return err
		}
		switch {
		case nr.Commit != nil:
			var err error
			out, err = s.commitProducer(ctx, tx, rec.ID, *nr.Commit)
			return err
		case nr.Skipped != nil && nr.Skipped.Schedule != nil:
			return s.putSchedule(ctx, tx, *nr.Skipped.Schedule)
		}
		return nil
	})
	if err != nil {
		return scripthost.Run{}, err
	}
	return out.Run, nil
}

// newRun checks nr and builds the run it creates, with the states it passes through on
// the way to its first phase (see ledger.NewRun).
func (s *Store) newRun(nr ledger.NewRun) (runRec, []scripthost.Run, error) {
	if nr.Workflow == "" || nr.Handler == "" {
		return runRec{}, nil, fmt.Errorf("%s: create run: workflow and handler are required", s.name)
	}
	if nr.Kind != scripthost.KindConsumer && nr.Kind != scripthost.KindProducer {
		return runRec{}, nil, fmt.Errorf("%s: create run: unknown handler kind %q", s.name, nr.Kind)
	}
	if err := checkJSON("input state", nr.InputState); err != nil {
		return runRec{}, nil, err
	}
	now := s.now()
	id := nr.ID
	if id == "" {
		id = s.opts.NewID()
	}
	rec := runRec{Run: scripthost.Run{
		ID: id, Workflow: nr.Workflow, Version: nr.Version, Handler: nr.Handler,
		Kind: nr.Kind, Phase: scripthost.RunPending, Status: scripthost.StatusActive, Attempt: 1,
		InputState: nr.InputState, CreatedAt: now, UpdatedAt: now,
	}, stateFrom: nr.StateFrom}
	var via []scripthost.Run
	if nr.Start != "" && nr.Start != scripthost.RunPending {
		if err := checkPhaseMove(rec, scripthost.RunPending, nr.Start); err != nil {
			return runRec{}, nil, err
		}
		if err := checkPassed(rec, scripthost.RunPending, nr.Start); err != nil {
			return runRec{}, nil, err
		}
		via = []scripthost.Run{rec.Run}
		rec.Phase = nr.Start
	}
	if nr.Commit != nil {
		if nr.Start != scripthost.RunExecuting {
			return runRec{}, nil, refuse("run", rec.ID, rec.Phase, scripthost.RunCommitted,
				"a run is created committed only when it starts at %s, not %q", scripthost.RunExecuting, nr.Start)
		}
		if err := checkCommit(*nr.Commit); err != nil {
			return runRec{}, nil, err
		}
	}
	if nr.Prepared != nil {
		if nr.Start != scripthost.RunPreparing {
			return runRec{}, nil, refuse("run", rec.ID, rec.Phase, scripthost.RunPrepared,
				"a run is created prepared only when it starts at %s, not %q", scripthost.RunPreparing, nr.Start)
		}
		if err := checkJSON("prepared data", nr.Prepared.Data); err != nil {
			return runRec{}, nil, err
		}
		via = append(via, rec.Run)
		rec.prepare(*nr.Prepared)
		if nr.Prepared.Mutate {
			via = append(via, rec.Run)
			rec.Phase = scripthost.RunMutating
		}
	}
	if sk := nr.Skipped; sk != nil {
		if rec.Phase != scripthost.RunPending { // a run created prepared or committed has started
			return runRec{}, nil, refuse("run", rec.ID, rec.Phase, scripthost.StatusSkipped,
				"a run is created skipped only in phase %s, before it starts", scripthost.RunPending)
		}
		if sc := sk.Schedule; sc != nil && (sc.Workflow != nr.Workflow || sc.Producer != nr.Handler || nr.Kind != scripthost.KindProducer) {
			return runRec{}, nil, fmt.Errorf("%s: create run: a skipped run's schedule is its own producer's (%s/%s), not %s/%s",
				s.name, nr.Workflow, nr.Handler, sc.Workflow, sc.Producer)
		}
		via = append(via, rec.Run)
		rec.Status, rec.Error = scripthost.StatusSkipped, sk.Reason
	}
	return rec, via, nil
}

// insertNewRun writes a run built by newRun and reserves its events, once its
// handler state is checked (checkStateFrom).
func (s *Store) insertNewRun(ctx context.Context, tx Tx, rec runRec, via []scripthost.Run) error {
	if err := s.checkStateFrom(ctx, tx, rec); err != nil {
		return err
	}
	if err := s.insertRun(ctx, tx, rec, via...); err != nil {
		return err
	}
	return s.reserve(ctx, tx, rec)
}

// checkStateFrom refuses, with ErrStateChanged, a new run whose handler state
// (rec.stateFrom) is no longer the saved one. A transaction that takes it on trust
// (Truster) checks it with its write instead of reading it first, as keyFailures
// does: when the state changed, the write fails whole and runs again reading it.
func (s *Store) checkStateFrom(ctx context.Context, tx Tx, rec runRec) error {
	hs := rec.stateFrom
	if hs == nil {
		return nil
	}
	if t, ok := unwrapped(tx).(Truster); ok && t.Trusts() {
		if hs.UpdatedAt.IsZero() {
			t.Expect(`SELECT 1 `+stateOf, []any{rec.Workflow, rec.Handler}, 0)
		} else {
			t.Expect(`SELECT 1 `+stateOf+` AND updated_at = ?`, []any{rec.Workflow, rec.Handler, nanos(hs.UpdatedAt)}, 1)
		}
		return nil
	}
	var at []nanos
	if err := tx.SelectContext(ctx, &at, `SELECT updated_at `+stateOf, rec.Workflow, rec.Handler); err != nil {
		return s.dbErr("read state", err)
	}
	saved := time.Time{}
	if len(at) > 0 {
		saved = at[0].Time()
	}
	if !saved.Equal(hs.UpdatedAt) {
		return fmt.Errorf("%s: run of %s/%s began from the state saved at %s, now saved at %s: %w", s.name,
			rec.Workflow, rec.Handler, stamp(hs.UpdatedAt), stamp(saved), ledger.ErrStateChanged)
	}
	return nil
}

// stateOf selects a handler's saved state by its primary key.
const stateOf = `FROM handler_state WHERE workflow = ? AND handler = ?`

// stamp shows a saved state's time in an error: "none" for no state saved.
func stamp(t time.Time) string {
	if t.IsZero() {
		return "none"
	}
	return t.UTC().Format(time.RFC3339Nano)
}

// prepare moves rec on to prepared with the prepare phase's result.
func (rec *runRec) prepare(res ledger.PrepareResult) {
	rec.Phase = scripthost.RunPrepared
	rec.Prepared = res.Data
	rec.Reservations = res.Reservations
	rec.WakeAt = norm(res.WakeAt)
}

// Run returns one run.
func (s *Store) Run(ctx context.Context, id string) (scripthost.Run, error) {
	rec, err := s.getRun(ctx, s.r, id)
	return rec.Run, err
}

// Runs lists runs matching f, oldest first.
func (s *Store) Runs(ctx context.Context, f ledger.RunFilter) ([]scripthost.Run, error) {
	var where []string
	var args []any
	if f.Workflow != "" {
		where, args = append(where, "workflow = ?"), append(args, f.Workflow)
	}
	if f.Handler != "" {
		where, args = append(where, "handler = ?"), append(args, f.Handler)
	}
	if f.Status != "" {
		where, args = append(where, "status = ?"), append(args, string(f.Status))
	}
	if f.Unfinished {
		where = append(where, "status NOT IN ('committed', 'skipped', 'failed:logic', 'failed:internal')")
	}
	if f.Phase != "" {
		where, args = append(where, "phase = ?"), append(args, string(f.Phase))
	}
	if !f.Since.IsZero() {
		where, args = append(where, "created_at >= ?"), append(args, norm(f.Since).UnixNano())
	}
	if !f.Until.IsZero() {
		where, args = append(where, "created_at < ?"), append(args, norm(f.Until).UnixNano())
	}
	if f.Superseded {
		where = append(where, "superseded_by IS NOT NULL")
	}
	if f.Search != "" {
		w, a := searchWhere(f.Search, "id", "workflow", "handler", "status", "error")
		pat := a[0]
		w = w[:len(w)-1] + ` OR id IN (SELECT run_id FROM mutations WHERE LOWER(namespace || '.' || method) LIKE ? ESCAPE '\'))`
		where, args = append(where, w), append(append(args, a...), pat)
	}
	where, args, order := pageBy(f.Page, where, args)
	return s.listRuns(ctx, where, args, f.Limit, f.Newest, order)
}

// listRuns lists the runs where holds, oldest first (newest first when newest), or in
// order when given.
func (s *Store) listRuns(ctx context.Context, where []string, args []any, limit int, newest bool, order ...string) ([]scripthost.Run, error) {
	q := `SELECT ` + runColumns + ` FROM runs`
	if len(where) > 0 {
		q += ` WHERE ` + strings.Join(where, " AND ")
	}
	switch {
	case len(order) > 0 && order[0] != "":
		q += ` ORDER BY ` + order[0]
	case newest:
		q += ` ORDER BY created_at DESC, ` + s.d.Order + ` DESC`
	default:
		q += ` ORDER BY created_at, ` + s.d.Order
	}
	if limit > 0 {
		q += fmt.Sprintf(" LIMIT %d", limit)
	}
	var rows []runRow
	if err := s.r.SelectContext(ctx, &rows, q, args...); err != nil {
		return nil, s.dbErr("list runs", err)
	}
	runs := make([]scripthost.Run, 0, len(rows))
	for _, row := range rows {
		rec, err := row.rec()
		if err != nil {
			return nil, err
		}
		runs = append(runs, rec.Run)
	}
	return runs, nil
}

// Snapshots returns the run's snapshots in order, each whole (see encodeSnapshot).
func (s *Store) Snapshots(ctx context.Context, runID string) ([]ledger.Snapshot, error) {
	rows, err := s.snapshotEntries(ctx, s.r, runID)
	if err != nil {
		return nil, err
	}
	out := make([]ledger.Snapshot, 0, len(rows))
	var log snapshotLog
	for i, r := range rows {
		seq := r.Seq
		if seq == 0 { // numbered by its place in the lifecycle log
			seq = i + 1
		}
		whole, err := log.next(r.Data.msg())
		var st struct {
			Phase  scripthost.RunPhase  `json:"phase"`
			Status scripthost.RunStatus `json:"status"`
		}
		if err == nil {
			err = json.Unmarshal(whole, &st)
		}
		if err != nil {
			return nil, fmt.Errorf("%s: snapshot %d of run %s: %w", s.name, seq, runID, err)
		}
		out = append(out, ledger.Snapshot{RunID: runID, Seq: seq, Phase: st.Phase, Status: st.Status,
			Run: whole, At: r.At.Time()})
	}
	return out, nil
}

// snapshotEntry is a stored snapshot: the run's JSON or what changed since the
// snapshot before (see encodeSnapshot).
type snapshotEntry struct {
	// Seq is its number in run_snapshots; 0 in the lifecycle log (Dialect.Embedded),
	// where its place numbers it.
	Seq  int     `db:"seq"`
	Data rawJSON `db:"data"`
	At   nanos   `db:"at"`
}

// snapshotEntries reads a run's stored snapshots, in order: from its lifecycle log
// where the log holds them (Dialect.Embedded), else from run_snapshots.
func (s *Store) snapshotEntries(ctx context.Context, q interface {
	SelectContext(ctx context.Context, dest any, query string, args ...any) error
}, runID string) ([]snapshotEntry, error) {
	if !s.d.Embedded {
		return s.tableSnapshots(ctx, q, runID)
	}
	var rows []snapshotEntry
	query := `SELECT data, at FROM lifecycle_events WHERE run_id = ? AND type = '` + snapshotType + `' ORDER BY seq`
	if err := q.SelectContext(ctx, &rows, query, runID); err != nil {
		return nil, s.dbErr("list snapshots", err)
	}
	return rows, nil
}

// tableSnapshots reads a run's snapshots from run_snapshots, a row's more after its
// first, numbered on from its seq (see snapRows).
func (s *Store) tableSnapshots(ctx context.Context, q interface {
	SelectContext(ctx context.Context, dest any, query string, args ...any) error
}, runID string) ([]snapshotEntry, error) {
	var rows []struct {
		snapshotEntry
		More sql.NullString `db:"more"`
	}
	if err := q.SelectContext(ctx, &rows, `SELECT seq, run AS data, at, more FROM run_snapshots WHERE run_id = ? ORDER BY seq`, runID); err != nil {
		return nil, s.dbErr("list snapshots", err)
	}
	out := make([]snapshotEntry, 0, len(rows))
	for _, r := range rows {
		out = append(out, r.snapshotEntry)
		if !r.More.Valid {
			continue
		}
		var more []packedSnap
		if err := json.Unmarshal([]byte(r.More.String), &more); err != nil {
			return nil, fmt.Errorf("%s: snapshots of run %s from %d: more: %w", s.name, runID, r.Seq, err)
		}
		for i, m := range more {
			out = append(out, snapshotEntry{Seq: r.Seq + i + 1, Data: rawJSON(m.Run), At: nanos(time.Unix(0, m.At).UTC())})
		}
	}
	return out, nil
}

// ErrSnapshotCacheWrong: the run's last snapshot as the row cache keeps it is not
// the stored one it stands for (verifyLastSnapshot), which no other writer can
// change: a fault of the store, not to be met by running the transaction again.
var ErrSnapshotCacheWrong = errors.New("the row cache's last snapshot is out of date")

// verifyLastSnapshot checks that last, the run's last snapshot as the row cache keeps
// it, is the one the stored snapshots rebuild, with this write's own after them: the
// next snapshot is logged as a change from it. Where snapshots are numbered
// (run_snapshots), the stored ones are read up to last's number, or up to this
// write's first, which another host may have logged after (the write then fails on
// the number). It runs where the row cache says so (a test setting,
// sqlstore.RowCache.VerifySnapshots).
func (s *Store) verifyLastSnapshot(ctx context.Context, tx Tx, last lastSnapshot) error {
	id := last.run.ID
	rows, err := s.snapshotEntries(ctx, tx, id)
	if err != nil {
		return err
	}
	var own [][]byte // this write's, not yet stored
	upTo := last.next - 1
	if et, ok := tx.(*eventTx); ok {
		for _, sn := range et.snaps {
			if sn.RunID == id {
				own = append(own, sn.Data)
			}
		}
		for _, sn := range et.tableSnaps {
			if sn.runID == id {
				if len(own) == 0 {
					upTo = sn.seq - 1
				}
				own = append(own, sn.run)
			}
		}
	}
	entries := make([][]byte, 0, len(rows)+len(own))
	for _, r := range rows {
		if r.Seq > 0 && upTo >= 0 && r.Seq > upTo {
			break
		}
		entries = append(entries, r.Data.msg())
	}
	entries = append(entries, own...)
	var log snapshotLog
	var whole []byte
	for i, e := range entries {
		if whole, err = log.next(e); err != nil {
			return fmt.Errorf("%s: snapshot %d of run %s: %w", s.name, i+1, id, err)
		}
	}
	want, err := json.Marshal(last.run)
	if err != nil {
		return err
	}
	if !bytes.Equal(whole, want) {
		return fmt.Errorf("%s: run %s: %w: cached %s, stored %s", s.name, id, ErrSnapshotCacheWrong, want, whole)
	}
	return nil
}

// ownMethod names the phases a run enters only through a dedicated method.
var ownMethod = map[scripthost.RunPhase]string{
	scripthost.RunPrepared:  "MarkPrepared",
	scripthost.RunMutated:   "ApplyMutation, MarkMutated or Resolve",
	scripthost.RunCommitted: "CommitConsumer or CommitProducer",
}

// checkPhaseMove refuses a phase move of a run that is not active or not in from.
func checkPhaseMove(rec runRec, from, to scripthost.RunPhase) error {
	if rec.Phase != from {
		return refuse("run", rec.ID, rec.Phase, to, "run is in phase %s, not %s", rec.Phase, from)
	}
	if rec.Status != scripthost.StatusActive {
		return refuse("run", rec.ID, rec.Phase, to, "run status is %s, not active", rec.Status)
	}
	if !scripthost.CanAdvance(rec.Kind, from, to) {
		return refuse("run", rec.ID, from, to, "a %s run cannot move from %s to %s", rec.Kind, from, to)
	}
	return nil
}

// checkPassed refuses a move from → to (checked by checkPhaseMove) that would enter
// or pass over a phase entered only through its own method.
func checkPassed(rec runRec, from, to scripthost.RunPhase) error {
	order := scripthost.PhaseOrder(rec.Kind)
	for _, p := range order[scripthost.PhaseIndex(rec.Kind, from)+1 : scripthost.PhaseIndex(rec.Kind, to)+1] {
		if m, ok := ownMethod[p]; ok {
			return refuse("run", rec.ID, from, to, "phase %s is entered only through %s", p, m)
		}
	}
	return nil
}

// AdvancePhase moves an active run one step forward to a phase without a method of its
// own: pending → preparing, prepared → mutating, mutated → emitting, pending → executing.
func (s *Store) AdvancePhase(ctx context.Context, runID string, from, to scripthost.RunPhase) (scripthost.Run, error) {
	var out runRec
	err := s.writeRedo(ctx, func(ctx context.Context, tx Tx) error {
		rec, err := s.getRun(ctx, tx, runID)
		if err != nil {
			return err
		}
		if err := checkPhaseMove(rec, from, to); err != nil {
			return err
		}
		if err := checkPassed(rec, from, to); err != nil {
			return err
		}
		rec.Phase = to
		rec.UpdatedAt = s.now()
		out = rec
		return s.saveRun(ctx, tx, rec)
	})
	return out.Run, err
}

// MarkPrepared moves preparing → prepared, stores the result and reserves its events,
// and with res.Mutate moves on to mutating.
func (s *Store) MarkPrepared(ctx context.Context, runID string, res ledger.PrepareResult) (scripthost.Run, error) {
	if err := checkJSON("prepared data", res.Data); err != nil {
		return scripthost.Run{}, err
	}
	var out runRec
	err := s.mustWriteRedo(ctx, func(ctx context.Context, tx Tx) error {
		rec, err := s.getRun(ctx, tx, runID)
		if err != nil {
			return err
		}
		if err := checkPhaseMove(rec, scripthost.RunPreparing, scripthost.RunPrepared); err != nil {
			return err
		}
		rec.prepare(res)
		rec.UpdatedAt = s.now()
		if err := s.reserve(ctx, tx, rec); err != nil {
			return err
		}
		var via []scripthost.Run
		if res.Mutate {
			via = []scripthost.Run{rec.Run}
			rec.Phase = scripthost.RunMutating
		}
		out = rec
		return s.saveRun(ctx, tx, rec, via...)
	})
	return out.Run, err
}

// MarkMutated moves mutating → mutated → emitting for a run that made no mutation.
func (s *Store) MarkMutated(ctx context.Context, runID string) (scripthost.Run, error) {
	var out runRec
	err := s.mustWriteRedo(ctx, func(ctx context.Context, tx Tx) error {
		rec, err := s.getRun(ctx, tx, runID)
		if err != nil {
			return err
		}
		if err := checkPhaseMove(rec, scripthost.RunMutating, scripthost.RunMutated); err != nil {
			return err
		}
		m, found, err := s.runMutation(ctx, tx, runID)
		if err != nil {
			return err
		}
		if found {
			return refuse("run", runID, rec.Phase, scripthost.RunMutated,
				"run has mutation %s (%s): its outcome moves the run", m.ID, m.Status)
		}
		out, err = s.saveOutcome(ctx, tx, rec, scripthost.Outcome{Status: scripthost.OutcomeNone}, s.now())
		return err
	})
	return out.Run, err
}

// saveOutcome records the mutate phase's outcome on a mutating run and moves it on
// through mutated to emitting in the same transaction (ledger.OutcomeRecorded), with a
// snapshot of each and phase_started(next) logged after the caller's events. Nothing
// happens outside the ledger between the two: a run found emitting runs next as one
// found mutated would after advancing, so recovery loses nothing.
//
// A run whose cancel was requested while the outcome was unknown (runRec.cancel) is
// then cancelled in the same transaction, as CancelRun cancels a run at emitting:
// its events consumed after an applied or skipped mutation, released after a definite
// failure. The request is in the run's row, which the transition reads anyway, so the
// common case costs no statement more.
func (s *Store) saveOutcome(ctx context.Context, tx Tx, rec runRec, o scripthost.Outcome, now time.Time) (runRec, error) {
	rec.Run = ledger.OutcomeRecorded(rec.Run, o, now)
	mutated := rec.Run
	mutated.Phase = scripthost.RunMutated
	next := ledger.NewPhaseEvent(rec.Run, ledger.EventPhaseStarted, string(scripthost.PhaseNext))
	if rec.cancel == nil {
		if err := s.saveRun(ctx, tx, rec, mutated); err != nil {
			return rec, err
		}
		return rec, s.logOwn(ctx, tx, next)
	}
	return s.cancel(ctx, tx, rec, afterMutation, *rec.cancel, now, []scripthost.Run{mutated, rec.Run}, next)
}

// Recover lists active runs that are not committed and every in_flight mutation.
func (s *Store) Recover(ctx context.Context) (ledger.Recovery, error) {
	runs, err := s.listRuns(ctx, []string{"status = 'active'", "phase <> 'committed'"}, nil, 0, false)
	if err != nil {
		return ledger.Recovery{}, err
	}
	muts, err := s.Mutations(ctx, ledger.MutationFilter{Status: scripthost.MutationInFlight})
	if err != nil {
		return ledger.Recovery{}, err
	}
	return ledger.Recovery{Runs: runs, InFlight: muts}, nil
}

// InsertRun stores a run as it is, in any phase, with its first snapshot: for tests
// and benchmarks that start from a given state.
func (s *Store) InsertRun(ctx context.Context, tx Tx, run scripthost.Run) error {
	return s.insertRun(ctx, tx, runRec{Run: run})
}
