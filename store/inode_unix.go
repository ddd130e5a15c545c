//go:build unix

package store

import (
	"io/fs"
	"syscall"
)

// inodeOf is the inode number of a host stat result.
func inodeOf(fi fs.FileInfo) (uint64, bool) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return 0, false
	}
	return uint64(st.Ino), true
}
