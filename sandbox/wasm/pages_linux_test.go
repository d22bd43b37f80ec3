package wasm

import (
	"bytes"
	"context"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/scripthost/scripthost/sandbox"
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

// addressSpace returns the process's mapped address space in bytes (VmSize): each
// memory of a tracked instance reserves its whole limit, 64 MiB here.
func addressSpace(t *testing.T) int64 {
	t.Helper()
	b, err := os.ReadFile("/proc/self/statm")
	if err != nil {
		t.Fatal(err)
	}
	pages, err := strconv.ParseInt(string(bytes.Fields(b)[0]), 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	return pages * int64(os.Getpagesize())
}

// TestMappingsReleased: the mappings of instances dropped after a trap, a timeout or
// a growth, and of an engine's kept instances at Close, are unmapped.
func TestMappingsReleased(t *testing.T) {
	needTracker(t)
	e := newEngine(t, Options{})
	e.trackMin = 0
	p := loadWAT(t, e, "scribble.wasm")
	invokeValue(t, p, sandbox.Invocation{Function: "check"})
	before := addressSpace(t)
	// Until 60 instances more are made: on a loaded machine a 1 ms timeout may expire
	// while an instance is made, which then releases its memory without counting.
	for i := 0; p.created.Load() < 61 && i < 600; i++ {
		inv := sandbox.Invocation{Function: "scribble_trap"}
		switch i % 3 {
		case 1:
			inv = sandbox.Invocation{Function: "spin", Limits: sandbox.Limits{Timeout: time.Millisecond}}
		case 2:
			inv = sandbox.Invocation{Function: "scribble_grow"}
		}
		_, _ = p.Invoke(context.Background(), inv)
	}
	if got := p.created.Load(); got < 61 {
		t.Fatalf("%d instances made, want one per dropped instance", got)
	}
	const slack = 256 << 20 // the Go heap's and wazero's own growth; 60 leaked memories would be 3.75 GiB
	if after := addressSpace(t); after > before+slack {
		t.Errorf("address space %d MiB before 60 dropped instances, %d MiB after", before>>20, after>>20)
	}
	if err := e.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if after := addressSpace(t); after > before+slack {
		t.Errorf("address space %d MiB before, %d MiB after the engine closed", before>>20, after>>20)
	}
}
