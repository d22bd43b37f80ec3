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

// TestInitScaffoldPasses: `init` (JavaScript), `init --ts` and `init --lang` (each
// Wasm guest language whose toolchain is installed) write a workflow whose starter
// fixture passes right away and which runs for real on its directory. A Wasm
// scaffold's build.sh builds the module first with the copied SDK; a Rust one offline,
// with the vendored-crates opt-in (guestbuild.VendorEnv) pointing at Debian's crates.
func TestInitScaffoldPasses(t *testing.T) {
	type scaffold struct {
		name string
		args []string
		wf   string
	}
	cases := []scaffold{{"js", nil, "workflow.js"}, {"ts", []string{"--ts"}, "workflow.ts"}}
	for _, lang := range wasmLangs {
		cases = append(cases, scaffold{lang, []string{"--lang", lang}, "workflow.wasm"})
	}
	for _, tt := range cases {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel() // the Wasm builds are minutes of compiler work on a loaded machine
			env := scaffoldToolchain(t, tt.name)
			dir := filepath.Join(t.TempDir(), "hello")
			code, out, errOut := cli(t, "", append([]string{"init", dir}, tt.args...)...)
			if code != 0 {
				t.Fatalf("init: exit %d, want 0\n%s%s", code, out, errOut)
			}
			for _, f := range []string{"fixtures/basic.json", "inbox/world.txt", "README.md"} {
				if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
					t.Errorf("init did not write %s: %v", f, err)
				}
			}
			if strings.HasSuffix(tt.wf, ".wasm") {
				buildScaffold(t, dir, tt.name, env)
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

// scaffoldToolchain skips the test when the guest language's toolchain is missing and
// returns the extra environment its build.sh needs.
func scaffoldToolchain(t *testing.T, lang string) []string {
	t.Helper()
	switch lang {
	case "rust":
		env, err := guestbuild.Rust.Env(context.Background())
		if err != nil {
			skipWithoutToolchain(t, "Rust toolchain missing: %v", err)
		}
		// Share the repository's build cache: the SDK's dependencies are the same.
		return append(env, "CARGO_TARGET_DIR="+filepath.Join(repoRoot(t), "target"))
	case "assemblyscript":
		if _, err := guestbuild.AssemblyScript.Version(context.Background()); err != nil {
			skipWithoutToolchain(t, "AssemblyScript toolchain missing: %v", err)
		}
	case "go":
		if _, err := exec.LookPath("go"); err != nil {
			t.Skip("go command not found")
		}
	}
	return nil
}

// buildScaffold runs the Wasm scaffold's build.sh in dir.
func buildScaffold(t *testing.T, dir, lang string, env []string) {
	t.Helper()
	if lang == "assemblyscript" {
		// What npm install would bring, from the repository's own install.
		if err := os.Symlink(filepath.Join(repoRoot(t), "sdk/assemblyscript/node_modules"), filepath.Join(dir, "node_modules")); err != nil {
			t.Fatal(err)
		}
	}
	build := exec.Command(filepath.Join(dir, "build.sh"))
	build.Env = append(os.Environ(), env...)
	if b, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build.sh: %v\n%s", err, b)
	}
}

func repoRoot(t *testing.T) string {
	t.Helper()
	root, err := guestbuild.Root()
	if err != nil {
		t.Fatal(err)
	}
	return root
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

// The Rust scaffold builds as a rustup user builds: from crates.io, with nothing in it
// naming Debian's offline crates, and its README and next steps say how to add the
// wasm32 target. (TestInitScaffoldPasses builds it offline, with the vendored-crates
// opt-in its build.sh reads.)
func TestInitRustScaffoldUsesCratesIO(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "hello")
	code, out, errOut := cli(t, "", "init", dir, "--lang", "rust")
	if code != 0 {
		t.Fatalf("init: exit %d: %s", code, errOut)
	}
	if !strings.Contains(out, "rustup target add wasm32-unknown-unknown") {
		t.Errorf("next steps lack the wasm32 target:\n%s", out)
	}
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		text := string(b)
		switch rel {
		case "README.md":
			return nil // says how to opt in
		case "build.sh":
			// Only the opt-in branch names a crate source.
			start := strings.Index(text, `if [ -n "${SCRIPTHOST_CARGO_VENDOR:-}" ]; then`)
			end := strings.Index(text, "\nfi\n")
			if start < 0 || end < start {
				t.Fatalf("build.sh does not read the opt-in:\n%s", text)
			}
			text = text[:start] + text[end:]
			var code []string // what runs: the comments say how to opt in
			for _, line := range strings.Split(text, "\n") {
				if !strings.HasPrefix(line, "#") {
					code = append(code, line)
				}
			}
			text = strings.Join(code, "\n")
		}
		for _, bad := range []string{"[source", "replace-with", "offline", "/usr/share/cargo", "vendored"} {
			if strings.Contains(text, bad) {
				t.Errorf("%s has %q: the default build must use crates.io", rel, bad)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	readme, _ := os.ReadFile(filepath.Join(dir, "README.md"))
	for _, want := range []string{"    rustup target add wasm32-unknown-unknown\n", "    SCRIPTHOST_CARGO_VENDOR=/usr/share/cargo/registry ./build.sh\n"} {
		if !strings.Contains(string(readme), want) {
			t.Errorf("README.md lacks %q:\n%s", want, readme)
		}
	}
}
