// Package sdk holds the sources of the Wasm guest SDKs for Rust (sdk/rust) and
// AssemblyScript (sdk/assemblyscript), embedded so that `scripthost init --lang`
// writes a copy into a new workflow, which then builds offline.
package sdk

import "embed"

// Sources are the SDK sources: rust/Cargo.toml, rust/src/*.rs and
// assemblyscript/assembly/*.ts.
//
//go:embed rust/Cargo.toml rust/src/*.rs assemblyscript/assembly/*.ts
var Sources embed.FS
