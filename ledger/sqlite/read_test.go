package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	sqlite3 "github.com/mattn/go-sqlite3"

	"github.com/scripthost/scripthost"
	"github.com/scripthost/scripthost/ledger"
)

// countPrepares counts the SELECT statements SQLite compiles on the store's one read
// connection (Options.ReadConns 1) from now on.
func countPrepares(t *testing.T, s *Store) *atomic.Int64 {
	t.Helper()
	c, err := s.r.Conn(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	return countCompiled(t, c.Raw, sqlite3.SQLITE_SELECT, "")
}

// countCompiled counts, from now on, the statements SQLite compiles on the connection
// raw reaches (a Conn's Raw) that do op on table (any table for ""): the authorizer is
// called when a statement is prepared or re-prepared, never when a prepared one is run
// again.
func countCompiled(t *testing.T, raw func(func(any) error) error, op int, table string) *atomic.Int64 {
	t.Helper()
	var n atomic.Int64
	err := raw(func(dc any) error {
		dc.(*sqlite3.SQLiteConn).RegisterAuthorizer(func(o int, tbl, _, _ string) int {
			if o == op && (table == "" || tbl == table) {
				n.Add(1)
			}
			return sqlite3.SQLITE_OK
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return &n
}

// readFixtureT is a store with one read connection, a run with its mutation and a
// pending event.
func readFixtureT(t *testing.T) (*Store, scripthost.Run) {
	t.Helper()
	ctx := context.Background()
	s, err := Open(ctx, filepath.Join(t.TempDir(), "ledger.db"), Options{ReadConns: 1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	if _, err := s.Publish(ctx, ledger.NewEvent{Workflow: "w", Topic: "in", MessageID: "e0", Payload: json.RawMessage(`{}`)}); err != nil {
		t.Fatal(err)
	}
	now := s.now()
	r := scripthost.Run{ID: s.NewID(), Workflow: "w", Version: 1, Handler: "h", Kind: scripthost.KindConsumer,
		Phase: scripthost.RunMutating, Status: scripthost.StatusActive, Attempt: 1, CreatedAt: now, UpdatedAt: now}
	if err := s.write(ctx, func(ctx context.Context, tx *wtx) error { return s.InsertRun(ctx, tx, r) }); err != nil {
		t.Fatal(err)
	}
	if _, err := s.BeginMutation(ctx, ledger.NewMutation{RunID: r.ID, Namespace: "Shop", Method: "ship",
		InputHash: "ih", IdempotencyKey: "k-" + r.ID}); err != nil {
		t.Fatal(err)
	}
	return s, r
}

// commonReads runs the runtime's common reads and checks what they return.
func commonReads(ctx context.Context, s *Store, run scripthost.Run) error {
	evs, err := s.PendingEvents(ctx, "w", "in", 1)
	if err != nil {
		return err
	}
	if len(evs) != 1 || evs[0].MessageID != "e0" {
		return fmt.Errorf("PendingEvents: got %+v, want event e0", evs)
	}
	return lookups(ctx, s, run)
}

// lookups runs the common reads of one row by key.
func lookups(ctx context.Context, s *Store, run scripthost.Run) error {
	got, err := s.Run(ctx, run.ID)
	if err != nil {
		return err
	}
	if got.ID != run.ID || got.Phase != run.Phase {
		return fmt.Errorf("Run: got %s in %s, want %s in %s", got.ID, got.Phase, run.ID, run.Phase)
	}
	m, err := s.RunMutation(ctx, run.ID)
	if err != nil {
		return err
	}
	if m.RunID != run.ID || m.Status != scripthost.MutationInFlight {
		return fmt.Errorf("RunMutation: got run %s status %s, want run %s in flight", m.RunID, m.Status, run.ID)
	}
	n, err := s.FailureCount(ctx, "ih")
	if err != nil {
		return err
	}
	if n != 0 {
		return fmt.Errorf("FailureCount: got %d, want 0", n)
	}
	return nil
}

// TestReadsReusePreparedStatements: a read prepares its statement on a connection once;
// the next reads of the same query run it again without compiling it.
func TestReadsReusePreparedStatements(t *testing.T) {
	ctx := context.Background()
	s, run := readFixtureT(t)
	prepares := countPrepares(t, s)
	if err := commonReads(ctx, s, run); err != nil {
		t.Fatal(err)
	}
	first := prepares.Load()
	if first == 0 {
		t.Fatal("no statement was prepared on the read connection: is the counter on it?")
	}
	for range 5 {
		if err := commonReads(ctx, s, run); err != nil {
			t.Fatal(err)
		}
	}
	if n := prepares.Load(); n != first {
		t.Errorf("got %d statements prepared after 6 rounds of reads, want %d (those of the first round)", n, first)
	}
}

// TestReadStatementsAcrossSchemaChange: statements kept prepared are compiled again
// when another connection changes the schema under them, so that a read neither
// returns what the old schema's plan found nor fails where the new schema serves it.
func TestReadStatementsAcrossSchemaChange(t *testing.T) {
	ctx := context.Background()
	s, run := readFixtureT(t)
	if err := commonReads(ctx, s, run); err != nil {
		t.Fatal(err)
	}
	prepares := countPrepares(t, s)
	if err := lookups(ctx, s, run); err != nil {
		t.Fatal(err)
	}
	before := prepares.Load()

	other, err := sql.Open("sqlite3", s.path+"?_busy_timeout=5000")
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	for _, q := range []string{
		`DROP INDEX events_pending`,
		`CREATE INDEX events_pending ON events(status, workflow, topic, seq)`,
		`ALTER TABLE runs ADD COLUMN note TEXT`,
		`INSERT INTO events (workflow, topic, message_id, payload, status, created_at) VALUES ('w', 'in', 'e1', '{}', 'pending', 1)`,
	} {
		if _, err := other.ExecContext(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	if err := lookups(ctx, s, run); err != nil {
		t.Fatal(err)
	}
	if prepares.Load() == before {
		t.Error("no statement was compiled again after the schema changed")
	}
	if err := commonReads(ctx, s, run); err != nil {
		t.Fatal(err)
	}
	evs, err := s.PendingEvents(ctx, "w", "in", 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(evs) != 2 {
		t.Errorf("got %d pending events after the schema change, want 2", len(evs))
	}

	// A column a kept statement reads is gone: the read fails and names it.
	if _, err := other.ExecContext(ctx, `ALTER TABLE mutations RENAME COLUMN error_class TO error_kind`); err != nil {
		t.Fatal(err)
	}
	if _, err := s.RunMutation(ctx, run.ID); err == nil || !strings.Contains(err.Error(), "error_class") {
		t.Errorf("RunMutation after its column was renamed: got %v, want an error naming error_class", err)
	}
}

// TestReadsAfterClose: Close finalizes the statements the read connections keep; a
// read after Close fails, and the file opens and reads again.
func TestReadsAfterClose(t *testing.T) {
	ctx := context.Background()
	s, run := readFixtureT(t)
	if err := commonReads(ctx, s, run); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatalf("Close with statements kept prepared: %v", err)
	}
	if _, err := s.Run(ctx, run.ID); err == nil {
		t.Error("Run after Close: got no error")
	}
	s2, err := Open(ctx, s.path, Options{ReadConns: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close()
	if err := commonReads(ctx, s2, run); err != nil {
		t.Fatal(err)
	}
}

// TestReadsSeeCommittedWrites: a read sees every write committed before it started,
// with statements kept prepared on every read connection: goroutines write and read
// back at once, each read with a query text of its own besides the common ones (more
// texts than a connection keeps, so statements are dropped and prepared again while
// others run).
func TestReadsSeeCommittedWrites(t *testing.T) {
	ctx := context.Background()
	s, err := Open(ctx, filepath.Join(t.TempDir(), "ledger.db"), Options{ReadConns: 3})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	const workers, rounds = 6, 20
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for w := range workers {
		wg.Go(func() {
			topic := fmt.Sprint("t", w)
			for i := range rounds {
				if err := writeThenRead(ctx, s, topic, i, w*rounds+i+rounds); err != nil {
					errs <- fmt.Errorf("worker %d round %d: %w", w, i, err)
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

func writeThenRead(ctx context.Context, s *Store, topic string, i, limit int) error {
	if _, err := s.Publish(ctx, ledger.NewEvent{Workflow: "w", Topic: topic, MessageID: fmt.Sprint(i), Payload: json.RawMessage(`{}`)}); err != nil {
		return err
	}
	for _, lim := range []int{1, limit} {
		evs, err := s.PendingEvents(ctx, "w", topic, lim)
		if err != nil {
			return err
		}
		if want := min(i+1, lim); len(evs) != want {
			return fmt.Errorf("PendingEvents limit %d after %d published: got %d, want %d", lim, i+1, len(evs), want)
		}
	}
	all, err := s.Events(ctx, ledger.EventFilter{Workflow: "w", Topic: topic, Limit: limit})
	if err != nil {
		return err
	}
	if len(all) != i+1 || all[i].MessageID != fmt.Sprint(i) {
		return fmt.Errorf("Events after %d published: got %d, last %+v", i+1, len(all), all[len(all)-1])
	}
	r, err := s.CreateRun(ctx, ledger.NewRun{Workflow: "w", Version: 1, Handler: topic, Kind: scripthost.KindConsumer})
	if err != nil {
		return err
	}
	if _, err := s.AdvancePhase(ctx, r.ID, scripthost.RunPending, scripthost.RunPreparing); err != nil {
		return err
	}
	got, err := s.Run(ctx, r.ID)
	if err != nil {
		return err
	}
	if got.Phase != scripthost.RunPreparing {
		return fmt.Errorf("Run after AdvancePhase: got phase %s, want %s", got.Phase, scripthost.RunPreparing)
	}
	return nil
}

// TestReadAfterAbandonedRows: a query left after its first row, its statement kept
// prepared on the connection, holds no read transaction: the next read on that
// connection sees a write committed after it.
func TestReadAfterAbandonedRows(t *testing.T) {
	ctx := context.Background()
	s, _ := readFixtureT(t)
	const q = `SELECT message_id FROM events WHERE workflow = ? ORDER BY seq`
	if _, err := s.Publish(ctx, ledger.NewEvent{Workflow: "w", Topic: "in", MessageID: "e1", Payload: json.RawMessage(`{}`)}); err != nil {
		t.Fatal(err)
	}
	rows, err := s.r.QueryxContext(ctx, q, "w")
	if err != nil {
		t.Fatal(err)
	}
	if !rows.Next() {
		t.Fatal("no first row")
	}
	if err := rows.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Publish(ctx, ledger.NewEvent{Workflow: "w", Topic: "in", MessageID: "e2", Payload: json.RawMessage(`{}`)}); err != nil {
		t.Fatal(err)
	}
	var ids []string
	if err := s.r.SelectContext(ctx, &ids, q, "w"); err != nil {
		t.Fatal(err)
	}
	if len(ids) != 3 {
		t.Errorf("got events %v, want e0, e1 and e2", ids)
	}
}

// TestReadsCancelled: every read, lookup or list, fails with its context's error when
// its caller has given up before it starts.
func TestReadsCancelled(t *testing.T) {
	s, run := readFixtureT(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	reads := map[string]func() error{
		"PendingEvents": func() error { _, err := s.PendingEvents(ctx, "w", "in", 1); return err },
		"Events":        func() error { _, err := s.Events(ctx, ledger.EventFilter{}); return err },
		"Run":           func() error { _, err := s.Run(ctx, run.ID); return err },
		"Runs":          func() error { _, err := s.Runs(ctx, ledger.RunFilter{}); return err },
		"RunMutation":   func() error { _, err := s.RunMutation(ctx, run.ID); return err },
		"FailureCount":  func() error { _, err := s.FailureCount(ctx, "ih"); return err },
		"HandlerState":  func() error { _, err := s.HandlerState(ctx, "w", "h"); return err },
	}
	for name, read := range reads {
		if err := read(); !errors.Is(err, context.Canceled) {
			t.Errorf("%s with a cancelled context: got %v, want context.Canceled", name, err)
		}
	}
}

// pendingEventsQuery is the statement PendingEvents(ctx, workflow, topic, limit) sends on
// SQLite, its arguments workflow and topic (TestPendingEventsStatement checks it).
func pendingEventsQuery(limit int) string {
	return `SELECT seq, workflow, topic, message_id, payload, status, reserved_by, attempt, caused_by, created_at FROM events` +
		` WHERE workflow = ? AND topic = ? AND status = 'pending' ORDER BY seq LIMIT ` + strconv.Itoa(limit)
}

// TestPendingEventsStatement: the statement a topic's pending events are read with, at
// the scheduler's limits (1, and its scan of 1000), finds them through the index
// events_pending in publication order, without a sort. It is the statement the store
// sends: once PendingEvents has run, the one read connection runs it from the
// statements it keeps, keyed by their text, without compiling anything.
func TestPendingEventsStatement(t *testing.T) {
	ctx := context.Background()
	s, _ := readFixtureT(t)
	prepares := countPrepares(t, s)
	for _, limit := range []int{1, 1000} {
		q := pendingEventsQuery(limit)
		before := prepares.Load()
		if _, err := s.PendingEvents(ctx, "w", "in", limit); err != nil {
			t.Fatal(err)
		}
		if prepares.Load() == before {
			t.Fatalf("limit %d: PendingEvents compiled no statement on first use: is the counter on the read connection?", limit)
		}
		before = prepares.Load()
		ids, err := messageIDs(ctx, s, q, "w", "in")
		if err != nil {
			t.Fatal(err)
		}
		if n := prepares.Load() - before; n != 0 {
			t.Errorf("limit %d: %d statements compiled for %q: the store sends another statement, or compiles it at every call", limit, n, q)
		}
		if len(ids) != 1 || ids[0] != "e0" {
			t.Errorf("limit %d: got events %v, want e0", limit, ids)
		}

		got := queryPlan(t, s, q, "w", "in")
		if want := "USING INDEX events_pending (workflow=? AND topic=?)"; !strings.Contains(got, want) || strings.Contains(got, "TEMP B-TREE") {
			t.Errorf("limit %d: got plan %q, want %q and no sort", limit, got, want)
		}
	}
}

// messageIDs runs q, a query of events' columns, and returns the message_id of each row.
func messageIDs(ctx context.Context, s *Store, q string, args ...any) ([]string, error) {
	rows, err := s.r.QueryxContext(ctx, q, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var ids []string
	for rows.Next() {
		row := map[string]any{}
		if err := rows.MapScan(row); err != nil {
			return nil, err
		}
		id, _ := row["message_id"].(string)
		ids = append(ids, id)
	}
	return ids, rows.Err()
}

// TestEventReadsCompiledOnce: the event reads of the scheduler and the views, with
// arguments that change from call to call, compile their statements in the first
// round only. Names that read as the numbers 0 and 1, values SQLite's planner tells
// apart from others, are matched exactly, as text.
func TestEventReadsCompiledOnce(t *testing.T) {
	ctx := context.Background()
	s, run := readFixtureT(t)
	var news []ledger.NewEvent
	for _, topic := range []string{"0", "1", "01"} {
		for i := range 3 {
			news = append(news, ledger.NewEvent{Workflow: "1", Topic: topic, MessageID: fmt.Sprint(topic, "-", i), Payload: json.RawMessage(`{}`)})
		}
	}
	if _, err := s.Publish(ctx, news...); err != nil {
		t.Fatal(err)
	}
	// The first event of each topic of workflow 1 is reserved; the others are pending.
	err := s.write(ctx, func(ctx context.Context, tx *wtx) error {
		_, err := tx.ExecContext(ctx, `UPDATE events SET status = 'reserved', reserved_by = ? WHERE workflow = '1' AND message_id LIKE '%-0'`, run.ID)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	reads := []struct {
		name string
		read func() ([]scripthost.Event, error)
		want string
	}{
		{"PendingEvents 1/1 limit 1", func() ([]scripthost.Event, error) { return s.PendingEvents(ctx, "1", "1", 1) }, "1/1-1"},
		{"PendingEvents 1/0 limit 1", func() ([]scripthost.Event, error) { return s.PendingEvents(ctx, "1", "0", 1) }, "0/0-1"},
		{"PendingEvents 1/01 limit 1000", func() ([]scripthost.Event, error) { return s.PendingEvents(ctx, "1", "01", 1000) }, "01/01-1,01/01-2"},
		{"PendingEvents w/in limit 1000", func() ([]scripthost.Event, error) { return s.PendingEvents(ctx, "w", "in", 1000) }, "in/e0"},
		{"PendingEvents of a workflow", func() ([]scripthost.Event, error) { return s.PendingEvents(ctx, "1", "", 0) },
			"0/0-1,0/0-2,1/1-1,1/1-2,01/01-1,01/01-2"},
		{"reserved events of a topic", func() ([]scripthost.Event, error) {
			return s.Events(ctx, ledger.EventFilter{Workflow: "1", Topic: "1", Status: scripthost.EventReserved})
		}, "1/1-0"},
		{"reserved events of a workflow", func() ([]scripthost.Event, error) {
			return s.Events(ctx, ledger.EventFilter{Workflow: "1", Status: scripthost.EventReserved, Limit: 2})
		}, "0/0-0,1/1-0"},
		{"events of a topic", func() ([]scripthost.Event, error) { return s.Events(ctx, ledger.EventFilter{Topic: "01"}) },
			"01/01-0,01/01-1,01/01-2"},
	}
	prepares := countPrepares(t, s)
	for round := range 4 {
		before := prepares.Load()
		for _, rd := range reads {
			evs, err := rd.read()
			if err != nil {
				t.Fatalf("%s: %v", rd.name, err)
			}
			var got []string
			for _, e := range evs {
				got = append(got, e.Topic+"/"+e.MessageID)
			}
			if g := strings.Join(got, ","); g != rd.want {
				t.Errorf("round %d, %s: got %s, want %s", round, rd.name, g, rd.want)
			}
		}
		n := prepares.Load() - before
		if round == 0 && n == 0 {
			t.Fatal("no statement was prepared on the read connection: is the counter on it?")
		}
		if round > 0 && n != 0 {
			t.Errorf("round %d: %d statements compiled again, want none", round, n)
		}
	}
}
