package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"testing"

	"github.com/scripthost/scripthost"
	"github.com/scripthost/scripthost/internal/benchcmp"
)

// The runtime's common reads, each as the ledger runs it and as the same query on a
// plain database/sql connection with a statement prepared once (the reference). Each
// read follows a commit by the ledger's writer, as the runtime's reads follow its own
// writes: a commit makes every other connection drop the pages it had cached.
var readCases = []struct {
	name string
	// ref is the query the ledger runs and its arguments.
	ref  string
	args func(f readFixture) []any
	read func(ctx context.Context, s *Store, f readFixture) error
}{
	// Whether a topic has a pending event: the scheduler's read for a busy consumer.
	{"PendingEvents", compiledOnce(pendingEventsQuery(1)),
		func(readFixture) []any { return []any{"bench", "in"} },
		func(ctx context.Context, s *Store, _ readFixture) error {
			return onePending(s.PendingEvents(ctx, "bench", "in", 1))
		}},
	// A topic's pending events up to the scheduler's scan limit (runtime's pendingScan),
	// to find the newest: its read for an idle consumer.
	{"PendingEventsScan", compiledOnce(pendingEventsQuery(1000)),
		func(readFixture) []any { return []any{"bench", "in"} },
		func(ctx context.Context, s *Store, _ readFixture) error {
			return onePending(s.PendingEvents(ctx, "bench", "in", 1000))
		}},
	{"Run",
		`SELECT id, workflow, version, handler, kind, phase, status, retry_of, superseded_by,
			attempt, retry_from_emitting, prepared, reservations, wake_at, input_state, output_state,
			outcome, error, error_class, not_before, created_at, updated_at FROM runs WHERE id = ?`,
		func(f readFixture) []any { return []any{f.run} },
		func(ctx context.Context, s *Store, f readFixture) error {
			_, err := s.Run(ctx, f.run)
			return err
		}},
	{"RunMutation",
		`SELECT id, run_id, workflow, handler, namespace, method, params, input_hash,
			idempotency_key, status, result, error, error_class, reconcile_attempts, next_reconcile_at,
			resolved_by, resolved_at, created_at, updated_at FROM mutations WHERE run_id = ?`,
		func(f readFixture) []any { return []any{f.run} },
		func(ctx context.Context, s *Store, f readFixture) error {
			_, err := s.RunMutation(ctx, f.run)
			return err
		}},
	{"FailureCount",
		`SELECT COUNT(*) FROM mutations WHERE input_hash = ? AND status = 'failed'`,
		func(f readFixture) []any { return []any{"ih-" + f.run} },
		func(ctx context.Context, s *Store, f readFixture) error {
			_, err := s.FailureCount(ctx, "ih-"+f.run)
			return err
		}},
}

// compiledOnce writes each parameter of q as +?, the same value, for the reference's
// plain connection. There SQLite would compile a statement with ORDER BY again at every
// call: its planner weighs a parameter compared outside an index in a plan it considers
// (whether the value is 0 or 1), and the driver clears a kept statement's parameters
// before binding the next, which makes SQLite compile it again. Behind a unary plus the
// planner sees no parameter; the plan is the same. The ledger's read connections plan
// without bound values (the query planner stability guarantee) and compile the
// statement itself once (TestEventReadsCompiledOnce).
func compiledOnce(q string) string {
	return strings.ReplaceAll(q, " = ?", " = +?")
}

// onePending checks that a read of the fixture's pending events found its one.
func onePending(evs []scripthost.Event, err error) error {
	if err == nil && len(evs) != 1 {
		err = fmt.Errorf("got %d pending events, want 1", len(evs))
	}
	return err
}

// readFixture is a ledger with a few thousand runs, mutations and events, as after a
// while of work, and one run (with its mutation) and one pending event to read.
type readFixture struct {
	s   *Store
	ids []string
	run string
}

func newReadFixture(b *testing.B) readFixture {
	b.Helper()
	const n = 2000
	s, ids := benchStore(b, n, Options{})
	ctx := context.Background()
	err := s.write(ctx, func(ctx context.Context, tx *wtx) error {
		for i, id := range ids {
			if _, err := tx.ExecContext(ctx, `INSERT INTO mutations (id, run_id, namespace, method, params, input_hash,
				idempotency_key, status, result, created_at, updated_at) VALUES (?, ?, 'Shop', 'ship', '{}', ?, ?, 'applied', '{}', 1, 1)`,
				"m-"+id, id, "ih-"+id, "key-"+id); err != nil {
				return err
			}
			status := "done"
			if i == n-1 {
				status = "pending"
			}
			if _, err := tx.ExecContext(ctx, `INSERT INTO events (workflow, topic, message_id, payload, status, created_at)
				VALUES ('bench', 'in', ?, '{}', ?, 1)`, id, status); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		b.Fatal(err)
	}
	return readFixture{s: s, ids: ids, run: ids[n/2]}
}

// touch commits a small change through the ledger's writer (without waiting for the
// disk), outside the timer.
func (f readFixture) touch(b *testing.B, i int) {
	b.StopTimer()
	err := f.s.writeRedo(context.Background(), func(ctx context.Context, tx *wtx) error {
		_, err := tx.ExecContext(ctx, `UPDATE runs SET updated_at = ? WHERE id = ?`, i, f.ids[0])
		return err
	})
	if err != nil {
		b.Fatal(err)
	}
	b.StartTimer()
}

// BenchmarkRead measures each of the runtime's common reads right after a commit,
// against the same query on a plain connection with a prepared statement.
func BenchmarkRead(b *testing.B) {
	for _, rc := range readCases {
		b.Run(rc.name, func(b *testing.B) {
			f := newReadFixture(b)
			ref := func(b *testing.B) {
				db, err := sql.Open("sqlite3", "file:"+f.s.path+"?_query_only=1")
				if err != nil {
					b.Fatal(err)
				}
				defer db.Close()
				db.SetMaxOpenConns(1)
				st, err := db.Prepare(rc.ref)
				if err != nil {
					b.Fatal(err)
				}
				defer st.Close()
				args := rc.args(f)
				b.ResetTimer()
				for i := range b.N {
					f.touch(b, i)
					if err := scanAll(st, args); err != nil {
						b.Fatal(err)
					}
				}
			}
			subject := func(b *testing.B) {
				// The runtime reads with contexts that can be cancelled.
				ctx, cancel := context.WithCancel(context.Background())
				defer cancel()
				b.ResetTimer()
				for i := range b.N {
					f.touch(b, i)
					if err := rc.read(ctx, f.s, f); err != nil {
						b.Fatal(err)
					}
				}
			}
			benchcmp.Against(b, "read", benchcmp.Case{Run: ref}, benchcmp.Case{Run: subject})
		})
	}
}

// scanAll runs st and reads every column of its one row without converting it.
func scanAll(st *sql.Stmt, args []any) error {
	rows, err := st.Query(args...)
	if err != nil {
		return err
	}
	defer rows.Close()
	cols, err := rows.Columns()
	if err != nil {
		return err
	}
	raw := make([]sql.RawBytes, len(cols))
	dest := make([]any, len(cols))
	for i := range raw {
		dest[i] = &raw[i]
	}
	if !rows.Next() {
		return fmt.Errorf("no row")
	}
	if err := rows.Scan(dest...); err != nil {
		return err
	}
	return rows.Close()
}
