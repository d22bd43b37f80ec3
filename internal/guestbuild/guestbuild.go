// Package guestbuild rebuilds the repository's Rust and AssemblyScript Wasm guests from
// source, for the tests that check a committed module is current. Each guest directory
// has a build.sh that builds its module to the path it is given; the committed module
// sits beside it.
package guestbuild

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// Toolchain is a guest language's compiler.
type Toolchain struct {
	// Name is the language, as in messages.
	Name string
	// Pinned is the compiler version the committed modules were built with: only a
	// build by this version is expected to give the same bytes.
	Pinned string
	find   func(context.Context) (found, error)
}

// found is an installed toolchain: its version, and the environment its builds need
// beyond the process's own.
type found struct {
	version string
	env     []string
}

// Rust is rustc and cargo with the wasm32 standard libraries (Debian's, when the one on
// PATH lacks them), building offline from Debian's packaged crates: the Rust build.sh
// scripts fetch from crates.io unless VendorEnv names vendored crates, and the tests
// have no network.
var Rust = Toolchain{Name: "Rust", Pinned: "rustc 1.63.0", find: findRust}

// AssemblyScript is the asc compiler from npm, installed in sdk/assemblyscript.
var AssemblyScript = Toolchain{Name: "AssemblyScript", Pinned: "Version 0.27.37", find: findAsc}

// Version returns the installed compiler's version, or an error saying what is missing.
func (tc Toolchain) Version(ctx context.Context) (string, error) {
	f, err := tc.find(ctx)
	return f.version, err
}

// Env returns the environment a build with the installed compiler needs beyond the
// process's own (a build.sh run by hand needs the same).
func (tc Toolchain) Env(ctx context.Context) ([]string, error) {
	f, err := tc.find(ctx)
	return f.env, err
}

// Build runs dir/build.sh to build the guest in dir to out with the installed
// compiler.
func (tc Toolchain) Build(ctx context.Context, dir, out string) error {
	f, err := tc.find(ctx)
	if err != nil {
		return err
	}
	abs, err := filepath.Abs(out)
	if err != nil {
		return fmt.Errorf("guestbuild: %w", err)
	}
	_, err = run(ctx, f.env, filepath.Join(dir, "build.sh"), abs)
	return err
}

func output(ctx context.Context, name string, args ...string) (string, error) {
	return run(ctx, nil, name, args...)
}

func run(ctx context.Context, env []string, name string, args ...string) (string, error) {
	var out bytes.Buffer
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Stdout, cmd.Stderr = &out, &out
	if env != nil {
		cmd.Env = append(os.Environ(), env...)
	}
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("guestbuild: %s %s: %w: %s", name, strings.Join(args, " "), err, out.String())
	}
	return strings.TrimSpace(out.String()), nil
}

// debianBin is where Debian installs rustc and cargo. A rustup toolchain earlier on
// PATH usually has no wasm32 standard library; Debian's, with its packaged crates, is
// the one the committed modules are built with.
const debianBin = "/usr/bin"

// VendorEnv is the variable that makes a Rust build.sh build offline from the vendored
// crates in the directory it names instead of fetching them from crates.io.
const VendorEnv = "SCRIPTHOST_CARGO_VENDOR"

// DebianCrates is where Debian's librust-*-dev packages install their crates.
const DebianCrates = "/usr/share/cargo/registry"

// findRust looks for a Rust toolchain that builds the guests: the rustc and cargo on
// PATH, then Debian's. Each needs both wasm32 standard libraries and a linker for
// them (rust-lld; Debian's rustc only suggests lld-14, which provides it).
func findRust(ctx context.Context) (found, error) {
	if m, _ := filepath.Glob(filepath.Join(DebianCrates, "serde_json-*")); len(m) == 0 {
		return found{}, fmt.Errorf("guestbuild: no packaged serde_json crate (apt-get install librust-serde-json-dev)")
	}
	var errs []string
	for _, dir := range []string{"", debianBin} {
		f, err := rustIn(ctx, dir)
		if err == nil {
			f.env = append(f.env, VendorEnv+"="+DebianCrates)
			return f, nil
		}
		errs = append(errs, err.Error())
	}
	return found{}, fmt.Errorf("guestbuild: no Rust toolchain for wasm32 (apt-get install rustc cargo libstd-rust-dev-wasm32 librust-serde-json-dev lld-14): %s",
		strings.Join(errs, "; "))
}

// rustIn checks the rustc and cargo in dir ("": the ones on PATH).
func rustIn(ctx context.Context, dir string) (found, error) {
	where, rustc, cargo := "on PATH", "rustc", "cargo"
	var env []string
	if dir != "" {
		where, rustc, cargo = "in "+dir, filepath.Join(dir, "rustc"), filepath.Join(dir, "cargo")
		env = []string{"PATH=" + dir + string(os.PathListSeparator) + os.Getenv("PATH")}
	}
	for _, prog := range []string{rustc, cargo} {
		if _, err := exec.LookPath(prog); err != nil {
			return found{}, fmt.Errorf("no %s %s", filepath.Base(prog), where)
		}
	}
	sysroot, err := output(ctx, rustc, "--print", "sysroot")
	if err != nil {
		return found{}, err
	}
	for _, target := range []string{"wasm32-unknown-unknown", "wasm32-wasi"} {
		if _, err := os.Stat(filepath.Join(sysroot, "lib", "rustlib", target)); err != nil {
			return found{}, fmt.Errorf("the rustc %s has no %s standard library", where, target)
		}
	}
	linkers, _ := filepath.Glob(filepath.Join(sysroot, "lib", "rustlib", "*", "bin", "rust-lld"))
	if dir != "" {
		linkers = append(linkers, filepath.Join(dir, "rust-lld"))
	} else if p, err := exec.LookPath("rust-lld"); err == nil {
		linkers = append(linkers, p)
	}
	linked := false
	for _, l := range linkers {
		if _, err := os.Stat(l); err == nil { // a dangling link (rust-lld -> lld-14) does not count
			linked = true
			break
		}
	}
	if !linked {
		return found{}, fmt.Errorf("the rustc %s has no rust-lld to link wasm32", where)
	}
	v, err := output(ctx, rustc, "--version")
	if err != nil {
		return found{}, err
	}
	return found{version: v, env: env}, nil
}

// Asc is the asc compiler the AssemblyScript guests build with, relative to the
// repository root.
const Asc = "sdk/assemblyscript/node_modules/.bin/asc"

func findAsc(ctx context.Context) (found, error) {
	root, err := Root()
	if err != nil {
		return found{}, err
	}
	if _, err := exec.LookPath("node"); err != nil {
		return found{}, fmt.Errorf("guestbuild: node not found (install Node.js, then npm ci --prefix sdk/assemblyscript)")
	}
	asc := filepath.Join(root, Asc)
	if _, err := os.Stat(asc); err != nil {
		return found{}, fmt.Errorf("guestbuild: %s not found (npm ci --prefix sdk/assemblyscript)", Asc)
	}
	v, err := output(ctx, asc, "--version")
	return found{version: v}, err
}

// Root returns the repository root: the nearest directory above the working directory
// with a go.mod.
func Root() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", fmt.Errorf("guestbuild: %w", err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", fmt.Errorf("guestbuild: no go.mod above the working directory")
		}
		dir = parent
	}
}
