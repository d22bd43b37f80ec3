package postgres

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jmoiron/sqlx"

	"github.com/scripthost/scripthost/ledger"
)

// deferred is a write queued to go with the transaction's next statement (see
// wtx.Defer).
type deferred struct {
	q        string
	args     []any
	table    string
	want     int64
	mismatch func() error
	// check marks a SELECT whose rows must number want (see Expect): the statement
	// fails when they do not, in a transaction or alone.
	check bool
	// fence marks the check of the lease the transaction writes under (see
	// fencePart): it fails the statement with an error of its own, errLeaseCheck.
	fence bool
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
			t.ready() // in a transaction: this write and the queued ones are two statements
			break
		}
	}
	t.queue = append(t.queue, deferred{q: q, args: args, table: table, want: want, mismatch: mismatch})
}

// Trusts reports whether the transaction takes a count on trust (see Expect): not
// when it runs again because a count it trusted, or a row it found in the cache, was
// wrong.
func (t *wtx) Trusts() bool { return !t.inTx }

// Expect queues a check that the rows the SELECT q finds number want, sent as a part
// of the transaction's next write statement: when they do not, the statement fails
// with nothing of it written, and the transaction runs again in a transaction of its
// own, where Trusts is false (see errInTx).
func (t *wtx) Expect(q string, args []any, want int64) {
	t.queue = append(t.queue, deferred{q: q, args: args, table: q, want: want, check: true})
}

// AsyncCommit makes the transaction's commit not wait for the WAL flush: set with its
// writes, not by a statement of its own.
func (t *wtx) AsyncCommit() { t.async = true }

// targetTable is the table an INSERT or UPDATE writes: its third word or its second.
// It reads the words in place; a transition queues several writes.
func targetTable(q string) string {
	first, rest := word(q)
	switch {
	case strings.EqualFold(first, "INSERT"):
		if _, rest = word(rest); rest != "" {
			if t, _ := word(rest); t != "" {
				return t
			}
		}
	case strings.EqualFold(first, "UPDATE"):
		if t, _ := word(rest); t != "" {
			return t
		}
	}
	return q
}

// word splits the first word, delimited by white space, from s.
func word(s string) (w, rest string) {
	s = strings.TrimLeft(s, " \t\r\n")
	end := strings.IndexAny(s, " \t\r\n")
	if end < 0 {
		return s, ""
	}
	return s[:end], s[end:]
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
	counts, err := t.send(queue, false)
	if err != nil && t.flushErr != nil {
		return // the BEGIN that went with it failed: the transaction's error
	}
	if err != nil {
		t.flushErr = t.sendErr(err)
		return
	}
	for i, d := range queue {
		if d.want >= 0 && counts[i] != d.want {
			t.flushErr = d.mismatch()
			return
		}
	}
}

// errInTx: the writes sent as one statement of their own found a count they did not
// expect, and the statement failed with nothing written; the transaction runs again
// in a transaction, where each part's count is checked as it is sent.
var errInTx = errors.New("postgres: a write found a count it did not expect")

// flushAlone sends the queued writes as one statement that is its own transaction
// (see runTx): a part whose count differs from the one it must have makes the
// statement fail (a division by zero), so that none of it is committed.
func (t *wtx) flushAlone() {
	queue := t.queue
	t.queue = nil
	if len(queue) == 0 {
		return
	}
	if _, err := t.send(queue, true); err != nil {
		t.flushErr = t.sendErr(err)
	}
}

// sendErr is the transaction's error for a write statement's failure err: errInTx
// for a count it did not expect, the lease's loss for its lease check.
func (t *wtx) sendErr(err error) error {
	switch {
	case wrongCount(err):
		return errInTx
	case leaseGone(err):
		return t.lostLease()
	}
	return t.s.dbErr("write", err)
}

// wrongCount reports whether err is a write statement's failure on a count it did not
// expect: the division by zero a part's count check makes (see send).
func wrongCount(err error) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe) && pe.Code == "22012"
}

// fenceSQL finds the lease a transaction writes under (ledger.WithFence) when it is
// still held: the same owner and claim, unexpired by the server's clock.
const fenceSQL = `SELECT 1 FROM leases WHERE workflow = ? AND owner = ? AND claims = ? AND expires_at > clock_timestamp()`

// fencePart is the check of the lease the transaction writes under, a part of its
// first write statement, when it has one to check and has not checked it yet.
func (t *wtx) fencePart() (deferred, bool) {
	if t.fence == nil || t.fenced {
		return deferred{}, false
	}
	l := t.fence
	return deferred{q: fenceSQL, args: []any{l.Workflow, l.Owner, l.Token}, table: fenceSQL, want: 1, check: true, fence: true}, true
}

// errLeaseCheck is the SQLSTATE a lease check that found no lease fails its
// statement with (invalid_argument_for_logarithm, from ln(0)): not a count check's
// division by zero, which makes the transaction run again (see wrongCount).
const errLeaseCheck = "2201E"

// leaseGone reports whether err is a statement's failure on the check of the lease
// its transaction writes under (see fencePart).
func leaseGone(err error) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe) && pe.Code == errLeaseCheck
}

// lostLease is the error of a transaction whose lease check failed: nothing of it
// was written.
func (t *wtx) lostLease() error {
	l := t.fence
	return fmt.Errorf("postgres: write refused: workflow %s is no longer leased to %s (token %d): %w",
		l.Workflow, l.Owner, l.Token, ledger.ErrLeaseLost)
}

// checkFence checks, by a statement of its own, the lease a transaction whose writes
// went as statements of their own (not deferred) writes under, before its commit.
func (t *wtx) checkFence(ctx context.Context) error {
	if t.fence == nil || t.fenced || !t.direct {
		return nil
	}
	var n int
	l := t.fence
	if err := t.GetContext(ctx, &n, `SELECT count(*) FROM (`+fenceSQL+`) f`, l.Workflow, l.Owner, l.Token); err != nil {
		return t.s.dbErr("check lease", err)
	}
	if n != 1 {
		return t.lostLease()
	}
	t.fenced = true
	return nil
}

// send sends the writes as one statement and returns the rows each changed; alone,
// on the connection, the statement fails when a count is not the one wanted, and in a
// transaction too when the count is a check's (see Expect). The transaction's first
// statement checks its lease as well (fencePart).
func (t *wtx) send(queue []deferred, alone bool) ([]int64, error) {
	fence, fenced := t.fencePart()
	if fenced {
		queue = append(queue[:len(queue):len(queue)], fence)
	}
	nargs := 0
	for _, d := range queue {
		nargs += len(d.args)
	}
	buf := textBuffers.Get().(*[]byte)
	defer textBuffers.Put(buf)
	b := (*buf)[:0]
	args := make([]any, 0, nargs)
	n := 0
	for i, d := range queue {
		if i == 0 {
			b = append(b, "WITH "...)
		} else {
			b = append(b, ", "...)
		}
		b = appendPart(append(b, 'w'), i)
		b = append(b, " AS ("...)
		b = renumber(b, d.q, &n)
		if !d.check {
			b = append(b, " RETURNING 1"...)
		}
		b = append(b, ')')
		args = append(args, d.args...)
	}
	b = append(b, " SELECT "...)
	for i, d := range queue {
		if i > 0 {
			b = append(b, ", "...)
		}
		b = appendPart(append(b, "(SELECT count(*) FROM w"...), i)
		b = append(b, ')')
		if d.fence {
			b = appendPart(append(b, " + ln(((SELECT count(*) FROM w"...), i)
			b = strconv.AppendInt(append(b, ") = "...), d.want, 10)
			b = append(b, ")::int)::int"...)
		} else if (alone || d.check) && d.want >= 0 {
			b = appendPart(append(b, " / ((SELECT count(*) FROM w"...), i)
			b = strconv.AppendInt(append(b, ") = "...), d.want, 10)
			b = append(b, ")::int"...)
		}
	}
	if t.async {
		b = append(b, ", set_config('synchronous_commit', 'off', true)"...)
	}
	counts := make([]int64, len(queue))
	dest := make([]any, 0, len(queue)+1)
	for i := range counts {
		dest = append(dest, &counts[i])
	}
	if t.async {
		dest = append(dest, new(sql.NullString))
	}
	*buf = b
	if err := t.queryRow(t.s.statements.text(b), args, dest); err != nil {
		return nil, err
	}
	t.asyncSet = t.asyncSet || t.async
	t.fenced = t.fenced || fenced
	if fenced {
		counts = counts[:len(counts)-1]
	}
	return counts, nil
}

// textBuffers hold the text of the write statements send builds, reused.
var textBuffers = sync.Pool{New: func() any { b := make([]byte, 0, 4096); return &b }}

// statements keeps the texts of the write statements send built: a transition's
// writes make the same text every time, which is then found without allocating it.
type statements struct {
	mu    sync.Mutex
	known map[string]string
}

// maxStatements bounds the texts statements keeps: the transitions' shapes, a few
// dozen.
const maxStatements = 1024

// text returns b as a string, the one kept when b's text is known.
func (s *statements) text(b []byte) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if q, ok := s.known[string(b)]; ok {
		return q
	}
	q := string(b)
	if len(s.known) < maxStatements {
		if s.known == nil {
			s.known = map[string]string{}
		}
		s.known[q] = q
	}
	return q
}

// renumber appends q to b with its ? placeholders written as $n, numbering on from
// *n.
func renumber(b []byte, q string, n *int) []byte {
	for {
		i := strings.IndexByte(q, '?')
		if i < 0 {
			return append(b, q...)
		}
		*n++
		b = strconv.AppendInt(append(append(b, q[:i]...), '$'), int64(*n), 10)
		q = q[i+1:]
	}
}

// appendPart appends the number of the statement's part i.
func appendPart(b []byte, i int) []byte { return strconv.AppendInt(b, int64(i), 10) }

// ready begins the transaction and sends the queued writes before one of its
// statements, so that it sees them; false when the transaction could not begin.
func (t *wtx) ready() bool {
	t.direct = true
	t.begin()
	t.flush()
	t.open()
	return t.begun
}

func (t *wtx) QueryContext(ctx context.Context, q string, args ...any) (*sql.Rows, error) {
	if !t.ready() {
		return nil, t.flushErr
	}
	return t.conn.QueryContext(ctx, q, args...)
}

func (t *wtx) QueryxContext(ctx context.Context, q string, args ...any) (*sqlx.Rows, error) {
	if !t.ready() {
		return nil, t.flushErr
	}
	return t.conn.QueryxContext(ctx, q, args...)
}

func (t *wtx) QueryRowxContext(ctx context.Context, q string, args ...any) *sqlx.Row {
	if !t.ready() {
		// Read outside a transaction that failed to begin: the transaction fails with
		// that error whatever this finds (see runTx).
		return t.c.QueryRowxContext(ctx, rebind(q), args...)
	}
	return t.conn.QueryRowxContext(ctx, q, args...)
}

func (t *wtx) ExecContext(ctx context.Context, q string, args ...any) (sql.Result, error) {
	if !t.ready() {
		return nil, t.flushErr
	}
	return t.conn.ExecContext(ctx, q, args...)
}

// execRaw runs q in the transaction as it is, its placeholders not rewritten: a
// migration's script.
func (t *wtx) execRaw(ctx context.Context, q string) (sql.Result, error) {
	if !t.ready() {
		return nil, t.flushErr
	}
	return t.c.ExecContext(ctx, q)
}

func (t *wtx) GetContext(ctx context.Context, dest any, q string, args ...any) error {
	return sqlx.GetContext(ctx, t, dest, q, args...)
}

func (t *wtx) SelectContext(ctx context.Context, dest any, q string, args ...any) error {
	return sqlx.SelectContext(ctx, t, dest, q, args...)
}
