package verbs

import (
	"bytes"
	"io/fs"
	"slices"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"testing/iotest"
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

// indexContent is a file of about size bytes whose lines vary in length,
// with one line longer than a stride, CRLF endings in places and no final
// line ending.
func indexContent(size int) []byte {
	var b []byte
	for i := 1; len(b) < size; i++ {
		switch {
		case i == 20_000:
			b = append(b, bytes.Repeat([]byte("L"), 3<<20)...)
		case i%7 == 0:
			b = append(b, bytes.Repeat([]byte("x"), i%300)...)
			b = append(b, '\r')
		default:
			b = append(b, "line "+strconv.Itoa(i)...)
		}
		b = append(b, '\n')
	}
	return append(b, "last line, no ending"...)
}

func TestCountLinesIndex(t *testing.T) {
	for _, size := range []int{1 << 20, indexMinSize + 1, 12 << 20} {
		data := indexContent(size)
		want, err := countLines(bytes.NewReader(data))
		if err != nil {
			t.Fatal(err)
		}
		// Reads of odd sizes, as a file read may return.
		n, marks, err := countLinesIndex(iotest.HalfReader(bytes.NewReader(data)), int64(len(data)))
		if err != nil {
			t.Fatal(err)
		}
		if n != want {
			t.Errorf("size %d: count %d, want %d", len(data), n, want)
		}
		stride := markStride(int64(len(data)))
		if stride == 0 {
			if marks != nil {
				t.Errorf("size %d: %d marks for a file below indexMinSize", len(data), len(marks))
			}
			continue
		}
		if len(marks) == 0 || len(marks) > indexMarks {
			t.Fatalf("size %d: %d marks (stride %d), want 1 to %d", len(data), len(marks), stride, indexMarks)
		}
		prev := lineMark{line: 1}
		for i, m := range marks {
			if m.off <= prev.off || m.line <= prev.line || m.off >= int64(len(data)) {
				t.Fatalf("mark %d %+v after %+v: not increasing or past the end", i, m, prev)
			}
			if data[m.off-1] != '\n' {
				t.Fatalf("mark %d %+v does not start a line", i, m)
			}
			if got := bytes.Count(data[:m.off], []byte{'\n'}) + 1; got != m.line {
				t.Fatalf("mark %d at offset %d says line %d, it is line %d", i, m.off, m.line, got)
			}
			// The first line starting at or after each stride boundary.
			if edge := int64(i+1) * stride; m.off < edge {
				t.Errorf("mark %d at %d, before the boundary %d", i, m.off, edge)
			}
			prev = m
		}
		for _, k := range []int{1, 2, marks[0].line - 1, marks[0].line, marks[len(marks)-1].line + 5} {
			m := nearestMark(marks, k)
			if m.line > k || (m.line < k && len(marks) > 0 && slices.ContainsFunc(marks, func(x lineMark) bool { return x.line > m.line && x.line <= k })) {
				t.Errorf("nearestMark(%d) = %+v", k, m)
			}
		}
	}
}

// TestLineCacheKeepsIndex: a count put again for the same state of a file
// keeps its index; a count for a new state drops it.
func TestLineCacheKeepsIndex(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	old := now.Add(-time.Hour)
	c := newLineCache(3)
	a := fakeFile(1, 10, old, old)
	marks := []lineMark{{line: 5, off: 100}}
	c.putIndex(a, 9, marks, now)
	c.put(a, 9, now)
	if e, ok := c.lookup(a); !ok || len(e.marks) != 1 {
		t.Fatalf("index after a count of the same state: %+v, %v", e, ok)
	}
	b := fakeFile(1, 11, old, old)
	c.put(b, 10, now)
	if e, ok := c.lookup(b); !ok || e.marks != nil {
		t.Fatalf("index kept for a new state of the file: %+v, %v", e, ok)
	}
}
