package scripthost_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
)

// TestCodeNamesHaveOneValue: an exported Code* constant name means one value across
// the module's packages, so that a code read in one package's docs or tests is the
// code another prints. Word codes are named for their value (CodeStepFailed is
// "step_failed"); plan's numbered codes carry their number (CodeE301StepFailed is
// "E301").
func TestCodeNamesHaveOneValue(t *testing.T) {
	codes, err := exportedCodes(".")
	if err != nil {
		t.Fatal(err)
	}
	if len(codes) < 20 {
		t.Fatalf("found %d exported Code constants, want the module's", len(codes))
	}
	for name, byValue := range codes {
		if len(byValue) < 2 {
			continue
		}
		var uses []string
		for v, pkgs := range byValue {
			uses = append(uses, strconv.Quote(v)+" in "+strings.Join(pkgs, ", "))
		}
		sort.Strings(uses)
		t.Errorf("%s has %d values: %s", name, len(byValue), strings.Join(uses, "; "))
	}
}

// TestExportedCodesSeesAConflict: the scan behind TestCodeNamesHaveOneValue reports
// one name given two values in two packages, and resolves a code defined as another
// package's code to that code's value.
func TestExportedCodesSeesAConflict(t *testing.T) {
	dir := t.TempDir()
	write := func(path, src string) {
		t.Helper()
		p := filepath.Join(dir, path)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("a/a.go", "package a\n\nconst (\n\tCodeFailed = \"failed\"\n\tCodeSame = \"same\"\n)\n")
	write("b/b.go", "package b\n\nimport \"x/a\"\n\nconst CodeFailed = \"E1\"\n\nconst CodeSame = a.CodeSame\n")
	write("b/b_test.go", "package b\n\nconst CodeOnlyInTests = \"t\"\n")
	codes, err := exportedCodes(dir)
	if err != nil {
		t.Fatal(err)
	}
	if got := len(codes["CodeFailed"]); got != 2 {
		t.Errorf("CodeFailed: %d values (%v), want 2", got, codes["CodeFailed"])
	}
	if got := codes["CodeSame"]; len(got) != 1 || len(got["same"]) != 2 {
		t.Errorf("CodeSame: %v, want one value in two packages", got)
	}
	if _, ok := codes["CodeOnlyInTests"]; ok {
		t.Error("a test file's constant was counted")
	}
}

// exportedCodes parses the non-test Go files under root and returns, for each
// exported constant named Code*, the packages (directories) defining it by value. A
// constant defined as pkg.CodeX takes the value of CodeX in a package named pkg.
func exportedCodes(root string) (map[string]map[string][]string, error) {
	type def struct {
		name, dir, pkg string
		value          string            // a string literal's value
		ref            *ast.SelectorExpr // or another package's constant
	}
	var defs []def
	fset := token.NewFileSet()
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			name := d.Name()
			if path != root && (strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_") ||
				name == "testdata" || name == "third_party" || name == "vendor" || name == "node_modules") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		for _, decl := range f.Decls {
			gd, ok := decl.(*ast.GenDecl)
			if !ok || gd.Tok != token.CONST {
				continue
			}
			for _, spec := range gd.Specs {
				vs := spec.(*ast.ValueSpec)
				for i, id := range vs.Names {
					if !id.IsExported() || !strings.HasPrefix(id.Name, "Code") || i >= len(vs.Values) {
						continue
					}
					dd := def{name: id.Name, dir: filepath.ToSlash(filepath.Dir(path)), pkg: f.Name.Name}
					switch v := vs.Values[i].(type) {
					case *ast.BasicLit:
						if v.Kind != token.STRING {
							continue
						}
						s, err := strconv.Unquote(v.Value)
						if err != nil {
							return err
						}
						dd.value = s
					case *ast.SelectorExpr:
						dd.ref = v
					default:
						continue
					}
					defs = append(defs, dd)
				}
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	literal := map[string]string{} // "pkg.Name" -> value
	for _, d := range defs {
		if d.ref == nil {
			literal[d.pkg+"."+d.name] = d.value
		}
	}
	codes := map[string]map[string][]string{}
	for _, d := range defs {
		v := d.value
		if d.ref != nil {
			x, ok := d.ref.X.(*ast.Ident)
			if !ok {
				continue
			}
			if v, ok = literal[x.Name+"."+d.ref.Sel.Name]; !ok {
				continue
			}
		}
		if codes[d.name] == nil {
			codes[d.name] = map[string][]string{}
		}
		if dirs := codes[d.name][v]; !slices.Contains(dirs, d.dir) {
			codes[d.name][v] = append(dirs, d.dir)
		}
	}
	return codes, nil
}
