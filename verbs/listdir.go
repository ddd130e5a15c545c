package verbs

import (
	"cmp"
	"context"
	"errors"
	"io/fs"
	"os"
	"slices"
	"strconv"

	unix "github.com/a6afc2ce/hermes-hub/internal/posix"

	"github.com/a6afc2ce/hermes-hub/executor"
	"github.com/a6afc2ce/hermes-hub/verbs/confine"
)

// ListDir implements fs.listDir. Entries reserved for the hub's state are
// left out (confine.Loc.ReadDir decides which). In a session workspace
// files carry their size, version and last write time; host listings
// carry each entry's name and kind only, and are kept (see listCache).
func (s *Set) ListDir(ctx context.Context, a FsListDirArgs) (FsListDirResult, error) {
	var res FsListDirResult
	if a.Path == "" {
		a.Path = "." // the root, as the default says
	}
	p, l, release, err := s.usePath(ctx, false, a.Path, confine.FollowFinal|confine.AllowRoot)
	if err != nil {
		return res, err
	}
	defer release()
	show := l.Show()
	fi, err := l.Stat()
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return res, executor.Errorf(executor.CodeNotFound, "Directory not found: %s", show)
	case err != nil:
		return res, confine.FSError(err, show, "stat")
	case !fi.IsDir():
		return res, executor.Errorf(executor.CodeNotADirectory, "Path %s is a file, not a directory (use fs.readFile or fs.readRange)", show)
	}
	d, err := l.OpenDir()
	if err != nil {
		return res, err
	}
	defer d.Close()
	if p.sess != nil {
		return p.sess.list(p.ws, l, d)
	}
	return s.listHost(p.ws, l, d)
}

// listHost lists the host directory d, located as l: from the listing
// cache when d has not changed since it was read (see listCache), else by
// reading it.
func (s *Set) listHost(w *Workspace, l *confine.Loc, d *os.File) (FsListDirResult, error) {
	var res FsListDirResult
	name := l.Name()
	dfd := int(d.Fd())
	var before unix.Stat_t
	if err := unix.Fstat(dfd, &before); err != nil {
		return res, confine.FSError(err, l.Show(), "stat")
	}
	// The protected files' generation is taken before the read, which
	// uses the same or a later one: a listing read while they were
	// resolved again is kept under the older one, never looked up again.
	key := listKey{ws: w.id, gen: w.root.Generation(), id: idOf(&before), name: name}
	st, cacheable := dirStateOf(&before)
	if cacheable {
		if dl, ok := s.lists.get(key, st); ok {
			res.Entries = w.hostEntries(dl, name)
			return res, nil
		}
	}
	des, err := l.ReadDir(d, false)
	if err != nil {
		return res, err
	}
	dl := hostListing(des)
	if cacheable {
		// Kept only if the directory did not change while it was read.
		var after unix.Stat_t
		if err := unix.Fstat(dfd, &after); err == nil && idOf(&after) == key.id {
			if st2, _ := dirStateOf(&after); st2 == st {
				s.lists.put(w, key, st, dl, s.opts.Clock.Now())
			}
		}
	}
	res.Entries = w.hostEntries(dl, name)
	return res, nil
}

// hostListing builds the listing of the entries des of a host directory:
// directories, files and links, each group sorted by name.
func hostListing(des []confine.Entry) *dirListing {
	// Files fill names from the front, directories from the back; links,
	// rare, go apart.
	names := make([]string, len(des))
	nf, nd := 0, 0
	var links []string
	for _, de := range des {
		switch {
		case de.Type&fs.ModeSymlink != 0:
			links = append(links, de.Name)
		case de.Type.IsDir():
			nd++
			names[len(names)-nd] = de.Name
		default:
			names[nf] = de.Name
			nf++
		}
	}
	dirs, files := names[len(names)-nd:], names[:nf]
	sortNames(dirs)
	sortNames(files)
	sortNames(links)
	return newDirListing(dirs, files, links)
}

// entrySlices are the slices of entries of large listings, given back by
// FsListDirResult.Release.
var entrySlices = executor.Pool[DirEntry]{From: 1 << 10, Max: 1 << 18}

// Release implements executor.Releaser: a large listing's slice goes back
// for the next listings, emptied (it holds no names then), and Entries is
// cleared.
func (r *FsListDirResult) Release() {
	clear(r.Entries[:cap(r.Entries)]) // the names are no longer held
	entrySlices.Put(r.Entries)
	r.Entries = nil
}

// hostEntries returns the entries of the host listing l of the directory
// at workspace path name: directories first, then files, each group by
// name. A link is resolved now (with every check of Locate) and counts as
// a directory when it leads to one.
func (w *Workspace) hostEntries(l *dirListing, name string) []DirEntry {
	n := l.len()
	out := entrySlices.Get(n)
	first := l.dirs + l.files // the first link
	if first == n {
		for i := range n {
			out = append(out, DirEntry{Name: l.name(i), IsDirectory: i < l.dirs})
		}
		return out
	}
	linkDir := make([]bool, n-first)
	for j := range linkDir {
		fi, err := w.statFollow(confine.Join(name, l.name(first+j)))
		linkDir[j] = err == nil && fi.IsDir()
	}
	// Merge each group with the links of its kind; both are sorted.
	merge := func(lo, hi int, dir bool) {
		i, j := lo, 0
		for {
			for j < len(linkDir) && linkDir[j] != dir {
				j++
			}
			switch {
			case i < hi && (j == len(linkDir) || l.name(i) < l.name(first+j)):
				out = append(out, DirEntry{Name: l.name(i), IsDirectory: dir})
				i++
			case j < len(linkDir):
				out = append(out, DirEntry{Name: l.name(first + j), IsDirectory: dir})
				j++
			default:
				return
			}
		}
	}
	merge(0, l.dirs, true)
	merge(l.dirs, first, false)
	return out
}

// statFollow describes the target of the root-relative name, links
// followed, with every check of Locate.
func (w *Workspace) statFollow(name string) (fs.FileInfo, error) {
	l, err := w.root.Locate(name, confine.FollowFinal|confine.AllowRoot)
	if err != nil {
		return nil, err
	}
	defer l.Close()
	return l.Lstat()
}

// list lists the directory d of the session's workspace w, located as l:
// files carry their size, version and last write time, so every entry is
// described (a link followed), and nothing is kept. The caller holds the
// session's lock.
func (se *session) list(w *Workspace, l *confine.Loc, d *os.File) (FsListDirResult, error) {
	var res FsListDirResult
	des, err := l.ReadDir(d, true)
	if err != nil {
		return res, err
	}
	name := l.Name()
	res.Entries = make([]DirEntry, 0, len(des))
	for _, de := range des {
		child := confine.Join(name, de.Name)
		e := DirEntry{Name: de.Name, IsDirectory: de.Type.IsDir()}
		fi := de.Info
		if de.Type&fs.ModeSymlink != 0 {
			fi, _ = w.statFollow(child)
		}
		if fi != nil {
			e.IsDirectory = fi.IsDir()
			if fi.Mode().IsRegular() {
				m, err := se.metaOf(child, fi)
				if err != nil {
					return res, err
				}
				size := fi.Size()
				e.SizeBytes, e.Version, e.UpdatedAt = &size, m.Version, fmtTime(m.UpdatedAt)
			}
		}
		res.Entries = append(res.Entries, e)
	}
	sortEntries(res.Entries)
	return res, nil
}

// sortNames sorts names as slices.Sort does (bytewise), by a most
// significant byte first radix sort: a listing's names share long prefixes
// and are compared byte by byte once instead of log n times.
func sortNames(names []string) {
	if len(names) < radixMin {
		slices.Sort(names)
		return
	}
	radixSort(names, make([]string, len(names)), 0)
}

// radixMin is the size under which a bucket is left to slices.Sort.
const radixMin = 48

// radixSort sorts a, whose strings share their first d bytes, using tmp
// (as long as a) to move them.
func radixSort(a, tmp []string, d int) {
	for {
		if len(a) < radixMin {
			slices.Sort(a)
			return
		}
		// Bucket 0 holds the strings that end at d (they sort first), bucket
		// c+1 those whose byte d is c.
		var count [257]int
		for _, s := range a {
			count[bucketAt(s, d)]++
		}
		if count[bucketAt(a[0], d)] == len(a) {
			if len(a[0]) == d {
				return // all equal
			}
			d++ // one shared byte more: nothing to move
			continue
		}
		var start [257]int
		pos := 0
		for b, n := range count {
			start[b] = pos
			pos += n
		}
		next := start
		for _, s := range a {
			b := bucketAt(s, d)
			tmp[next[b]] = s
			next[b]++
		}
		copy(a, tmp)
		for b := 1; b < 257; b++ {
			if count[b] > 1 {
				lo, hi := start[b], start[b]+count[b]
				radixSort(a[lo:hi], tmp[lo:hi], d+1)
			}
		}
		return
	}
}

func bucketAt(s string, d int) int {
	if d < len(s) {
		return int(s[d]) + 1
	}
	return 0
}

var _ executor.JSONAppender = (*FsListDirResult)(nil)

// AppendJSON appends r as encoding/json encodes it with HTML escaping off
// (executor.JSONAppender): a listing of 10,000 entries is encoded without
// reflection.
func (r *FsListDirResult) AppendJSON(dst []byte) []byte {
	size := 64
	for i := range r.Entries {
		size += len(r.Entries[i].Name) + 32
		if r.Entries[i].SizeBytes != nil || r.Entries[i].Version != 0 || r.Entries[i].UpdatedAt != "" {
			size += 80
		}
	}
	dst = slices.Grow(dst, size)
	dst = executor.AppendResultJSON(dst, &r.Result)
	dst = append(dst, `,"entries":`...)
	if r.Entries == nil {
		dst = append(dst, "null"...)
	} else {
		dst = append(dst, '[')
		for i := range r.Entries {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = r.Entries[i].appendJSON(dst)
		}
		dst = append(dst, ']')
	}
	return append(dst, '}')
}

// appendJSON appends e as encoding/json encodes it.
func (e *DirEntry) appendJSON(dst []byte) []byte {
	dst = append(dst, `{"name":`...)
	dst = executor.AppendJSONString(dst, e.Name)
	if e.IsDirectory {
		dst = append(dst, `,"isDirectory":true`...)
	} else {
		dst = append(dst, `,"isDirectory":false`...)
	}
	if e.SizeBytes != nil {
		dst = append(dst, `,"sizeBytes":`...)
		dst = strconv.AppendInt(dst, *e.SizeBytes, 10)
	}
	if e.Version != 0 {
		dst = append(dst, `,"version":`...)
		dst = strconv.AppendInt(dst, e.Version, 10)
	}
	if e.UpdatedAt != "" {
		dst = append(dst, `,"updatedAt":`...)
		dst = executor.AppendJSONString(dst, e.UpdatedAt)
	}
	return append(dst, '}')
}

// sortEntries orders a listing: directories first, then by name. Names are
// unique within a directory, so when the entries carry nothing but their
// name and kind (host workspaces) the names alone are sorted (by
// sortNames' radix sort) and the entries rebuilt in that order, which costs
// less than moving whole entries through a comparison function.
func sortEntries(es []DirEntry) {
	nd := 0
	for i := range es {
		e := &es[i]
		if e.SizeBytes != nil || e.Version != 0 || e.UpdatedAt != "" {
			slices.SortFunc(es, func(x, y DirEntry) int {
				if x.IsDirectory != y.IsDirectory {
					if x.IsDirectory {
						return -1
					}
					return 1
				}
				return cmp.Compare(x.Name, y.Name)
			})
			return
		}
		if e.IsDirectory {
			nd++
		}
	}
	names := make([]string, len(es))
	d, f := 0, nd
	for i := range es {
		if es[i].IsDirectory {
			names[d] = es[i].Name
			d++
		} else {
			names[f] = es[i].Name
			f++
		}
	}
	sortNames(names[:nd])
	sortNames(names[nd:])
	for i, n := range names {
		es[i] = DirEntry{Name: n, IsDirectory: i < nd}
	}
}
