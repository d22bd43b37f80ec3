package workspace

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// TestWrite covers the write cases the direct path takes and those it leaves to the
// general path (links inside the workspace): the content lands where the path says,
// identical content leaves the file alone, and no temporary file is left behind.
func TestWrite(t *testing.T) {
	w, dir := newWS(t)
	inode := func(rel string) uint64 {
		t.Helper()
		fi, err := os.Stat(filepath.Join(dir, rel))
		must(t, err)
		return fi.Sys().(*syscall.Stat_t).Ino
	}
	steps := []struct {
		path, content, file string
	}{
		{"new/deep/er/f.txt", "one", "new/deep/er/f.txt"},
		{"new/deep/er/f.txt", "two", "new/deep/er/f.txt"},    // same size, other content
		{"new/deep/er/f.txt", "three!", "new/deep/er/f.txt"}, // other size
		{"a.txt", "replaced", "a.txt"},
		{"inner/via-link.txt", "linked", "sub/via-link.txt"}, // a directory link inside the workspace
		{"./sub//b.txt", "cleaned", "sub/b.txt"},
	}
	for _, s := range steps {
		must(t, w.Write("w", s.path, []byte(s.content)))
		if b, err := os.ReadFile(filepath.Join(dir, s.file)); err != nil || string(b) != s.content {
			t.Fatalf("write %s: got %q (%v) in %s, want %q", s.path, b, err, s.file, s.content)
		}
	}
	before := inode("a.txt")
	must(t, w.Write("w", "a.txt", []byte("replaced")))
	if after := inode("a.txt"); after != before {
		t.Errorf("same content again: got the file replaced (inode %d → %d), want it left alone", before, after)
	}
	must(t, os.Symlink("a.txt", filepath.Join(dir, "alias")))
	must(t, w.Write("w", "alias", []byte("through a link")))
	if b, _ := os.ReadFile(filepath.Join(dir, "alias")); string(b) != "through a link" {
		t.Errorf("write over a link inside the workspace: got %q", b)
	}
	if err := w.Write("w", "a.txt/under-a-file", []byte("x")); err == nil {
		t.Error("write under a regular file: got no error, want one")
	}
	if err := w.Write("w", "sub", []byte("x")); err == nil {
		t.Error("write over a directory: got no error, want one")
	}
	_ = filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err == nil && strings.Contains(d.Name(), ".tmp-") {
			t.Errorf("temporary file %s left behind", p)
		}
		return nil
	})
}

// TestWriteAfterClose: a closed workspace refuses writes instead of writing through a
// handle that may have been reused.
func TestWriteAfterClose(t *testing.T) {
	w, err := New(t.TempDir())
	must(t, err)
	must(t, w.Close())
	if err := w.Write("w", "f.txt", []byte("x")); err == nil {
		t.Error("write after Close: got no error, want one")
	}
}
