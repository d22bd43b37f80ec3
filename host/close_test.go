package host_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/scripthost/scripthost/host"
	"github.com/scripthost/scripthost/ledger/sqlite"
)

// TestCloseReleasesWorkspace opens and closes hosts on one workspace, and a host whose
// construction fails after the workspace was opened: no file descriptor stays open.
func TestCloseReleasesWorkspace(t *testing.T) {
	if _, err := os.Stat("/proc/self/fd"); err != nil {
		t.Skip("no /proc/self/fd to count open files:", err)
	}
	ctx := context.Background()
	dir := t.TempDir()
	store, err := sqlite.Open(ctx, filepath.Join(dir, "ledger.db"), sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	ws := filepath.Join(dir, "ws")
	if err := os.Mkdir(ws, 0o755); err != nil {
		t.Fatal(err)
	}
	cache := filepath.Join(dir, "cache")
	cycle := func() {
		h, err := host.New(ctx, store, host.Options{Workspace: ws, WasmCacheDir: cache})
		if err != nil {
			t.Fatal(err)
		}
		if err := h.Close(ctx); err != nil {
			t.Fatal(err)
		}
		// A wasm cache that cannot be created fails New after the workspace is open.
		if _, err := host.New(ctx, store, host.Options{Workspace: ws, WasmCacheDir: "/proc/version/cache"}); err == nil {
			t.Fatal("got no error for an unusable Wasm cache directory")
		}
	}
	cycle() // the first cycle opens what stays open for the process (caches, pools)
	before := openFiles(t)
	for range 10 {
		cycle()
	}
	if after := openFiles(t); after > before+2 {
		t.Errorf("got %d open files after 10 hosts came and went, want about %d", after, before)
	}
}

func openFiles(t *testing.T) int {
	t.Helper()
	fds, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	return len(fds)
}
