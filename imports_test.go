package scripthost_test

import (
	"bufio"
	"fmt"
	"io"
	"maps"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strings"
	"testing"
)

const module = "github.com/scripthost/scripthost"

// archDoc is the document whose package graph the module's imports must follow.
const archDoc = "docs/architecture.md"

// TestDependencyDirection keeps the imports of the module's packages to the arrows of
// docs/architecture.md's package graph (see archGraph.check), and holds the rules the
// graph rests on whatever it draws: the root package uses the standard library only,
// sandboxes never see the ledger, the runtime and the host pick no database driver and
// the runtime no engine.
func TestDependencyDirection(t *testing.T) {
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("go command not found")
	}
	out, err := exec.Command("go", "list", "-f", `{{.ImportPath}}|{{join .Imports " "}}|{{join .Deps " "}}`, "./...").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	drivers := []string{"github.com/mattn/go-sqlite3", "github.com/jackc/pgx", "github.com/lib/pq"}
	imports := map[string][]string{}
	deps := map[string][]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		fields := strings.Split(line, "|")
		if len(fields) != 3 {
			t.Fatalf("go list: unexpected line %q", line)
		}
		imports[fields[0]] = strings.Fields(fields[1])
		deps[fields[0]] = strings.Fields(fields[2])
	}
	if len(deps) < 5 {
		t.Fatalf("go list found %d packages, want the whole module", len(deps))
	}

	g, err := readArchGraph(archDoc)
	if err != nil {
		t.Fatal(err)
	}
	for _, problem := range g.check(imports) {
		t.Error(problem)
	}

	has := func(pkg, prefix string) bool {
		for _, d := range deps[pkg] {
			if d == prefix || strings.HasPrefix(d, prefix+"/") {
				return true
			}
		}
		return false
	}
	for _, d := range deps[module] {
		if first, _, _ := strings.Cut(d, "/"); strings.Contains(first, ".") {
			t.Errorf("root package depends on %s: want the standard library only", d)
		}
	}
	for pkg := range deps {
		rel := strings.TrimPrefix(strings.TrimPrefix(pkg, module), "/")
		if rel == "sandbox" || strings.HasPrefix(rel, "sandbox/") {
			if has(pkg, module+"/ledger") {
				t.Errorf("%s depends on the ledger: sandboxes reach it only through tools", pkg)
			}
		}
		if rel == "runtime" || rel == "host" || rel == "hostfuncs" || strings.HasPrefix(rel, "hostfuncs/") || rel == "sandbox" || strings.HasPrefix(rel, "sandbox/") {
			for _, drv := range drivers {
				if has(pkg, drv) {
					t.Errorf("%s depends on the SQL driver %s: only cmd/ and the ledger's own backends pick drivers", pkg, drv)
				}
			}
		}
		if rel == "runtime" {
			for _, eng := range []string{module + "/sandbox/js", module + "/sandbox/wasm", module + "/ledger/sqlite", module + "/ledger/postgres"} {
				if has(pkg, eng) {
					t.Errorf("runtime depends on %s: it must use the contracts only", eng)
				}
			}
		}
	}
}

// TestArchGraphCheck shows the graph check failing for each way the imports and the
// drawing can part: an import against the arrows (naming both packages), an arrow no
// import needs, a package in no box, a box naming a package that does not exist, and a
// cycle.
func TestArchGraphCheck(t *testing.T) {
	const doc = "```mermaid\n" +
		"flowchart TD\n" +
		"  %% a comment\n" +
		"  subgraph core [the core]\n" +
		"  root[\"scripthost\"]\n" +
		"  ledger[\"ledger\"]\n" +
		"  end\n" +
		"  stores[\"ledger/sqlite<br>ledger/postgres\"]\n" +
		"  runtime[\"runtime\"]\n" +
		"  ledger --> root\n" +
		"  stores --> ledger\n" +
		"  runtime --> ledger\n" +
		"```\n"
	g, err := parseArchGraph(strings.NewReader(doc))
	if err != nil {
		t.Fatal(err)
	}
	pkg := func(rel string) string { return module + "/" + rel }
	good := map[string][]string{
		module:                 {"fmt"},
		pkg("ledger"):          {module, "context"},
		pkg("ledger/sqlite"):   {pkg("ledger"), "github.com/mattn/go-sqlite3"},
		pkg("ledger/postgres"): {pkg("ledger"), module},
		pkg("runtime"):         {pkg("ledger"), module},
	}
	if problems := g.check(good); len(problems) != 0 {
		t.Fatalf("imports that follow the arrows: %q", problems)
	}

	against := clone(good)
	against[pkg("ledger")] = append(against[pkg("ledger")], pkg("runtime"))
	wantProblem(t, g.check(against), "ledger imports runtime against the arrows of "+archDoc)

	unused := clone(good)
	unused[pkg("runtime")] = []string{module}
	wantProblem(t, g.check(unused), archDoc+" draws runtime --> ledger, but no package of runtime imports one of ledger")

	unboxed := clone(good)
	unboxed[pkg("serve")] = []string{pkg("runtime")}
	wantProblem(t, g.check(unboxed), "package serve is in no box of "+archDoc)

	missing := clone(good)
	delete(missing, pkg("ledger/postgres"))
	wantProblem(t, g.check(missing), archDoc+" names ledger/postgres, which is not a package of the module")

	cyclic, err := parseArchGraph(strings.NewReader(strings.Replace(doc, "  runtime --> ledger\n", "  runtime --> ledger\n  root --> stores\n", 1)))
	if err != nil {
		t.Fatal(err)
	}
	wantProblem(t, cyclic.check(good), "the package graph of "+archDoc+" has a cycle through")

	if _, err := parseArchGraph(strings.NewReader("```mermaid\nflowchart TD\n  a[\"ledger\"]\n  a --- b\n```\n")); err == nil ||
		!strings.Contains(err.Error(), `line 4: "a --- b"`) {
		t.Errorf("a line the parser does not know: got %v, want an error naming it", err)
	}
}

func clone(m map[string][]string) map[string][]string {
	out := make(map[string][]string, len(m))
	for k, v := range m {
		out[k] = slices.Clone(v)
	}
	return out
}

func wantProblem(t *testing.T, problems []string, want string) {
	t.Helper()
	for _, p := range problems {
		if strings.Contains(p, want) {
			return
		}
	}
	t.Errorf("problems %q: none says %q", problems, want)
}

// archGraph is the package graph of docs/architecture.md: its first mermaid block, in
// which each box is a node `id["pkg<br>pkg…"]` listing packages by their path in the
// module ("scripthost" is the root package), and each arrow a line `a --> b`. An arrow
// says that the packages of a may import those of b, and, through b's arrows, whatever
// b may import.
type archGraph struct {
	box    map[string]string   // package import path → box id
	names  map[string][]string // box id → packages, as written
	arrows map[string][]string // box id → the boxes it points at
}

var (
	archBox   = regexp.MustCompile(`^(\w+)\["([^"]+)"\]$`)
	archArrow = regexp.MustCompile(`^(\w+) --> (\w+)$`)
)

func readArchGraph(path string) (*archGraph, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	g, err := parseArchGraph(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return g, nil
}

func parseArchGraph(r io.Reader) (*archGraph, error) {
	g := &archGraph{box: map[string]string{}, names: map[string][]string{}, arrows: map[string][]string{}}
	sc := bufio.NewScanner(r)
	n, in, done := 0, false, false
	for sc.Scan() && !done {
		n++
		line := strings.TrimSpace(sc.Text())
		switch {
		case !in:
			in = line == "```mermaid"
		case line == "```":
			done = true
		case line == "" || line == "end" || strings.HasPrefix(line, "%%") || strings.HasPrefix(line, "flowchart ") ||
			strings.HasPrefix(line, "subgraph ") || strings.HasPrefix(line, "classDef ") || strings.HasPrefix(line, "class "):
		case archBox.MatchString(line):
			m := archBox.FindStringSubmatch(line)
			for _, rel := range strings.Split(m[2], "<br>") {
				path := module
				if rel != "scripthost" {
					path += "/" + rel
				}
				if other, dup := g.box[path]; dup {
					return nil, fmt.Errorf("line %d: %s is in box %s and in box %s", n, rel, other, m[1])
				}
				g.box[path] = m[1]
				g.names[m[1]] = append(g.names[m[1]], rel)
			}
		case archArrow.MatchString(line):
			m := archArrow.FindStringSubmatch(line)
			g.arrows[m[1]] = append(g.arrows[m[1]], m[2])
		default:
			return nil, fmt.Errorf("line %d: %q is neither a box, an arrow nor mermaid layout", n, line)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if len(g.box) == 0 {
		return nil, fmt.Errorf("no mermaid package graph found")
	}
	for from, tos := range g.arrows {
		for _, to := range slices.Concat([]string{from}, tos) {
			if _, ok := g.names[to]; !ok {
				return nil, fmt.Errorf("an arrow from %s names the box %s, which the graph does not declare", from, to)
			}
		}
	}
	return g, nil
}

// reaches reports whether box from may import box to: to is from, or is reached by
// following arrows.
func (g *archGraph) reaches(from, to string) bool {
	seen := map[string]bool{from: true}
	next := []string{from}
	for len(next) > 0 {
		b := next[len(next)-1]
		next = next[:len(next)-1]
		if b == to {
			return true
		}
		for _, c := range g.arrows[b] {
			if !seen[c] {
				seen[c] = true
				next = append(next, c)
			}
		}
	}
	return false
}

// check compares the graph with the module's direct imports (package → imports) and
// returns every disagreement: an import of a module package that no path of arrows
// allows, an arrow that no direct import needs (the drawing keeps only the arrows it
// must), a package in no box or a box naming no package, and a cycle.
func (g *archGraph) check(imports map[string][]string) []string {
	var problems []string
	rel := func(p string) string {
		if p == module {
			return "scripthost"
		}
		return strings.TrimPrefix(p, module+"/")
	}
	used := map[[2]string]bool{}
	for _, pkg := range slices.Sorted(maps.Keys(imports)) {
		from, ok := g.box[pkg]
		if !ok {
			problems = append(problems, fmt.Sprintf("package %s is in no box of %s's package graph", rel(pkg), archDoc))
			continue
		}
		for _, imp := range imports[pkg] {
			if imp != module && !strings.HasPrefix(imp, module+"/") {
				continue
			}
			to, ok := g.box[imp]
			if !ok || to == from {
				continue
			}
			used[[2]string{from, to}] = true
			if !g.reaches(from, to) {
				problems = append(problems, fmt.Sprintf("%s imports %s against the arrows of %s: no path of arrows leads from %s to %s",
					rel(pkg), rel(imp), archDoc, from, to))
			}
		}
	}
	for _, pkg := range slices.Sorted(maps.Keys(g.box)) {
		if _, ok := imports[pkg]; !ok {
			problems = append(problems, fmt.Sprintf("%s names %s, which is not a package of the module", archDoc, rel(pkg)))
		}
	}
	for _, from := range slices.Sorted(maps.Keys(g.arrows)) {
		for _, to := range g.arrows[from] {
			if !used[[2]string{from, to}] {
				problems = append(problems, fmt.Sprintf("%s draws %s --> %s, but no package of %s imports one of %s",
					archDoc, from, to, from, to))
			}
			if g.reaches(to, from) {
				problems = append(problems, fmt.Sprintf("the package graph of %s has a cycle through %s --> %s", archDoc, from, to))
			}
		}
	}
	return problems
}
