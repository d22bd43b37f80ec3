package workspace

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/scripthost/scripthost"
	"github.com/scripthost/scripthost/hostfuncs"
)

// newWS returns a workspace in a temp dir holding a.txt, sub/b.txt, a link "up" to the
// directory above the root, a link "slash" to /, a link "inner" to sub, and a dangling
// link "dangle" pointing outside.
func newWS(t *testing.T) (*Workspace, string) {
	t.Helper()
	outer := t.TempDir()
	dir := filepath.Join(outer, "ws")
	must(t, os.MkdirAll(filepath.Join(dir, "sub"), 0o755))
	must(t, os.WriteFile(filepath.Join(dir, "a.txt"), []byte("alpha\nbeta\n"), 0o644))
	must(t, os.WriteFile(filepath.Join(dir, "sub", "b.txt"), []byte("gamma\nalphabet\n"), 0o644))
	must(t, os.WriteFile(filepath.Join(outer, "secret.txt"), []byte("outside"), 0o644))
	must(t, os.Symlink(outer, filepath.Join(dir, "up")))
	must(t, os.Symlink("/", filepath.Join(dir, "slash")))
	must(t, os.Symlink("sub", filepath.Join(dir, "inner")))
	must(t, os.Symlink(filepath.Join(outer, "nothing-here"), filepath.Join(dir, "dangle")))
	w, err := New(dir)
	must(t, err)
	t.Cleanup(func() { w.Close() })
	return w, dir
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func isViolation(err error) bool {
	var se *scripthost.Error
	return errors.As(err, &se) && se.Code == scripthost.CodeSandboxViolation
}

func TestCleanRefusesEscapes(t *testing.T) {
	w, _ := newWS(t)
	tests := []struct {
		path string
		ok   bool
	}{
		{"a.txt", true},
		{"", true},
		{".", true},
		{"sub/b.txt", true},
		{"sub/./b.txt", true},
		{"new/dir/file.txt", true},
		{"inner/b.txt", true},
		{"../../etc/passwd", false},
		{"..", false},
		{"sub/../../x", false},
		{"sub/../a.txt", false},
		{"/etc/passwd", false},
		{"/", false},
		{"slash/etc/passwd", false},
		{"slash", false},
		{"up/secret.txt", false},
		{"up", false},
		{"up/new.txt", false},
		{"dangle", false},
		{"a\x00b", false},
	}
	for _, tt := range tests {
		t.Run(tt.path, func(t *testing.T) {
			_, err := w.Clean("test", tt.path)
			if tt.ok && err != nil {
				t.Fatalf("got %v, want accepted", err)
			}
			if !tt.ok {
				if !isViolation(err) {
					t.Fatalf("got %v, want a sandbox_violation", err)
				}
				if !strings.Contains(err.Error(), fmt.Sprintf("%q", tt.path)) {
					t.Errorf("got message %q, want it to name %q", err, tt.path)
				}
			}
		})
	}
}

func TestToolsRefuseTraversal(t *testing.T) {
	w, dir := newWS(t)
	reg := hostfuncs.NewRegistry()
	must(t, reg.Register(w.Tools()...))
	calls := []struct{ tool, input string }{
		{"plan.file_read", `{"path":"../../etc/passwd"}`},
		{"plan.file_read", `{"path":"/etc/passwd"}`},
		{"plan.file_read", `{"path":"slash/etc/passwd"}`},
		{"plan.file_read", `{"path":"up/secret.txt"}`},
		{"plan.file_write", `{"path":"up/planted.txt","content":"x"}`},
		{"plan.file_write", `{"path":"dangle","content":"x"}`},
		{"plan.file_create", `{"path":"../planted.txt","content":"x"}`},
		{"plan.file_search", `{"pattern":"root","path":"slash/etc"}`},
		{"plan.file_glob", `{"pattern":"../*"}`},
		{"plan.file_glob", `{"pattern":"/etc/*"}`},
		{"Files.list", `{"dir":"slash"}`},
		{"Files.move", `{"from":"a.txt","to":"up/moved.txt"}`},
		{"Files.delete", `{"path":"up/secret.txt"}`},
	}
	for _, c := range calls {
		t.Run(c.tool+c.input, func(t *testing.T) {
			ns, m, _ := strings.Cut(c.tool, ".")
			tool, ok := reg.Lookup(ns, m)
			if !ok {
				t.Fatalf("no tool %s", c.tool)
			}
			_, err := tool.Execute(context.Background(), json.RawMessage(c.input))
			if !isViolation(err) {
				t.Fatalf("got %v, want a sandbox_violation", err)
			}
		})
	}
	if b, _ := os.ReadFile(filepath.Join(filepath.Dir(dir), "secret.txt")); string(b) != "outside" {
		t.Errorf("got outside file %q, want it untouched", b)
	}
	for _, name := range []string{"planted.txt", "moved.txt", "nothing-here"} {
		if _, err := os.Lstat(filepath.Join(filepath.Dir(dir), name)); err == nil {
			t.Errorf("got %s created outside the workspace, want nothing", name)
		}
	}
}

func call(t *testing.T, tool *hostfuncs.Tool, input string) (json.RawMessage, error) {
	t.Helper()
	return tool.Execute(context.Background(), json.RawMessage(input))
}

func TestFileTools(t *testing.T) {
	w, dir := newWS(t)
	reg := hostfuncs.NewRegistry()
	must(t, reg.Register(w.Tools()...))
	get := func(name string) *hostfuncs.Tool {
		ns, m, _ := strings.Cut(name, ".")
		tool, ok := reg.Lookup(ns, m)
		if !ok {
			t.Fatalf("no tool %s", name)
		}
		return tool
	}

	out, err := call(t, get("plan.file_write"), `{"path":"x/y/z.txt","content":"hello"}`)
	must(t, err)
	if string(out) != `{"path":"x/y/z.txt","bytes":5}` {
		t.Errorf("got %s, want path and bytes", out)
	}
	// The same write again is harmless.
	_, err = call(t, get("plan.file_write"), `{"path":"x/y/z.txt","content":"hello"}`)
	must(t, err)
	out, err = call(t, get("plan.file_read"), `{"path":"x/y/z.txt"}`)
	must(t, err)
	if string(out) != `{"content":"hello"}` {
		t.Errorf("got %s, want the content", out)
	}
	if _, err := call(t, get("plan.file_create"), `{"path":"x/y/z.txt","content":"again"}`); err == nil || !strings.Contains(err.Error(), "already exists") {
		t.Errorf("got %v, want already exists", err)
	}
	_, err = call(t, get("plan.file_create"), `{"path":"fresh.txt","content":"new"}`)
	must(t, err)
	_, err = call(t, get("Files.move"), `{"from":"fresh.txt","to":"moved/fresh.txt"}`)
	must(t, err)
	if b, _ := os.ReadFile(filepath.Join(dir, "moved", "fresh.txt")); string(b) != "new" {
		t.Errorf("got %q after move, want new", b)
	}
	_, err = call(t, get("Files.delete"), `{"path":"moved/fresh.txt"}`)
	must(t, err)
	if _, err := os.Stat(filepath.Join(dir, "moved", "fresh.txt")); !os.IsNotExist(err) {
		t.Errorf("got %v, want the file deleted", err)
	}
	out, err = call(t, get("Files.list"), `{"dir":"sub"}`)
	must(t, err)
	if string(out) != `[{"name":"b.txt","size":15,"dir":false}]` {
		t.Errorf("got %s, want one entry", out)
	}
	out, err = call(t, get("plan.file_search"), `{"pattern":"^alpha","glob":"**/*.txt"}`)
	must(t, err)
	var sr SearchResult
	must(t, json.Unmarshal(out, &sr))
	var got []string
	for _, m := range sr.Matches {
		got = append(got, m.Path+":"+m.Text)
	}
	// inner/ is a link to sub/; WalkDir does not follow it.
	if want := "a.txt:alpha,sub/b.txt:alphabet"; strings.Join(got, ",") != want {
		t.Errorf("got %v, want %s", got, want)
	}
	out, err = call(t, get("plan.file_glob"), `{"pattern":"**/*.txt"}`)
	must(t, err)
	if want := `{"paths":["a.txt","sub/b.txt","x/y/z.txt"],"truncated":false}`; string(out) != want {
		t.Errorf("got %s, want %s", out, want)
	}
	// No temporary files are left behind.
	entries, _ := os.ReadDir(filepath.Join(dir, "x", "y"))
	if len(entries) != 1 {
		t.Errorf("got %d entries in x/y, want 1", len(entries))
	}
}

func TestReadOnlyPredicates(t *testing.T) {
	w, _ := newWS(t)
	want := map[string]scripthost.Operation{
		"Files.list": scripthost.OpRead, "Files.read": scripthost.OpRead,
		"Files.write": scripthost.OpMutate, "Files.move": scripthost.OpMutate, "Files.delete": scripthost.OpMutate, "Files.modify": scripthost.OpMutate,
		"plan.file_read": scripthost.OpRead, "plan.file_search": scripthost.OpRead, "plan.file_glob": scripthost.OpRead,
		"plan.file_write": scripthost.OpMutate, "plan.file_create": scripthost.OpMutate,
	}
	tools := w.Tools()
	if len(tools) != len(want) {
		t.Fatalf("got %d tools, want %d", len(tools), len(want))
	}
	for _, tool := range tools {
		if got := tool.Classify(json.RawMessage(`{}`)); got != want[tool.Name()] {
			t.Errorf("%s: got %s, want %s", tool.Name(), got, want[tool.Name()])
		}
		var s map[string]any
		must(t, json.Unmarshal(tool.InputSchema, &s))
		if s["additionalProperties"] != false || s["required"] == nil {
			t.Errorf("%s: got schema %s, want additionalProperties false and required", tool.Name(), tool.InputSchema)
		}
	}
}

func TestSearchCap(t *testing.T) {
	w, dir := newWS(t)
	must(t, os.WriteFile(filepath.Join(dir, "many.txt"), []byte(strings.Repeat("hit\n", MaxMatches+5)), 0o644))
	res, err := w.Search("s", "hit", "", "many.txt")
	must(t, err)
	if len(res.Matches) != MaxMatches || !res.Truncated {
		t.Errorf("got %d matches truncated=%v, want %d truncated", len(res.Matches), res.Truncated, MaxMatches)
	}
}

func TestMatchGlob(t *testing.T) {
	tests := []struct {
		pat, path string
		want      bool
	}{
		{"*.go", "a.go", true},
		{"*.go", "d/a.go", false},
		{"**/*.go", "a.go", true},
		{"**/*.go", "d/e/a.go", true},
		{"d/**", "d/e/a.go", true},
		{"d/**/a.go", "d/a.go", true},
		{"d/*/a.go", "d/a.go", false},
		{"?.txt", "ab.txt", false},
	}
	for _, tt := range tests {
		if got := MatchGlob(tt.pat, tt.path); got != tt.want {
			t.Errorf("MatchGlob(%q, %q): got %v, want %v", tt.pat, tt.path, got, tt.want)
		}
	}
}

func TestReconcileWrite(t *testing.T) {
	w, _ := newWS(t)
	var write *hostfuncs.Tool
	for _, tool := range w.Tools() {
		if tool.Name() == "plan.file_write" {
			write = tool
		}
	}
	m := scripthost.Mutation{Namespace: "plan", Method: "file_write", Params: json.RawMessage(`{"content":"v1","path":"r.txt"}`)}
	rec, err := write.Reconcile(context.Background(), m)
	must(t, err)
	if rec.Outcome != scripthost.ReconcileFailed {
		t.Errorf("before the write: got %s, want failed", rec.Outcome)
	}
	_, err = write.Execute(context.Background(), m.Params)
	must(t, err)
	rec, err = write.Reconcile(context.Background(), m)
	must(t, err)
	if rec.Outcome != scripthost.ReconcileApplied {
		t.Errorf("after the write: got %s, want applied", rec.Outcome)
	}
}

func BenchmarkWrite(b *testing.B) {
	w, err := New(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	content := []byte(strings.Repeat("x", 1024))
	for i := 0; b.Loop(); i++ {
		content[0] = byte(i)
		if err := w.Write("bench", "d/f.txt", content); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkClean(b *testing.B) {
	w, err := New(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		if _, err := w.Clean("bench", "a/b/c/d.txt"); err != nil {
			b.Fatal(err)
		}
	}
}

// TestWalksStayInside checks that search and glob do not follow links out of the
// workspace: the file beside the root holds "outside".
func TestWalksStayInside(t *testing.T) {
	w, _ := newWS(t)
	res, err := w.Search("s", "outside|root:", "", "")
	must(t, err)
	if len(res.Matches) != 0 {
		t.Errorf("got %+v, want no match from outside the workspace", res.Matches)
	}
	for _, pat := range []string{"up/*", "slash/etc/*", "**/secret.txt", "**/passwd"} {
		paths, _, err := w.Glob("g", pat)
		must(t, err)
		if len(paths) != 0 {
			t.Errorf("glob %s: got %v, want nothing from outside", pat, paths)
		}
	}
}
