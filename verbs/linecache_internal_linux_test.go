package verbs

import (
	"io/fs"
	"sync"
	"syscall"
	"testing"
	"time"
)

// statFI is an fs.FileInfo carrying a stat structure, as os.Stat's do.
type statFI struct {
	fs.FileInfo
	st syscall.Stat_t
}

func (s statFI) Sys() any { return &s.st }

func fakeFile(ino uint64, size int64, mtime, ctime time.Time) statFI {
	var st syscall.Stat_t
	st.Dev, st.Ino, st.Size = 1, ino, size
	st.Mtim = syscall.NsecToTimespec(mtime.UnixNano())
	st.Ctim = syscall.NsecToTimespec(ctime.UnixNano())
	return statFI{st: st}
}

func TestLineCacheKeyAndBound(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	old := now.Add(-time.Hour)
	c := newLineCache(3)
	a := fakeFile(1, 10, old, old)
	c.put(a, 5, now)
	if n, ok := c.get(a); !ok || n != 5 {
		t.Fatalf("get = %d, %v; want 5, true", n, ok)
	}
	for _, changed := range []statFI{
		fakeFile(1, 11, old, old),                      // size
		fakeFile(1, 10, old.Add(time.Nanosecond), old), // mtime
		fakeFile(1, 10, old, old.Add(time.Nanosecond)), // ctime only
	} {
		c.put(a, 5, now)
		if n, ok := c.get(changed); ok {
			t.Errorf("changed file %+v: cached count %d", changed.st, n)
		}
		if _, ok := c.get(a); ok {
			t.Errorf("the stale entry was kept after a miss on the file's new state")
		}
	}
	// Changed within racyWindow before now: not kept.
	c.put(fakeFile(2, 10, old, now.Add(-time.Second)), 7, now)
	c.put(fakeFile(3, 10, now.Add(-time.Second), old), 7, now)
	if _, _, n := c.stats(); n != 0 {
		t.Fatalf("%d entries after racy puts, want 0", n)
	}
	// Bounded, least recently used out first.
	for ino := uint64(10); ino < 13; ino++ {
		c.put(fakeFile(ino, 1, old, old), int(ino), now)
	}
	c.get(fakeFile(10, 1, old, old))
	c.put(fakeFile(13, 1, old, old), 13, now)
	if _, _, n := c.stats(); n != 3 {
		t.Fatalf("%d entries, want 3", n)
	}
	if _, ok := c.get(fakeFile(11, 1, old, old)); ok {
		t.Error("the least recently used entry was kept")
	}
	for _, ino := range []uint64{10, 12, 13} {
		if n, ok := c.get(fakeFile(ino, 1, old, old)); !ok || n != int(ino) {
			t.Errorf("inode %d: %d, %v", ino, n, ok)
		}
	}
}

func TestLineCacheConcurrent(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	old := now.Add(-time.Hour)
	c := newLineCache(16)
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range 1000 {
				fi := fakeFile(uint64(i%40), int64(g%2), old, old)
				if n, ok := c.get(fi); ok && n != i%40 {
					t.Errorf("inode %d: count %d", i%40, n)
					return
				}
				c.put(fi, i%40, now)
			}
		})
	}
	wg.Wait()
	if _, _, n := c.stats(); n > 16 {
		t.Errorf("%d entries, bound 16", n)
	}
}
