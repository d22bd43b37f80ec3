package codetool

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/scripthost/scripthost"
	"github.com/scripthost/scripthost/hostfuncs"
	"github.com/scripthost/scripthost/hostfuncs/workspace"

	_ "github.com/mattn/go-sqlite3" // the driver the index opens its file with
)

// fixture copies a project of codegraph/testdata into a fresh workspace and returns
// its tools.
func fixture(t *testing.T, project string) (*Tools, string) {
	t.Helper()
	dir := t.TempDir()
	if err := os.CopyFS(dir, os.DirFS(filepath.Join("..", "..", "codegraph", "testdata", project))); err != nil {
		t.Fatal(err)
	}
	ws, err := workspace.New(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ws.Close() })
	tools, err := New(Config{Workspace: ws})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tools.Close() })
	return tools, dir
}

func tool(t *testing.T, tools []*hostfuncs.Tool, method string) *hostfuncs.Tool {
	t.Helper()
	for _, x := range tools {
		if x.Method == method {
			return x
		}
	}
	t.Fatalf("no tool %s", method)
	return nil
}

func call(t *testing.T, x *hostfuncs.Tool, input string) (json.RawMessage, error) {
	t.Helper()
	return x.Execute(context.Background(), json.RawMessage(input))
}

func codeOf(err error) string {
	var se *scripthost.Error
	if errors.As(err, &se) {
		return se.Code
	}
	return ""
}

func write(t *testing.T, dir, name, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, name)), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestQueriesAreNeverStale(t *testing.T) {
	tools, dir := fixture(t, "go")
	pt := tools.PlanTools()
	out, err := call(t, tool(t, pt, "symbols_in_file"), `{"path":"shapes/shapes.go"}`)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(out, []byte(`"name":"Total"`)) {
		t.Fatalf("symbols: got %s, want Total", out)
	}
	out, err = call(t, tool(t, pt, "references_to_symbol_name"), `{"name":"Total"}`)
	if err != nil {
		t.Fatal(err)
	}
	var refs struct{ References []json.RawMessage }
	_ = json.Unmarshal(out, &refs)
	if len(refs.References) != 1 {
		t.Fatalf("references to Total: got %s, want one (main.go)", out)
	}
	// A file changed behind the index's back: every answer sees it.
	write(t, dir, "extra.go", "package main\n\nfunc more() float64 { return shapes.Total(nil) }\n")
	out, _ = call(t, tool(t, pt, "references_to_symbol_name"), `{"name":"Total"}`)
	_ = json.Unmarshal(out, &refs)
	if len(refs.References) != 2 {
		t.Fatalf("references after a new file: got %s, want two", out)
	}
	out, err = call(t, tool(t, pt, "references_from_file_to_symbol_name"), `{"path":"extra.go","name":"Total"}`)
	if err != nil || !bytes.Contains(out, []byte(`"start_line":3`)) {
		t.Fatalf("references from extra.go: got %s, %v", out, err)
	}
	if _, err := call(t, tool(t, pt, "symbols_in_file"), `{"path":"../etc/x.go"}`); codeOf(err) != scripthost.CodeSandboxViolation {
		t.Fatalf("path outside: got %v, want sandbox_violation", err)
	}
	if _, err := call(t, tool(t, pt, "symbols_in_file"), `{"path":"go.mod"}`); codeOf(err) != CodeUnsupportedFile {
		t.Fatalf("go.mod: got %v, want unsupported_file", err)
	}
	wt := tools.WorkflowTools()
	for _, x := range wt {
		if x.Classify(json.RawMessage(`{}`)) != scripthost.OpRead {
			t.Errorf("%s: workflow tool is not read-only", x.Name())
		}
	}
	if out, err := call(t, tool(t, wt, "symbols"), `{"path":"extra.go"}`); err != nil || !bytes.Contains(out, []byte(`"more"`)) {
		t.Fatalf("Code.symbols: got %s, %v", out, err)
	}
}

const newArea = `func (c Circle) Area() float64 {
	return 3 * c.R * c.R
}
`

func TestSplicePatch(t *testing.T) {
	tools, dir := fixture(t, "go")
	splice := tool(t, tools.PlanTools(), "splice_patch")
	write(t, dir, "patch/area.go.txt", newArea)
	out, err := call(t, splice, `{"file":"shapes/shapes.go","symbol":"Circle.Area","with":"patch/area.go.txt"}`)
	if err != nil {
		t.Fatal(err)
	}
	got, _ := os.ReadFile(filepath.Join(dir, "shapes", "shapes.go"))
	if !bytes.Contains(got, []byte("return 3 * c.R * c.R\n}\n\n// Square")) {
		t.Fatalf("file after splice:\n%s", got)
	}
	var res Spliced
	if err := json.Unmarshal(out, &res); err != nil || res.Kind != "method" || res.Replaced.StartLine != 17 || res.SHA256 != hashOf(got) {
		t.Fatalf("result: got %s", out)
	}
	// The index answers from the new content at once.
	syms, _ := call(t, tool(t, tools.PlanTools(), "symbols_in_file"), `{"path":"shapes/shapes.go"}`)
	if !bytes.Contains(syms, []byte(`"container":"Circle","start_byte":215,"end_byte":271`)) {
		t.Fatalf("symbols after splice: %s", syms)
	}
}

func TestSpliceRefusals(t *testing.T) {
	tools, dir := fixture(t, "go")
	splice := tool(t, tools.PlanTools(), "splice_patch")
	path := filepath.Join(dir, "shapes", "shapes.go")
	before, _ := os.ReadFile(path)
	cases := []struct {
		name, input, code, says string
	}{
		{"syntax", `{"file":"shapes/shapes.go","symbol":"Total","content":"func Total(shapes []Shape) float64 {\n\treturn \n"}`, CodeSyntaxError, "shapes/shapes.go:"},
		{"ambiguous", `{"file":"shapes/shapes.go","symbol":"Area","content":"func X() {}"}`, CodeAmbiguousSymbol, "Shape.Area (method, lines 8-8), Circle.Area (method, lines 17-19), Square.Area"},
		{"missing", `{"file":"shapes/shapes.go","symbol":"Nope","content":"func X() {}"}`, CodeSymbolNotFound, `no symbol "Nope"`},
		{"both", `{"file":"shapes/shapes.go","symbol":"Total","content":"x","with":"y"}`, scripthost.CodeInvalidInput, "exactly one"},
		{"escape", `{"file":"shapes/shapes.go","symbol":"Total","with":"../../etc/passwd"}`, scripthost.CodeSandboxViolation, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := call(t, splice, c.input)
			if codeOf(err) != c.code || !strings.Contains(err.Error(), c.says) {
				t.Fatalf("got %v, want %s saying %q", err, c.code, c.says)
			}
			after, _ := os.ReadFile(path)
			if !bytes.Equal(before, after) {
				t.Fatal("the file changed")
			}
		})
	}
}

func TestSplicePlanAllOrNothing(t *testing.T) {
	tools, dir := fixture(t, "ts")
	sp := tool(t, tools.PlanTools(), "splice_plan")
	read := func() map[string][]byte {
		m := map[string][]byte{}
		for _, f := range []string{"src/shapes.ts", "src/main.ts"} {
			m[f], _ = os.ReadFile(filepath.Join(dir, f))
		}
		return m
	}
	before := read()
	write(t, dir, "bad.json", `{"patches": [
		{"file": "src/shapes.ts", "symbol": "total", "content": "export function total(shapes: Shape[]): number { return 0; }"},
		{"file": "src/shapes.ts", "symbol": "Circle.area", "content": "area(): number { return 1; }"},
		{"file": "src/main.ts", "symbol": "all", "content": "const all = [new Circle(unit)"}
	]}`)
	_, err := call(t, sp, `{"plan_file":"bad.json"}`)
	if codeOf(err) != CodeSyntaxError || !strings.Contains(err.Error(), "patch 3:") {
		t.Fatalf("got %v, want a syntax error naming patch 3", err)
	}
	after := read()
	for f := range before {
		if !bytes.Equal(before[f], after[f]) {
			t.Errorf("%s changed", f)
		}
	}
	write(t, dir, "good.json", `{"patches": [
		{"file": "src/shapes.ts", "symbol": "total", "content": "export function total(shapes: Shape[]): number { return 0; }"},
		{"file": "src/shapes.ts", "symbol": "Circle.area", "content": "area(): number { return 1; }"},
		{"file": "src/main.ts", "symbol": "all", "content": "const all = [new Circle(2)];"}
	]}`)
	out, err := call(t, sp, `{"plan_file":"good.json"}`)
	if err != nil {
		t.Fatal(err)
	}
	after = read()
	if !bytes.Contains(after["src/shapes.ts"], []byte("export function total(shapes: Shape[]): number { return 0; }")) ||
		!bytes.Contains(after["src/shapes.ts"], []byte("area(): number { return 1; }")) ||
		!bytes.Contains(after["src/main.ts"], []byte("const all = [new Circle(2)];")) {
		t.Fatalf("after the good plan (%s):\n%s\n%s", out, after["src/shapes.ts"], after["src/main.ts"])
	}
}

func TestSpliceReconcile(t *testing.T) {
	tools, dir := fixture(t, "python")
	splice := tool(t, tools.PlanTools(), "splice_patch")
	params := `{"file":"geo/shapes.py","symbol":"total","content":"def total(shapes):\n    return 0\n"}`
	m := scripthost.Mutation{ID: "m1", Namespace: PlanNamespace, Method: "splice_patch", Params: json.RawMessage(params)}
	rec, err := splice.Reconcile(context.Background(), m)
	if err != nil || rec.Outcome != scripthost.ReconcileFailed {
		t.Fatalf("before the call: got %+v, %v; want failed", rec, err)
	}
	if _, err := call(t, splice, params); err != nil {
		t.Fatal(err)
	}
	rec, err = splice.Reconcile(context.Background(), m)
	if err != nil || rec.Outcome != scripthost.ReconcileApplied {
		t.Fatalf("after the call: got %+v, %v; want applied", rec, err)
	}
	// The same call again (a retry with the same key) leaves the file as it is.
	before, _ := os.ReadFile(filepath.Join(dir, "geo", "shapes.py"))
	if _, err := call(t, splice, params); err != nil {
		t.Fatal(err)
	}
	after, _ := os.ReadFile(filepath.Join(dir, "geo", "shapes.py"))
	if !bytes.Equal(before, after) {
		t.Fatal("a repeated splice changed the file")
	}
}

func TestSpliceIsAMutation(t *testing.T) {
	tools, _ := fixture(t, "go")
	for _, x := range tools.PlanTools() {
		want := scripthost.OpRead
		if strings.HasPrefix(x.Method, "splice_") {
			want = scripthost.OpMutate
			if x.Reconcile == nil {
				t.Errorf("%s has no reconciler", x.Name())
			}
		}
		if got := x.Classify(json.RawMessage(`{}`)); got != want {
			t.Errorf("%s: got %s, want %s", x.Name(), got, want)
		}
	}
}

// TestOutputsMatchSchemas: the query answers conform to the output schemas the
// runtime validates them against.
func TestOutputsMatchSchemas(t *testing.T) {
	tools, _ := fixture(t, "rust")
	for _, c := range []struct{ method, input string }{
		{"symbols", `{"path":"src/lib.rs"}`},
		{"references", `{"name":"area"}`},
		{"referencesFrom", `{"path":"src/lib.rs","name":"r"}`},
	} {
		x := tool(t, tools.WorkflowTools(), c.method)
		out, err := call(t, x, c.input)
		if err != nil {
			t.Fatal(err)
		}
		problems, err := hostfuncs.ValidateJSON(x.OutputSchema, out)
		if err != nil || len(problems) > 0 || len(out) < 100 {
			t.Errorf("%s: %v %v\n%s", c.method, problems, err, out)
		}
	}
}

// TestConcurrentSplicesOfOneFile: patches of different definitions of one file made at
// once all land; none overwrites another with a stale copy.
func TestConcurrentSplicesOfOneFile(t *testing.T) {
	tools, dir := fixture(t, "python")
	var src strings.Builder
	for i := range 8 {
		fmt.Fprintf(&src, "def f%d():\n    return 0\n\n\n", i)
	}
	write(t, dir, "many.py", src.String())
	splice := tool(t, tools.PlanTools(), "splice_patch")
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			in := fmt.Sprintf(`{"file":"many.py","symbol":"f%d","content":"def f%d():\n    return %d\n"}`, i, i, i+1)
			if _, err := splice.Execute(context.Background(), json.RawMessage(in)); err != nil {
				errs <- err
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	got, _ := os.ReadFile(filepath.Join(dir, "many.py"))
	for i := range 8 {
		if !strings.Contains(string(got), fmt.Sprintf("def f%d():\n    return %d\n", i, i+1)) {
			t.Errorf("patch of f%d lost:\n%s", i, got)
		}
	}
}

// TestSpliceEachLanguage replaces one method in each fixture language and checks the
// file around it is untouched.
func TestSpliceEachLanguage(t *testing.T) {
	cases := []struct{ project, file, symbol, content, was string }{
		{"go", "shapes/shapes.go", "Square.Area", "func (s *Square) Area() float64 {\n\treturn s.Side * s.Side * 1\n}", "func (s *Square) Area() float64 {\n\treturn s.Side * s.Side\n}"},
		{"rust", "src/lib.rs", "Circle.area", "fn area(&self) -> f64 {\n        3.0 * self.r * self.r\n    }", "fn area(&self) -> f64 {\n        std::f64::consts::PI * self.r * self.r\n    }"},
		{"ts", "src/shapes.ts", "Circle.area", "area(): number {\n    return 3 * this.r * this.r;\n  }", "area(): number {\n    return Math.PI * this.r * this.r;\n  }"},
		{"python", "geo/shapes.py", "Circle.area", "def area(self):\n        return 3 * self.r * self.r", "def area(self):\n        return math.pi * self.r * self.r"},
	}
	for _, c := range cases {
		t.Run(c.project, func(t *testing.T) {
			tools, dir := fixture(t, c.project)
			before, _ := os.ReadFile(filepath.Join(dir, c.file))
			in, _ := json.Marshal(Patch{File: c.file, Symbol: c.symbol, Content: c.content})
			out, err := call(t, tool(t, tools.PlanTools(), "splice_patch"), string(in))
			if err != nil {
				t.Fatal(err)
			}
			var res Spliced
			if err := json.Unmarshal(out, &res); err != nil {
				t.Fatal(err)
			}
			after, _ := os.ReadFile(filepath.Join(dir, c.file))
			want := string(before[:res.Replaced.StartByte]) + c.content + string(before[res.Replaced.EndByte:])
			if string(after) != want {
				t.Fatalf("got\n%s\nwant\n%s", after, want)
			}
			if got := string(before[res.Replaced.StartByte:res.Replaced.EndByte]); got != c.was {
				t.Fatalf("replaced %q, want the method %q", got, c.was)
			}
		})
	}
}
