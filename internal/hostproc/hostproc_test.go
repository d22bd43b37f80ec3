package hostproc

import (
	"runtime"
	"runtime/debug"
	"testing"
)

func TestTune(t *testing.T) {
	t.Setenv("GOGC", "")
	t.Setenv("GOMAXPROCS", "")
	procs := runtime.GOMAXPROCS(0)
	gc := debug.SetGCPercent(100)
	defer debug.SetGCPercent(gc)

	restore := Tune()
	if got := runtime.GOMAXPROCS(0); got != procs+1 {
		t.Errorf("GOMAXPROCS %d, want %d", got, procs+1)
	}
	if got := debug.SetGCPercent(400); got != 400 {
		t.Errorf("GOGC %d, want 400", got)
	}
	restore()
	if got := runtime.GOMAXPROCS(0); got != procs {
		t.Errorf("after restore: GOMAXPROCS %d, want %d", got, procs)
	}
	if got := debug.SetGCPercent(100); got != 100 {
		t.Errorf("after restore: GOGC %d, want 100", got)
	}
}

func TestTuneLeavesWhatTheEnvironmentSets(t *testing.T) {
	t.Setenv("GOGC", "100")
	t.Setenv("GOMAXPROCS", "2")
	procs := runtime.GOMAXPROCS(0)
	gc := debug.SetGCPercent(150)
	defer debug.SetGCPercent(gc)
	defer Tune()()
	if got := runtime.GOMAXPROCS(0); got != procs {
		t.Errorf("GOMAXPROCS %d, want %d (set by the environment)", got, procs)
	}
	if got := debug.SetGCPercent(150); got != 150 {
		t.Errorf("GOGC %d, want 150 (set by the environment)", got)
	}
}
