package codetool

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/scripthost/scripthost/codegraph"
)

// noHostPath fails when s holds the workspace's place on the host.
func noHostPath(t *testing.T, what, s, dir string) {
	t.Helper()
	real, _ := filepath.EvalSymlinks(dir)
	for _, p := range []string{dir, real} {
		if p != "" && strings.Contains(s, p) {
			t.Errorf("%s %q holds the host path %q", what, s, p)
		}
	}
}

// TestIndexErrorsHoldNoHostPath: a query the index fails on (its database cannot be
// opened, a source name that is a directory, a link to nothing) reports files relative
// to the workspace.
func TestIndexErrorsHoldNoHostPath(t *testing.T) {
	tools, dir := fixture(t, "go")
	// The index's database cannot be opened: a directory has its name.
	if err := os.MkdirAll(filepath.Join(dir, codegraph.DefaultFile, "x"), 0o755); err != nil {
		t.Fatal(err)
	}
	_, err := call(t, tool(t, tools.PlanTools(), "symbols_in_file"), `{"path":"shapes/shapes.go"}`)
	if err == nil {
		t.Fatal("got no error from an index that cannot be opened")
	}
	for e := err; e != nil; e = errors.Unwrap(e) {
		noHostPath(t, "error", e.Error(), dir)
	}
	if err := os.RemoveAll(filepath.Join(dir, codegraph.DefaultFile)); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(dir, "trap.go"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("shapes/missing.go", filepath.Join(dir, "gone.go")); err != nil {
		t.Fatal(err)
	}
	for _, in := range []string{`{"path":"trap.go"}`, `{"path":"gone.go"}`, `{"path":"nope.go"}`, `{"path":"../x.go"}`} {
		_, err := call(t, tool(t, tools.PlanTools(), "symbols_in_file"), in)
		if err == nil {
			continue
		}
		for e := err; e != nil; e = errors.Unwrap(e) {
			noHostPath(t, "error", e.Error(), dir)
		}
	}
}

// TestCheckerOutputHoldsNoHostPath: a checker that fails in its own words (go names
// the go.mod it cannot parse by its absolute path) is reported with the path relative
// to the workspace.
func TestCheckerOutputHoldsNoHostPath(t *testing.T) {
	needChecker(t, "go")
	tools, dir := fixture(t, "go")
	write(t, dir, "go.mod", "module example.com/shapes\n\nbogus directive\n")
	res, err := tools.Check(context.Background(), ".")
	if err != nil {
		noHostPath(t, "error", err.Error(), dir)
		return
	}
	if res.OK || res.Stderr == "" {
		t.Fatalf("got %+v, want the checker's failure in its own words", res)
	}
	if !strings.Contains(res.Stderr, "go.mod") {
		t.Errorf("stderr %q does not name go.mod", res.Stderr)
	}
	noHostPath(t, "stderr", res.Stderr, dir)
	for _, d := range res.Diagnostics {
		noHostPath(t, "diagnostic", d.Message, dir)
	}
}

func TestHideDir(t *testing.T) {
	tests := []struct{ in, want string }{
		{"open /srv/ws/sub/a.go: no such file", "open sub/a.go: no such file"},
		{"chdir /srv/ws: not a directory", "chdir .: not a directory"},
		{"/srv/ws/go.mod:3: unknown directive", "go.mod:3: unknown directive"},
		{"/srv/other/a.go", "/srv/other/a.go"},
	}
	for _, tt := range tests {
		if got := hideDir(tt.in, "/srv/ws"); got != tt.want {
			t.Errorf("hideDir(%q): got %q, want %q", tt.in, got, tt.want)
		}
	}
}
