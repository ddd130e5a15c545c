package confine

import (
	"errors"
	"io"
	"io/fs"
	"strings"
	"syscall"

	unix "github.com/a6afc2ce/hermes-hub/internal/posix"
)

// A walk (fs.search, fs.find) goes down a tree from a located directory
// one directory at a time, by descriptors, as Locate goes down one path:
// every directory is opened from its parent's descriptor without following
// a symbolic link and refused when it is a protected one or a protected
// file's place; its entries are what a listing may show (ReadDir); every
// file is opened from its directory's descriptor without following a link
// and refused when it is a protected file. Symbolic links are never
// followed: a walk lists them as entries of type fs.ModeSymlink, and what
// they lead to, when it lies in the workspace, is reached by its own path.

// errNotRegular refuses to open for reading what is not a regular file.
var errNotRegular = errors.New("not a regular file")

// Dir is a directory open for a walk (Loc.OpenWalk, Dir.Sub). Close
// releases it. A Dir may be used by several goroutines at once.
type Dir struct {
	r    *Root
	fd   int
	id   fileID
	name string // root-relative, "." for the root
}

// OpenWalk opens the located directory for a walk, with OpenDir's checks.
func (l *Loc) OpenWalk() (*Dir, error) {
	f, err := l.OpenDir()
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fd, err := dupFD(int(f.Fd()))
	if err != nil {
		return nil, FSError(err, l.show, "open")
	}
	return newDir(l.r, fd, l.name, l.show)
}

func newDir(r *Root, fd int, name, show string) (*Dir, error) {
	id, err := fstatID(fd)
	if err != nil {
		unix.Close(fd)
		return nil, FSError(err, show, "stat")
	}
	return &Dir{r: r, fd: fd, id: id, name: name}, nil
}

// Name is the directory's root-relative path ("." for the root).
func (d *Dir) Name() string { return d.name }

// Close releases the directory's descriptor.
func (d *Dir) Close() error {
	if d.fd < 0 {
		return nil
	}
	err := unix.Close(d.fd)
	d.fd = -1
	return err
}

// Read returns the entries of the directory a listing may show (see
// Loc.ReadDir), their kinds from the directory read. It reads the
// directory once: call it once.
func (d *Dir) Read() ([]Entry, error) {
	return d.r.readDir(d.fd, d.id, d.name, d.name, false)
}

// child is the root-relative path of the entry name of d, or a refusal
// when name is not one element or is reserved by the deny list.
func (d *Dir) child(name string) (string, error) {
	if name == "" || name == "." || name == ".." || strings.ContainsAny(name, "/\x00") {
		return "", forbidden("%q is not the name of a directory entry", name)
	}
	p := Join(d.name, name)
	if _, ok := d.r.denied(p); ok {
		return "", forbidden("Path %s is reserved for the hub's state and cannot be accessed", p)
	}
	return p, nil
}

// Sub opens the subdirectory name of d for the walk: without following a
// symbolic link (one there is a path changed meanwhile), refusing a
// protected directory and a protected file's place.
func (d *Dir) Sub(name string) (*Dir, error) {
	p, err := d.child(name)
	if err != nil {
		return nil, err
	}
	fd, err := descend(d.fd, name, false, d.r.prot)
	if err != nil {
		return nil, FSError(err, p, "open")
	}
	return newDir(d.r, fd, p, p)
}

// File is a regular file opened for reading by a walk (Dir.Open). Its
// reads are plain read calls on its descriptor, without the runtime's
// poller: the cost of a walk is in the files it opens.
type File struct {
	fd   int
	name string
	// Size and ModTime are the file's when it was opened.
	Size    int64
	ModTime int64 // Unix seconds
}

// Open opens the regular file name of d for reading: without following a
// symbolic link, refusing a protected file's place, a protected file
// (what was opened, by its identity) and anything but a regular file (a
// named pipe would block the walk; it is opened without blocking, then
// refused).
func (d *Dir) Open(name string) (*File, error) {
	p, err := d.child(name)
	if err != nil {
		return nil, err
	}
	if err := d.r.prot.checkPlace(d.fd, &d.id, name); err != nil {
		return nil, FSError(err, p, "open")
	}
	fd, err := unix.Openat(d.fd, name, unix.O_RDONLY|unix.O_NONBLOCK|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		if errors.Is(err, unix.ELOOP) {
			err = errChanged
		}
		return nil, FSError(err, p, "open")
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		unix.Close(fd)
		return nil, FSError(err, p, "stat")
	}
	if err := d.r.prot.checkFile(&st); err != nil {
		unix.Close(fd)
		return nil, FSError(err, p, "open")
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG {
		unix.Close(fd)
		return nil, FSError(errNotRegular, p, "open")
	}
	sec, _ := st.Mtim.Unix()
	return &File{fd: fd, name: p, Size: st.Size, ModTime: sec}, nil
}

// Lstat describes the entry name of d without following a symbolic link,
// refusing a protected directory, a protected file and a protected
// file's place.
func (d *Dir) Lstat(name string) (fs.FileInfo, error) {
	p, err := d.child(name)
	if err != nil {
		return nil, err
	}
	if err := d.r.prot.checkPlace(d.fd, &d.id, name); err != nil {
		return nil, FSError(err, p, "stat")
	}
	st, err := lstatInfo(d.fd, name)
	if err != nil {
		return nil, FSError(err, p, "stat")
	}
	if isDir(&st.st) {
		if g, ok := d.r.prot.lookup(idOf(&st.st)); ok {
			return nil, FSError(&protectedErr{dir: g}, p, "stat")
		}
	} else if err := d.r.prot.checkFile(&st.st); err != nil {
		return nil, FSError(err, p, "stat")
	}
	return st, nil
}

// Name is the file's root-relative path.
func (f *File) Name() string { return f.name }

// Read reads from the file; at its end it returns 0, io.EOF.
func (f *File) Read(p []byte) (int, error) {
	for {
		n, err := unix.Read(f.fd, p)
		switch {
		case errors.Is(err, syscall.EINTR):
			continue
		case err != nil:
			return 0, FSError(err, f.name, "read")
		case n == 0 && len(p) > 0:
			return 0, io.EOF
		}
		return n, nil
	}
}

// Close releases the file's descriptor.
func (f *File) Close() error {
	if f.fd < 0 {
		return nil
	}
	err := unix.Close(f.fd)
	f.fd = -1
	return err
}
