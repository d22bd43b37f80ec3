#!/bin/sh
# Builds conformance.wasm (or the path given, relative to this directory) from this crate with
# the Rust toolchain from Debian (rustc, cargo, libstd-rust-dev-wasm32,
# librust-serde-json-dev), offline.
# The module is committed beside its source so that the tests run without a Rust
# toolchain.
set -eu
cd "$(dirname "$0")"
out=${1:-conformance.wasm}
# Source paths in the module (panic locations) relative to the repository, wherever
# it is: added to the target's rustflags in .cargo/config.toml, not replacing them.
root=$(cd ../../../../.. && pwd)
export CARGO_TARGET_WASM32_WASI_RUSTFLAGS="--remap-path-prefix=$root/="
cargo build --release --quiet
cp ../../../../../target/wasm32-wasi/release/conformance_rust.wasm "$out"
