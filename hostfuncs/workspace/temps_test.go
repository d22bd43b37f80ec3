package workspace

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

func TestIsTempName(t *testing.T) {
	for i := 0; i < 100; i++ {
		if n := tempName("main.go"); !IsTempName(n) {
			t.Fatalf("tempName gave %q, which IsTempName does not recognise", n)
		}
	}
	tests := []struct {
		name string
		want bool
	}{
		{".a.tmp-0123456789ab", true},
		{"..tmp-0123456789ab", false}, // no base: the writer never makes it
		{".a.b.tmp-abcdefabcdef", true},
		{".tmp-0123456789ab", false},
		{"a.tmp-0123456789ab", false},
		{".a.tmp-0123456789AB", false},
		{".a.tmp-0123456789a", false},
		{".a.tmp-0123456789abc", false},
		{".a.tmp-0123456789ag", false},
		{".a.tmp-", false},
		{".a.tmp-0123456789ab.bak", false},
	}
	for _, tc := range tests {
		if got := IsTempName(tc.name); got != tc.want {
			t.Errorf("IsTempName(%q): got %v, want %v", tc.name, got, tc.want)
		}
	}
}

// TestRemoveTemps removes regular files of the pattern anywhere in the workspace and
// nothing else: not a directory or a symbolic link of that name, not a file a link
// points to outside.
func TestRemoveTemps(t *testing.T) {
	dir, outside := t.TempDir(), t.TempDir()
	put := func(p string) {
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	put(filepath.Join(dir, ".a.txt.tmp-0123456789ab"))
	put(filepath.Join(dir, "deep/er/.b.go.tmp-abcdef012345"))
	put(filepath.Join(dir, "a.txt"))
	put(filepath.Join(dir, ".a.txt.tmp-mine"))
	os.MkdirAll(filepath.Join(dir, ".d.tmp-0123456789ab"), 0o755)
	put(filepath.Join(outside, ".x.tmp-0123456789ab"))
	os.Symlink(filepath.Join(outside, ".x.tmp-0123456789ab"), filepath.Join(dir, ".l.tmp-0123456789ab"))
	os.Symlink(outside, filepath.Join(dir, "out"))
	w, err := New(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	removed, err := w.RemoveTemps()
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(removed)
	if want := []string{".a.txt.tmp-0123456789ab", "deep/er/.b.go.tmp-abcdef012345"}; !slices.Equal(removed, want) {
		t.Fatalf("removed: got %v, want %v", removed, want)
	}
	for _, p := range []string{"a.txt", ".a.txt.tmp-mine", ".d.tmp-0123456789ab", ".l.tmp-0123456789ab"} {
		if _, err := os.Lstat(filepath.Join(dir, p)); err != nil {
			t.Errorf("%s was removed", p)
		}
	}
	if _, err := os.Stat(filepath.Join(outside, ".x.tmp-0123456789ab")); err != nil {
		t.Errorf("the file outside was removed")
	}
}
