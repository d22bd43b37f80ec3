#!/usr/bin/env bash
# The digest example end to end: install its npm dependency, check and test it, run it
# twice on a fresh SQLite ledger, turn the recorded runs into a fixture, and replay the
# ledger against the code.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
cd "$here/../.."
out=.run/digest
rm -rf "$out" && mkdir -p "$out/workspace/inbox"
go build -o "$out/scripthost" ./cmd/scripthost
(cd "$here" && npm ci --no-audit --no-fund --silent)
cat > "$out/workspace/inbox/power.json" <<'JSON'
{"payee": "Acme Power", "amount": 42.5, "due": "2030-01-03"}
JSON
cat > "$out/workspace/inbox/rent.json" <<'JSON'
{"payee": "Landlord", "amount": 900, "due": "2020-12-28"}
JSON
sh() { "$out/scripthost" --db "$out/scripthost.db" "$@"; }

echo "== validate"
sh validate scripts/digest/workflow.ts
echo "== test (fixtures)"
sh test scripts/digest/workflow.ts
echo "== run (first time; --record-calls keeps read calls, so runs can become fixtures)"
sh run scripts/digest/workflow.ts --once --record-calls --workspace "$out/workspace"
echo "== run (again: nothing new to do)"
sh run scripts/digest/workflow.ts --once --record-calls --workspace "$out/workspace"
echo "== show (the stored bundle's files)"
sh show digest
echo "== outbox"
cat "$out"/workspace/outbox/*.md
echo "== the recorded runs as a fixture, which passes against the code"
sh fixture record --workflow digest -o "$out/recorded.json"
sh test scripts/digest/workflow.ts --fixtures "$out/recorded.json"
echo "== replay the recorded runs against the current code"
sh test scripts/digest/workflow.ts --replay "$out/scripthost.db"
echo "== replay against changed code: the first divergence, with its file and line"
rm -rf "$out/changed" && cp -r "$here" "$out/changed"
sed -i 's/(due later)/(later)/; s/due later/later/' "$out/changed/src/render.ts"
if sh test "$out/changed/workflow.ts" --replay "$out/scripthost.db" --workflow digest; then
  echo "the replay of changed code should have diverged" >&2; exit 1
fi
