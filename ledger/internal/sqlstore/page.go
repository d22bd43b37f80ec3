package sqlstore

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/scripthost/scripthost/ledger"
)

// likePattern is a LIKE pattern that matches text containing q, ignoring case (the
// column side is lowered too), with LIKE's wildcards in q taken literally.
func likePattern(q string) string {
	r := strings.NewReplacer(`\`, `\\`, `%`, `\%`, `_`, `\_`)
	return "%" + r.Replace(strings.ToLower(q)) + "%"
}

// searchWhere is the condition that one of exprs contains q, ignoring case, and its
// arguments; exprs are SQL expressions of text (NULL matches nothing).
func searchWhere(q string, exprs ...string) (string, []any) {
	pat := likePattern(q)
	parts := make([]string, len(exprs))
	args := make([]any, len(exprs))
	for i, e := range exprs {
		parts[i] = "LOWER(" + e + `) LIKE ? ESCAPE '\'`
		args[i] = pat
	}
	return "(" + strings.Join(parts, " OR ") + ")", args
}

// afterWhere is the condition that a row orders after k in a listing ordered newest
// first by (timeCol, idCol), and its arguments.
func afterWhere(timeCol, idCol string, k ledger.PageKey) (string, []any) {
	at := norm(k.At).UnixNano()
	return fmt.Sprintf("(%s < ? OR (%s = ? AND %s < ?))", timeCol, timeCol, idCol), []any{at, at, k.ID}
}

// pageBy adds to where and args the condition of page p of a listing ordered newest
// first by (created_at, id), and returns that order; without a page it adds nothing
// and the order is empty (the listing's own).
func pageBy(p *ledger.Page, where []string, args []any) ([]string, []any, string) {
	if p == nil {
		return where, args, ""
	}
	if p.After != nil {
		w, a := afterWhere("created_at", "id", *p.After)
		where, args = append(where, w), append(args, a...)
	}
	return where, args, "created_at DESC, id DESC"
}

// seqAfter reads the sequence number an event page key carries.
func seqAfter(k ledger.PageKey) (int64, error) {
	n, err := strconv.ParseInt(k.ID, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("event page key %q: want a sequence number: %w", k.ID, err)
	}
	return n, nil
}

// Topics sums up every topic that has events (see ledger.Store).
func (s *Store) Topics(ctx context.Context, workflow string) ([]ledger.TopicStats, error) {
	q := `SELECT workflow, topic,
		SUM(CASE WHEN status = 'pending' THEN 1 ELSE 0 END) AS pending,
		SUM(CASE WHEN status = 'reserved' THEN 1 ELSE 0 END) AS reserved,
		SUM(CASE WHEN status = 'consumed' THEN 1 ELSE 0 END) AS consumed,
		SUM(CASE WHEN status = 'skipped' THEN 1 ELSE 0 END) AS skipped,
		MIN(CASE WHEN status = 'pending' THEN created_at END) AS oldest_pending,
		MAX(created_at) AS last
		FROM events`
	var args []any
	if workflow != "" {
		q += ` WHERE workflow = ?`
		args = append(args, workflow)
	}
	q += ` GROUP BY workflow, topic ORDER BY workflow, topic`
	var rows []struct {
		Workflow      string `db:"workflow"`
		Topic         string `db:"topic"`
		Pending       int    `db:"pending"`
		Reserved      int    `db:"reserved"`
		Consumed      int    `db:"consumed"`
		Skipped       int    `db:"skipped"`
		OldestPending nanos  `db:"oldest_pending"`
		Last          nanos  `db:"last"`
	}
	if err := s.r.SelectContext(ctx, &rows, q, args...); err != nil {
		return nil, s.dbErr("list topics", err)
	}
	out := make([]ledger.TopicStats, 0, len(rows))
	for _, r := range rows {
		out = append(out, ledger.TopicStats{Workflow: r.Workflow, Topic: r.Topic, Pending: r.Pending, Reserved: r.Reserved,
			Consumed: r.Consumed, Skipped: r.Skipped, OldestPending: r.OldestPending.Time(), Last: r.Last.Time()})
	}
	return out, nil
}

// ExecutionSummaries sums up the executions in the log (see ledger.Store).
func (s *Store) ExecutionSummaries(ctx context.Context, f ledger.ExecutionSummaryFilter) ([]ledger.ExecutionSummary, error) {
	const started = "COALESCE(MIN(started_at), 0)"
	exec := s.d.ExecutionOf
	var where, having []string
	var args, hargs []any
	if f.PlanID != "" {
		where, args = append(where, "plan_id = ?"), append(args, f.PlanID)
	}
	if f.ExcludePlan != "" {
		where, args = append(where, "plan_id <> ?"), append(args, f.ExcludePlan)
	}
	if f.Search != "" {
		w, a := searchWhere(f.Search, exec, "plan_id", "step_id", "tool", "error", "error_code")
		having, hargs = append(having, "MAX(CASE WHEN "+w+" THEN 1 ELSE 0 END) = 1"), append(hargs, a...)
	}
	if f.Page != nil && f.Page.After != nil {
		var at int64 // an execution without a start time orders as 0
		if k := f.Page.After; !k.At.IsZero() {
			at = k.At.UnixNano()
		}
		having = append(having, "("+started+" < ? OR ("+started+" = ? AND "+exec+" < ?))")
		hargs = append(hargs, at, at, f.Page.After.ID)
	}
	q := `SELECT ` + exec + ` AS execution_id, MIN(plan_id) AS plan_id, COUNT(*) AS steps,
		SUM(CASE WHEN success THEN 0 ELSE 1 END) AS failed, ` + started + ` AS started_at,
		COALESCE(MAX(ended_at), 0) AS ended_at FROM execution_log`
	if len(where) > 0 {
		q += ` WHERE ` + strings.Join(where, " AND ")
	}
	q += ` GROUP BY ` + exec
	if len(having) > 0 {
		q += ` HAVING ` + strings.Join(having, " AND ")
	}
	q += ` ORDER BY ` + started + ` DESC, ` + exec + ` DESC`
	if f.Limit > 0 {
		q += fmt.Sprintf(" LIMIT %d", f.Limit)
	}
	var rows []struct {
		ExecutionID string `db:"execution_id"`
		PlanID      string `db:"plan_id"`
		Steps       int    `db:"steps"`
		Failed      int    `db:"failed"`
		StartedAt   int64  `db:"started_at"`
		EndedAt     int64  `db:"ended_at"`
	}
	if err := s.r.SelectContext(ctx, &rows, q, append(args, hargs...)...); err != nil {
		return nil, s.dbErr("sum up executions", err)
	}
	out := make([]ledger.ExecutionSummary, 0, len(rows))
	for _, r := range rows {
		e := ledger.ExecutionSummary{ExecutionID: r.ExecutionID, PlanID: r.PlanID, Steps: r.Steps, Failed: r.Failed}
		if r.StartedAt != 0 {
			e.StartedAt = time.Unix(0, r.StartedAt).UTC()
		}
		if r.EndedAt != 0 {
			e.EndedAt = time.Unix(0, r.EndedAt).UTC()
		}
		out = append(out, e)
	}
	return out, nil
}
