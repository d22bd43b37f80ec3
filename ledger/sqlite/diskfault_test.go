package sqlite_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/jmoiron/sqlx"

	"github.com/scripthost/scripthost"
	"github.com/scripthost/scripthost/ledger"
	"github.com/scripthost/scripthost/ledger/sqlite"
)

// mountTmpfs mounts a tmpfs of size bytes on a new directory and unmounts it when the
// test ends. Without the right to mount (not root, no CAP_SYS_ADMIN) the test is
// skipped with the reason; SCRIPTHOST_REQUIRE_MOUNT (set in CI, which runs as root)
// makes that a failure.
func mountTmpfs(t *testing.T, size int, opts ...string) string {
	t.Helper()
	dir := t.TempDir()
	o := append([]string{fmt.Sprintf("size=%d", size)}, opts...)
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", strings.Join(o, ","), "tmpfs", dir).CombinedOutput(); err != nil {
		msg := fmt.Sprintf("cannot mount a tmpfs for the disk-fault test (%v: %s); run as root to include it", err, bytes.TrimSpace(out))
		if os.Getenv("SCRIPTHOST_REQUIRE_MOUNT") != "" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	t.Cleanup(func() {
		if out, err := exec.Command("umount", "-l", dir).CombinedOutput(); err != nil {
			t.Errorf("umount %s: %v: %s", dir, err, out)
		}
	})
	return dir
}

// fill writes a file of zeros until the file system is full and returns its path.
func fill(t *testing.T, dir string) string {
	t.Helper()
	path := filepath.Join(dir, "filler")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	chunk := make([]byte, 4096)
	for {
		if _, err := f.Write(chunk); err != nil {
			return path
		}
	}
}

func integrityCheck(t *testing.T, path string) {
	t.Helper()
	db, err := sqlx.Open("sqlite3", path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var res string
	if err := db.Get(&res, "PRAGMA integrity_check"); err != nil || res != "ok" {
		t.Errorf("integrity_check: got %q, %v; want ok", res, err)
	}
}

// TestDiskFull records mutations against a fake service on a small file system until
// it is full: every refused write is ErrNoSpace, the database stays intact, and after
// space is freed a restarted store settles every in-flight mutation with the service,
// with no mutation lost or applied twice, and takes new writes again.
func TestDiskFull(t *testing.T) {
	dir := mountTmpfs(t, 16<<20)
	path := filepath.Join(dir, "ledger.db")
	ctx := context.Background()
	s, err := sqlite.Open(ctx, path, sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	// The service: how often each idempotency key was applied.
	service := map[string]int{}
	filler := ""
	var refused []error
	params := json.RawMessage(`{"pad":"` + strings.Repeat("x", 2000) + `"}`)
	for i := 0; len(refused) < 20; i++ {
		if i == 50 {
			// Leave the ledger a little room, then none.
			filler = fill(t, dir)
		}
		if i > 5000 {
			t.Fatal("the file system never filled up")
		}
		hash := fmt.Sprintf("input-%d", i)
		m, err := s.BeginMutation(ctx, ledger.NewMutation{Workflow: "disk", Handler: "h", Namespace: "Svc", Method: "put",
			Params: params, InputHash: hash, IdempotencyKey: scripthost.IdempotencyKey(hash, 0)})
		if err != nil {
			refused = append(refused, err)
			continue
		}
		service[m.IdempotencyKey]++ // the call happens only after the durable in-flight row
		if _, err := s.ApplyMutation(ctx, m.ID, json.RawMessage(`{"ok":true}`)); err != nil {
			refused = append(refused, err)
		}
	}
	for _, err := range refused {
		if !errors.Is(err, ledger.ErrNoSpace) || !strings.Contains(err.Error(), path) {
			t.Errorf("got %v, want ErrNoSpace naming the file", err)
		}
	}
	if filler == "" {
		t.Fatal("the file system filled up before the filler was written")
	}
	_ = s.Close()
	integrityCheck(t, path)

	// Space comes back; the host restarts and settles what was in flight by asking
	// the service, as the runtime's reconciler does.
	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	s, err = sqlite.Open(ctx, path, sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	rec, err := s.Recover(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range rec.InFlight {
		if service[m.IdempotencyKey] > 0 {
			_, err = s.ApplyMutation(ctx, m.ID, json.RawMessage(`{"ok":true}`))
		} else {
			_, err = s.FailMutation(ctx, m.ID, scripthost.Errorf(scripthost.ClassNetwork, "not_applied", "the service never saw it"))
		}
		if err != nil {
			t.Fatalf("settle %s: %v", m.ID, err)
		}
	}
	muts, err := s.Mutations(ctx, ledger.MutationFilter{Workflow: "disk"})
	if err != nil {
		t.Fatal(err)
	}
	recorded := map[string]bool{}
	for _, m := range muts {
		if m.Status == scripthost.MutationInFlight {
			t.Errorf("mutation %s still in flight after recovery", m.ID)
		}
		if m.Status == scripthost.MutationApplied {
			recorded[m.IdempotencyKey] = true
		}
	}
	for key, n := range service {
		if n != 1 {
			t.Errorf("key %s applied %d times, want once", key, n)
		}
		if !recorded[key] {
			t.Errorf("key %s applied by the service but not recorded as applied: lost", key)
		}
	}
	if len(recorded) != len(service) {
		t.Errorf("got %d mutations recorded applied, want the %d the service applied", len(recorded), len(service))
	}
	m, err := s.BeginMutation(ctx, ledger.NewMutation{Workflow: "disk", Handler: "h", Namespace: "Svc", Method: "put",
		Params: params, InputHash: "after", IdempotencyKey: scripthost.IdempotencyKey("after", 0)})
	if err != nil {
		out, _ := exec.Command("ls", "-la", dir).CombinedOutput()
		t.Fatalf("a write after space was freed: %v\n%s", err, out)
	}
	if _, err := s.ApplyMutation(ctx, m.ID, nil); err != nil {
		t.Fatal(err)
	}
	integrityCheck(t, path)
}

// TestReadOnlyLedger opens a ledger on a file system mounted read-only: a clear
// ErrReadOnly at once, and the file is not changed.
func TestReadOnlyLedger(t *testing.T) {
	dir := mountTmpfs(t, 4<<20)
	path := filepath.Join(dir, "ledger.db")
	ctx := context.Background()
	s, err := sqlite.Open(ctx, path, sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.BeginMutation(ctx, ledger.NewMutation{Workflow: "ro", Handler: "h", Namespace: "Svc", Method: "put",
		InputHash: "a", IdempotencyKey: "k-a"}); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	before := sum(t, path)
	if out, err := exec.Command("mount", "-o", "remount,ro", dir).CombinedOutput(); err != nil {
		t.Fatalf("remount read-only: %v: %s", err, out)
	}
	_, err = sqlite.Open(ctx, path, sqlite.Options{})
	if !errors.Is(err, ledger.ErrReadOnly) || !strings.Contains(err.Error(), path) {
		t.Errorf("got %v, want ErrReadOnly naming the file", err)
	}
	if after := sum(t, path); after != before {
		t.Error("the read-only ledger file changed")
	}
}

func sum(t *testing.T, path string) [32]byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return sha256.Sum256(b)
}
