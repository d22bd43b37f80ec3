package host

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// LedgerFiles returns the files an SQLite ledger at db consists of: the database,
// the files SQLite keeps beside it (-wal, -shm, -journal), the host lock (.lock) and
// the token serve generates (.token). The paths are absolute.
func LedgerFiles(db string) []string {
	if abs, err := filepath.Abs(db); err == nil {
		db = abs
	}
	return []string{db, db + "-wal", db + "-shm", db + "-journal", db + ".lock", db + ".token"}
}

// LedgerInWorkspaceError is CheckWorkspace's refusal: File, one of the ledger's files,
// resolves to a place inside Workspace.
type LedgerInWorkspaceError struct {
	// File is the ledger's file as it was given; Resolved is where it lies once
	// symbolic links are followed.
	File, Resolved string
	// Workspace is the workspace as it was given; ResolvedWorkspace is its real path.
	Workspace, ResolvedWorkspace string
}

func (e *LedgerInWorkspaceError) Error() string {
	return fmt.Sprintf("host: the ledger %s is inside the workspace %s, where scripts could read or overwrite it: keep the ledger outside the workspace or narrow the workspace",
		e.File, e.Workspace)
}

// CheckWorkspace refuses a workspace that contains any of the ledger's files. Symbolic
// links are followed on both sides (a ledger file that does not exist yet is resolved
// through its nearest existing directory), so neither a symlinked workspace nor a
// symlinked ledger directory hides the overlap. The whole ledger is kept out of
// reach, not only the files that exist: SQLite also reads a -journal it finds beside
// the database (a hot journal is applied at the next open), so a file a command could
// merely create there would change the ledger.
func CheckWorkspace(workspace string, ledgerFiles []string) error {
	if workspace == "" || len(ledgerFiles) == 0 {
		return nil
	}
	ws, err := filepath.EvalSymlinks(workspace)
	if err != nil {
		return fmt.Errorf("host: workspace: %w", err)
	}
	if ws, err = filepath.Abs(ws); err != nil {
		return fmt.Errorf("host: workspace: %w", err)
	}
	for _, f := range ledgerFiles {
		for _, p := range resolvedPaths(f) {
			if Within(p, ws) {
				return &LedgerInWorkspaceError{File: f, Resolved: p, Workspace: workspace, ResolvedWorkspace: ws}
			}
		}
	}
	return nil
}

// resolvedPaths are the places file stands for: its directory resolved with the name
// appended (where SQLite puts the side files of a database reached through a
// symlinked directory), and, when file itself is a symbolic link, its target.
func resolvedPaths(file string) []string {
	abs, err := filepath.Abs(file)
	if err != nil {
		return nil
	}
	out := []string{filepath.Join(ResolvePath(filepath.Dir(abs)), filepath.Base(abs))}
	// A link is followed even when its target does not exist yet: SQLite would create
	// the database there.
	for range 40 {
		target, err := os.Readlink(abs)
		if err != nil {
			break
		}
		if !filepath.IsAbs(target) {
			target = filepath.Join(filepath.Dir(abs), target)
		}
		abs = filepath.Clean(target)
		out = append(out, filepath.Join(ResolvePath(filepath.Dir(abs)), filepath.Base(abs)))
	}
	return out
}

// ResolvePath is p made absolute with the symbolic links of its longest existing
// prefix resolved: where p is, or would be once created (a ledger directory created
// at first start, a config file not written yet).
func ResolvePath(p string) string {
	abs, err := filepath.Abs(p)
	if err != nil {
		return p
	}
	if r, err := filepath.EvalSymlinks(abs); err == nil {
		return r
	}
	parent := filepath.Dir(abs)
	if parent == abs {
		return abs
	}
	return filepath.Join(ResolvePath(parent), filepath.Base(abs))
}

// Within reports whether path is dir or lies below it. Both are absolute and clean.
func Within(path, dir string) bool {
	rel, err := filepath.Rel(dir, path)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator))
}

// storePath is implemented by stores kept in one file (ledger/sqlite).
type storePath interface{ Path() string }

// ledgerFilesOf is Options.LedgerFiles, else the files of the store's own file.
func ledgerFilesOf(opts Options, store any) []string {
	if opts.LedgerFiles != nil {
		return opts.LedgerFiles
	}
	if s, ok := store.(storePath); ok && s.Path() != "" {
		return LedgerFiles(s.Path())
	}
	return nil
}
