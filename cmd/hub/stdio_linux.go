package main

import (
	"io"
	"os"

	"golang.org/x/sys/unix"
)

// writeRoom returns how to learn how many bytes a write to w can take
// without waiting for a reader: for a pipe, its capacity less what it holds
// unread; for a regular file, a terminal or a device, any number (their
// writes do not wait for the client). ok is false when it cannot be known
// (a socket, a wrapped writer): then every write is treated as one that may
// wait.
func writeRoom(w io.Writer) func() (n int, ok bool) {
	unknown := func() (int, bool) { return 0, false }
	f, isFile := w.(*os.File)
	if !isFile {
		return unknown
	}
	rc, err := f.SyscallConn()
	if err != nil {
		return unknown
	}
	var st unix.Stat_t
	var size int
	var serr error
	if err := rc.Control(func(fd uintptr) {
		if serr = unix.Fstat(int(fd), &st); serr == nil && st.Mode&unix.S_IFMT == unix.S_IFIFO {
			size, serr = unix.FcntlInt(fd, unix.F_GETPIPE_SZ, 0)
		}
	}); err != nil || serr != nil {
		return unknown
	}
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFREG, unix.S_IFCHR, unix.S_IFBLK:
		return func() (int, bool) { return int(^uint(0) >> 1), true }
	case unix.S_IFIFO:
	default:
		return unknown
	}
	return func() (int, bool) {
		var unread int
		var ierr error
		if err := rc.Control(func(fd uintptr) {
			unread, ierr = unix.IoctlGetInt(int(fd), unix.TIOCINQ) // FIONREAD
		}); err != nil || ierr != nil {
			return 0, false
		}
		return size - unread, true
	}
}
