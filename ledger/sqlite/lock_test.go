package sqlite_test

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/scripthost/scripthost/ledger"
	"github.com/scripthost/scripthost/ledger/sqlite"
)

func TestHostLock(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	db := filepath.Join(dir, "l.db")
	host, err := sqlite.Open(ctx, db, sqlite.Options{HostLock: true})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := sqlite.Open(ctx, db, sqlite.Options{HostLock: true}); !errors.Is(err, ledger.ErrLocked) || !strings.Contains(err.Error(), "l.db") {
		t.Errorf("second host: got %v, want ErrLocked naming the file", err)
	}
	reader, err := sqlite.Open(ctx, db, sqlite.Options{})
	if err != nil {
		t.Fatalf("an operator's open beside the host: %v", err)
	}
	reader.Close()
	host.Close()
	again, err := sqlite.Open(ctx, db, sqlite.Options{HostLock: true})
	if err != nil {
		t.Fatalf("after Close: %v", err)
	}
	again.Close()

	notes := filepath.Join(dir, "notes.txt")
	if err := os.WriteFile(notes, []byte(strings.Repeat("notes\n", 200)), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := sqlite.Open(ctx, notes, sqlite.Options{HostLock: true}); !errors.Is(err, ledger.ErrNotLedger) {
		t.Errorf("not a ledger: got %v, want ErrNotLedger", err)
	}
	if _, err := os.Stat(notes + ".lock"); !os.IsNotExist(err) {
		t.Errorf("a lock file was left beside a file that is not a ledger: %v", err)
	}
}

// Building without cgo fails at compile time with a message that says why, instead of
// a ledger that fails at run time.
func TestBuildWithoutCgoSaysWhy(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the go command")
	}
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("go command not found")
	}
	cmd := exec.Command(goBin, "build", "-o", os.DevNull, ".")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	out, err := cmd.CombinedOutput()
	if err == nil || !strings.Contains(string(out), "needs_cgo") {
		t.Errorf("CGO_ENABLED=0 go build: got %v\n%s\nwant a failure naming cgo", err, out)
	}
}
