// Package hostproc sets up the Go runtime of a process hosting runs the way the
// scripthost command does, and reads the process's resident memory. A library
// embedding scripthost leaves its process's runtime to the embedder; the command and
// the benchmarks measuring it call Tune, and the budget tests and neighbour
// benchmarks read Memory.
package hostproc

import (
	"os"
	"runtime"
	"runtime/debug"
)

// Tune applies the command's runtime settings, each unless the environment sets it,
// and returns a function that puts back what it changed:
//
//   - GOGC=400. Scripts allocate much and keep little: at GOGC=100 the collector runs
//     tens of times a second next to a script that builds strings, and every goroutine
//     that allocates meanwhile helps it. The JavaScript memory watcher forces a
//     collection itself once a budget's worth has been allocated, so budgets are kept
//     as well.
//   - GOMAXPROCS one above Go's default. The SQLite ledger's one writer spends most of
//     its time in C, in calls too short for the scheduler to hand its P to another
//     thread, so it holds a P while the CPU it uses is its own thread's. With one P
//     more the runs' scripts go on while it is in SQLite, and more of them reach the
//     writer during each commit, which then carries more writes.
func Tune() (restore func()) {
	var undo []func()
	if os.Getenv("GOGC") == "" {
		old := debug.SetGCPercent(400)
		undo = append(undo, func() { debug.SetGCPercent(old) })
	}
	if os.Getenv("GOMAXPROCS") == "" {
		old := runtime.GOMAXPROCS(runtime.GOMAXPROCS(0) + 1)
		undo = append(undo, func() { runtime.GOMAXPROCS(old) })
	}
	return func() {
		for _, u := range undo {
			u()
		}
	}
}
