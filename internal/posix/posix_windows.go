//go:build windows

package posix

//lint:file-ignore ST1003 the names are the system's own (Stat_t, O_NOFOLLOW, AT_FDCWD), as the calls they go with spell them

import (
	"errors"
	"fmt"
	"io/fs"
	"syscall"
)

// ErrUnsupported is what every call returns on Windows.
var ErrUnsupported = fmt.Errorf("descriptor-relative file calls (openat and directory identities) are not available on Windows: %w", errors.ErrUnsupported)

// Supported says why the confined workspace cannot open here: confining
// every path one element at a time from an open directory, and refusing
// the hub's state directory by its identity, need calls Windows lacks.
func Supported() error {
	return errors.New("the confined workspace is not supported on Windows: it opens every path one element at a time from an open directory (openat) and refuses the hub's state directory by its identity (device and inode), and Windows has neither call; run the hub on Linux or macOS")
}

// Stat_t carries the fields the workspace reads.
type Stat_t struct { //nolint:revive // the name of the call's structure
	Dev  uint64
	Ino  uint64
	Mode uint32
	Uid  uint32
	Size int64
	Mtim Timespec
}

// Timespec is a time in seconds and nanoseconds.
type Timespec struct{ Sec, Nsec int64 }

// Unix returns t as seconds and nanoseconds.
func (t Timespec) Unix() (sec, nsec int64) { return t.Sec, t.Nsec }

// Flags and modes; their values only need to be distinct here.
const (
	O_RDONLY    = 0x0
	O_WRONLY    = 0x1
	O_CREAT     = 0x40
	O_EXCL      = 0x80
	O_NONBLOCK  = 0x800
	O_NOFOLLOW  = 0x20000
	O_CLOEXEC   = 0x80000
	O_DIRECTORY = 0x10000

	AT_FDCWD            = -100
	AT_REMOVEDIR        = 0x200
	AT_SYMLINK_NOFOLLOW = 0x100

	S_IFMT   = 0xf000
	S_IFBLK  = 0x6000
	S_IFCHR  = 0x2000
	S_IFDIR  = 0x4000
	S_IFIFO  = 0x1000
	S_IFLNK  = 0xa000
	S_IFREG  = 0x8000
	S_IFSOCK = 0xc000
	S_ISGID  = 0x400
	S_ISUID  = 0x800
	S_ISVTX  = 0x200
)

// Errors, as the syscall package names them on Windows.
const (
	EEXIST  = syscall.EEXIST
	ELOOP   = syscall.ELOOP
	ENOENT  = syscall.ENOENT
	ENOTDIR = syscall.ENOTDIR
)

// Openat fails with ErrUnsupported.
func Openat(int, string, int, uint32) (int, error) { return -1, ErrUnsupported }

// Close fails with ErrUnsupported.
func Close(int) error { return ErrUnsupported }

// Read fails with ErrUnsupported.
func Read(int, []byte) (int, error) { return 0, ErrUnsupported }

// Fstat fails with ErrUnsupported.
func Fstat(int, *Stat_t) error { return ErrUnsupported }

// Fstatat fails with ErrUnsupported.
func Fstatat(int, string, *Stat_t, int) error { return ErrUnsupported }

// Mkdirat fails with ErrUnsupported.
func Mkdirat(int, string, uint32) error { return ErrUnsupported }

// Unlinkat fails with ErrUnsupported.
func Unlinkat(int, string, int) error { return ErrUnsupported }

// Linkat fails with ErrUnsupported.
func Linkat(int, string, int, string, int) error { return ErrUnsupported }

// Renameat fails with ErrUnsupported.
func Renameat(int, string, int, string) error { return ErrUnsupported }

// Owner is unknown on Windows.
func Owner(fs.FileInfo) (uid, gid int, ok bool) { return 0, 0, false }
