//go:build unix

package verbs

import "golang.org/x/sys/unix"

// dupFD duplicates the descriptor fd (close-on-exec): a held copy of a
// directory without looking its name up again.
func dupFD(fd int) (int, error) { return unix.FcntlInt(uintptr(fd), unix.F_DUPFD_CLOEXEC, 0) }

// syncFD flushes the file or directory fd to the disk (fsync).
func syncFD(fd int) error { return unix.Fsync(fd) }
