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

// TestMemory checks that the resident memory read back grows by what the process
// touches, and that the peak is never below the current.
func TestMemory(t *testing.T) {
	rss, peak, ok := Memory()
	if !ok {
		t.Skip("the system does not report resident memory here")
	}
	if rss <= 0 || peak < rss {
		t.Fatalf("got rss %d, peak %d, want 0 < rss <= peak", rss, peak)
	}
	b := make([]byte, 64<<20)
	for i := range b {
		b[i] = 1
	}
	_, after, _ := Memory()
	if after < rss+32<<20 {
		t.Errorf("got a peak of %d after touching 64 MiB from %d, want at least 32 MiB more", after, rss)
	}
	runtime.KeepAlive(b)
}
