package js

import (
	"context"
	"fmt"
	"testing"

	"github.com/scripthost/scripthost/sandbox"
)

func TestTransformCache(t *testing.T) {
	e := New(Options{CacheEntries: 2})
	src := func(i int) sandbox.Source {
		return sandbox.Source{Name: "wf.ts", Code: []byte(fmt.Sprintf("export default { n: %d as number }", i))}
	}
	p1, err := e.Load(context.Background(), src(1))
	if err != nil {
		t.Fatal(err)
	}
	p2, err := e.Load(context.Background(), src(1))
	if err != nil {
		t.Fatal(err)
	}
	if p1.(*program).mod != p2.(*program).mod {
		t.Errorf("same source loaded twice: got two compilations, want one cached")
	}
	for i := 2; i <= 3; i++ {
		if _, err := e.Load(context.Background(), src(i)); err != nil {
			t.Fatal(err)
		}
	}
	if got := len(e.cache); got != 2 {
		t.Errorf("cache entries: got %d, want 2", got)
	}
	p3, _ := e.Load(context.Background(), src(1))
	if p3.(*program).mod == p1.(*program).mod {
		t.Errorf("evicted source: got the old compilation, want a new one")
	}
}
