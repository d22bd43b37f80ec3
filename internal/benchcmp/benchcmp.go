// Package benchcmp runs a benchmark next to its reference in one run, so that the
// number that matters is a ratio measured on the same machine at the same moment,
// not an absolute time on a machine shared with other work.
//
// A comparison is a parent benchmark with two sub-benchmarks, "ref" and "scripthost",
// run one after the other. Both report ns/UNIT (time per unit of work, e.g. per tool
// call); the second also reports x_ref, its time per unit divided by the reference's.
// cmd/benchtable turns those lines into the table `make bench` prints.
package benchcmp

import (
	"testing"
)

// Case is one side of a comparison: Run is the benchmark body (it loops with b.Loop
// or over b.N), Per the units of work one iteration does (0 means 1).
type Case struct {
	Run func(b *testing.B)
	Per float64
}

// Unit names what Per counts, for the ns/UNIT metric (e.g. "call", "phase", "run").
type Unit string

// Against runs ref, then subject, as sub-benchmarks of b, and reports the subject's
// time per unit as a multiple of the reference's (x_ref; below 1 is faster).
func Against(b *testing.B, unit Unit, ref, subject Case) {
	var refNs float64
	b.Run("ref", func(b *testing.B) {
		ref.Run(b)
		refNs = perUnit(b, ref.Per)
		b.ReportMetric(refNs, "ns/"+string(unit))
	})
	b.Run("scripthost", func(b *testing.B) {
		subject.Run(b)
		ns := perUnit(b, subject.Per)
		b.ReportMetric(ns, "ns/"+string(unit))
		if refNs > 0 {
			b.ReportMetric(ns/refNs, "x_ref")
		}
	})
}

func perUnit(b *testing.B, per float64) float64 {
	if per <= 0 {
		per = 1
	}
	if b.N == 0 {
		return 0
	}
	return float64(b.Elapsed().Nanoseconds()) / float64(b.N) / per
}
