// Package workspace owns the file tools: a Workspace rooted at one directory, and the
// tools that read, write, move, delete, search and glob files inside it. Every path a
// caller passes is relative to the root and confined to it: absolute paths, ".."
// components and symbolic links that resolve outside the root are refused with a
// sandbox_violation error naming the path. Operations go through an os.Root, which
// refuses escapes by construction even if the tree changes between the check and the
// call.
package workspace

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/scripthost/scripthost"
)

// Workspace is a directory that file tools may touch. It is safe for concurrent use.
type Workspace struct {
	// dir is the root as given, made absolute; real is the same directory with its
	// symbolic links resolved, the prefix every resolved path must keep.
	dir  string
	real string
	root *os.Root
	// top is the root directory opened once more, for the write path that walks
	// directory handles itself (see writeDirect); nil where that path is not built.
	top *os.File
}

// New opens the workspace rooted at dir, which must be an existing directory.
func New(dir string) (*Workspace, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("workspace: %w", err)
	}
	real, err := filepath.EvalSymlinks(abs)
	if err != nil {
		return nil, fmt.Errorf("workspace: root: %w", err)
	}
	fi, err := os.Stat(real)
	if err != nil {
		return nil, fmt.Errorf("workspace: root: %w", err)
	}
	if !fi.IsDir() {
		return nil, fmt.Errorf("workspace: root %s is not a directory", dir)
	}
	root, err := os.OpenRoot(real)
	if err != nil {
		return nil, fmt.Errorf("workspace: root: %w", err)
	}
	w := &Workspace{dir: abs, real: real, root: root}
	if directWrites {
		if w.top, err = os.Open(real); err != nil {
			_ = root.Close()
			return nil, fmt.Errorf("workspace: root: %w", err)
		}
	}
	return w, nil
}

// Dir returns the absolute, symlink-free path of the root.
func (w *Workspace) Dir() string { return w.real }

// Close releases the root directory handle.
func (w *Workspace) Close() error {
	err := w.root.Close()
	if w.top != nil {
		err = errors.Join(err, w.top.Close())
	}
	return err
}

// Violation returns the sandbox_violation error for path with the reason why.
func Violation(op, path, reason string) *scripthost.Error {
	return &scripthost.Error{
		Class:   scripthost.ClassLogic,
		Code:    scripthost.CodeSandboxViolation,
		Op:      op,
		Message: fmt.Sprintf("path %q refused: %s", path, reason),
	}
}

// Clean checks that rel names a place inside the workspace and returns its cleaned,
// slash-separated relative form ("." for the root). It refuses absolute paths, ".."
// components, NUL bytes, and paths whose longest existing prefix is a symbolic link
// (or passes through one) that resolves outside the root or cannot be resolved.
func (w *Workspace) Clean(op, rel string) (string, error) {
	clean, err := lexical(op, rel)
	if err != nil {
		return "", err
	}
	if err := w.checkLinks(op, rel, filepath.FromSlash(clean)); err != nil {
		return "", err
	}
	return clean, nil
}

// lexical is Clean without looking at the file system: it refuses absolute paths,
// ".." components and NUL bytes, and returns the cleaned, slash-separated form.
func lexical(op, rel string) (string, error) {
	if strings.ContainsRune(rel, 0) {
		return "", Violation(op, rel, "contains a NUL byte")
	}
	if rel == "" {
		rel = "."
	}
	if filepath.IsAbs(rel) || strings.HasPrefix(rel, "/") || strings.HasPrefix(rel, `\`) || filepath.VolumeName(rel) != "" {
		return "", Violation(op, rel, "absolute paths are not allowed")
	}
	for _, part := range strings.FieldsFunc(rel, func(r rune) bool { return r == '/' || r == filepath.Separator }) {
		if part == ".." {
			return "", Violation(op, rel, `".." is not allowed`)
		}
	}
	return filepath.ToSlash(filepath.Clean(filepath.FromSlash(rel))), nil
}

// checkLinks resolves the longest existing prefix of clean and refuses it when it lies
// outside the root. The final component counts too: a link named by the path itself is
// followed, and a dangling link is refused because writing through it would create its
// target wherever it points.
func (w *Workspace) checkLinks(op, rel, clean string) error {
	p := filepath.Join(w.real, clean)
	for {
		if _, err := os.Lstat(p); err == nil {
			break
		} else if !errors.Is(err, fs.ErrNotExist) {
			// ENOTDIR and friends: the operation itself will fail inside the root.
			break
		}
		parent := filepath.Dir(p)
		if parent == p || len(parent) < len(w.real) {
			return nil
		}
		p = parent
	}
	resolved, err := filepath.EvalSymlinks(p)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return Violation(op, rel, "a symbolic link on the path cannot be resolved")
		}
		return nil
	}
	if !w.inside(resolved) {
		return Violation(op, rel, "resolves outside the workspace")
	}
	return nil
}

func (w *Workspace) inside(p string) bool {
	if p == w.real {
		return true
	}
	prefix := w.real
	if !strings.HasSuffix(prefix, string(filepath.Separator)) {
		prefix += string(filepath.Separator)
	}
	return strings.HasPrefix(p, prefix)
}

// Abs checks rel like Clean and returns the absolute path it names, for callers (the
// command tool's working directory) that must hand a path to another process.
func (w *Workspace) Abs(op, rel string) (string, error) {
	clean, err := w.Clean(op, rel)
	if err != nil {
		return "", err
	}
	return filepath.Join(w.real, filepath.FromSlash(clean)), nil
}

// classify turns an error from the file system into a classified error: escapes
// caught by os.Root become sandbox violations, a missing file or a name clash is a
// logic error (the call definitely did nothing), anything else is internal.
func classify(op, rel string, err error) error {
	if err == nil {
		return nil
	}
	var se *scripthost.Error
	if errors.As(err, &se) {
		return err
	}
	msg := err.Error()
	if strings.Contains(msg, "escapes from parent") || strings.Contains(msg, "path escapes") {
		return Violation(op, rel, "resolves outside the workspace")
	}
	// The system's error names the host path (open /srv/ws/a.txt: …), which is no
	// business of a script, a model or a plan: what is handed on names the path as the
	// caller gave it, with the system's reason, and keeps that reason as its cause so
	// that errors.Is still tells a missing file from a full disk.
	reason := sysReason(err)
	cause := &fs.PathError{Op: pathOp(err), Path: rel, Err: reason}
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return &scripthost.Error{Class: scripthost.ClassLogic, Code: CodeNotFound, Op: op, Message: fmt.Sprintf("%s: no such file or directory", rel), Err: cause}
	case errors.Is(err, fs.ErrExist):
		return &scripthost.Error{Class: scripthost.ClassLogic, Code: CodeExists, Op: op, Message: fmt.Sprintf("%s: already exists", rel), Err: cause}
	case errors.Is(err, fs.ErrPermission):
		return &scripthost.Error{Class: scripthost.ClassPermission, Code: "permission_denied", Op: op, Message: fmt.Sprintf("%s: permission denied", rel), Err: cause}
	}
	return &scripthost.Error{Class: scripthost.ClassInternal, Code: "io_error", Op: op, Message: fmt.Sprintf("%s: %v", rel, reason), Err: cause}
}

// sysReason is the system's reason for a file error without the paths around it: the
// errno of a *fs.PathError, *os.LinkError or *os.SyscallError (not a directory, no
// space left on device). A reason whose text may still hold a path is replaced by a
// plain one.
func sysReason(err error) error {
	var errno syscall.Errno
	if errors.As(err, &errno) {
		return errno
	}
	for {
		switch e := err.(type) {
		case *fs.PathError:
			err = e.Err
			continue
		case *os.LinkError:
			err = e.Err
			continue
		case *os.SyscallError:
			err = e.Err
			continue
		}
		break
	}
	if err == nil || strings.ContainsAny(err.Error(), `/\`) {
		return errIO
	}
	return err
}

// errIO stands for a file system failure whose own text may name host paths.
var errIO = errors.New("input/output error")

// pathOp is the operation the system's error names (open, rename, readdirent), or "".
func pathOp(err error) string {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Op
	}
	var le *os.LinkError
	if errors.As(err, &le) {
		return le.Op
	}
	return "file"
}

// Codes of the file tools' logic errors, besides scripthost.CodeSandboxViolation.
const (
	CodeNotFound = "not_found"
	CodeExists   = "already_exists"
	CodeNotFile  = "not_a_file"
)
