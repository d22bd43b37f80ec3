package guest

import (
	"encoding/json"
	"fmt"
	"reflect"
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

// fresh returns a value of a struct type encoding/json has not met before (each call
// makes a new one), so the test means the same under -count.
func fresh() any {
	types++
	typ := reflect.StructOf([]reflect.StructField{
		{Name: "A", Type: reflect.TypeFor[string](), Tag: `json:"a"`},
		{Name: "B", Type: reflect.TypeFor[[]int](), Tag: `json:"b,omitempty"`},
		{Name: "C", Type: reflect.TypeFor[map[string]any](), Tag: `json:"c"`},
		{Name: fmt.Sprintf("N%d", types), Type: reflect.TypeFor[int]()},
	})
	v := reflect.New(typ).Elem()
	v.Field(0).SetString("x")
	return v.Interface()
}

var types int

// TestWarm: after Warm, encoding and decoding a type the first time allocates what a
// later time does, not the encoder and decoder encoding/json builds for a type it
// meets the first time (as a type not warmed shows); values that do not encode are
// skipped.
func TestWarm(t *testing.T) {
	warmed, cold := fresh(), fresh()
	Warm(nil, make(chan int), func() {}, warmed)
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
	into := func(v any) any { return reflect.New(reflect.TypeOf(v)).Interface() }
	w := firstUseAllocs(use(warmed, into(warmed)))
	c := firstUseAllocs(use(cold, into(cold)))
	again := firstUseAllocs(use(cold, into(cold)))
	t.Logf("allocations at first use: warmed %d, not warmed %d (%d the second time)", w, c, again)
	if c <= again+10 {
		t.Fatalf("a type's first use allocated %d, its second %d: the test cannot tell warmed from not", c, again)
	}
	// MemStats counts every goroutine's allocations, the test framework's and the
	// runtime's included, so a count may read a few high: a warmed type's first use
	// must be nearer a later use than a first use.
	if mid := (c + again) / 2; w >= mid {
		t.Errorf("a warmed type's first use allocated %d, want nearer %d (a later use) than %d (a first use)", w, again, c)
	}
}
