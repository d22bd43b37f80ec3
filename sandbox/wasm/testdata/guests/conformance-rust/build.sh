#!/bin/sh
# Builds conformance.wasm (or the path given, relative to this directory) from this crate with
# a Rust toolchain with the wasm32 standard library (the committed one: Debian's rustc,
# cargo and libstd-rust-dev-wasm32, with SCRIPTHOST_CARGO_VENDOR=/usr/share/cargo/registry).
# The module is committed beside its source so that the tests run without a Rust
# toolchain.
set -eu
cd "$(dirname "$0")"
out=${1:-conformance.wasm}
# Source paths in the module (panic locations) relative to the repository, wherever
# it is: added to the target's rustflags in .cargo/config.toml, not replacing them.
root=$(cd ../../../../.. && pwd)
export CARGO_TARGET_WASM32_WASI_RUSTFLAGS="--remap-path-prefix=$root/="
# Crates from crates.io, or offline from the vendored crates in SCRIPTHOST_CARGO_VENDOR
# (Debian's /usr/share/cargo/registry, or what cargo vendor writes) when it is set.
set --
if [ -n "${SCRIPTHOST_CARGO_VENDOR:-}" ]; then
  set -- --config 'source.crates-io.replace-with="vendored"' \
    --config "source.vendored.directory=\"$SCRIPTHOST_CARGO_VENDOR\"" --config net.offline=true
fi
cargo "$@" build --release --quiet
cp ../../../../../target/wasm32-wasi/release/conformance_rust.wasm "$out"
