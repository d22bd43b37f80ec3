package workspace

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/scripthost/scripthost"
	"github.com/scripthost/scripthost/hostfuncs"
)

// hostPaths are the host path prefixes an error handed to a script must not hold.
func hostPaths(dir string) []string {
	out := []string{dir, "/root/", "/home/", "/tmp/", os.TempDir()}
	if real, err := filepath.EvalSymlinks(dir); err == nil {
		out = append(out, real)
	}
	return out
}

// scriptText is every text of err a script, a model or a plan may see: the message,
// and each error of the chain (a caller may print it with %v or read err.Err).
func scriptText(err error) []string {
	var out []string
	for e := err; e != nil; e = errors.Unwrap(e) {
		out = append(out, e.Error())
	}
	return out
}

func leaksHostPath(t *testing.T, err error, dir string) {
	t.Helper()
	for _, s := range scriptText(err) {
		for _, p := range hostPaths(dir) {
			if strings.Contains(s, p) {
				t.Errorf("error text %q holds the host path %q", s, p)
			}
		}
	}
}

// TestFileToolErrorsHoldNoHostPath runs each file tool into each way a file operation
// fails — a missing file, a directory where a file is wanted, a file where a
// directory is wanted, a path leaving the workspace — and checks that the error a
// script sees names the path as the script gave it, never the workspace's place on the
// host.
func TestFileToolErrorsHoldNoHostPath(t *testing.T) {
	w, dir := newWS(t)
	tools := map[string]*hostfuncs.Tool{}
	for _, tl := range w.Tools() {
		tools[tl.Name()] = tl
	}
	tests := []struct {
		tool, input string
	}{
		{"Files.read", `{"path":"missing.txt"}`},
		{"Files.read", `{"path":"sub"}`},
		{"Files.read", `{"path":"a.txt/x"}`},
		{"Files.read", `{"path":"../secret.txt"}`},
		{"Files.read", `{"path":"up/secret.txt"}`},
		{"Files.read", `{"path":"dangle"}`},
		{"Files.list", `{"dir":"missing"}`},
		{"Files.list", `{"dir":"a.txt"}`},
		{"Files.list", `{"dir":"slash"}`},
		{"Files.write", `{"path":"sub","content":"x"}`},
		{"Files.write", `{"path":"a.txt/x","content":"x"}`},
		{"Files.write", `{"path":"/etc/x","content":"x"}`},
		{"Files.write", `{"path":"up/x","content":"x"}`},
		{"Files.move", `{"from":"missing.txt","to":"b.txt"}`},
		{"Files.move", `{"from":"a.txt","to":"a.txt/x"}`},
		{"Files.move", `{"from":"a.txt","to":"sub"}`},
		{"Files.move", `{"from":"a.txt","to":"up/x"}`},
		{"Files.delete", `{"path":"missing.txt"}`},
		{"Files.delete", `{"path":"a.txt/x"}`},
		{"Files.delete", `{"path":"../secret.txt"}`},
		{"Files.modify", `{"path":"missing.txt","edits":[{"search":"a","replace":"b"}]}`},
		{"Files.modify", `{"path":"sub","edits":[{"search":"a","replace":"b"}]}`},
		{"Files.modify", `{"path":"a.txt","edits":[{"search":"nowhere","replace":"b"}]}`},
		{"plan.file_create", `{"path":"a.txt","content":"x"}`},
		{"plan.file_create", `{"path":"a.txt/x","content":"x"}`},
		{"plan.file_create", `{"path":"sub","content":"x"}`},
		{"plan.file_search", `{"pattern":"a","path":"missing"}`},
		{"plan.file_search", `{"pattern":"a","path":"a.txt/x"}`},
		{"plan.file_search", `{"pattern":"(","path":"."}`},
		{"plan.file_search", `{"pattern":"a","path":"up"}`},
		{"plan.file_glob", `{"pattern":"[" }`},
	}
	for _, tt := range tests {
		t.Run(tt.tool+tt.input, func(t *testing.T) {
			tool := tools[tt.tool]
			if tool == nil {
				t.Fatalf("no tool %s", tt.tool)
			}
			_, err := tool.Execute(context.Background(), json.RawMessage(tt.input))
			if err == nil {
				t.Fatalf("got no error")
			}
			leaksHostPath(t, err, dir)
		})
	}
}

// TestClassifyHoldsNoHostPath: whatever the file system answers, the classified error
// carries the path as the script gave it. A permission error (which a test running as
// root cannot provoke), an I/O error and a full disk come back from the system naming
// the host path.
func TestClassifyHoldsNoHostPath(t *testing.T) {
	w, dir := newWS(t)
	abs := filepath.Join(w.Dir(), "sub", "b.txt")
	for _, cause := range []error{fs.ErrPermission, syscall.EACCES, syscall.EIO, syscall.ENOSPC, syscall.EROFS, fs.ErrNotExist, fs.ErrExist} {
		for _, raw := range []error{
			&fs.PathError{Op: "open", Path: abs, Err: cause},
			&os.LinkError{Op: "rename", Old: abs, New: abs + ".new", Err: cause},
			&os.SyscallError{Syscall: "openat " + abs, Err: cause},
			fmt.Errorf("walking %s: %w", abs, &fs.PathError{Op: "lstat", Path: abs, Err: errors.New("failed at " + abs)}),
		} {
			err := classify("Files.write", "sub/b.txt", raw)
			var se *scripthost.Error
			if !errors.As(err, &se) {
				t.Fatalf("%v: got %T, want a classified error", raw, err)
			}
			if !strings.Contains(se.Message, "sub/b.txt") {
				t.Errorf("%v: got %q, want it to name sub/b.txt", raw, se.Message)
			}
			leaksHostPath(t, err, dir)
		}
	}
}

// TestPermissionErrorHoldsNoHostPath provokes a real permission error where the test
// can (not as root, which reads and writes regardless of modes).
func TestPermissionErrorHoldsNoHostPath(t *testing.T) {
	if os.Geteuid() == 0 {
		t.Skip("root ignores file modes; TestClassifyHoldsNoHostPath covers the error")
	}
	w, dir := newWS(t)
	must(t, os.Chmod(filepath.Join(dir, "sub"), 0o000))
	t.Cleanup(func() { os.Chmod(filepath.Join(dir, "sub"), 0o755) })
	tools := map[string]*hostfuncs.Tool{}
	for _, tl := range w.Tools() {
		tools[tl.Name()] = tl
	}
	for _, tt := range []struct{ tool, input string }{
		{"Files.read", `{"path":"sub/b.txt"}`},
		{"Files.list", `{"dir":"sub"}`},
		{"Files.write", `{"path":"sub/c.txt","content":"x"}`},
		{"Files.delete", `{"path":"sub/b.txt"}`},
	} {
		_, err := tools[tt.tool].Execute(context.Background(), json.RawMessage(tt.input))
		if !scripthost.IsPermission(err) {
			t.Errorf("%s %s: got %v, want a permission error", tt.tool, tt.input, err)
		}
		leaksHostPath(t, err, dir)
	}
}
