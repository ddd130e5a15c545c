//go:build linux

package verbs

import (
	"io/fs"
	"syscall"
)

// fileKeyOf returns the cache key of fi: Linux reports the change time.
func fileKeyOf(fi fs.FileInfo) (fileKey, bool) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return fileKey{}, false
	}
	return fileKey{
		id:    fileID{dev: uint64(st.Dev), ino: uint64(st.Ino)}, //nolint:unconvert // widths differ by arch
		size:  st.Size,
		mtime: st.Mtim.Nano(),
		ctime: st.Ctim.Nano(),
	}, true
}
