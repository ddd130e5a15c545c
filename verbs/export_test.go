package verbs

import (
	"io/fs"
	"time"
)

// LineCacheStats returns the hits and misses of s's line-count cache, and
// the entries it keeps.
func LineCacheStats(s *Set) (hits, misses int64, entries int) { return s.lines.stats() }

// LineIndexMarks returns how many marks s's cache keeps in the line index
// of the file fi describes (0 when none).
func LineIndexMarks(s *Set, fi fs.FileInfo) int {
	e, _ := s.lines.lookup(fi)
	return len(e.marks)
}

// SetWatchPoll sets how often fs.watch looks when nothing woke it, until
// the test ends.
func SetWatchPoll(t interface{ Cleanup(func()) }, d time.Duration) {
	old := watchPoll
	watchPoll = d
	t.Cleanup(func() { watchPoll = old })
}
