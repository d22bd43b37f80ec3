package guest

import (
	"encoding/json"
	"runtime"
	"testing"
)

// firstUseAllocs returns the allocations of fn's first call.
func firstUseAllocs(fn func()) uint64 {
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	fn()
	runtime.ReadMemStats(&after)
	return after.Mallocs - before.Mallocs
}

type warmed struct {
	A string         `json:"a"`
	B []int          `json:"b,omitempty"`
	C map[string]any `json:"c"`
}

type cold struct {
	A string         `json:"a"`
	B []int          `json:"b,omitempty"`
	C map[string]any `json:"c"`
}

// TestWarm: after Warm, encoding and decoding a type the first time allocates what a
// later time does, not the encoder and decoder encoding/json builds for a type it
// meets the first time (as a type not warmed shows); values that do not encode are
// skipped.
func TestWarm(t *testing.T) {
	Warm(nil, make(chan int), func() {}, warmed{})
	use := func(v, into any) func() {
		return func() {
			b, err := json.Marshal(v)
			if err != nil {
				t.Fatal(err)
			}
			if err := json.Unmarshal(b, into); err != nil {
				t.Fatal(err)
			}
		}
	}
	w := firstUseAllocs(use(warmed{A: "x"}, new(warmed)))
	c := firstUseAllocs(use(cold{A: "x"}, new(cold)))
	again := firstUseAllocs(use(cold{A: "x"}, new(cold)))
	t.Logf("allocations at first use: warmed %d, not warmed %d (%d the second time)", w, c, again)
	if c <= again+5 {
		t.Fatalf("a type's first use allocated %d, its second %d: the test cannot tell warmed from not", c, again)
	}
	if w > again+2 {
		t.Errorf("a warmed type's first use allocated %d, want about %d as a later use", w, again)
	}
}
