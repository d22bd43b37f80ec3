package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// exampleWorkflow finds the workflow of one example directory: workflow.js or
// workflow.ts, or a Go guest built here to workflow.wasm. It returns "" when the
// directory holds no workflow.
func exampleWorkflow(t *testing.T, dir string) string {
	t.Helper()
	for _, name := range []string{"workflow.js", "workflow.ts"} {
		if _, err := os.Stat(filepath.Join(dir, name)); err == nil {
			return filepath.Join(dir, name)
		}
	}
	if prebuilt := committedGuest(dir); prebuilt != "" {
		return prebuilt
	}
	if _, err := os.Stat(filepath.Join(dir, "main.go")); err != nil {
		return ""
	}
	src, err := os.ReadFile(filepath.Join(dir, "main.go"))
	if err != nil || !strings.Contains(string(src), "go:wasmexport") {
		return ""
	}
	if _, err := exec.LookPath("go"); err != nil {
		t.Skipf("go command not found: cannot build %s", dir)
	}
	out := filepath.Join(t.TempDir(), filepath.Base(dir), "workflow.wasm")
	cmd := exec.Command("go", "build", "-buildmode=c-shared", "-o", out, "./scripts/"+filepath.Base(dir))
	cmd.Dir = "../.."
	cmd.Env = append(os.Environ(), "GOOS=wasip1", "GOARCH=wasm")
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Skipf("cannot build the Wasm example %s: %v\n%s", dir, err, b)
	}
	return out
}

// TestExampleFixtures runs `scripthost test` on every workflow in scripts/, twice
// (with the HTTP tools the example declares in tools.json or tools.yaml): every one
// has fixtures, they all pass, and the two reports are the same bytes.
func TestExampleFixtures(t *testing.T) {
	dirs, err := filepath.Glob("../../scripts/*")
	if err != nil {
		t.Fatal(err)
	}
	found := 0
	for _, dir := range dirs {
		if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
			continue
		}
		t.Run(filepath.Base(dir), func(t *testing.T) {
			wf := exampleWorkflow(t, dir)
			if wf == "" {
				t.Skip("no workflow here")
			}
			found++
			// An example with npm dependencies needs them installed (make digest runs
			// npm ci and then its fixtures, in CI too); the unit tests stay offline.
			if _, err := os.Stat(filepath.Join(dir, "package.json")); err == nil {
				if _, err := os.Stat(filepath.Join(dir, "node_modules")); err != nil {
					t.Skipf("%s has npm dependencies that are not installed: npm ci there first (make digest does)", dir)
				}
			}
			fixtures := filepath.Join(dir, "fixtures")
			if _, err := os.Stat(fixtures); err != nil {
				t.Fatalf("%s has no fixtures directory: every example workflow needs fixtures", dir)
			}
			args := []string{"test", wf, "--fixtures", fixtures}
			for _, name := range []string{"tools.json", "tools.yaml"} {
				if _, err := os.Stat(filepath.Join(dir, name)); err == nil {
					args = append(args, "--tools", filepath.Join(dir, name))
				}
			}
			code, first, errOut := cli(t, "", args...)
			if code != 0 {
				t.Fatalf("exit %d, want 0\n%s%s", code, first, errOut)
			}
			if !strings.Contains(first, " 0 failed\n") {
				t.Errorf("report: got\n%s\nwant no failures", first)
			}
			_, second, _ := cli(t, "", args...)
			if first != second {
				t.Errorf("two runs differ:\n%s\n---\n%s", first, second)
			}
		})
	}
	if found == 0 {
		t.Fatalf("found no example workflow under scripts/")
	}
}

// copyFixture copies a fixture of the files example into a temp directory, applying
// replacements to its text.
func copyFixture(t *testing.T, name string, replace ...string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("../../scripts/files/fixtures", name))
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	for i := 0; i+1 < len(replace); i += 2 {
		if !strings.Contains(s, replace[i]) {
			t.Fatalf("%s does not contain %q", name, replace[i])
		}
		s = strings.Replace(s, replace[i], replace[i+1], 1)
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, name), []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

const filesExample = "../../scripts/files/workflow.js"

func TestTestCommandFailsWithADiff(t *testing.T) {
	dir := copyFixture(t, "one-file.json", `"processed": 1`, `"processed": 2`)
	code, out, errOut := cli(t, "", "test", filesExample, "--fixtures", dir)
	if code != 1 {
		t.Fatalf("exit %d, want 1\n%s%s", code, out, errOut)
	}
	for _, want := range []string{
		"FAIL    one-file.json\n",
		`state.process: got {"processed":1}, want {"processed":2}`,
		"    -    \"processed\": 2\n    +    \"processed\": 1\n",
		"1 fixtures, 0 passed, 1 failed\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("report lacks %q:\n%s", want, out)
		}
	}
	if !strings.Contains(errOut, "1 of 1 fixtures failed") {
		t.Errorf("stderr: got %q, want the failure count", errOut)
	}
}

func TestTestCommandUpdate(t *testing.T) {
	dir := copyFixture(t, "one-file.json", `"processed": 1`, `"processed": 2`)
	path := filepath.Join(dir, "one-file.json")
	code, out, errOut := cli(t, "", "test", filesExample, "--fixtures", dir, "--update")
	if code != 0 || !strings.Contains(out, "UPDATED one-file.json") {
		t.Fatalf("exit %d, want 0 and an update\n%s%s", code, out, errOut)
	}
	got, _ := os.ReadFile(path)
	want, _ := os.ReadFile("../../scripts/files/fixtures/one-file.json")
	if string(got) != string(want) {
		t.Errorf("updated fixture: got\n%s\nwant the original\n%s", got, want)
	}
	if code, out, _ := cli(t, "", "test", filesExample, "--fixtures", dir); code != 0 {
		t.Errorf("after --update: exit %d, want 0\n%s", code, out)
	}
}

func TestTestCommandUsage(t *testing.T) {
	empty := t.TempDir()
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"no workflow", []string{"test", filepath.Join(empty, "nope.js")}, "nope.js"},
		{"bad language", []string{"test", "../../scripts/plans/tidy.json"}, "unknown workflow language"},
		{"no fixtures", []string{"test", filesExample, "--fixtures", empty}, "no fixture files"},
		{"no argument", []string{"test"}, "accepts 1 arg"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, _, errOut := cli(t, "", tt.args...)
			if code != 2 {
				t.Errorf("exit %d, want 2", code)
			}
			if !strings.Contains(errOut, tt.want) {
				t.Errorf("stderr: got %q, want it to contain %q", errOut, tt.want)
			}
		})
	}
}

// TestTestingDocExample: the complete example of docs/testing.md is the example
// fixture itself, so the document cannot drift from a fixture that passes.
func TestTestingDocExample(t *testing.T) {
	doc, err := os.ReadFile("../../docs/testing.md")
	if err != nil {
		t.Fatal(err)
	}
	fx, err := os.ReadFile("../../scripts/files/fixtures/seen-before.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(doc), "```yaml\n"+string(fx)+"```\n") {
		t.Errorf("docs/testing.md does not hold scripts/files/fixtures/seen-before.yaml verbatim")
	}
}
