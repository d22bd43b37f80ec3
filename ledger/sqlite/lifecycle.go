package sqlite

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

// withEvents wraps fn so that the lifecycle events attached to ctx are appended in
// fn's transaction, after fn's own work and only when it succeeded.
func (s *Store) withEvents(ctx context.Context, fn writeFunc) writeFunc {
	evs := ledger.EventsFrom(ctx)
	if len(evs) == 0 {
		return fn
	}
	return func(ctx context.Context, tx *wtx) error {
		t := &wtx{Tx: tx.Tx, c: tx.c, touched: &touched{}}
		if err := fn(ctx, t); err != nil {
			return err
		}
		return s.appendEvents(ctx, tx, t.touched, evs)
	}
}

func (s *Store) appendEvents(ctx context.Context, tx *wtx, t *touched, evs []ledger.LifecycleEvent) error {
	now := s.now()
	for _, ev := range evs {
		if ev.RunID == "" {
			ev.RunID = t.run()
		}
		if ev.MutationID == "" {
			ev.MutationID = t.mutation
		}
		if ev.RunID == "" {
			continue // an event about no run (a plan step's mutation) has no log
		}
		if ev.Type == "" {
			return fmt.Errorf("sqlite: lifecycle event of run %s has no type", ev.RunID)
		}
		if err := checkJSON("lifecycle event data", ev.Data); err != nil {
			return err
		}
		_, err := tx.ExecContext(ctx, `INSERT INTO lifecycle_events (run_id, type, mutation_id, data, at) VALUES (?, ?, ?, ?, ?)`,
			ev.RunID, string(ev.Type), ev.MutationID, rawJSON(ev.Data), nanos(now))
		if err != nil {
			return s.dbErr("append lifecycle event", err)
		}
	}
	return nil
}

func (t *wtx) noteRun(id string, created bool) {
	switch {
	case t.touched == nil:
	case created && t.touched.createdRun == "":
		t.touched.createdRun = id
	case !created && t.touched.changedRun == "":
		t.touched.changedRun = id
	}
}

func (t *wtx) noteMutation(id, runID string) {
	if t.touched != nil && t.touched.mutation == "" {
		t.touched.mutation, t.touched.mutationRun = id, runID
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
