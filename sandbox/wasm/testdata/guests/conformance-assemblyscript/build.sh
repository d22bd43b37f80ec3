#!/bin/sh
# Builds conformance.wasm (or the path given, relative to this directory) with the
# AssemblyScript compiler installed by `npm ci --prefix sdk/assemblyscript`. The module
# is committed beside its source so that the tests run without Node.js.
set -eu
cd "$(dirname "$0")"
out=${1:-conformance.wasm}
../../../../../sdk/assemblyscript/node_modules/.bin/asc assembly/index.ts --config asconfig.json --outFile "$out"
