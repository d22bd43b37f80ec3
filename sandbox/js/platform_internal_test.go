package js

import (
	"context"
	"slices"
	"testing"

	"github.com/scripthost/scripthost/sandbox"
)

// TestPlatformGlobalsListed: the lazy globals the engine declares are exactly the
// globals platform.js makes, so that none is missing from a runtime and none is
// declared without a maker.
func TestPlatformGlobalsListed(t *testing.T) {
	e := New(Options{})
	c, err := e.compile(sandbox.Source{Name: "wf.js", Code: []byte("export default {}")})
	if err != nil {
		t.Fatal(err)
	}
	in, err := e.newInstance(context.Background(), c, sandbox.Invocation{})
	if err != nil {
		t.Fatal(err)
	}
	got := in.platform.load().Get("makers").ToObject(in.vm).Keys()
	want := slices.Clone(platformGlobals)
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("platform.js makes %v, the engine declares %v", got, want)
	}
}
