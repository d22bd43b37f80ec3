#!/bin/sh
# Rebuilds the .wasm fixtures from their .wat sources (committed, so tests do not need
# wabt). Needs wat2wasm (Debian: apt-get install wabt; built with wabt 1.0.32).
set -eu
cd "$(dirname "$0")"
for wat in *.wat; do
	wat2wasm "$wat" -o "${wat%.wat}.wasm"
done
