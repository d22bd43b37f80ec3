#!/bin/sh
# Builds workflow.wasm from this directory's Go sources (the top-level Makefile runs
# the same command).
set -eu
cd "$(dirname "$0")/../.."
GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared -o scripts/files-wasm/workflow.wasm ./scripts/files-wasm
