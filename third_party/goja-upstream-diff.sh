#!/bin/sh
# Prints what third_party/goja changes in the upstream goja module version go.mod
# requires, as one unified diff (upstream's tests, CI files, scripts and command left
# out: the copy does not take them). The upstream module is fetched through the Go
# module proxy into the module cache; nothing in the repository changes.
#
#   third_party/goja-upstream-diff.sh           the diff
#   third_party/goja-upstream-diff.sh --stat    the changed and added files only
#   third_party/goja-upstream-diff.sh --check   exit 1 naming every changed or added
#                                               file that carries no "scripthost patch"
set -eu
cd "$(dirname "$0")/.."
mode=${1:-diff}
case $mode in diff | --stat | --check) ;; *)
	echo "usage: $0 [--stat|--check]" >&2
	exit 2
	;;
esac
version=$(go list -m -f '{{.Version}}' github.com/dop251/goja)
upstream=$(go mod download -json "github.com/dop251/goja@$version" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')
[ -d "$upstream" ] || { echo "goja-upstream-diff: no module directory for goja $version" >&2; exit 1; }
repo=$(pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
ln -s "$upstream" "$work/upstream"
ln -s "$repo/third_party/goja" "$work/goja"
cd "$work"
set -- -x '*_test.go' -x testdata -x .github -x .tc39_test262_checkout.sh \
	-x 'extract_*_tests.sh' -x staticcheck.conf -x PATCHES.md -x goja
status=0
case $mode in
diff)
	echo "# third_party/goja against github.com/dop251/goja@$version"
	diff -ruN "$@" upstream goja || status=$?
	;;
--stat)
	diff -rqN "$@" upstream goja | sed 's|^Files upstream/\(.*\) and goja/.* differ$|\1|' || status=$?
	;;
--check)
	unmarked=$(diff -rqN "$@" upstream goja | sed 's|^Files upstream/\(.*\) and goja/.* differ$|\1|' |
		while read -r f; do grep -q "scripthost patch" "goja/$f" || echo "$f"; done) || status=$?
	if [ -n "$unmarked" ]; then
		echo "goja-upstream-diff: changed without a \"scripthost patch\" marker:" >&2
		echo "$unmarked" >&2
		exit 1
	fi
	echo "every file third_party/goja changes or adds is marked \"scripthost patch\""
	;;
esac
# diff exits 1 when the trees differ, which they do; 2 is trouble.
[ "$status" -le 1 ] || exit "$status"
