package verbs

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/a6afc2ce/hermes-hub/clock"
	"github.com/a6afc2ce/hermes-hub/verbs/confine"
)

// listEnv is a host workspace at dir, with its state directory .hub
// protected (and denied) inside it, and a Set whose clock can be set.
type listEnv struct {
	t   *testing.T
	dir string
	w   *Workspace
	s   *Set
}

func newListEnv(t *testing.T) *listEnv {
	t.Helper()
	base := t.TempDir()
	dir := filepath.Join(base, "ws")
	state := filepath.Join(dir, ".hub")
	if err := os.MkdirAll(state, 0o755); err != nil {
		t.Fatal(err)
	}
	w, err := OpenWorkspace(dir, WorkspaceOptions{Protect: []string{state}, Deny: []string{"secret", "d/secret"}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Close() })
	e := &listEnv{t: t, dir: dir, w: w}
	// An hour ahead: every directory's times lie outside the racy window.
	e.setClock(time.Now().Add(time.Hour))
	return e
}

// setClock gives e a Set whose clock reads now.
func (e *listEnv) setClock(now time.Time) {
	e.t.Helper()
	s, err := NewSet(e.w, Options{StateDir: filepath.Join(filepath.Dir(e.dir), "hubstate"), Clock: clock.NewFake(now)})
	if err != nil {
		e.t.Fatal(err)
	}
	e.s = s
}

func (e *listEnv) path(rel string) string { return filepath.Join(e.dir, filepath.FromSlash(rel)) }

func (e *listEnv) do(err error) {
	e.t.Helper()
	if err != nil {
		e.t.Fatal(err)
	}
}

// list lists rel through fs.listDir (cache and all).
func (e *listEnv) list(rel string) []string {
	e.t.Helper()
	r, err := e.s.ListDir(context.Background(), FsListDirArgs{Path: rel})
	if err != nil {
		e.t.Fatalf("ListDir %s: %v", rel, err)
	}
	return entryLines(r.Entries)
}

// uncached lists rel by reading it, as a listing that misses the cache does.
func (e *listEnv) uncached(rel string) []string {
	e.t.Helper()
	l, err := e.w.root.Locate(rel, confine.FollowFinal|confine.AllowRoot)
	if err != nil {
		e.t.Fatal(err)
	}
	defer l.Close()
	d, err := l.OpenDir()
	if err != nil {
		e.t.Fatal(err)
	}
	defer d.Close()
	des, err := l.ReadDir(d, false)
	if err != nil {
		e.t.Fatal(err)
	}
	return entryLines(e.w.hostEntries(hostListing(des), l.Name()))
}

// same lists rel both ways and fails when they differ; it returns the
// listing.
func (e *listEnv) same(rel, after string) []string {
	e.t.Helper()
	got, want := e.list(rel), e.uncached(rel)
	if !slices.Equal(got, want) {
		e.t.Fatalf("after %s: listing of %s is\n%q\nread again it is\n%q", after, rel, got, want)
	}
	return got
}

func entryLines(es []DirEntry) []string {
	out := make([]string, len(es))
	for i, e := range es {
		out[i] = e.Name
		if e.IsDirectory {
			out[i] += "/"
		}
	}
	return out
}

// TestListCacheFollowsChanges lists a directory, changes it in every way
// a listing can see, and compares the listing with the directory read
// again after each change; between changes, the listing comes from the
// cache.
func TestListCacheFollowsChanges(t *testing.T) {
	e := newListEnv(t)
	for _, d := range []string{"d", "d/sub", "elsewhere", "elsewhere/indir", "targets/dir"} {
		e.do(os.MkdirAll(e.path(d), 0o755))
	}
	for _, f := range []string{"d/a.txt", "d/b.txt", "d/\x01odd \"name\"\u2028", "elsewhere/infile", "targets/file", "d/secret"} {
		e.do(os.WriteFile(e.path(f), []byte("x\n"), 0o644))
	}
	e.do(os.Symlink("../targets/file", e.path("d/flink")))
	changes := []struct {
		name string
		do   func()
	}{
		{"nothing", func() {}},
		{"create", func() { e.do(os.WriteFile(e.path("d/new.txt"), nil, 0o644)) }},
		{"mkdir", func() { e.do(os.Mkdir(e.path("d/newdir"), 0o755)) }},
		{"remove", func() { e.do(os.Remove(e.path("d/a.txt"))) }},
		{"rmdir", func() { e.do(os.Remove(e.path("d/newdir"))) }},
		{"rename in (file)", func() { e.do(os.Rename(e.path("elsewhere/infile"), e.path("d/infile"))) }},
		{"rename in (directory)", func() { e.do(os.Rename(e.path("elsewhere/indir"), e.path("d/indir"))) }},
		{"rename out", func() { e.do(os.Rename(e.path("d/b.txt"), e.path("elsewhere/b.txt"))) }},
		{"rename within", func() { e.do(os.Rename(e.path("d/new.txt"), e.path("d/renamed.txt"))) }},
		{"replace file by directory", func() {
			e.do(os.Remove(e.path("d/renamed.txt")))
			e.do(os.Mkdir(e.path("d/renamed.txt"), 0o755))
		}},
		{"replace directory by link to a file", func() {
			e.do(os.Remove(e.path("d/renamed.txt")))
			e.do(os.Symlink("../targets/file", e.path("d/renamed.txt")))
		}},
		{"replace file by link to a directory", func() {
			e.do(os.Remove(e.path("d/infile")))
			e.do(os.Symlink("../targets/dir", e.path("d/infile")))
		}},
		{"link's target becomes a directory", func() {
			e.do(os.Remove(e.path("targets/file")))
			e.do(os.Mkdir(e.path("targets/file"), 0o755))
		}},
		{"link's target goes", func() { e.do(os.Remove(e.path("targets/file"))) }},
		{"chmod of the directory", func() { e.do(os.Chmod(e.path("d"), 0o700)) }},
		{"a file's content", func() { e.do(os.WriteFile(e.path("d/sub/deep"), []byte("y"), 0o644)) }},
	}
	e.same("d", "the first listing")
	for _, c := range changes {
		c.do()
		got := e.same("d", c.name)
		hits, _, _, _ := e.s.lists.stats()
		again := e.same("d", c.name+", listed again")
		if h, _, _, _ := e.s.lists.stats(); h != hits+1 {
			t.Errorf("after %s: listing it again did not come from the cache (%d hits, then %d)", c.name, hits, h)
		}
		if !slices.Equal(got, again) {
			t.Errorf("after %s: %q, then %q", c.name, got, again)
		}
		if slices.Contains(got, "secret") {
			t.Errorf("after %s: the denied entry is listed: %q", c.name, got)
		}
	}
	want := []string{"indir/", "infile/", "sub/", "\x01odd \"name\"\u2028", "flink", "renamed.txt"}
	if got := e.list("d"); !slices.Equal(got, want) {
		t.Errorf("final listing %q, want %q", got, want)
	}
}

// TestListCacheSameTick: a change that keeps the directory's modification
// time (set back as a change within one tick of the file-time clock would
// leave it) is still seen, by the change time; and a directory changed
// within the racy window of the listing's read is not kept at all, so a
// change that kept both times would be seen too.
func TestListCacheSameTick(t *testing.T) {
	e := newListEnv(t)
	e.do(os.Mkdir(e.path("d"), 0o755))
	e.do(os.WriteFile(e.path("d/a"), nil, 0o644))
	first := e.same("d", "the first listing")
	fi, err := os.Stat(e.path("d"))
	e.do(err)
	e.do(os.WriteFile(e.path("d/b"), nil, 0o644))
	e.do(os.Chtimes(e.path("d"), fi.ModTime(), fi.ModTime()))
	if got := e.same("d", "a change with the modification time set back"); slices.Equal(got, first) {
		t.Fatalf("the new entry is not listed: %q", got)
	}

	// The clock at the directory's change time: not kept.
	fi, err = os.Stat(e.path("d"))
	e.do(err)
	ctime := time.Unix(0, fi.Sys().(*syscall.Stat_t).Ctim.Nano())
	for _, c := range []struct {
		now  time.Time
		kept bool
	}{
		{ctime, false},
		{ctime.Add(racyWindow / 2), false},
		{ctime.Add(racyWindow + time.Second), true},
	} {
		e.setClock(c.now)
		e.s.lists = newListCache(listCacheBytes)
		e.same("d", "setting the clock")
		if _, _, n, _ := e.s.lists.stats(); (n == 1) != c.kept {
			t.Errorf("clock %v after the change time: %d listings kept, want kept = %v", c.now.Sub(ctime), n, c.kept)
		}
	}
}

// TestListCacheUnit: the cache's key, state, racy rule and byte bound.
func TestListCacheUnit(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	old := dirState{mtime: now.Add(-time.Hour).UnixNano(), ctime: now.Add(-time.Hour).UnixNano(), size: 4096, nlink: 2}
	l := newDirListing([]string{"d"}, []string{"a", "b"}, nil)
	k := listKey{id: fileID{1, 2}, name: "x"}
	c := newListCache(4 * (l.cost(k) + 10))
	w := &Workspace{}
	c.put(w, k, old, l, now)
	if got, ok := c.get(k, old); !ok || got != l {
		t.Fatal("a kept listing is not found")
	}
	for name, st := range map[string]dirState{
		"mtime": {old.mtime + 1, old.ctime, old.size, old.nlink},
		"ctime": {old.mtime, old.ctime + 1, old.size, old.nlink},
		"size":  {old.mtime, old.ctime, old.size + 1, old.nlink},
		"nlink": {old.mtime, old.ctime, old.size, old.nlink + 1},
	} {
		c.put(w, k, old, l, now)
		if _, ok := c.get(k, st); ok {
			t.Errorf("found after a change of %s", name)
		}
		if _, ok := c.get(k, old); ok {
			t.Errorf("a listing of another %s is not dropped", name)
		}
	}
	for name, other := range map[string]listKey{"workspace": {ws: 7, id: fileID{1, 2}, name: "x"}, "inode": {id: fileID{1, 3}, name: "x"}, "device": {id: fileID{2, 2}, name: "x"}, "path": {id: fileID{1, 2}, name: "y"}} {
		c.put(w, k, old, l, now)
		if _, ok := c.get(other, old); ok {
			t.Errorf("found under another %s", name)
		}
	}
	for name, st := range map[string]dirState{
		"mtime": {now.Add(-racyWindow + time.Millisecond).UnixNano(), old.ctime, old.size, old.nlink},
		"ctime": {old.mtime, now.Add(-time.Millisecond).UnixNano(), old.size, old.nlink},
	} {
		c.put(w, k, st, l, now)
		if _, ok := c.get(k, st); ok {
			t.Errorf("kept with a %s inside the racy window", name)
		}
	}
	// The byte bound: the least recently used go first.
	c = newListCache(4 * (l.cost(k) + 10))
	for i := range 6 {
		c.put(w, listKey{id: fileID{1, uint64(i)}, name: "x"}, old, l, now)
		if i == 3 {
			c.get(listKey{id: fileID{1, 0}, name: "x"}, old) // 0 used: 1 and 2 go first
		}
	}
	_, _, n, used := c.stats()
	if n != 4 || used > c.max {
		t.Errorf("%d listings of %d bytes kept, want 4 within %d", n, used, c.max)
	}
	for i, want := range []bool{true, false, false, true, true, true} {
		if _, ok := c.get(listKey{id: fileID{1, uint64(i)}, name: "x"}, old); ok != want {
			t.Errorf("listing %d kept = %v, want %v", i, ok, want)
		}
	}
	// A listing over a quarter of the bound is not kept.
	big := newDirListing(nil, []string{strings.Repeat("n", c.max/4)}, nil)
	k = listKey{id: fileID{9, 9}, name: "big"}
	c.put(w, k, old, big, now)
	if _, ok := c.get(k, old); ok {
		t.Error("a listing over a quarter of the cache is kept")
	}
}

// TestListCacheHidesProtected: the state directory and the deny list's
// entries stay out of cached listings, where they are and after the state
// directory is moved on the host.
func TestListCacheHidesProtected(t *testing.T) {
	e := newListEnv(t)
	e.do(os.Mkdir(e.path("var"), 0o755))
	e.do(os.WriteFile(e.path("secret"), nil, 0o644))
	e.do(os.WriteFile(e.path("var/secret"), nil, 0o644))
	e.do(os.WriteFile(e.path("ok"), nil, 0o644))
	for range 2 {
		if got, want := e.same(".", "the first listings"), []string{"var/", "ok"}; !slices.Equal(got, want) {
			t.Fatalf("root listed %q, want %q", got, want)
		}
	}
	if got, want := e.same("var", "the first listings"), []string{"secret"}; !slices.Equal(got, want) {
		t.Fatalf("var listed %q, want %q", got, want)
	}
	e.do(os.Rename(e.path(".hub"), e.path("var/moved")))
	for range 2 {
		if got, want := e.same("var", "moving the state directory in"), []string{"secret"}; !slices.Equal(got, want) {
			t.Fatalf("var listed %q, want %q", got, want)
		}
	}
	if got, want := e.same(".", "moving the state directory out"), []string{"var/", "ok"}; !slices.Equal(got, want) {
		t.Fatalf("root listed %q, want %q", got, want)
	}
}

// TestListCacheConcurrent lists directories from several goroutines while
// others change them; afterwards every listing equals the directory read
// again. Run with -race.
func TestListCacheConcurrent(t *testing.T) {
	e := newListEnv(t)
	dirs := []string{"a", "b"}
	for _, d := range dirs {
		e.do(os.Mkdir(e.path(d), 0o755))
		for i := range 50 {
			e.do(os.WriteFile(e.path(fmt.Sprintf("%s/f%02d", d, i)), nil, 0o644))
		}
	}
	ctx := context.Background()
	var writers, listers sync.WaitGroup
	stop := make(chan struct{})
	for w := range 2 {
		writers.Go(func() {
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				d := dirs[(i+w)%2]
				p := e.path(fmt.Sprintf("%s/w%d-%d", d, w, i%7))
				if i%3 == 0 {
					_ = os.Mkdir(p+"d", 0o755)
					_ = os.Remove(p + "d")
				}
				if err := os.WriteFile(p, nil, 0o644); err == nil && i%2 == 0 {
					_ = os.Rename(p, e.path(fmt.Sprintf("%s/w%d-%d", dirs[(i+w+1)%2], w, i%7)))
				}
			}
		})
	}
	errs := make(chan error, 4)
	for r := range 4 {
		listers.Go(func() {
			for i := range 300 {
				res, err := e.s.ListDir(ctx, FsListDirArgs{Path: dirs[(i+r)%2]})
				if err != nil {
					errs <- err
					return
				}
				if len(res.Entries) < 50 {
					errs <- fmt.Errorf("%d entries, want at least the 50 files never touched", len(res.Entries))
					return
				}
			}
		})
	}
	listers.Wait()
	close(stop)
	writers.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	for _, d := range dirs {
		e.same(d, "the concurrent changes")
		e.same(d, "the concurrent changes, listed again")
	}
}

// TestListCacheWorkspaces: the process's one cache keeps each workspace's
// listings apart (two workspaces over one directory deny different
// entries) and drops a workspace's listings when it closes.
func TestListCacheWorkspaces(t *testing.T) {
	dir := t.TempDir()
	for _, n := range []string{"a", "b", "c"} {
		if err := os.WriteFile(filepath.Join(dir, n), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	past := time.Now().Add(-time.Hour) // outside the racy window
	if err := os.Chtimes(dir, past, past); err != nil {
		t.Fatal(err)
	}
	open := func(deny string) (*Workspace, *Set) {
		w, err := OpenWorkspace(dir, WorkspaceOptions{Deny: []string{deny}})
		if err != nil {
			t.Fatal(err)
		}
		s, err := NewSet(w, Options{StateDir: t.TempDir(), Clock: clock.NewFake(time.Now().Add(time.Hour))})
		if err != nil {
			t.Fatal(err)
		}
		return w, s
	}
	list := func(s *Set) []string {
		r, err := s.ListDir(context.Background(), FsListDirArgs{Path: "."})
		if err != nil {
			t.Fatal(err)
		}
		return entryLines(r.Entries)
	}
	wa, sa := open("a")
	defer wa.Close()
	wb, sb := open("b")
	if sa.lists != sb.lists || wa.id == wb.id {
		t.Fatalf("the workspaces do not share the process's cache under ids of their own")
	}
	for range 2 { // the second round comes from the cache
		if got, want := list(sa), []string{"b", "c"}; !slices.Equal(got, want) {
			t.Errorf("workspace denying a lists %q, want %q", got, want)
		}
		if got, want := list(sb), []string{"a", "c"}; !slices.Equal(got, want) {
			t.Errorf("workspace denying b lists %q, want %q", got, want)
		}
	}
	kept := func(ws uint64) (n int) {
		c := sharedLists
		c.mu.Lock()
		defer c.mu.Unlock()
		for k := range c.byKey {
			if k.ws == ws {
				n++
			}
		}
		return n
	}
	if kept(wa.id) != 1 || kept(wb.id) != 1 {
		t.Fatalf("listings kept: %d and %d, want one each", kept(wa.id), kept(wb.id))
	}
	wb.Close()
	if kept(wb.id) != 0 || kept(wa.id) != 1 {
		t.Errorf("after closing one workspace: %d of its listings and %d of the other's kept, want 0 and 1", kept(wb.id), kept(wa.id))
	}
}
