package codegraph

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	_ "github.com/mattn/go-sqlite3" // the driver the index opens its file with
)

var update = flag.Bool("update", false, "rewrite the golden files")

// copyTree copies the fixture src into a fresh directory, so that the index file is
// not written into testdata.
func copyTree(t testing.TB, src string) string {
	t.Helper()
	dst := t.TempDir()
	if err := os.CopyFS(dst, os.DirFS(src)); err != nil {
		t.Fatal(err)
	}
	return dst
}

func openIndexed(t testing.TB, dir string) *Graph {
	t.Helper()
	g, err := Open(context.Background(), dir, "")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { g.Close() })
	if _, err := g.Index(context.Background()); err != nil {
		t.Fatal(err)
	}
	return g
}

// TestGolden indexes each fixture project and compares the symbols of every file and
// the references to and from chosen names with testdata/golden/<project>.json.
func TestGolden(t *testing.T) {
	cases := []struct {
		project string
		files   []string
		refsTo  []string
		from    [2]string // file, name
	}{
		{"go", []string{"shapes/shapes.go", "main.go"}, []string{"Area", "Shape"}, [2]string{"main.go", "shapes"}},
		{"rust", []string{"src/lib.rs"}, []string{"area", "Shape"}, [2]string{"src/lib.rs", "r"}},
		{"ts", []string{"src/shapes.ts", "src/main.ts"}, []string{"total", "Shape"}, [2]string{"src/main.ts", "unit"}},
		{"python", []string{"geo/shapes.py", "geo/__init__.py"}, []string{"area"}, [2]string{"geo/shapes.py", "self"}},
	}
	for _, c := range cases {
		t.Run(c.project, func(t *testing.T) {
			ctx := context.Background()
			g := openIndexed(t, copyTree(t, filepath.Join("testdata", c.project)))
			got := map[string]any{}
			syms := map[string][]Symbol{}
			for _, f := range c.files {
				s, err := g.Symbols(ctx, f)
				if err != nil {
					t.Fatal(err)
				}
				syms[f] = s
			}
			got["symbols"] = syms
			refs := map[string][]Ref{}
			for _, n := range c.refsTo {
				r, err := g.References(ctx, n)
				if err != nil {
					t.Fatal(err)
				}
				refs[n] = r
			}
			got["references_to"] = refs
			from, err := g.ReferencesFrom(ctx, c.from[0], c.from[1])
			if err != nil {
				t.Fatal(err)
			}
			got["references_from"] = map[string]any{"file": c.from[0], "name": c.from[1], "rows": from}
			b, _ := json.MarshalIndent(got, "", "  ")
			b = append(b, '\n')
			golden := filepath.Join("testdata", "golden", c.project+".json")
			if *update {
				if err := os.MkdirAll(filepath.Dir(golden), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(golden, b, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run go test -update to create it)", err)
			}
			if !bytes.Equal(b, want) {
				t.Errorf("rows differ from %s (go test -update rewrites it); got:\n%s", golden, b)
			}
		})
	}
}

// TestIncremental: a second index parses nothing; a changed file is parsed again and
// its rows replaced; a deleted file's rows are dropped.
func TestIncremental(t *testing.T) {
	ctx := context.Background()
	dir := copyTree(t, filepath.Join("testdata", "go"))
	g := openIndexed(t, dir)
	st, err := g.Index(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if st.Parsed != 0 || st.Unchanged != 2 {
		t.Fatalf("second index: got %+v, want 0 parsed, 2 unchanged", st)
	}
	f := filepath.Join(dir, "shapes", "shapes.go")
	src, _ := os.ReadFile(f)
	src = append(src, []byte("\nfunc Extra() {}\n")...)
	if err := os.WriteFile(f, src, 0o644); err != nil {
		t.Fatal(err)
	}
	st, err = g.Refresh(ctx, "shapes/shapes.go", "main.go")
	if err != nil {
		t.Fatal(err)
	}
	if st.Parsed != 1 || st.Unchanged != 1 {
		t.Fatalf("refresh: got %+v, want 1 parsed, 1 unchanged", st)
	}
	defs, err := g.Definitions(ctx, "Extra")
	if err != nil || len(defs) != 1 {
		t.Fatalf("Extra after refresh: got %v, %v; want one definition", defs, err)
	}
	if err := os.Remove(filepath.Join(dir, "main.go")); err != nil {
		t.Fatal(err)
	}
	st, err = g.Index(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if st.Removed != 1 {
		t.Fatalf("after delete: got %+v, want 1 removed", st)
	}
	if refs, _ := g.ReferencesFrom(ctx, "main.go", "shapes"); len(refs) != 0 {
		t.Fatalf("rows of a deleted file remain: %v", refs)
	}
	// Reopening keeps the index: nothing to parse.
	g.Close()
	g2 := openIndexed(t, dir)
	if st, _ := g2.Index(ctx); st.Parsed != 0 {
		t.Fatalf("after reopen: got %+v, want nothing parsed", st)
	}
}

func TestQualifiedDefinitions(t *testing.T) {
	ctx := context.Background()
	g := openIndexed(t, copyTree(t, filepath.Join("testdata", "go")))
	for name, want := range map[string]int{"Area": 3, "Circle.Area": 1, "Square.Area": 1, "Nope": 0} {
		got, err := g.Definitions(ctx, name)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != want {
			t.Errorf("Definitions(%q): got %d, want %d: %v", name, len(got), want, got)
		}
	}
}

func TestRefusesOtherDatabase(t *testing.T) {
	dir := t.TempDir()
	other := filepath.Join(dir, "other.db")
	db, err := sql.Open("sqlite3", other)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec("CREATE TABLE t(x)"); err != nil {
		t.Fatal(err)
	}
	db.Close()
	before, _ := os.ReadFile(other)
	_, err = Open(context.Background(), dir, other)
	if !errors.Is(err, ErrNotIndex) {
		t.Fatalf("got %v, want ErrNotIndex", err)
	}
	after, _ := os.ReadFile(other)
	if !bytes.Equal(before, after) {
		t.Fatal("the other database was altered")
	}
}

func TestRefusesEscape(t *testing.T) {
	g := openIndexed(t, copyTree(t, filepath.Join("testdata", "go")))
	for _, p := range []string{"../x.go", "/etc/passwd.go", "a/../../x.go"} {
		if _, err := g.Refresh(context.Background(), p); err == nil {
			t.Errorf("Refresh(%q): got no error, want outside the root", p)
		}
	}
}

func TestSyntaxErrors(t *testing.T) {
	l, _ := LanguageOf("x.go")
	p, err := Parse(context.Background(), l, "x.go", []byte("package x\n\nfunc F( {\n"))
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Errors) == 0 {
		t.Fatal("got no syntax errors, want at least one")
	}
	if p.Errors[0].Line < 1 {
		t.Fatalf("error line %d, want ≥ 1", p.Errors[0].Line)
	}
}

// TestMultipleNames: a declaration that names several things defines each of them, and
// none of them is a reference.
func TestMultipleNames(t *testing.T) {
	l, _ := LanguageOf("x.go")
	src := "package x\n\nvar a, b int\n\ntype P struct {\n\tX, Y float64\n}\n\nfunc f() { var local int; _ = local }\n"
	p, err := Parse(context.Background(), l, "x.go", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, s := range p.Symbols {
		got = append(got, s.Kind+" "+s.QualifiedName())
	}
	want := "var a,var b,type P,field P.X,field P.Y,function f"
	if strings.Join(got, ",") != want {
		t.Fatalf("got %s, want %s", strings.Join(got, ","), want)
	}
	for _, r := range p.Refs {
		if r.Name == "a" || r.Name == "b" || r.Name == "X" || r.Name == "Y" {
			t.Errorf("definition %s listed as a reference", r.Name)
		}
	}
}

// TestOlderSchemaIsRebuilt: an index written by another schema version is dropped and
// rebuilt, not read.
func TestOlderSchemaIsRebuilt(t *testing.T) {
	ctx := context.Background()
	dir := copyTree(t, filepath.Join("testdata", "go"))
	g := openIndexed(t, dir)
	if _, err := g.db.Exec("PRAGMA user_version = 1"); err != nil {
		t.Fatal(err)
	}
	g.Close()
	g2, err := Open(ctx, dir, "")
	if err != nil {
		t.Fatal(err)
	}
	defer g2.Close()
	st, err := g2.Index(ctx)
	if err != nil || st.Parsed != 2 {
		t.Fatalf("got %+v, %v; want every file parsed again", st, err)
	}
}
