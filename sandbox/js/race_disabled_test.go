//go:build !race

package js_test

// raceEnabled says the race detector is on: it multiplies the memory a process uses,
// so tests that bound resident memory skip.
const raceEnabled = false
