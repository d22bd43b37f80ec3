#!/bin/sh
# Runs goja's own tests, from the upstream module version third_party/goja was taken
# from, against third_party/goja: the copy's changes must keep every upstream behaviour
# its tests check. The tests are fetched through the Go module proxy into the module
# cache and run in a scratch copy; nothing in the repository changes.
set -eu
cd "$(dirname "$0")/.."
version=$(go list -m -f '{{.Version}}' github.com/dop251/goja)
upstream=$(go mod download -json "github.com/dop251/goja@$version" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')
[ -d "$upstream" ] || { echo "goja-upstream-tests: no module directory for goja $version" >&2; exit 1; }
work=$(mktemp -d)
trap 'chmod -R u+w "$work"; rm -rf "$work"' EXIT
cp -R third_party/goja/. "$work/"
(cd "$upstream" && find . -name '*_test.go' -o -path './testdata/*' -type f) | while read -r f; do
	mkdir -p "$work/$(dirname "$f")"
	cp "$upstream/$f" "$work/$f"
done
chmod -R u+w "$work"
echo "goja $version: upstream tests against third_party/goja"
cd "$work" && GOFLAGS=-mod=mod go test -count=1 ./...
