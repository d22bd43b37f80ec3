package sqlite

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/scripthost/scripthost/ledger"
)

// TestOpenSnapshotReadsWithoutWriting: a snapshot of a ledger a store holds open sees
// what it committed, and writing to the snapshot leaves the ledger's files as they were.
func TestOpenSnapshotReadsWithoutWriting(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "ledger.db")
	live, err := Open(ctx, path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer live.Close()
	if _, err := live.Publish(ctx, ledger.NewEvent{Workflow: "wf", Topic: "t", MessageID: "a", Payload: json.RawMessage(`{"n":1}`)}); err != nil {
		t.Fatal(err)
	}
	before := hashFiles(t, path)
	snap, err := OpenSnapshot(ctx, path, t.TempDir(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer snap.Close()
	evs, err := snap.Events(ctx, ledger.EventFilter{Workflow: "wf"})
	if err != nil || len(evs) != 1 || evs[0].MessageID != "a" {
		t.Fatalf("snapshot events: got %v, %v; want event a", evs, err)
	}
	if _, err := snap.Publish(ctx, ledger.NewEvent{Workflow: "wf", Topic: "t", MessageID: "b", Payload: json.RawMessage(`{}`)}); err != nil {
		t.Fatal(err)
	}
	if after := hashFiles(t, path); after != before {
		t.Errorf("the ledger's files changed:\nbefore %s\nafter  %s", before, after)
	}
}

// hashFiles hashes the ledger's file and its write-ahead log. The -shm file is left
// out: it is SQLite's shared-memory index, where every reader marks what it reads.
func hashFiles(t *testing.T, path string) string {
	t.Helper()
	var b strings.Builder
	for _, m := range []string{path, path + "-wal"} {
		data, err := os.ReadFile(m)
		if err != nil {
			t.Fatal(err)
		}
		sum := sha256.Sum256(data)
		b.WriteString(filepath.Base(m) + ":" + hex.EncodeToString(sum[:4]) + " ")
	}
	return b.String()
}

// TestOpenSnapshotRefuses: what is not a ledger is refused, naming the file.
func TestOpenSnapshotRefuses(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	text := filepath.Join(dir, "notes.txt")
	if err := os.WriteFile(text, []byte("just words, no database"), 0o644); err != nil {
		t.Fatal(err)
	}
	empty := filepath.Join(dir, "empty.db")
	if err := os.WriteFile(empty, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		path, want string
		notLedger  bool
	}{
		{filepath.Join(dir, "missing.db"), "no such ledger file", false},
		{dir, "is a directory", false},
		{text, "not an SQLite database", true},
		{empty, "the file is empty", true},
	} {
		_, err := OpenSnapshot(ctx, tc.path, t.TempDir(), Options{})
		if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), tc.path) {
			t.Errorf("%s: got %v, want %q naming the file", tc.path, err, tc.want)
		}
		if tc.notLedger && !errors.Is(err, ledger.ErrNotLedger) {
			t.Errorf("%s: got %v, want ErrNotLedger", tc.path, err)
		}
		if _, serr := os.Stat(tc.path); serr == nil && tc.path == empty {
			if fi, _ := os.Stat(empty); fi.Size() != 0 {
				t.Errorf("the empty file was written")
			}
		}
	}
}
