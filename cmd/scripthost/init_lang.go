package main

import (
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"

	"github.com/scripthost/scripthost/sandbox/wasm"
	"github.com/scripthost/scripthost/sdk"
)

// wasmLangs are the languages `init --lang` scaffolds a Wasm workflow in.
var wasmLangs = []string{"rust", "assemblyscript", "go"}

// wasmStarter returns the files of the starter workflow in lang: the same workflow and
// fixture as the JavaScript starter, a copy of the language's guest SDK (so that it
// builds offline), and a build.sh that writes workflow.wasm.
func wasmStarter(lang, dir string) ([]starterFile, error) {
	var files []starterFile
	var err error
	switch lang {
	case "rust":
		files, err = sdkCopy(sdk.Sources, "rust", "scripthost-guest")
		files = append(files,
			starterFile{"Cargo.toml", starterRustCargo},
			starterFile{".cargo/config.toml", starterRustConfig},
			starterFile{"src/lib.rs", starterRust},
			starterFile{"build.sh", starterRustBuild},
			starterFile{".gitignore", "/target/\n"})
	case "assemblyscript":
		files, err = sdkCopy(sdk.Sources, "assemblyscript/assembly", "assembly/scripthost-guest")
		files = append(files,
			starterFile{"package.json", starterASPackage},
			starterFile{"asconfig.json", starterASConfig},
			starterFile{"assembly/index.ts", starterAS},
			starterFile{"build.sh", starterASBuild},
			starterFile{".gitignore", "/node_modules/\n"})
	case "go":
		files, err = sdkCopy(wasm.GuestSources, "guest", "scripthost/sandbox/wasm/guest")
		files = append(files,
			starterFile{"go.mod", starterGoMod},
			starterFile{"scripthost/go.mod", "module github.com/scripthost/scripthost\n\ngo 1.24\n"},
			starterFile{"main.go", starterGo},
			starterFile{"build.sh", starterGoBuild})
	default:
		return nil, usagef("init: --lang %q: want one of %s", lang, strings.Join(wasmLangs, ", "))
	}
	if err != nil {
		return nil, fmt.Errorf("init: %w", err)
	}
	readme := strings.ReplaceAll(starterWasmREADME, "{{dir}}", dir)
	readme = strings.ReplaceAll(readme, "{{lang}}", lang)
	readme = strings.ReplaceAll(readme, "{{prereq}}", wasmPrereq[lang])
	return append(files,
		starterFile{"fixtures/basic.json", starterFixture},
		starterFile{"inbox/world.txt", "world\n"},
		starterFile{"README.md", readme}), nil
}

// starterFile is one file init writes, its path relative to the new directory.
type starterFile struct{ path, content string }

// sdkCopy copies the files under from in fsys to the directory to.
func sdkCopy(fsys fs.FS, from, to string) ([]starterFile, error) {
	var files []starterFile
	err := fs.WalkDir(fsys, from, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := fs.ReadFile(fsys, p)
		if err != nil {
			return err
		}
		files = append(files, starterFile{path.Join(to, strings.TrimPrefix(p, from+"/")), string(b)})
		return nil
	})
	return files, err
}

var wasmPrereq = map[string]string{
	"rust": "Rust with its wasm32-unknown-unknown target; with rustup:\n\n" +
		"    rustup target add wasm32-unknown-unknown\n\n" +
		"The build fetches serde and serde_json from crates.io. To build offline from\n" +
		"vendored crates instead, set SCRIPTHOST_CARGO_VENDOR to their directory, as with\n" +
		"Debian's packaged toolchain and crates:\n\n" +
		"    apt-get install rustc cargo libstd-rust-dev-wasm32 librust-serde-json-dev librust-serde-derive-dev lld-14\n" +
		"    SCRIPTHOST_CARGO_VENDOR=/usr/share/cargo/registry ./build.sh\n",
	"assemblyscript": "Node.js 18 or later; the AssemblyScript compiler comes from npm:\n\n" +
		"    npm install\n",
	"go": "Go 1.24 or later (no other tool).\n",
}

const starterWasmREADME = "# {{dir}}\n\n" +
	"A scripthost workflow written in {{lang}} and compiled to WebAssembly. The producer\n" +
	"`scan` publishes one event per file in `inbox/`; the consumer `greet` writes a\n" +
	"greeting to `outbox/` as its one mutation. The guest SDK is copied into this\n" +
	"directory, so the build needs no scripthost checkout. You need {{prereq}}\n" +
	"Build the module, then test it against the recorded tool responses in `fixtures/`:\n\n" +
	"    ./build.sh\n" +
	"    scripthost test {{dir}}/workflow.wasm\n\n" +
	"Run it for real on this directory:\n\n" +
	"    scripthost --db {{dir}}.db run {{dir}}/workflow.wasm --once --workspace {{dir}}\n\n" +
	"The guest ABI is described in sandbox/wasm/ABI.md of the scripthost repository.\n"

// scaffoldWasm writes the starter workflow in a Wasm guest language.
func scaffoldWasm(g *globals, dir, lang string) error {
	files, err := wasmStarter(lang, filepath.ToSlash(dir))
	if err != nil {
		return err
	}
	if err := writeStarter(g, dir, files); err != nil {
		return err
	}
	if err := os.Chmod(filepath.Join(dir, "build.sh"), 0o755); err != nil {
		return fmt.Errorf("init: %w", err)
	}
	d := filepath.ToSlash(dir)
	first := ""
	switch lang {
	case "assemblyscript":
		first = "  (cd " + d + " && npm install)\n"
	case "rust":
		first = "  rustup target add wasm32-unknown-unknown   (once; see README.md to build offline)\n"
	}
	fmt.Fprintf(g.Stdout, "\nnext:\n%s  %s/build.sh\n  scripthost test %s/workflow.wasm\n  scripthost run %s/workflow.wasm --once --workspace %s\n",
		first, d, d, d, d)
	return nil
}
