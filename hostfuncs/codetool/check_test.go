package codetool

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
)

// needChecker skips when prog is missing, saying so; CI sets
// SCRIPTHOST_REQUIRE_CHECKERS so that a missing checker fails instead.
func needChecker(t *testing.T, prog string) {
	t.Helper()
	if _, err := exec.LookPath(prog); err != nil {
		if os.Getenv("SCRIPTHOST_REQUIRE_CHECKERS") != "" {
			t.Fatalf("%s is required (SCRIPTHOST_REQUIRE_CHECKERS) but not installed", prog)
		}
		t.Skipf("%s is not installed: this checker is not tested here (CI installs it)", prog)
	}
}

func findDiag(res *CheckResult, file, code string) *Diagnostic {
	for i, d := range res.Diagnostics {
		if d.File == file && d.Code == code {
			return &res.Diagnostics[i]
		}
	}
	return nil
}

func TestCheckGo(t *testing.T) {
	needChecker(t, "go")
	tools, dir := fixture(t, "go")
	res, err := tools.Check(context.Background(), "shapes/shapes.go")
	if err != nil {
		t.Fatal(err)
	}
	if !res.OK || res.Checker != "go vet" || res.Project != "." || len(res.Diagnostics) != 0 {
		t.Fatalf("clean project: got %+v", res)
	}
	write(t, dir, "shapes/bad.go", "package shapes\n\nfunc Bad() float64 {\n\treturn \"one\"\n}\n")
	res, err = tools.Check(context.Background(), ".")
	if err != nil {
		t.Fatal(err)
	}
	d := findDiag(res, "shapes/bad.go", "IncompatibleAssign")
	if res.OK || res.ExitCode == 0 || res.Checker != "go build" || d == nil || d.Line != 4 || d.Column != 9 || d.Level != "error" {
		t.Fatalf("type error: got %+v", res)
	}
	write(t, dir, "shapes/bad.go", "package shapes\n\nimport \"fmt\"\n\nfunc Bad() { fmt.Printf(\"%d\\n\", \"x\") }\n")
	res, err = tools.Check(context.Background(), ".")
	if err != nil {
		t.Fatal(err)
	}
	if d := findDiag(res, "shapes/bad.go", "printf"); res.Checker != "go vet" || d == nil || d.Line != 5 || d.Level != "warning" {
		t.Fatalf("vet finding: got %+v", res)
	}
}

func TestCheckCargo(t *testing.T) {
	needChecker(t, "cargo")
	tools, dir := fixture(t, "rust")
	write(t, dir, "src/bad.rs", "pub fn bad() -> f64 {\n    \"one\"\n}\n")
	write(t, dir, "src/lib.rs", mustRead(t, dir, "src/lib.rs")+"\npub mod bad;\n")
	res, err := tools.Check(context.Background(), "src/lib.rs")
	if err != nil {
		t.Fatal(err)
	}
	d := findDiag(res, "src/bad.rs", "E0308")
	if res.OK || res.Checker != "cargo check" || d == nil || d.Line != 2 || d.Level != "error" {
		t.Fatalf("type error: got %+v", res)
	}
}

func TestCheckTSC(t *testing.T) {
	needChecker(t, "tsc")
	tools, dir := fixture(t, "ts")
	res, err := tools.Check(context.Background(), "src")
	if err != nil {
		t.Fatal(err)
	}
	if !res.OK || res.Checker != "tsc" {
		t.Fatalf("clean project: got %+v", res)
	}
	write(t, dir, "src/bad.ts", "export const n: number = \"one\";\n")
	res, err = tools.Check(context.Background(), "src")
	if err != nil {
		t.Fatal(err)
	}
	if d := findDiag(res, "src/bad.ts", "TS2322"); res.OK || d == nil || d.Line != 1 || d.Column != 14 {
		t.Fatalf("type error: got %+v", res)
	}
}

func TestCheckerUnavailable(t *testing.T) {
	tools, _ := fixture(t, "go")
	tools.cfg.LookPath = func(p string) (string, error) { return "", fmt.Errorf("%s: %w", p, exec.ErrNotFound) }
	_, err := tools.Check(context.Background(), ".")
	if codeOf(err) != CodeCheckerUnavailable || !strings.Contains(err.Error(), "go build cannot run") {
		t.Fatalf("got %v, want checker_unavailable", err)
	}
	if !errors.Is(err, err) {
		t.Fatal("unreachable")
	}
}

func TestCheckNoProject(t *testing.T) {
	tools, dir := fixture(t, "python")
	_ = dir
	if _, err := tools.Check(context.Background(), "geo"); codeOf(err) != CodeNoProject {
		t.Fatalf("got %v, want project_not_found", err)
	}
}

func mustRead(t *testing.T, dir, name string) string {
	t.Helper()
	b, err := os.ReadFile(dir + "/" + name)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
