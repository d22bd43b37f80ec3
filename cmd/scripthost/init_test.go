package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/scripthost/scripthost/internal/guestbuild"
)

// TestInitScaffoldPasses: the scaffold's fixture passes right away, and the workflow
// runs for real on its directory, in both languages.
func TestInitScaffoldPasses(t *testing.T) {
	for _, tt := range []struct {
		name string
		args []string
		wf   string
	}{
		{"js", nil, "workflow.js"},
		{"ts", []string{"--ts"}, "workflow.ts"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "hello")
			code, out, errOut := cli(t, "", append([]string{"init", dir}, tt.args...)...)
			if code != 0 {
				t.Fatalf("init: exit %d, want 0\n%s%s", code, out, errOut)
			}
			for _, f := range []string{tt.wf, "fixtures/basic.json", "inbox/world.txt", "README.md"} {
				if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
					t.Errorf("init did not write %s: %v", f, err)
				}
			}
			wf := filepath.Join(dir, tt.wf)
			code, out, errOut = cli(t, "", "test", wf)
			if code != 0 || !strings.Contains(out, "1 fixtures, 1 passed, 0 failed") {
				t.Fatalf("test: exit %d, want 0 and a pass\n%s%s", code, out, errOut)
			}
			db := filepath.Join(t.TempDir(), "hello.db")
			code, out, errOut = cli(t, "", "--db", db, "run", wf, "--once", "--workspace", dir)
			if code != 0 {
				t.Fatalf("run: exit %d, want 0\n%s%s", code, out, errOut)
			}
			got, err := os.ReadFile(filepath.Join(dir, "outbox", "world.txt"))
			if err != nil || string(got) != "Hello, world!\n" {
				t.Errorf("outbox/world.txt: got %q (%v), want %q", got, err, "Hello, world!\n")
			}
		})
	}
}

// TestInitRefusesToOverwrite: a second init into the same directory is a usage error
// and changes nothing.
func TestInitRefusesToOverwrite(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "hello")
	if code, _, errOut := cli(t, "", "init", dir); code != 0 {
		t.Fatalf("init: exit %d: %s", code, errOut)
	}
	wf := filepath.Join(dir, "workflow.js")
	if err := os.WriteFile(wf, []byte("// mine\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(dir, "README.md")); err != nil {
		t.Fatal(err)
	}
	code, _, errOut := cli(t, "", "init", dir)
	if code != 2 || !strings.Contains(errOut, "already exists") {
		t.Errorf("second init: exit %d, stderr %q; want 2 and 'already exists'", code, errOut)
	}
	if b, _ := os.ReadFile(wf); string(b) != "// mine\n" {
		t.Errorf("workflow.js: got %q, want it untouched", b)
	}
	if _, err := os.Stat(filepath.Join(dir, "README.md")); err == nil {
		t.Errorf("README.md was written although init refused")
	}
}

// TestInitWasmScaffoldPasses: `init --lang` writes a Wasm workflow whose build.sh
// builds (offline, with the copied SDK) a module that passes the starter fixture and
// runs for real, in each guest language whose toolchain is installed.
func TestInitWasmScaffoldPasses(t *testing.T) {
	root, err := guestbuild.Root()
	if err != nil {
		t.Fatal(err)
	}
	for _, lang := range wasmLangs {
		t.Run(lang, func(t *testing.T) {
			t.Parallel() // the builds are minutes of compiler work on a loaded machine
			var env []string
			switch lang {
			case "rust":
				if _, err := guestbuild.Rust.Version(context.Background()); err != nil {
					t.Skipf("Rust toolchain missing: %v", err)
				}
				// Share the repository's build cache: the SDK's dependencies are the same.
				env = append(env, "CARGO_TARGET_DIR="+filepath.Join(root, "target"))
			case "assemblyscript":
				if _, err := guestbuild.AssemblyScript.Version(context.Background()); err != nil {
					t.Skipf("AssemblyScript toolchain missing: %v", err)
				}
			case "go":
				if _, err := exec.LookPath("go"); err != nil {
					t.Skip("go command not found")
				}
			}
			dir := filepath.Join(t.TempDir(), "hello")
			code, out, errOut := cli(t, "", "init", dir, "--lang", lang)
			if code != 0 {
				t.Fatalf("init: exit %d, want 0\n%s%s", code, out, errOut)
			}
			if lang == "assemblyscript" {
				// What npm install would bring, from the repository's own install.
				if err := os.Symlink(filepath.Join(root, "sdk/assemblyscript/node_modules"), filepath.Join(dir, "node_modules")); err != nil {
					t.Fatal(err)
				}
			}
			build := exec.Command(filepath.Join(dir, "build.sh"))
			build.Env = append(os.Environ(), env...)
			if b, err := build.CombinedOutput(); err != nil {
				t.Fatalf("build.sh: %v\n%s", err, b)
			}
			wf := filepath.Join(dir, "workflow.wasm")
			code, out, errOut = cli(t, "", "test", wf)
			if code != 0 || !strings.Contains(out, "1 fixtures, 1 passed, 0 failed") {
				t.Fatalf("test: exit %d, want 0 and a pass\n%s%s", code, out, errOut)
			}
			db := filepath.Join(t.TempDir(), "hello.db")
			code, out, errOut = cli(t, "", "--db", db, "run", wf, "--once", "--workspace", dir)
			if code != 0 {
				t.Fatalf("run: exit %d, want 0\n%s%s", code, out, errOut)
			}
			got, err := os.ReadFile(filepath.Join(dir, "outbox", "world.txt"))
			if err != nil || string(got) != "Hello, world!\n" {
				t.Errorf("outbox/world.txt: got %q (%v), want %q", got, err, "Hello, world!\n")
			}
		})
	}
}

func TestInitRefusesAnUnknownLanguage(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "hello")
	code, _, errOut := cli(t, "", "init", dir, "--lang", "cobol")
	if code != 2 || !strings.Contains(errOut, `--lang "cobol": want one of rust, assemblyscript, go`) {
		t.Fatalf("got exit %d, %q; want 2 and the languages", code, errOut)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("%s was created (%v)", dir, err)
	}
}
