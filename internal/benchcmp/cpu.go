package benchcmp

import (
	"syscall"
	"testing"
	"time"
)

// CPUTime is the CPU time (user and system) the process has used.
func CPUTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// ReportCPU reports the process's CPU time per iteration since since (a CPUTime) as
// cpu-µs/UNIT: on a shared machine it moves less than the wall-clock time, which
// waits for the other work, and beside it it says how much of the cores the work
// kept busy.
func ReportCPU(b *testing.B, since time.Duration, unit Unit) {
	if b.N > 0 {
		b.ReportMetric(float64((CPUTime()-since).Microseconds())/float64(b.N), "cpu-µs/"+string(unit))
	}
}
