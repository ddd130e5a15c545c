package verbs

import (
	"container/list"
	"sync"
	"time"

	unix "github.com/a6afc2ce/hermes-hub/internal/posix"
)

// The listing cache lets fs.listDir answer for an unchanged host directory
// without reading it again. A host listing carries only each entry's name
// and kind, and adding, removing or renaming an entry, or replacing one by
// another of a different kind, changes the directory itself; so does
// moving a protected directory in or out. A listing is therefore kept
// under the directory's identity (device and inode) and the workspace path
// it was listed under (the deny list is matched against paths), and
// stands for the directory's state: modification and change time, both in
// nanoseconds, size and link count, compared with an fstat of the opened
// directory on every call. The change time is there because the
// modification time can be set back (touch -d); the change time cannot be
// set, and every change to the directory moves it.
//
// The times come from a clock that ticks coarsely, so a change within the
// same tick as the one a listing was read under could keep the state. As
// for line counts (see lineCache), a listing is kept only for a directory
// whose times lie more than racyWindow before the moment the listing was
// read, and only when the directory's state after the read is the state
// before it.
//
// What is kept is the listing after the deny list, the protected
// directories and the protected files have left their entries out (kept
// under the generation of the protected files it was read under, and
// dropped when they are resolved again, see Workspace.RefreshProtected),
// compactly: the names in one string, their end offsets, and the kind of
// each (directory, file or link). A link's kind in the result is that of
// its target, which can change without the directory changing, so links
// are kept as links and resolved again on every call. Session listings
// (sizes, versions) are never kept. The cache belongs to fs.listDir, not
// to the workspaces: one cache serves every Set and every host workspace
// of the process, so its bound is the process's whatever the number of
// workspaces; a listing is kept under its workspace too (two workspaces
// over one directory deny different entries), and a workspace's listings
// are dropped when it closes (a reloaded configuration opens new
// workspaces, which start with none).

const (
	// listCacheBytes bounds the bytes of listings the process keeps.
	listCacheBytes = 32 << 20
	// listEntryOverhead is what a kept listing costs besides its names and
	// offsets: the entry, its list element and map slot.
	listEntryOverhead = 256
)

// dirState is the state of a directory a listing stands for.
type dirState struct {
	mtime, ctime int64 // nanoseconds since the epoch
	size         int64
	nlink        uint64
}

// listKey is what a listing is kept under.
type listKey struct {
	ws   uint64 // the workspace's id
	gen  uint64 // the generation of the workspace's protected files
	id   fileID
	name string // workspace-relative, links resolved
}

// fileID identifies a directory on the host: its device and inode.
type fileID struct{ dev, ino uint64 }

func idOf(st *unix.Stat_t) fileID { return fileID{dev: uint64(st.Dev), ino: uint64(st.Ino)} } //nolint:unconvert // Dev is 32 bits on some systems

// sharedLists is the process's listing cache, which every Set uses.
var sharedLists = newListCache(listCacheBytes)

// dirListing is a host listing, compactly: entry i is named
// names[ends[i-1]:ends[i]] (from 0 for i = 0); the first dirs entries are
// directories, the next files entries files (and anything else that is not
// a directory: FIFOs, sockets, devices), the rest links. Each group is
// sorted by name. A listing is never changed once built.
type dirListing struct {
	names       string
	ends        []uint32
	dirs, files int
}

func (l *dirListing) len() int { return len(l.ends) }

// name returns the name of entry i.
func (l *dirListing) name(i int) string {
	start := uint32(0)
	if i > 0 {
		start = l.ends[i-1]
	}
	return l.names[start:l.ends[i]]
}

// cost is what l counts for against the cache's bound.
func (l *dirListing) cost(k listKey) int {
	return len(l.names) + 4*len(l.ends) + len(k.name) + listEntryOverhead
}

// newDirListing builds the listing of the sorted groups dirs, files and
// links.
func newDirListing(dirs, files, links []string) *dirListing {
	n, size := len(dirs)+len(files)+len(links), 0
	for _, g := range [][]string{dirs, files, links} {
		for _, s := range g {
			size += len(s)
		}
	}
	buf := make([]byte, 0, size)
	ends := make([]uint32, 0, n)
	for _, g := range [][]string{dirs, files, links} {
		for _, s := range g {
			buf = append(buf, s...)
			ends = append(ends, uint32(len(buf)))
		}
	}
	return &dirListing{names: string(buf), ends: ends, dirs: len(dirs), files: len(files)}
}

// listCache is a concurrency-safe map from directories to their listings,
// bounded by bytes (least recently used first out).
type listCache struct {
	mu     sync.Mutex
	max    int // bytes
	used   int
	order  *list.List // of *listCacheEntry, most recently used first
	byKey  map[listKey]*list.Element
	hits   int64
	misses int64
}

type listCacheEntry struct {
	key   listKey
	state dirState
	l     *dirListing
	cost  int
}

func newListCache(maxBytes int) *listCache {
	return &listCache{max: maxBytes, order: list.New(), byKey: make(map[listKey]*list.Element)}
}

// get returns the listing kept for k, if it was read in state st. A
// listing kept for another state is dropped.
func (c *listCache) get(k listKey, st dirState) (*dirListing, bool) {
	if c == nil {
		return nil, false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.byKey[k]
	if !ok {
		c.misses++
		return nil, false
	}
	ce := e.Value.(*listCacheEntry)
	if ce.state != st {
		c.remove(e)
		c.misses++
		return nil, false
	}
	c.order.MoveToFront(e)
	c.hits++
	return ce.l, true
}

// put keeps l as the listing of k, a directory of the workspace w, in
// state st, unless the directory changed less than racyWindow before now
// (when the listing was read) or the listing is larger than a quarter of
// the cache. The workspace's listings are dropped when they may no longer
// hold (Workspace.onStale).
func (c *listCache) put(w *Workspace, k listKey, st dirState, l *dirListing, now time.Time) {
	if c == nil {
		return
	}
	if edge := now.Add(-racyWindow).UnixNano(); st.mtime > edge || st.ctime > edge {
		return
	}
	cost := l.cost(k)
	if cost > c.max/4 {
		return
	}
	w.onStale(c, func() { c.drop(k.ws) })
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.byKey[k]; ok {
		c.remove(e)
	}
	c.byKey[k] = c.order.PushFront(&listCacheEntry{key: k, state: st, l: l, cost: cost})
	c.used += cost
	for c.used > c.max {
		c.remove(c.order.Back())
	}
}

// drop removes every listing of the workspace with id ws.
func (c *listCache) drop(ws uint64) {
	if c == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for k, e := range c.byKey {
		if k.ws == ws {
			c.remove(e)
		}
	}
}

// remove drops e; c.mu is held.
func (c *listCache) remove(e *list.Element) {
	ce := c.order.Remove(e).(*listCacheEntry)
	delete(c.byKey, ce.key)
	c.used -= ce.cost
}

// stats returns the hits and misses so far, the listings kept and their
// cost in bytes.
func (c *listCache) stats() (hits, misses int64, entries, bytes int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.hits, c.misses, c.order.Len(), c.used
}
