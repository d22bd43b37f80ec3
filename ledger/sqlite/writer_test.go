package sqlite

import (
	"context"
	"errors"
	"path/filepath"
	"testing"

	"github.com/scripthost/scripthost/ledger"
)

// TestBatchIsolatesWrites runs one group-commit batch by hand: each write's failure,
// panic or cancelled caller must drop that write alone.
func TestBatchIsolatesWrites(t *testing.T) {
	ctx := context.Background()
	s, err := Open(ctx, filepath.Join(t.TempDir(), "ledger.db"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	boom := errors.New("boom")
	publish := func(id string) writeFunc {
		return func(ctx context.Context, tx *wtx) error {
			_, err := tx.ExecContext(ctx, `INSERT INTO events (workflow, topic, message_id, status, created_at)
				VALUES ('w', 't', ?, 'pending', 0)`, id)
			return err
		}
	}
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
	s.runBatch(batch)
	for i, r := range reqs {
		if err := <-batch[i].done; !r.want(err) {
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

// TestPragmas checks the durability settings: WAL, synchronous=FULL and foreign keys
// on the writer, a read pool that cannot write.
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
		{"writer", "PRAGMA synchronous", "2"}, // FULL
		{"writer", "PRAGMA foreign_keys", "1"},
		{"writer", "PRAGMA busy_timeout", "5000"},
		{"reader", "PRAGMA query_only", "1"},
		{"reader", "PRAGMA foreign_keys", "1"},
	}
	for _, tc := range tests {
		db := s.w
		if tc.db == "reader" {
			db = s.r
		}
		var got string
		if err := db.Get(&got, tc.query); err != nil {
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
