package sqlite

import (
	"context"
	"database/sql/driver"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/jmoiron/sqlx"
	sqlite3 "github.com/mattn/go-sqlite3"

	"github.com/scripthost/scripthost"
	"github.com/scripthost/scripthost/ledger"
	"github.com/scripthost/scripthost/ledger/internal/sqlstore"
)

// TestBatchIsolatesWrites runs one group-commit batch by hand: each write's failure,
// panic or cancelled caller must drop that write alone.
func TestBatchIsolatesWrites(t *testing.T) {
	ctx := context.Background()
	s, _ := tempStore(t)
	boom := errors.New("boom")
	publish := insertEvent
	then := func(first writeFunc, second func() error) writeFunc {
		return func(ctx context.Context, tx *wtx) error {
			if err := first(ctx, tx); err != nil {
				return err
			}
			return second()
		}
	}
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	reqs := []struct {
		id   string
		ctx  context.Context
		fn   writeFunc
		want func(error) bool
	}{
		{"a", ctx, publish("a"), func(err error) bool { return err == nil }},
		{"b", ctx, then(publish("b"), func() error { return boom }), func(err error) bool { return errors.Is(err, boom) }},
		{"c", ctx, publish("c"), func(err error) bool { return err == nil }},
		{"d", ctx, then(publish("d"), func() error { panic("bad write") }), func(err error) bool { return err != nil }},
		{"e", cancelled, publish("e"), func(err error) bool { return errors.Is(err, context.Canceled) }},
		{"f", ctx, publish("f"), func(err error) bool { return err == nil }},
	}
	var batch []*writeReq
	for _, r := range reqs {
		batch = append(batch, &writeReq{ctx: r.ctx, fn: r.fn, done: make(chan error, 1)})
	}
	s.runBatch(acquired(t, s), batch)
	for i, r := range reqs {
		if err := answer(s, batch[i]); !r.want(err) {
			t.Errorf("write %s: got %v", r.id, err)
		}
	}
	evs, err := s.Events(ctx, ledger.EventFilter{})
	if err != nil {
		t.Fatal(err)
	}
	var got string
	for _, e := range evs {
		got += e.MessageID
	}
	if got != "acf" {
		t.Errorf("stored events: got %q, want %q", got, "acf")
	}
}

func TestWriteAfterClose(t *testing.T) {
	for _, opts := range []Options{{}, {DisableGroupCommit: true}} {
		s, err := Open(context.Background(), filepath.Join(t.TempDir(), "ledger.db"), opts)
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Publish(context.Background(), ledger.NewEvent{Workflow: "w", Topic: "t", MessageID: "m"}); !errors.Is(err, errClosed) {
			t.Errorf("group commit disabled %v: got %v, want %v", opts.DisableGroupCommit, err, errClosed)
		}
		if err := s.Close(); err != nil {
			t.Errorf("second Close: got %v, want nil", err)
		}
	}
}

// TestPragmas checks the durability settings: WAL, synchronous=NORMAL (the durable
// writes wait for walSync's fsync) and foreign keys on the writer, a read pool that
// cannot write.
func TestPragmas(t *testing.T) {
	s, err := Open(context.Background(), filepath.Join(t.TempDir(), "ledger.db"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	tests := []struct {
		db    string
		query string
		want  string
	}{
		{"writer", "PRAGMA journal_mode", "wal"},
		{"writer", "PRAGMA synchronous", "1"}, // NORMAL
		{"writer", "PRAGMA foreign_keys", "1"},
		{"writer", "PRAGMA busy_timeout", "5000"},
		{"reader", "PRAGMA query_only", "1"},
		{"reader", "PRAGMA foreign_keys", "1"},
	}
	for _, tc := range tests {
		var got string
		var err error
		if tc.db == "reader" {
			err = s.r.Get(&got, tc.query)
		} else {
			// The write connection is the store's: a write reads its settings.
			err = s.write(context.Background(), func(ctx context.Context, tx *wtx) error {
				return tx.GetContext(ctx, &got, tc.query)
			})
		}
		if err != nil {
			t.Fatalf("%s %s: %v", tc.db, tc.query, err)
		}
		if got != tc.want {
			t.Errorf("%s %s: got %s, want %s", tc.db, tc.query, got, tc.want)
		}
	}
	if _, err := s.r.Exec("DELETE FROM events"); err == nil {
		t.Error("read pool: got no error for a write")
	}
}

// TestSyncLevels checks how each kind of write reaches the disk: every commit is made at
// synchronous=NORMAL, and a write a power cut must not lose then waits for an fsync of
// the WAL (walSync), a redoable transition for none; with SyncEveryCommit every commit
// is FULL and syncs itself.
func TestSyncLevels(t *testing.T) {
	const normal, full = 1, 2
	level := func(got *int) writeFunc {
		return func(ctx context.Context, tx *wtx) error {
			return tx.QueryRowxContext(ctx, "PRAGMA synchronous").Scan(got)
		}
	}
	for _, mode := range []struct {
		name       string
		opts       Options
		redo, must int
	}{
		{"default", Options{}, normal, normal},
		{"no group commit", Options{DisableGroupCommit: true}, normal, normal},
		{"SyncEveryCommit", Options{SyncEveryCommit: true}, full, full},
	} {
		t.Run(mode.name, func(t *testing.T) {
			ctx := context.Background()
			s, err := Open(ctx, filepath.Join(t.TempDir(), "ledger.db"), mode.opts)
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			base := s.WriteStats() // Open's own writes
			// Alternate, so that every switch of level is seen to take effect.
			for i := range 2 {
				var got int
				if err := s.writeRedo(ctx, level(&got)); err != nil || got != mode.redo {
					t.Errorf("redoable write %d: got level %d (err %v), want %d", i, got, err, mode.redo)
				}
				if err := s.mustWriteRedo(ctx, level(&got)); err != nil || got != mode.redo {
					t.Errorf("must-complete redoable write %d: got level %d (err %v), want %d", i, got, err, mode.redo)
				}
				if err := s.write(ctx, level(&got)); err != nil || got != mode.must {
					t.Errorf("durable write %d: got level %d (err %v), want %d", i, got, err, mode.must)
				}
			}
			st := s.WriteStats()
			st.Writes, st.Commits, st.Durable = st.Writes-base.Writes, st.Commits-base.Commits, st.Durable-base.Durable
			if st.Writes != 6 || st.Commits != 6 {
				t.Errorf("got %d writes in %d commits, want 6 in 6", st.Writes, st.Commits)
			}
			// One fsync for each durable write, none for the others.
			wantSyncs := int64(2)
			if mode.opts.SyncEveryCommit {
				wantSyncs = 0 // each commit synced itself
			}
			if got := st.Syncs - base.Syncs; got != wantSyncs {
				t.Errorf("got %d fsyncs of the WAL, want %d", got, wantSyncs)
			}
			if want := int64(2); mode.redo == full {
				if st.Durable != 6 {
					t.Errorf("got %d durable commits, want 6", st.Durable)
				}
			} else if st.Durable != want {
				t.Errorf("got %d durable commits, want %d", st.Durable, want)
			}
		})
	}

	t.Run("mixed batch", func(t *testing.T) {
		ctx := context.Background()
		s, err := Open(ctx, filepath.Join(t.TempDir(), "ledger.db"), Options{})
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		base := s.WriteStats()
		var a, b int
		batch := []*writeReq{
			{ctx: ctx, fn: level(&a), done: make(chan error, 1), redo: true},
			{ctx: ctx, fn: level(&b), done: make(chan error, 1)},
		}
		s.runBatch(acquired(t, s), batch)
		for _, r := range batch {
			if err := answer(s, r); err != nil {
				t.Fatal(err)
			}
		}
		if a != normal || b != normal {
			t.Errorf("got levels %d and %d in a batch with a durable write, want %d for both", a, b, normal)
		}
		st := s.WriteStats()
		st.Writes, st.Commits, st.Durable, st.Syncs = st.Writes-base.Writes, st.Commits-base.Commits, st.Durable-base.Durable, st.Syncs-base.Syncs
		if st.Writes != 2 || st.Commits != 1 || st.Durable != 1 || st.MaxBatch != 2 || st.Syncs != 1 {
			t.Errorf("got %+v, want 2 writes in 1 durable commit, synced once", st)
		}
	})
}

// TestDurableCommitsPerConsumerRun counts the commits of a whole consumer run: only
// the published input event and the in-flight record wait for the disk.
func TestDurableCommitsPerConsumerRun(t *testing.T) {
	ctx := context.Background()
	s, _ := tempStore(t)
	before := s.WriteStats()
	if err := consumerRun(ctx, s, "1"); err != nil {
		t.Fatal(err)
	}
	st := s.WriteStats()
	if d := st.Durable - before.Durable; d != 2 {
		t.Errorf("got %d durable commits for publish + run, want 2 (the event, the in-flight record)", d)
	}
	// The event, the in-flight record that creates the run, the outcome (which moves
	// the run on to emitting), the commit. (8 when the run and its transitions before
	// the mutation were written one by one.)
	if w := st.Writes - before.Writes; w != 4 {
		t.Errorf("got %d writes, want 4", w)
	}
}

// TestCompileNamed checks the writer's named-parameter compiler against sqlx's own.
func TestCompileNamed(t *testing.T) {
	arg := map[string]any{"id": 1, "run_id": 2, "a.b": 3, "x_1": 4}
	for _, q := range []string{
		`INSERT INTO t (id, run_id) VALUES (:id, :run_id)`,
		`UPDATE t SET run_id = :run_id, x = :x_1 WHERE id = :id`,
		`SELECT '12'::text, :a.b`,
		`SELECT 1 WHERE id = :id`,
	} {
		want, wantArgs, err := sqlx.Named(q, arg)
		if err != nil {
			t.Fatal(err)
		}
		got, names := compileNamed(q)
		if got != want {
			t.Errorf("%s: got %q, want %q", q, got, want)
		}
		if len(names) != len(wantArgs) {
			t.Fatalf("%s: got names %v, want %d", q, names, len(wantArgs))
		}
		for i, n := range names {
			if arg[n] != wantArgs[i] {
				t.Errorf("%s: parameter %d: got %s (%v), want %v", q, i, n, arg[n], wantArgs[i])
			}
		}
	}
}

// TestWriteContextCannotBeCancelled checks that a write's statements run with a
// context the driver need not watch (it would run each statement on a goroutine of
// its own), with and without group commit.
func TestWriteContextCannotBeCancelled(t *testing.T) {
	for _, opts := range []Options{{}, {DisableGroupCommit: true}} {
		s, err := Open(context.Background(), filepath.Join(t.TempDir(), "ledger.db"), opts)
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		done := make(<-chan struct{})
		err = s.mustWrite(ctx, func(ctx context.Context, tx *wtx) error {
			done = ctx.Done()
			return nil
		})
		cancel()
		s.Close()
		if err != nil || done != nil {
			t.Errorf("group commit disabled %v: got err %v, Done %v; want a context without Done", opts.DisableGroupCommit, err, done)
		}
	}
}

// TestBatchDeadline checks that a batch starts no write past WriteTimeout: the
// statements cannot be interrupted, so the deadline is kept between writes.
func TestBatchDeadline(t *testing.T) {
	ctx := context.Background()
	s, err := Open(ctx, filepath.Join(t.TempDir(), "ledger.db"), Options{WriteTimeout: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	slow := func(ctx context.Context, tx *wtx) error {
		time.Sleep(100 * time.Millisecond) // longer than the batch's deadline
		return insertEvent("slow")(ctx, tx)
	}
	late := insertEvent("late")
	batch := []*writeReq{{ctx: ctx, fn: slow, done: make(chan error, 1)}, {ctx: ctx, fn: late, done: make(chan error, 1)}}
	s.runBatch(acquired(t, s), batch)
	if err := answer(s, batch[0]); err != nil {
		t.Errorf("write started before the deadline: got %v, want it committed", err)
	}
	if err := answer(s, batch[1]); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("write due after the deadline: got %v, want context.DeadlineExceeded", err)
	}
	evs, err := s.Events(ctx, ledger.EventFilter{})
	if err != nil {
		t.Fatal(err)
	}
	if len(evs) != 1 || evs[0].MessageID != "slow" {
		t.Errorf("got events %+v, want only the write started in time", evs)
	}
}

// TestBeginEndsLeftoverTransaction checks that a transaction left open on the write
// connection (its ROLLBACK failed) does not block every later write.
func TestBeginEndsLeftoverTransaction(t *testing.T) {
	ctx := context.Background()
	s, _ := tempStore(t)
	c, err := s.acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.exec(ctx, "BEGIN IMMEDIATE"); err != nil {
		t.Fatal(err)
	}
	s.release(nil)
	if err := s.write(ctx, insertEvent("a")); err != nil {
		t.Fatalf("write after a leftover transaction: %v", err)
	}
	if evs, err := s.Events(ctx, ledger.EventFilter{}); err != nil || len(evs) != 1 {
		t.Errorf("got events %v (err %v), want the one written", evs, err)
	}
}

// tempStore opens a store on a new file in a temporary directory, closed when the
// test ends, and returns it with the file's path.
func tempStore(t testing.TB) (*Store, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "ledger.db")
	s, err := Open(context.Background(), path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s, path
}

// insertEvent is a write storing a pending event with message id id.
func insertEvent(id string) writeFunc {
	return func(ctx context.Context, tx *wtx) error {
		_, err := tx.ExecContext(ctx, `INSERT INTO events (workflow, topic, message_id, status, created_at) VALUES ('w', 't', ?, 'pending', 0)`, id)
		return err
	}
}

// answer is what submit returns for a write of a batch a test ran by hand: its
// result, after the fsync it waits for when it is durable.
func answer(s *Store, r *writeReq) error { return s.durable(r, <-r.done) }

// acquired takes the write connection for a batch a test runs by hand.
// reopen closes s and opens its file at path again, closed when the test ends.
func reopen(t testing.TB, s *Store, path string) *Store {
	t.Helper()
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s, err := Open(context.Background(), path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func acquired(t testing.TB, s *Store) *wconn {
	t.Helper()
	c, err := s.acquire(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestIdleWriterRunsInCaller checks the two ways into the writer: a write on an idle
// store runs in its caller's goroutine, with no handoff to the committer; writes that
// arrive while a transaction is in progress wait for the committer, which carries them
// together in one batch.
func TestIdleWriterRunsInCaller(t *testing.T) {
	ctx := context.Background()
	s, _ := tempStore(t)
	caller := goroutineID()
	var ran uint64
	if err := s.write(ctx, func(ctx context.Context, tx *wtx) error { ran = goroutineID(); return nil }); err != nil {
		t.Fatal(err)
	}
	if ran != caller {
		t.Errorf("write on an idle store ran on goroutine %d, want its caller's %d", ran, caller)
	}

	// Hold the writer with one write; the three that arrive meanwhile go to the
	// committer and share one commit once it is released.
	hold, release := make(chan struct{}), make(chan struct{})
	first := make(chan error, 1)
	go func() {
		first <- s.write(ctx, func(ctx context.Context, tx *wtx) error { close(hold); <-release; return nil })
	}()
	<-hold
	base := s.WriteStats()
	errs := make(chan error, 3)
	for range 3 {
		go func() { errs <- s.write(ctx, func(ctx context.Context, tx *wtx) error { return nil }) }()
	}
	// Four writers wait in submit: the one holding the writer, and the three behind it
	// (one taken by the committer, which waits for the connection).
	for deadline := time.Now().Add(10 * time.Second); waiting() < 4; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			close(release)
			t.Fatalf("%d writers waiting in submit after 10s, want 4", waiting())
		}
	}
	close(release)
	if err := <-first; err != nil {
		t.Fatal(err)
	}
	for range 3 {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	if st := s.WriteStats(); st.Writes-base.Writes != 4 || st.Commits-base.Commits > 3 || st.MaxBatch < 2 {
		t.Errorf("writes behind a busy writer: %+v after %+v, want 4 more writes in at most 3 commits", st, base)
	}
}

// goroutineID is the calling goroutine's number, from its stack's header.
func goroutineID() uint64 {
	buf := make([]byte, 64)
	buf = buf[:runtime.Stack(buf, false)]
	var id uint64
	fmt.Sscanf(string(buf), "goroutine %d ", &id)
	return id
}

// waiting counts the goroutines blocked in submit.
func waiting() int {
	buf := make([]byte, 1<<20)
	buf = buf[:runtime.Stack(buf, true)]
	n := 0
	for _, g := range strings.Split(string(buf), "\n\n") {
		blocked := strings.Contains(g, "[select") || strings.Contains(g, "[chan receive")
		if blocked && strings.Contains(g, "sqlite.(*Store).submit(") {
			n++
		}
	}
	return n
}

// TestStatementsPerConsumerRun counts the statements a consumer run's writes make on
// the write connection (publish included), each write carrying the two lifecycle
// events the runtime attaches: a transition whose status does not change leaves the
// status column alone, one that changes it sets it in the same UPDATE, and a transition's lifecycle events go in one INSERT. 71
// statements before either, 58 with them, 51 with the snapshots in that INSERT too,
// 49 with a mutation's conflicts looked up only when its INSERT meets one.
func TestStatementsPerConsumerRun(t *testing.T) {
	// 58 when each snapshot had an INSERT of its own, 51 since they ride in the
	// transaction's INSERT of lifecycle events (schema 7), 49 since a mutation's
	// conflicts are looked for only when its INSERT meets one, 42 since a transition
	// finds the row the previous one left in the writer's row cache, 38 since every
	// commit is made at one synchronous level (no PRAGMA switching to FULL and back),
	// 37 since a transition that changes the status sets it in its UPDATE of the run
	// rather than in a second one, 22 since the in-flight record creates the run
	// (consumerRun: three writes after the publish instead of seven).
	const maxStatementsPerRun = 22
	t.Setenv(sqlstore.VerifyRowCacheEnv, "") // its checks are statements too
	s, err := Open(context.Background(), filepath.Join(t.TempDir(), "ledger.db"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx := ledger.WithEvents(context.Background(),
		ledger.LifecycleEvent{Type: ledger.EventPhaseCompleted, Data: json.RawMessage(`{"phase":"prepare"}`)},
		ledger.LifecycleEvent{Type: ledger.EventPhaseStarted, Data: json.RawMessage(`{"phase":"mutate"}`)})
	if err := consumerRun(ctx, s, "warm"); err != nil {
		t.Fatal(err)
	}
	before := s.WriteStats()
	const runs = 10
	for i := range runs {
		if err := consumerRun(ctx, s, fmt.Sprint(i)); err != nil {
			t.Fatal(err)
		}
	}
	per := float64(s.WriteStats().Statements-before.Statements) / runs
	t.Logf("%.1f statements per consumer run", per)
	if per > maxStatementsPerRun {
		t.Errorf("got %.1f statements per consumer run, want at most %d", per, maxStatementsPerRun)
	}
}

// upper is an argument that converts itself (driver.Valuer), as the ledger's JSON
// columns do.
type upper string

func (u upper) Value() (driver.Value, error) { return strings.ToUpper(string(u)), nil }

// TestWriterExecArguments: the writer's statements go to the driver without
// database/sql, and keep its argument handling. Arguments are converted as
// database/sql converts them (a named string type, an int, a driver.Valuer, nil); a
// wrong number of them, or one of no SQL type, fails the write with nothing stored
// instead of binding NULL or panicking; and a statement is compiled once, however
// often it runs.
func TestWriterExecArguments(t *testing.T) {
	ctx := context.Background()
	s, _ := tempStore(t)
	const insert = `INSERT INTO events (workflow, topic, message_id, payload, status, attempt, created_at) VALUES (?, ?, ?, ?, ?, ?, 0)`
	c := acquired(t, s)
	compiled := countCompiled(t, c.conn.Raw, sqlite3.SQLITE_INSERT, "events")
	s.release(nil)
	for i := range 3 {
		err := s.write(ctx, func(ctx context.Context, tx *wtx) error {
			res, err := tx.ExecContext(ctx, insert, "w", "t", fmt.Sprint("m", i), upper("payload"), scripthost.EventPending, i)
			if err != nil {
				return err
			}
			if n, err := res.RowsAffected(); err != nil || n != 1 {
				return fmt.Errorf("rows affected %d, %v; want 1", n, err)
			}
			return nil
		})
		if err != nil {
			t.Fatalf("insert %d: %v", i, err)
		}
	}
	if n := compiled.Load(); n != 1 {
		t.Errorf("the INSERT was compiled %d times for 3 runs, want once", n)
	}
	var payload, status string
	var attempt int
	if err := s.r.QueryRowContext(ctx, `SELECT payload, status, attempt FROM events WHERE message_id = 'm2'`).Scan(&payload, &status, &attempt); err != nil {
		t.Fatal(err)
	}
	if payload != "PAYLOAD" || status != "pending" || attempt != 2 {
		t.Errorf("stored payload %q, status %q, attempt %d; want PAYLOAD, pending, 2", payload, status, attempt)
	}

	for _, c := range []struct {
		name string
		args []any
		want string
	}{
		{"too few", []any{"w", "t", "m9", nil, "pending"}, "expected 6 arguments, got 5"},
		{"too many", []any{"w", "t", "m9", nil, "pending", 0, 1}, "expected 6 arguments, got 7"},
		{"no SQL type", []any{"w", "t", "m9", struct{}{}, "pending", 0}, "converting argument $4"},
	} {
		err := s.write(ctx, func(ctx context.Context, tx *wtx) error {
			_, err := tx.ExecContext(ctx, insert, c.args...)
			return err
		})
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: got %v, want an error saying %q", c.name, err, c.want)
		}
	}
	var n int
	if err := s.r.QueryRowContext(ctx, `SELECT count(*) FROM events WHERE message_id = 'm9'`).Scan(&n); err != nil || n != 0 {
		t.Errorf("after the failed writes: %d rows of m9 (%v), want none", n, err)
	}
	// A nil argument is NULL.
	err := s.write(ctx, func(ctx context.Context, tx *wtx) error {
		_, err := tx.ExecContext(ctx, insert, "w", "t", "m10", nil, "pending", 0)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	var isNull bool
	if err := s.r.QueryRowContext(ctx, `SELECT payload IS NULL FROM events WHERE message_id = 'm10'`).Scan(&isNull); err != nil || !isNull {
		t.Errorf("payload of m10 NULL: %v (%v), want true", isNull, err)
	}
}
