package wasm

import "embed"

// GuestSources are the sources of the Go guest SDK (package guest), embedded so that
// `scripthost init --lang go` writes a copy into a new workflow.
//
//go:embed guest/abi_other.go guest/abi_wasip1.go guest/define.go guest/guest.go
var GuestSources embed.FS
