//go:build !cgo

package sqlite

// The SQLite driver, github.com/mattn/go-sqlite3, is C compiled through cgo. Without
// cgo it still compiles, as a stub that fails when the ledger is opened; this stops
// the build instead, with a name that says what to do.
var _ = scripthost_needs_cgo_for_SQLite__build_with_CGO_ENABLED_1_and_a_C_compiler
