package wasm

import (
	"testing"
)

// needTracker returns the process's page tracker, or skips the test where the kernel
// offers none (older than 6.7, or userfaultfd refused).
func needTracker(t *testing.T) *pageTracker {
	t.Helper()
	tr, err := tracker()
	if tr == nil {
		t.Skipf("no written-page tracking here: %v", err)
	}
	return tr
}

// TestPageTracker: the tracker reports exactly the pages written since it last
// looked, in runs, whether written by Go code or not at all (a read is no write), and
// not the writes its caller made while it reported them.
func TestPageTracker(t *testing.T) {
	tr := needTracker(t)
	const pages = 64
	m, err := mapMemory(pages * osPageSize)
	if err != nil {
		t.Fatal(err)
	}
	defer unmapMemory(m)
	m[9*osPageSize] = 7 // before tracking: not reported
	if err := tr.track(m); err != nil {
		t.Fatal(err)
	}
	written := func() (runs [][2]int) {
		t.Helper()
		err := tr.written(m, func(off, end int) {
			runs = append(runs, [2]int{off / osPageSize, end / osPageSize})
			for i := off; i < end; i++ {
				m[i] = 0 // what a reset does: not reported next time
			}
		})
		if err != nil {
			t.Fatal(err)
		}
		return runs
	}
	if got := written(); len(got) != 0 {
		t.Fatalf("nothing written yet, got pages %v", got)
	}
	m[0] = 1
	m[5*osPageSize+4095] = 1
	m[6*osPageSize] = 1
	copy(m[63*osPageSize+10:], "end")
	_ = m[20*osPageSize] // read only
	want := [][2]int{{0, 1}, {5, 7}, {63, 64}}
	got := written()
	if len(got) != len(want) {
		t.Fatalf("got page runs %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("got page runs %v, want %v", got, want)
		}
	}
	if got := written(); len(got) != 0 {
		t.Errorf("after the reset's own writes, got pages %v, want none", got)
	}
	// More runs than one scan returns: every other page.
	for p := 0; p < pages; p += 2 {
		m[p*osPageSize] = 1
	}
	if got := written(); len(got) != pages/2 || got[len(got)-1] != [2]int{pages - 2, pages - 1} {
		t.Errorf("every other page written: got %d runs ending %v, want %d", len(got), got[len(got)-1], pages/2)
	}
}
