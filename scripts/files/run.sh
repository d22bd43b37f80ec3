#!/usr/bin/env bash
# The main job: run the files example end to end on a fresh SQLite ledger, twice, and
# show what the ledger recorded. The second run processes nothing twice.
set -euo pipefail
cd "$(dirname "$0")/../.."
out=.run
rm -rf "$out" && mkdir -p "$out/workspace/inbox"
go build -o "$out/scripthost" ./cmd/scripthost
printf 'hello, scripthost\n' > "$out/workspace/inbox/hello.txt"
printf 'every side effect is recorded before it happens\n' > "$out/workspace/inbox/ledger.txt"
sh() { "$out/scripthost" --db "$out/scripthost.db" "$@"; }

echo "== run (first time)"
sh run scripts/files/workflow.js --once --workspace "$out/workspace"
echo "== run (again: nothing new to do)"
sh run scripts/files/workflow.js --once --workspace "$out/workspace"
echo "== runs"
sh runs
echo "== mutations"
sh mutations
echo "== events"
sh events
echo "== outbox"
for f in "$out"/workspace/outbox/*; do printf '%s: %s\n' "$(basename "$f")" "$(cat "$f")"; done

echo "== the same workflow written in Go, compiled to Wasm, on its own ledger"
GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared -o "$out/workflow.wasm" ./scripts/files-wasm
mkdir -p "$out/wasm-workspace/inbox" && cp "$out"/workspace/inbox/* "$out/wasm-workspace/inbox/"
"$out/scripthost" --db "$out/wasm.db" run "$out/workflow.wasm" --name files --once --workspace "$out/wasm-workspace"
diff -r "$out/workspace/outbox" "$out/wasm-workspace/outbox" && echo "outboxes are identical"
