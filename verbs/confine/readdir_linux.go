//go:build linux

package confine

import (
	"encoding/binary"
	"errors"
	"io/fs"
	"os"
	"sync"

	"golang.org/x/sys/unix"
)

// direntBufs keeps getdents buffers between listings.
var direntBufs = sync.Pool{New: func() any { b := make([]byte, 64<<10); return &b }}

// readDirents reads every entry of the open directory fd ("." and ".." left
// out) with getdents into one pooled buffer, keeping the names in one
// string: two allocations for the whole listing, where os.File.ReadDir
// makes two per entry. The type comes from d_type; an entry whose file
// system does not give it is lstat'ed, and left out if it is gone, as
// ReadDir does.
func readDirents(fd int) ([]Entry, error) {
	bp := direntBufs.Get().(*[]byte)
	defer direntBufs.Put(bp)
	buf := *bp
	type span struct {
		start, end int
		typ        fs.FileMode
		unknown    bool
	}
	var spans []span
	var names []byte
	for {
		n, err := unix.Getdents(fd, buf)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			return nil, &os.SyscallError{Syscall: "getdents64", Err: err}
		}
		if n <= 0 {
			break
		}
		// struct linux_dirent64: ino u64, off s64, reclen u16, type u8,
		// name (NUL-terminated).
		for b := buf[:n]; len(b) > 0; {
			const nameOff = 19
			if len(b) < nameOff {
				return nil, errors.New("getdents64: short record")
			}
			reclen := int(binary.NativeEndian.Uint16(b[16:18]))
			if reclen < nameOff || reclen > len(b) {
				return nil, errors.New("getdents64: bad record length")
			}
			typ := b[18]
			name := b[nameOff:reclen]
			for i, c := range name {
				if c == 0 {
					name = name[:i]
					break
				}
			}
			b = b[reclen:]
			if len(name) == 0 || (name[0] == '.' && (len(name) == 1 || (len(name) == 2 && name[1] == '.'))) {
				continue
			}
			if spans == nil {
				spans = make([]span, 0, n/24+8)
				names = make([]byte, 0, n)
			}
			s := span{start: len(names), typ: direntType(typ), unknown: typ == unix.DT_UNKNOWN}
			names = append(names, name...)
			s.end = len(names)
			spans = append(spans, s)
		}
	}
	all := string(names)
	out := make([]Entry, 0, len(spans))
	for _, s := range spans {
		e := Entry{Name: all[s.start:s.end], Type: s.typ}
		if s.unknown {
			st, err := lstatAt(fd, e.Name)
			if errors.Is(err, fs.ErrNotExist) {
				continue // removed meanwhile
			}
			if err != nil {
				return nil, err
			}
			e.Type = modeType(st)
		}
		out = append(out, e)
	}
	return out, nil
}

// direntType is the fs.FileMode type bits for a d_type.
func direntType(t byte) fs.FileMode {
	switch t {
	case unix.DT_DIR:
		return fs.ModeDir
	case unix.DT_LNK:
		return fs.ModeSymlink
	case unix.DT_FIFO:
		return fs.ModeNamedPipe
	case unix.DT_SOCK:
		return fs.ModeSocket
	case unix.DT_CHR:
		return fs.ModeDevice | fs.ModeCharDevice
	case unix.DT_BLK:
		return fs.ModeDevice
	}
	return 0
}
