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
	Pinned  string
	version func(context.Context) (string, error)
}

// Rust is rustc and cargo from Debian, with the wasm32 standard library and the
// packaged crates (see the repository's .cargo/config.toml).
var Rust = Toolchain{Name: "Rust", Pinned: "rustc 1.63.0", version: rustVersion}

// AssemblyScript is the asc compiler from npm, installed in sdk/assemblyscript.
var AssemblyScript = Toolchain{Name: "AssemblyScript", Pinned: "Version 0.28.20", version: ascVersion}

// Version returns the installed compiler's version, or an error saying what is missing.
func (tc Toolchain) Version(ctx context.Context) (string, error) { return tc.version(ctx) }

func output(ctx context.Context, name string, args ...string) (string, error) {
	var out bytes.Buffer
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("guestbuild: %s %s: %w: %s", name, strings.Join(args, " "), err, out.String())
	}
	return strings.TrimSpace(out.String()), nil
}

func rustVersion(ctx context.Context) (string, error) {
	if _, err := exec.LookPath("cargo"); err != nil {
		return "", fmt.Errorf("guestbuild: cargo not found (apt-get install rustc cargo libstd-rust-dev-wasm32 librust-serde-json-dev)")
	}
	sysroot, err := output(ctx, "rustc", "--print", "sysroot")
	if err != nil {
		return "", err
	}
	for _, target := range []string{"wasm32-unknown-unknown", "wasm32-wasi"} {
		if _, err := os.Stat(filepath.Join(sysroot, "lib", "rustlib", target)); err != nil {
			return "", fmt.Errorf("guestbuild: rustc has no %s standard library (apt-get install libstd-rust-dev-wasm32)", target)
		}
	}
	if m, _ := filepath.Glob("/usr/share/cargo/registry/serde_json-*"); len(m) == 0 {
		return "", fmt.Errorf("guestbuild: no packaged serde_json crate (apt-get install librust-serde-json-dev)")
	}
	v, err := output(ctx, "rustc", "--version")
	if err != nil {
		return "", err
	}
	return v, nil
}

// Asc is the asc compiler the AssemblyScript guests build with, relative to the
// repository root.
const Asc = "sdk/assemblyscript/node_modules/.bin/asc"

func ascVersion(ctx context.Context) (string, error) {
	root, err := Root()
	if err != nil {
		return "", err
	}
	if _, err := exec.LookPath("node"); err != nil {
		return "", fmt.Errorf("guestbuild: node not found (install Node.js, then npm ci --prefix sdk/assemblyscript)")
	}
	asc := filepath.Join(root, Asc)
	if _, err := os.Stat(asc); err != nil {
		return "", fmt.Errorf("guestbuild: %s not found (npm ci --prefix sdk/assemblyscript)", Asc)
	}
	return output(ctx, asc, "--version")
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

// Build runs dir/build.sh to build the guest in dir to out.
func Build(ctx context.Context, dir, out string) error {
	abs, err := filepath.Abs(out)
	if err != nil {
		return fmt.Errorf("guestbuild: %w", err)
	}
	_, err = output(ctx, filepath.Join(dir, "build.sh"), abs)
	return err
}
