package verbs

import "testing"

// WithoutSupervisor makes proc.run start programs directly for the rest of
// t, as in a binary that never calls MaybeRunSupervisor.
func WithoutSupervisor(t testing.TB) {
	was := supervisorReady.Swap(false)
	t.Cleanup(func() { supervisorReady.Store(was) })
}

// LineCacheStats returns the hits and misses of s's line-count cache, and
// the entries it keeps.
func LineCacheStats(s *Set) (hits, misses int64, entries int) { return s.lines.stats() }
