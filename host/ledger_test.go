package host_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/scripthost/scripthost/host"
	"github.com/scripthost/scripthost/ledger/sqlite"
)

func mkdir(t *testing.T, path string) string {
	t.Helper()
	if err := os.MkdirAll(path, 0o755); err != nil {
		t.Fatal(err)
	}
	return path
}

func symlink(t *testing.T, target, link string) string {
	t.Helper()
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
	return link
}

// TestCheckWorkspace: every spelling of a ledger inside the workspace is refused,
// whichever of its files and however symbolic links hide the overlap; a ledger beside
// the workspace is not.
func TestCheckWorkspace(t *testing.T) {
	root := t.TempDir()
	ws := mkdir(t, filepath.Join(root, "ws"))
	outside := mkdir(t, filepath.Join(root, "state"))
	symlink(t, ws, filepath.Join(root, "ws-link"))                       // a second name of the workspace
	symlink(t, outside, filepath.Join(root, "state-link"))               // a second name of a folder outside
	symlink(t, filepath.Join(ws, "sub"), filepath.Join(root, "into-ws")) // a dangling link into it
	mkdir(t, filepath.Join(ws, "sub"))
	symlink(t, filepath.Join(ws, "real.db"), filepath.Join(outside, "alias.db"))
	t.Chdir(filepath.Join(ws, "sub"))

	tests := []struct {
		name, workspace, db string
		inside              bool
	}{
		{"beside the workspace", ws, filepath.Join(outside, "l.db"), false},
		{"beside it, relative", ws, "../../state/l.db", false},
		{"beside it, through a symlink", ws, filepath.Join(root, "state-link", "l.db"), false},
		{"the workspace's sibling with a common prefix", ws, filepath.Join(root, "ws2", "l.db"), false},
		{"in the workspace", ws, filepath.Join(ws, "scripthost.db"), true},
		{"in a folder of it that does not exist yet", ws, filepath.Join(ws, "a", "b", "l.db"), true},
		{"relative to the working directory", ws, "l.db", true},
		{"relative with ..", ws, "../x/../l.db", true},
		{"through a symlinked directory", ws, filepath.Join(root, "into-ws", "l.db"), true},
		{"the database a symlink into the workspace", ws, filepath.Join(outside, "alias.db"), true},
		{"the workspace a symlink to the ledger's folder", filepath.Join(root, "ws-link"), filepath.Join(ws, "l.db"), true},
		{"a relative workspace", ".", filepath.Join(ws, "sub", "l.db"), true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := host.CheckWorkspace(tt.workspace, host.LedgerFiles(tt.db))
			var lw *host.LedgerInWorkspaceError
			if got := errors.As(err, &lw); got != tt.inside {
				t.Fatalf("got %v, want refused: %v", err, tt.inside)
			}
			if tt.inside && lw.Workspace != tt.workspace {
				t.Errorf("got workspace %q in the error, want %q", lw.Workspace, tt.workspace)
			}
		})
	}

	// Every one of the ledger's files counts, not only the database: a workspace that
	// holds only a ledger's -wal, lock or token is refused as well.
	for _, suffix := range []string{"-wal", "-shm", "-journal", ".lock", ".token"} {
		files := []string{filepath.Join(outside, "l.db"), filepath.Join(ws, "l.db"+suffix)}
		if err := host.CheckWorkspace(ws, files); err == nil {
			t.Errorf("%s inside the workspace: got no error, want refused", suffix)
		}
	}
	if err := host.CheckWorkspace(filepath.Join(root, "missing"), host.LedgerFiles(filepath.Join(outside, "l.db"))); err == nil {
		t.Error("a missing workspace: got no error")
	}
}

// TestNewRefusesLedgerInWorkspace: host.New finds the ledger of an SQLite store by
// itself, so an embedder that passes no LedgerFiles is protected too; the refusal
// comes before any tool is registered.
func TestNewRefusesLedgerInWorkspace(t *testing.T) {
	ctx := context.Background()
	ws := t.TempDir()
	store, err := sqlite.Open(ctx, filepath.Join(ws, "ledger.db"), sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	cache := t.TempDir()
	_, err = host.New(ctx, store, host.Options{Workspace: ws, WasmCacheDir: cache})
	var lw *host.LedgerInWorkspaceError
	if !errors.As(err, &lw) || lw.File != filepath.Join(ws, "ledger.db") {
		t.Fatalf("got %v, want the ledger in the workspace refused", err)
	}

	// Explicit LedgerFiles win over the store's file: here a token kept in the
	// workspace.
	other := t.TempDir()
	outside, err := sqlite.Open(ctx, filepath.Join(other, "ledger.db"), sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer outside.Close()
	h, err := host.New(ctx, outside, host.Options{Workspace: ws, WasmCacheDir: cache})
	if err != nil {
		t.Fatalf("ledger outside the workspace: %v", err)
	}
	h.Close(ctx)
	token := filepath.Join(ws, "serve.token")
	if _, err := host.New(ctx, outside, host.Options{Workspace: ws, WasmCacheDir: cache, LedgerFiles: []string{token}}); !errors.As(err, &lw) || lw.File != token {
		t.Fatalf("got %v, want the token in the workspace refused", err)
	}
}
