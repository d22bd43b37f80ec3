package sandbox

import "hash/fnv"

// SeedOf is the seed of a run's scripts' randomness when the host records calls
// (Invocation.Seed): derived from the run's id, so that a replay of the run seeds its
// scripts the same way without the seed being stored. It is never 0.
func SeedOf(runID string) int64 {
	h := fnv.New64a()
	h.Write([]byte(runID))
	s := int64(h.Sum64() >> 1)
	if s == 0 {
		s = 1
	}
	return s
}
