package runtime_test

import (
	"database/sql"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/scripthost/scripthost/internal/benchcmp"
	"github.com/scripthost/scripthost/internal/benchrun"
)

// BenchmarkConsumerRun measures whole consumer runs (prepare → durable mutation with a
// Files.write → next → commit) on a real SQLite file: one workflow, and 16 workflows
// running at once, each against the two-commit floor of plain SQLite with as many
// writers, in the same run.
func BenchmarkConsumerRun(b *testing.B) { consumerRuns(b, benchrun.FileWrite, false) }

// BenchmarkConsumerRunNoIO is BenchmarkConsumerRun with a mutation that does no I/O of
// its own (a Go tool adding to a counter): what the host itself costs a run.
func BenchmarkConsumerRunNoIO(b *testing.B) { consumerRuns(b, benchrun.Count, false) }

// BenchmarkConsumerRunCommand and BenchmarkConsumerRunNoIOCommand are the two above
// in a process set up as the scripthost command runs (hostproc.Tune: GOGC=400, one P
// above Go's default), the references included; the ones above keep Go's defaults, as
// an embedding process has them.
func BenchmarkConsumerRunCommand(b *testing.B) { consumerRuns(b, benchrun.FileWrite, true) }

func BenchmarkConsumerRunNoIOCommand(b *testing.B) { consumerRuns(b, benchrun.Count, true) }

func consumerRuns(b *testing.B, effect benchrun.Effect, command bool) {
	for _, workflows := range []int{1, 16} {
		b.Run(fmt.Sprintf("workflows=%d", workflows), func(b *testing.B) {
			ref := benchcmp.Case{Run: func(b *testing.B) {
				db, err := sql.Open("sqlite3", benchcmp.FloorDSN(filepath.Join(b.TempDir(), "floor.db")))
				if err != nil {
					b.Fatal(err)
				}
				defer db.Close()
				benchcmp.TwoCommitFloor(b, db, workflows)
			}}
			run := benchcmp.Case{Run: func(b *testing.B) { benchrun.ConsumerRuns(b, workflows, effect) }}
			if command {
				ref, run = benchcmp.AsCommand(ref), benchcmp.AsCommand(run)
			}
			benchcmp.Against(b, "run", ref, run)
		})
	}
}
