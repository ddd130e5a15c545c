//go:build unix

package confine

import (
	"io/fs"
	"syscall"

	"golang.org/x/sys/unix"
)

// dupFD duplicates the descriptor fd (close-on-exec): a held copy of a
// directory without looking its name up again.
func dupFD(fd int) (int, error) { return unix.FcntlInt(uintptr(fd), unix.F_DUPFD_CLOEXEC, 0) }

// syncFD flushes the file or directory fd to the disk (fsync).
func syncFD(fd int) error { return unix.Fsync(fd) }

// hostFileID is the identity (device, inode) of a host stat result.
func hostFileID(fi fs.FileInfo) (fileID, bool) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return fileID{}, false
	}
	return fileID{dev: uint64(st.Dev), ino: uint64(st.Ino)}, true
}

// linkCount is the number of hard links of a host stat result.
func linkCount(fi fs.FileInfo) (uint64, bool) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return 0, false
	}
	return uint64(st.Nlink), true //nolint:unconvert // widths differ by platform
}
