package hostproc

import (
	"runtime"
	"runtime/debug"
	"testing"
)

// TestTune checks that Tune sets GOGC to 400 and one P more than before unless the
// environment sets them, and that the function it returns puts back what it changed.
func TestTune(t *testing.T) {
	for _, c := range []struct {
		name, gogc, procs string
		tuned             bool
	}{
		{"environment silent", "", "", true},
		{"environment sets both", "100", "2", false},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Setenv("GOGC", c.gogc)
			t.Setenv("GOMAXPROCS", c.procs)
			procs := runtime.GOMAXPROCS(0)
			gc := debug.SetGCPercent(150)
			defer debug.SetGCPercent(gc)
			wantProcs, wantGC := procs, 150
			if c.tuned {
				wantProcs, wantGC = procs+1, 400
			}

			restore := Tune()
			if got := runtime.GOMAXPROCS(0); got != wantProcs {
				t.Errorf("GOMAXPROCS %d, want %d", got, wantProcs)
			}
			if got := debug.SetGCPercent(wantGC); got != wantGC {
				t.Errorf("GOGC %d, want %d", got, wantGC)
			}
			restore()
			if got := runtime.GOMAXPROCS(0); got != procs {
				t.Errorf("after restore: GOMAXPROCS %d, want %d", got, procs)
			}
			if got := debug.SetGCPercent(150); got != 150 {
				t.Errorf("after restore: GOGC %d, want 150", got)
			}
		})
	}
}
