//go:build race

package wasm

// raceEnabled: compiling a Go-built guest in a -race binary takes about twenty times
// longer, so the tests compile guests in a separate process (see TestMain)
// and load them from the disk cache.
const raceEnabled = true
