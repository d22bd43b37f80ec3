#!/bin/sh
# Builds conformance.wasm (or the path given, relative to this directory) from this crate with
# the Rust toolchain from Debian (rustc, cargo, libstd-rust-dev-wasm32,
# librust-serde-json-dev), offline.
# The module is committed beside its source so that the tests run without a Rust
# toolchain.
set -eu
cd "$(dirname "$0")"
out=${1:-conformance.wasm}
cargo build --release --quiet
cp ../../../../../target/wasm32-wasi/release/conformance_rust.wasm "$out"
