package verbs

import (
	"container/list"
	"io/fs"
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

const (
	lineCacheSize = 1024
	racyWindow    = 2 * time.Second
)

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
}

func newLineCache(max int) *lineCache {
	return &lineCache{max: max, order: list.New(), byID: make(map[fileID]*list.Element)}
}

// get returns the count kept for fi, if it is still the file's.
func (c *lineCache) get(fi fs.FileInfo) (int, bool) {
	k, ok := fileKeyOf(fi)
	if !ok || c == nil {
		return 0, false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.byID[k.id]
	if !ok {
		c.misses++
		return 0, false
	}
	le := e.Value.(*lineEntry)
	if le.key != k {
		c.order.Remove(e)
		delete(c.byID, k.id)
		c.misses++
		return 0, false
	}
	c.order.MoveToFront(e)
	c.hits++
	return le.count, true
}

// put keeps n as the count of fi, unless fi changed less than racyWindow
// before now.
func (c *lineCache) put(fi fs.FileInfo, n int, now time.Time) {
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
		*e.Value.(*lineEntry) = lineEntry{key: k, count: n}
		c.order.MoveToFront(e)
		return
	}
	c.byID[k.id] = c.order.PushFront(&lineEntry{key: k, count: n})
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
