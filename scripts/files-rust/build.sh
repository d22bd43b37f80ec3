#!/bin/sh
# Builds workflow.wasm (or the path given, relative to this directory) from this crate with
# the Rust toolchain from Debian (rustc, cargo, libstd-rust-dev-wasm32,
# librust-serde-json-dev), offline.
# The module is committed beside its source so that the tests run without a Rust
# toolchain.
set -eu
cd "$(dirname "$0")"
out=${1:-workflow.wasm}
# Source paths in the module (panic locations) relative to the repository, wherever
# it is: added to the target's rustflags in .cargo/config.toml, not replacing them.
root=$(cd ../.. && pwd)
export CARGO_TARGET_WASM32_UNKNOWN_UNKNOWN_RUSTFLAGS="--remap-path-prefix=$root/="
cargo build --release --quiet
cp ../../target/wasm32-unknown-unknown/release/files_rust.wasm "$out"
