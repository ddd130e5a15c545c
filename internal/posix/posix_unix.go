//go:build unix

package posix

//lint:file-ignore ST1003 the names are the system's own (Stat_t, O_NOFOLLOW, AT_FDCWD), as the calls they go with spell them

import (
	"io/fs"
	"syscall"

	"golang.org/x/sys/unix"
)

// Supported reports whether the workspace's calls exist here: they do.
func Supported() error { return nil }

// Stat_t is the host's stat structure.
type Stat_t = unix.Stat_t //nolint:revive // the name of the call's structure

// Flags, modes and errors, as the host defines them.
const (
	O_RDONLY    = unix.O_RDONLY
	O_WRONLY    = unix.O_WRONLY
	O_CREAT     = unix.O_CREAT
	O_EXCL      = unix.O_EXCL
	O_NONBLOCK  = unix.O_NONBLOCK
	O_NOFOLLOW  = unix.O_NOFOLLOW
	O_CLOEXEC   = unix.O_CLOEXEC
	O_DIRECTORY = unix.O_DIRECTORY

	AT_FDCWD            = unix.AT_FDCWD
	AT_REMOVEDIR        = unix.AT_REMOVEDIR
	AT_SYMLINK_NOFOLLOW = unix.AT_SYMLINK_NOFOLLOW

	S_IFMT   = unix.S_IFMT
	S_IFBLK  = unix.S_IFBLK
	S_IFCHR  = unix.S_IFCHR
	S_IFDIR  = unix.S_IFDIR
	S_IFIFO  = unix.S_IFIFO
	S_IFLNK  = unix.S_IFLNK
	S_IFREG  = unix.S_IFREG
	S_IFSOCK = unix.S_IFSOCK
	S_ISGID  = unix.S_ISGID
	S_ISUID  = unix.S_ISUID
	S_ISVTX  = unix.S_ISVTX

	EEXIST  = unix.EEXIST
	ELOOP   = unix.ELOOP
	ENOENT  = unix.ENOENT
	ENOTDIR = unix.ENOTDIR
)

// Openat is openat(2).
func Openat(dirfd int, path string, flags int, mode uint32) (int, error) {
	return unix.Openat(dirfd, path, flags, mode)
}

// Close is close(2).
func Close(fd int) error { return unix.Close(fd) }

// Read is read(2).
func Read(fd int, p []byte) (int, error) { return unix.Read(fd, p) }

// Fstat is fstat(2).
func Fstat(fd int, st *Stat_t) error { return unix.Fstat(fd, st) }

// Fstatat is fstatat(2).
func Fstatat(dirfd int, path string, st *Stat_t, flags int) error {
	return unix.Fstatat(dirfd, path, st, flags)
}

// Mkdirat is mkdirat(2).
func Mkdirat(dirfd int, path string, mode uint32) error { return unix.Mkdirat(dirfd, path, mode) }

// Unlinkat is unlinkat(2).
func Unlinkat(dirfd int, path string, flags int) error { return unix.Unlinkat(dirfd, path, flags) }

// Linkat is linkat(2).
func Linkat(olddirfd int, oldpath string, newdirfd int, newpath string, flags int) error {
	return unix.Linkat(olddirfd, oldpath, newdirfd, newpath, flags)
}

// Renameat is renameat(2).
func Renameat(olddirfd int, oldpath string, newdirfd int, newpath string) error {
	return unix.Renameat(olddirfd, oldpath, newdirfd, newpath)
}

// Owner is the user and group owning a host stat result (an os.FileInfo).
func Owner(fi fs.FileInfo) (uid, gid int, ok bool) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return 0, 0, false
	}
	return int(st.Uid), int(st.Gid), true
}
