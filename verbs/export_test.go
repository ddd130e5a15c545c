package verbs

import (
	"io/fs"
	"testing"
)

// WithoutSupervisor makes proc.run start programs directly for the rest of
// t, as in a binary that never calls MaybeRunSupervisor.
func WithoutSupervisor(t testing.TB) {
	was := supervisorReady.Swap(false)
	t.Cleanup(func() { supervisorReady.Store(was) })
}

// LineCacheStats returns the hits and misses of s's line-count cache, and
// the entries it keeps.
func LineCacheStats(s *Set) (hits, misses int64, entries int) { return s.lines.stats() }

// LineIndexMarks returns how many marks s's cache keeps in the line index
// of the file fi describes (0 when none).
func LineIndexMarks(s *Set, fi fs.FileInfo) int {
	e, _ := s.lines.lookup(fi)
	return len(e.marks)
}

// ChooseProcUserFor is ChooseProcUser for a hub running as euid, with
// lookup resolving users; LookupProcUser is the real lookup.
var (
	ChooseProcUserFor = chooseProcUser
	LookupProcUser    = lookupProcUser
)
