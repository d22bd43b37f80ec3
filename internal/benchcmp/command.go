package benchcmp

import (
	"testing"

	"github.com/scripthost/scripthost/internal/hostproc"
)

// AsCommand returns c run in a process set up as the scripthost command sets its own
// (hostproc.Tune), put back after. The setting is made inside the measured function:
// the testing package sets GOMAXPROCS itself before each benchmark it measures, so a
// parent benchmark's setting would not reach its sub-benchmarks' timed runs.
func AsCommand(c Case) Case {
	run := c.Run
	c.Run = func(b *testing.B) {
		restore := hostproc.Tune()
		defer restore()
		run(b)
	}
	return c
}
