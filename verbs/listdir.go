package verbs

import (
	"io/fs"
	"slices"
	"strconv"

	"github.com/a6afc2ce/hermes-hub/executor"
)

// dirent is one entry of a directory read in one pass: its name and the
// type bits of its mode (fs.ModeDir, fs.ModeSymlink, ...; 0 for a file).
type dirent struct {
	name string
	typ  fs.FileMode
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
	if dst == nil {
		size := 64
		for i := range r.Entries {
			size += len(r.Entries[i].Name) + 32
			if r.Entries[i].SizeBytes != nil || r.Entries[i].Version != 0 || r.Entries[i].UpdatedAt != "" {
				size += 80
			}
		}
		dst = make([]byte, 0, size)
	}
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
