package main

import (
	"io"
	"os"

	"golang.org/x/sys/unix"
)

// writeRoom returns how to learn whether a write of n bytes to w can be made
// without waiting for a reader (see pipeRoom for a pipe; a regular file, a
// terminal or a device never waits for the client; for a socket or a
// wrapped writer it cannot be known, and every write is treated as one that
// may wait). The function counts a write it allows as made: the caller
// makes every write it asked about, next, and only those.
func writeRoom(w io.Writer) func(n int) bool {
	unknown := func(int) bool { return false }
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
		return func(int) bool { return true }
	case unix.S_IFIFO:
	default:
		return unknown
	}
	p := newPipeRoom(size, os.Getpagesize(), func() (int, error) {
		var unread int
		var ierr error
		if err := rc.Control(func(fd uintptr) {
			unread, ierr = unix.IoctlGetInt(int(fd), unix.TIOCINQ) // FIONREAD
		}); err != nil {
			return 0, err
		}
		return unread, ierr
	})
	return p.take
}

// pipeRoom keeps, without a system call per write, a bound on how much of a
// pipe the hub's unread output holds, to tell which writes cannot wait.
//
// A Linux pipe holds its data in pages (slots), F_GETPIPE_SZ / page size of
// them; a write waits when it needs a slot and none is free. A write of n
// bytes takes at most ceil(n / page) new slots (it takes fewer when its
// bytes fit in the last page, never more), and the reader only frees
// slots, so the sum of what the writes since the pipe was last seen empty
// (FIONREAD 0) may take bounds the slots in use. The unread byte count alone
// bounds nothing: writes of 2049 bytes take a page each, so a pipe of 16
// pages is full with half its bytes free. The bound is checked against the
// pipe again (one ioctl) only when a write would not fit under it: a client
// that reads each answer before sending the next line costs one ioctl per
// pipe's worth of pages written, not one per answer.
//
// It assumes the hub is the pipe's only writer, and that the pipe does not
// shrink while the hub writes (F_SETPIPE_SZ by the client).
type pipeRoom struct {
	slots  int                 // the pipe's capacity in pages
	page   int                 // bytes per page
	used   int                 // at least the pages holding unread output
	unread func() (int, error) // FIONREAD: bytes written and not yet read
}

func newPipeRoom(size, page int, unread func() (int, error)) *pipeRoom {
	slots := size / page
	// Unknown at first: the pipe may hold what someone wrote before.
	return &pipeRoom{slots: slots, page: page, used: slots, unread: unread}
}

// take reports whether a write of n bytes cannot wait, and counts it as
// made. When it cannot, the pipe's use becomes unknown (the write the caller
// makes anyway, while input is read ahead, may leave it full).
func (p *pipeRoom) take(n int) bool {
	need := (n + p.page - 1) / p.page
	if p.used+need > p.slots {
		if u, err := p.unread(); err == nil && u == 0 {
			p.used = 0
		}
	}
	if p.used+need > p.slots {
		p.used = p.slots
		return false
	}
	p.used += need
	return true
}

// growPipe makes the pipe w is, when it is one, hold up to a mebibyte
// (the most an unprivileged process may ask for, fs.pipe-max-size's
// default), so that a large answer is written in one go rather than 64 KiB
// at a time, each waiting for the client to read. Best effort: nothing
// changes when w is not a pipe or the size is refused.
func growPipe(w io.Writer) {
	f, ok := w.(*os.File)
	if !ok {
		return
	}
	rc, err := f.SyscallConn()
	if err != nil {
		return
	}
	_ = rc.Control(func(fd uintptr) {
		var st unix.Stat_t
		if unix.Fstat(int(fd), &st) == nil && st.Mode&unix.S_IFMT == unix.S_IFIFO {
			_, _ = unix.FcntlInt(fd, unix.F_SETPIPE_SZ, 1<<20)
		}
	})
}
