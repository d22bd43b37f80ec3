package postgres

import (
	"context"
	"database/sql"
	"fmt"
	"strings"

	"github.com/jmoiron/sqlx"
)

// deferred is a write queued to go with the transaction's next statement (see
// wtx.Defer).
type deferred struct {
	q        string
	args     []any
	table    string
	want     int64
	mismatch func() error
}

// Defer queues the write q, an INSERT or UPDATE with ? placeholders and no RETURNING,
// to be sent with the transaction's other queued writes as one statement, before its
// next read or its commit: a transition's writes cost one round trip and one statement,
// not one each. want ≥ 0 is the number of rows the write must change; when it
// changes another, mismatch gives the transaction's error (run in the transaction,
// which is still usable). A write to a table a queued write changes is sent after it,
// not with it: the parts of one statement do not see each other's rows.
func (t *wtx) Defer(q string, args []any, want int64, mismatch func() error) {
	table := targetTable(q)
	for _, d := range t.queue {
		if d.table == table {
			t.flush()
			break
		}
	}
	t.queue = append(t.queue, deferred{q: q, args: args, table: table, want: want, mismatch: mismatch})
}

// AsyncCommit makes the transaction's commit not wait for the WAL flush: set with its
// writes, not by a statement of its own.
func (t *wtx) AsyncCommit() { t.async = true }

// targetTable is the table an INSERT or UPDATE writes.
func targetTable(q string) string {
	f := strings.Fields(q)
	switch {
	case len(f) > 2 && strings.EqualFold(f[0], "INSERT"):
		return f[2]
	case len(f) > 1 && strings.EqualFold(f[0], "UPDATE"):
		return f[1]
	}
	return q
}

// flush sends the queued writes, as one statement when there are several (each a
// part of a WITH), and checks their counts. Its error, the first, is the
// transaction's (see runTx).
func (t *wtx) flush() {
	if len(t.queue) == 0 {
		return
	}
	queue := t.queue
	t.queue = nil
	if t.flushErr != nil {
		return
	}
	var sb strings.Builder
	var args []any
	n := 0
	for i, d := range queue {
		if i == 0 {
			sb.WriteString("WITH ")
		} else {
			sb.WriteString(", ")
		}
		fmt.Fprintf(&sb, "w%d AS (%s RETURNING 1)", i, renumber(d.q, &n))
		args = append(args, d.args...)
	}
	sb.WriteString(" SELECT ")
	for i := range queue {
		if i > 0 {
			sb.WriteString(", ")
		}
		fmt.Fprintf(&sb, "(SELECT count(*) FROM w%d)", i)
	}
	if t.async {
		sb.WriteString(", set_config('synchronous_commit', 'off', true)")
	}
	counts := make([]int64, len(queue))
	dest := make([]any, 0, len(queue)+1)
	for i := range counts {
		dest = append(dest, &counts[i])
	}
	if t.async {
		dest = append(dest, new(sql.NullString))
	}
	if err := t.conn.x.QueryRowxContext(t.ctx, sb.String(), args...).Scan(dest...); err != nil {
		t.flushErr = t.s.dbErr("write", err)
		return
	}
	t.asyncSet = t.asyncSet || t.async
	for i, d := range queue {
		if d.want >= 0 && counts[i] != d.want {
			t.flushErr = d.mismatch()
			return
		}
	}
}

// renumber rewrites q's ? placeholders as $n, numbering on from *n.
func renumber(q string, n *int) string {
	var sb strings.Builder
	for _, r := range q {
		if r == '?' {
			*n++
			fmt.Fprintf(&sb, "$%d", *n)
			continue
		}
		sb.WriteRune(r)
	}
	return sb.String()
}

// The transaction's statements send the queued writes first, so that they see them.

func (t *wtx) QueryContext(ctx context.Context, q string, args ...any) (*sql.Rows, error) {
	t.flush()
	return t.conn.QueryContext(ctx, q, args...)
}

func (t *wtx) QueryxContext(ctx context.Context, q string, args ...any) (*sqlx.Rows, error) {
	t.flush()
	return t.conn.QueryxContext(ctx, q, args...)
}

func (t *wtx) QueryRowxContext(ctx context.Context, q string, args ...any) *sqlx.Row {
	t.flush()
	return t.conn.QueryRowxContext(ctx, q, args...)
}

func (t *wtx) ExecContext(ctx context.Context, q string, args ...any) (sql.Result, error) {
	t.flush()
	return t.conn.ExecContext(ctx, q, args...)
}

func (t *wtx) GetContext(ctx context.Context, dest any, q string, args ...any) error {
	return sqlx.GetContext(ctx, t, dest, q, args...)
}

func (t *wtx) SelectContext(ctx context.Context, dest any, q string, args ...any) error {
	return sqlx.SelectContext(ctx, t, dest, q, args...)
}
