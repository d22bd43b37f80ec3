package sqlite_test

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/scripthost/scripthost/ledger"
	"github.com/scripthost/scripthost/ledger/sqlite"
)

// rawExec runs statements on a database file without the store.
func rawExec(t *testing.T, path string, stmts ...string) {
	t.Helper()
	db, err := sql.Open("sqlite3", path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for _, q := range stmts {
		if _, err := db.Exec(q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
}

// newLedger creates a closed, valid ledger file.
func newLedger(t *testing.T, dir string) string {
	t.Helper()
	path := filepath.Join(dir, "ledger.db")
	s, err := sqlite.Open(context.Background(), path, sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	return path
}

func readFile(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestOpenRefusesBadFiles(t *testing.T) {
	random := make([]byte, 8192)
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range random {
		random[i] = byte(rng.UintN(256))
	}
	tests := []struct {
		name string
		// make writes the file into dir and returns its path.
		make    func(t *testing.T, dir string) string
		want    error
		mention []string
	}{
		{"random bytes", func(t *testing.T, dir string) string {
			p := filepath.Join(dir, "random.db")
			os.WriteFile(p, random, 0o644)
			return p
		}, ledger.ErrNotLedger, nil},
		{"text file", func(t *testing.T, dir string) string {
			p := filepath.Join(dir, "notes.txt")
			os.WriteFile(p, []byte("workflow: orders\nnot a database\n"), 0o644)
			return p
		}, ledger.ErrNotLedger, nil},
		{"SQLite header then garbage", func(t *testing.T, dir string) string {
			p := filepath.Join(dir, "broken.db")
			os.WriteFile(p, append([]byte("SQLite format 3\x00"), random...), 0o644)
			return p
		}, ledger.ErrNotLedger, nil},
		{"another application's database", func(t *testing.T, dir string) string {
			p := filepath.Join(dir, "crm.db")
			rawExec(t, p, "CREATE TABLE customers (id INTEGER PRIMARY KEY, name TEXT)", "INSERT INTO customers (name) VALUES ('ada')")
			return p
		}, ledger.ErrNotLedger, []string{"customers"}},
		{"user_version newer than the binary", func(t *testing.T, dir string) string {
			p := newLedger(t, dir)
			rawExec(t, p, "PRAGMA user_version = 99")
			return p
		}, ledger.ErrSchemaTooNew, []string{"99", fmt.Sprint(sqlite.SchemaVersion())}},
		{"schema table newer than the binary", func(t *testing.T, dir string) string {
			p := newLedger(t, dir)
			rawExec(t, p, "INSERT INTO scripthost_schema (version, name, applied_at) VALUES (42, '0042_future.sql', 0)")
			return p
		}, ledger.ErrSchemaTooNew, []string{"42", fmt.Sprint(sqlite.SchemaVersion())}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			path := tc.make(t, dir)
			before := readFile(t, path)
			entries, _ := os.ReadDir(dir)

			s, err := sqlite.Open(context.Background(), path, sqlite.Options{BusyTimeout: 100 * time.Millisecond})
			if err == nil {
				s.Close()
				t.Fatalf("got a store, want %v", tc.want)
			}
			t.Logf("error: %v", err)
			if !errors.Is(err, tc.want) {
				t.Fatalf("got %v, want %v", err, tc.want)
			}
			for _, m := range append([]string{path}, tc.mention...) {
				if !strings.Contains(err.Error(), m) {
					t.Errorf("got %q, want it to mention %q", err, m)
				}
			}
			if after := readFile(t, path); !bytes.Equal(after, before) {
				t.Errorf("file changed: %d bytes before, %d after", len(before), len(after))
			}
			if after, _ := os.ReadDir(dir); len(after) != len(entries) {
				t.Errorf("got %d files in the directory, want %d", len(after), len(entries))
			}
		})
	}
}

func TestOpenRefusesLockedDatabase(t *testing.T) {
	path := newLedger(t, t.TempDir())
	before := readFile(t, path)
	_, line := startChild(t, "lock", path)
	if line != "locked" {
		t.Fatalf("child said %q, want locked", line)
	}
	s, err := sqlite.Open(context.Background(), path, sqlite.Options{BusyTimeout: 200 * time.Millisecond})
	if err == nil {
		s.Close()
		t.Fatal("got a store, want ErrLocked")
	}
	t.Logf("error: %v", err)
	if !errors.Is(err, ledger.ErrLocked) || !strings.Contains(err.Error(), path) {
		t.Fatalf("got %v, want ErrLocked naming %s", err, path)
	}
	if after := readFile(t, path); !bytes.Equal(after, before) {
		t.Errorf("file changed: %d bytes before, %d after", len(before), len(after))
	}
}

func TestOpenAcceptsEmptyAndExistingLedgers(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	empty := filepath.Join(dir, "empty.db")
	if err := os.WriteFile(empty, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	s, err := sqlite.Open(ctx, empty, sqlite.Options{})
	if err != nil {
		t.Fatalf("empty file: %v", err)
	}
	if _, err := s.Publish(ctx, ledger.NewEvent{Workflow: "w", Topic: "t", MessageID: "m"}); err != nil {
		t.Fatal(err)
	}
	s.Close()
	s, err = sqlite.Open(ctx, empty, sqlite.Options{})
	if err != nil {
		t.Fatalf("reopen: %v", err)
	}
	defer s.Close()
	evs, err := s.Events(ctx, ledger.EventFilter{})
	if err != nil || len(evs) != 1 {
		t.Fatalf("after reopen: got %d events (%v), want 1", len(evs), err)
	}

	if _, err := sqlite.Open(ctx, dir, sqlite.Options{}); err == nil || !strings.Contains(err.Error(), dir) {
		t.Errorf("directory: got %v, want an error naming it", err)
	}
	if _, err := sqlite.Open(ctx, filepath.Join(dir, "no-such-dir", "x.db"), sqlite.Options{}); err == nil {
		t.Error("missing directory: got no error")
	}
}

// TestWriteWhileLocked: a write that cannot get the lock within the busy timeout fails
// with ErrLocked naming the file, and the store works again once the lock is gone.
func TestWriteWhileLocked(t *testing.T) {
	for _, opts := range []sqlite.Options{{BusyTimeout: 200 * time.Millisecond}, {BusyTimeout: 200 * time.Millisecond, DisableGroupCommit: true}} {
		ctx := context.Background()
		path := filepath.Join(t.TempDir(), "ledger.db")
		s, err := sqlite.Open(ctx, path, opts)
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		child, line := startChild(t, "lock", path)
		if line != "locked" {
			t.Fatalf("child said %q, want locked", line)
		}
		_, err = s.CreateRun(ctx, ledger.NewRun{Workflow: "w", Version: 1, Handler: "h", Kind: "consumer"})
		if !errors.Is(err, ledger.ErrLocked) || !strings.Contains(err.Error(), path) {
			t.Fatalf("group commit disabled %v: got %v, want ErrLocked naming %s", opts.DisableGroupCommit, err, path)
		}
		child.Process.Kill()
		child.Wait()
		if _, err := s.CreateRun(ctx, ledger.NewRun{Workflow: "w", Version: 1, Handler: "h", Kind: "consumer"}); err != nil {
			t.Fatalf("after the lock is gone: %v", err)
		}
		runs, err := s.Runs(ctx, ledger.RunFilter{})
		if err != nil || len(runs) != 1 {
			t.Fatalf("got %d runs (%v), want 1", len(runs), err)
		}
	}
}
