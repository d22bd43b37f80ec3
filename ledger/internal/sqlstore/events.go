package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"

	"github.com/scripthost/scripthost"
	"github.com/scripthost/scripthost/ledger"
)

type eventRow struct {
	Seq        int64     `db:"seq"`
	Workflow   string    `db:"workflow"`
	Topic      string    `db:"topic"`
	MessageID  string    `db:"message_id"`
	Payload    rawJSON   `db:"payload"`
	Status     string    `db:"status"`
	ReservedBy optString `db:"reserved_by"`
	Attempt    int       `db:"attempt"`
	CausedBy   string    `db:"caused_by"`
	CreatedAt  nanos     `db:"created_at"`
}

const eventColumns = `seq, workflow, topic, message_id, payload, status, reserved_by, attempt, caused_by, created_at`

func (r eventRow) event() scripthost.Event {
	return scripthost.Event{
		Seq: r.Seq, Workflow: r.Workflow, Topic: r.Topic, MessageID: r.MessageID,
		Payload: r.Payload.msg(), Status: scripthost.EventStatus(r.Status),
		ReservedBy: string(r.ReservedBy), Attempt: r.Attempt, CausedBy: r.CausedBy,
		CreatedAt: r.CreatedAt.Time(),
	}
}

// reserve reserves every event the run's reservations name, all or nothing: the caller
// rolls back on error. An event is found by its unique key; its status is compared
// with IS NOT DISTINCT FROM so that the index of a topic's pending events, which
// PostgreSQL may otherwise pick (see guardRun), cannot serve the statement: it would
// read the topic's whole backlog for the one event.
func (s *Store) reserve(ctx context.Context, tx Tx, rec runRec) error {
	for _, res := range rec.Reservations {
		for _, id := range res.IDs {
			err := s.execLater(ctx, tx, "reserve event", `UPDATE events SET status = 'reserved', reserved_by = ?, attempt = attempt + 1
				WHERE workflow = ? AND topic = ? AND message_id = ? AND status IS NOT DISTINCT FROM 'pending'`,
				[]any{rec.ID, rec.Workflow, res.Topic, id}, 1, func() error {
					return fmt.Errorf("%w: %s/%s/%s for run %s", ledger.ErrEventUnavailable, rec.Workflow, res.Topic, id, rec.ID)
				})
			if err != nil {
				return err
			}
		}
	}
	return nil
}

// setRunEvents moves the run's reserved events to status; pending also clears the
// reservation so another run can take them.
func (s *Store) setRunEvents(ctx context.Context, tx Tx, runID string, status scripthost.EventStatus) error {
	q := `UPDATE events SET status = ? WHERE reserved_by = ? AND status = 'reserved'`
	if status == scripthost.EventPending {
		q = `UPDATE events SET status = ?, reserved_by = NULL WHERE reserved_by = ? AND status = 'reserved'`
	}
	return s.execLater(ctx, tx, "update events", q, []any{string(status), runID}, -1, nil)
}

// Publish stores events, skipping message ids a topic already has, and returns the
// stored events in argument order (the existing ones for duplicates). A bad element
// stores nothing.
func (s *Store) Publish(ctx context.Context, events ...ledger.NewEvent) ([]scripthost.Event, error) {
	var out []scripthost.Event
	err := s.write(ctx, func(ctx context.Context, tx Tx) error {
		var err error
		out, err = s.insertEvents(ctx, tx, events, "", "")
		return err
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// insertEvents stores events inside tx; workflow and causedBy fill empty fields.
func (s *Store) insertEvents(ctx context.Context, tx Tx, events []ledger.NewEvent, workflow, causedBy string) ([]scripthost.Event, error) {
	now := s.now()
	out := make([]scripthost.Event, 0, len(events))
	for i, e := range events {
		if e.Workflow == "" {
			e.Workflow = workflow
		}
		if e.CausedBy == "" {
			e.CausedBy = causedBy
		}
		if e.Workflow == "" || e.Topic == "" || e.MessageID == "" {
			return nil, fmt.Errorf("%s: publish event %d: workflow, topic and message id are required", s.name, i)
		}
		if err := checkJSON(fmt.Sprintf("event %d (%s/%s) payload", i, e.Topic, e.MessageID), e.Payload); err != nil {
			return nil, err
		}
		_, err := tx.ExecContext(ctx, `INSERT INTO events (workflow, topic, message_id, payload, status, attempt, caused_by, created_at)
			VALUES (?, ?, ?, ?, 'pending', 0, ?, ?) ON CONFLICT (workflow, topic, message_id) DO NOTHING`,
			e.Workflow, e.Topic, e.MessageID, rawJSON(e.Payload), e.CausedBy, nanos(now))
		if err != nil {
			return nil, s.dbErr("publish", err)
		}
		var row eventRow
		if err := tx.GetContext(ctx, &row, `SELECT `+eventColumns+` FROM events WHERE workflow = ? AND topic = ? AND message_id = ?`,
			e.Workflow, e.Topic, e.MessageID); err != nil {
			return nil, s.dbErr("publish", err)
		}
		out = append(out, row.event())
	}
	return out, nil
}

// PendingEvents lists a topic's pending events in publication order; an empty topic
// lists every topic of the workflow, a limit of 0 lists all.
func (s *Store) PendingEvents(ctx context.Context, workflow, topic string, limit int) ([]scripthost.Event, error) {
	return s.Events(ctx, ledger.EventFilter{Workflow: workflow, Topic: topic, Status: scripthost.EventPending, Limit: limit})
}

// Events lists events matching f in publication order.
func (s *Store) Events(ctx context.Context, f ledger.EventFilter) ([]scripthost.Event, error) {
	var where []string
	var args []any
	if f.Workflow != "" {
		where, args = append(where, "workflow = ?"), append(args, f.Workflow)
	}
	if f.Topic != "" {
		where, args = append(where, "topic = ?"), append(args, f.Topic)
	}
	if f.MessageID != "" {
		where, args = append(where, "message_id = ?"), append(args, f.MessageID)
	}
	switch f.Status {
	case "":
	case scripthost.EventPending:
		// A literal, not a parameter, so that the planner sees at once that the index
		// of pending events (partial, status = 'pending') holds every row wanted.
		where = append(where, "status = 'pending'")
	default:
		where, args = append(where, "status = ?"), append(args, string(f.Status))
	}
	if f.Search != "" {
		w, a := searchWhere(f.Search, "message_id", "topic", "status", "caused_by", "reserved_by")
		where, args = append(where, w), append(args, a...)
	}
	order := ` ORDER BY seq`
	if f.Page != nil {
		if f.Page.After != nil {
			seq, err := seqAfter(*f.Page.After)
			if err != nil {
				return nil, fmt.Errorf("%s: list events: %w", s.name, err)
			}
			where, args = append(where, "seq < ?"), append(args, seq)
		}
		order = ` ORDER BY seq DESC`
	}
	q := `SELECT ` + eventColumns + ` FROM events`
	if len(where) > 0 {
		q += ` WHERE ` + strings.Join(where, " AND ")
	}
	q += order
	if f.Limit > 0 {
		q += fmt.Sprintf(" LIMIT %d", f.Limit)
	}
	// A workflow's pending events of one topic, up to a limit, are where the index
	// events_status starts: a lookup.
	sel := s.r.SelectContext
	if f.Workflow != "" && f.Topic != "" && f.Status != "" && f.Limit > 0 && f.Page == nil && f.Search == "" {
		sel = s.r.selectLookup
	}
	var rows []eventRow
	if err := sel(ctx, &rows, q, args...); err != nil {
		return nil, s.dbErr("list events", err)
	}
	out := make([]scripthost.Event, 0, len(rows))
	for _, r := range rows {
		out = append(out, r.event())
	}
	return out, nil
}

// SkipEvent sets a pending event aside as skipped (see ledger.Store).
func (s *Store) SkipEvent(ctx context.Context, workflow, topic, messageID string) (scripthost.Event, error) {
	var out scripthost.Event
	err := s.write(ctx, func(ctx context.Context, tx Tx) error {
		var row eventRow
		err := tx.GetContext(ctx, &row, `SELECT `+eventColumns+` FROM events WHERE workflow = ? AND topic = ? AND message_id = ?`,
			workflow, topic, messageID)
		if errors.Is(err, sql.ErrNoRows) {
			return fmt.Errorf("%w: event %s/%s/%s", ledger.ErrNotFound, workflow, topic, messageID)
		}
		if err != nil {
			return s.dbErr("skip event", err)
		}
		ev := row.event()
		switch ev.Status {
		case scripthost.EventSkipped:
			out = ev
			return nil
		case scripthost.EventPending:
		case scripthost.EventReserved:
			return refuse("event", workflow+"/"+topic+"/"+messageID, ev.Status, scripthost.EventSkipped,
				"run %s holds it: retry, resolve or skip that run instead", ev.ReservedBy)
		default:
			return refuse("event", workflow+"/"+topic+"/"+messageID, ev.Status, scripthost.EventSkipped,
				"only a pending event is set aside")
		}
		if _, err := tx.ExecContext(ctx, `UPDATE events SET status = 'skipped' WHERE seq = ? AND status = 'pending'`, ev.Seq); err != nil {
			return s.dbErr("skip event", err)
		}
		ev.Status = scripthost.EventSkipped
		out = ev
		return nil
	})
	return out, err
}
