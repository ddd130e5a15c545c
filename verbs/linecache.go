package verbs

import (
	"container/list"
	"io/fs"
	"sort"
	"sync"
	"time"
)

// The line-count cache lets fs.lineCount answer for an unchanged file
// without reading it again, and lets fs.readRange find lines near the end of
// a file by reading backwards from the end (lines count from the start, so
// that needs the file's count).
//
// A count is kept under the file's identity and state: device, inode, size,
// modification time and change time, both in nanoseconds. The change time
// is there because the modification time alone can be set back (touch -d,
// tar, rsync -t) after a write that kept the size; the change time cannot be
// set, and any write or chmod moves it. Where the change time is not known
// (platforms other than Linux) nothing is cached.
//
// Both times come from a clock that ticks coarsely (a few milliseconds), so
// a write within the same tick as the one a count was taken under could keep
// the key. A count is therefore kept only for files whose times lie more
// than racyWindow in the past, the way git treats "racily clean" entries: a
// later write then gets times of its own.

//
// With a file's count the cache can keep a sparse line index: the start of
// the first line after every stride bytes, recorded by the scan that
// counted the file (fs.lineCount), for files of at least indexMinSize. A
// range in the middle of a large file is then read from the nearest mark
// below it instead of from the start. At most indexMarks marks are kept per
// file (the stride grows with the file), so the whole cache holds at most
// lineCacheSize × indexMarks marks (4 MiB).

const (
	lineCacheSize = 1024
	racyWindow    = 2 * time.Second

	indexMinSize = 4 << 20
	indexMarks   = 256
	indexStride  = blockSize // the smallest stride: the scan finds at most one mark per block
)

// lineMark is the start of a line: line number (from 1) and byte offset.
type lineMark struct {
	line int
	off  int64
}

// markStride is the stride of the line index of a file of size bytes; 0
// when the file is too small to be indexed.
func markStride(size int64) int64 {
	if size < indexMinSize {
		return 0
	}
	return max(indexStride, (size+indexMarks-1)/indexMarks)
}

// nearestMark returns the last mark at or before line k (the zero mark, the
// file's start, when there is none).
func nearestMark(marks []lineMark, k int) lineMark {
	i := sort.Search(len(marks), func(i int) bool { return marks[i].line > k })
	if i == 0 {
		return lineMark{line: 1}
	}
	return marks[i-1]
}

// fileKey is what a cached count stands for.
type fileKey struct {
	id           fileID
	size         int64
	mtime, ctime int64 // nanoseconds since the epoch
}

// lineCache is a bounded (LRU), concurrency-safe map from files to their
// line counts; one entry per file, replaced when the file changes.
type lineCache struct {
	mu     sync.Mutex
	max    int
	order  *list.List // of *lineEntry, most recently used first
	byID   map[fileID]*list.Element
	hits   int64
	misses int64
}

type lineEntry struct {
	key   fileKey
	count int
	marks []lineMark // the sparse line index, in line order; nil when none was recorded
}

func newLineCache(max int) *lineCache {
	return &lineCache{max: max, order: list.New(), byID: make(map[fileID]*list.Element)}
}

// get returns the count kept for fi, if it is still the file's.
func (c *lineCache) get(fi fs.FileInfo) (int, bool) {
	e, ok := c.lookup(fi)
	return e.count, ok
}

// lookup returns the entry kept for fi (count and index), if it is still
// the file's. The marks are shared: callers do not change them.
func (c *lineCache) lookup(fi fs.FileInfo) (lineEntry, bool) {
	k, ok := fileKeyOf(fi)
	if !ok || c == nil {
		return lineEntry{}, false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.byID[k.id]
	if !ok {
		c.misses++
		return lineEntry{}, false
	}
	le := e.Value.(*lineEntry)
	if le.key != k {
		c.order.Remove(e)
		delete(c.byID, k.id)
		c.misses++
		return lineEntry{}, false
	}
	c.order.MoveToFront(e)
	c.hits++
	return *le, true
}

// put keeps n as the count of fi, unless fi changed less than racyWindow
// before now. An index kept for the same state of the file stays.
func (c *lineCache) put(fi fs.FileInfo, n int, now time.Time) { c.putIndex(fi, n, nil, now) }

// putIndex is put with the file's sparse line index (nil: none, or keep
// the one already kept for this state of the file).
func (c *lineCache) putIndex(fi fs.FileInfo, n int, marks []lineMark, now time.Time) {
	k, ok := fileKeyOf(fi)
	if !ok || c == nil {
		return
	}
	if edge := now.Add(-racyWindow).UnixNano(); k.mtime > edge || k.ctime > edge {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.byID[k.id]; ok {
		le := e.Value.(*lineEntry)
		if marks == nil && le.key == k && le.count == n {
			marks = le.marks
		}
		*le = lineEntry{key: k, count: n, marks: marks}
		c.order.MoveToFront(e)
		return
	}
	c.byID[k.id] = c.order.PushFront(&lineEntry{key: k, count: n, marks: marks})
	for c.order.Len() > c.max {
		last := c.order.Back()
		c.order.Remove(last)
		delete(c.byID, last.Value.(*lineEntry).key.id)
	}
}

// stats returns the hits and misses so far, and the entries kept.
func (c *lineCache) stats() (hits, misses int64, entries int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.hits, c.misses, c.order.Len()
}
