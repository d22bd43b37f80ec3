package workspace

import (
	"fmt"
	"testing"
)

// BenchmarkWriteNew is one write of a new small file into a directory that fills up,
// as the consumer-run benchmark's mutation does.
func BenchmarkWriteNew(b *testing.B) {
	w, err := New(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	defer w.Close()
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		if err := w.Write("bench", fmt.Sprintf("out/e%d.txt", i), []byte("x")); err != nil {
			b.Fatal(err)
		}
	}
}
