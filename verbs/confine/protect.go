package confine

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	unix "github.com/a6afc2ce/hermes-hub/internal/posix"
)

// The protected directories (see the package documentation): their
// identities, the descent that checks every directory it opens against
// them, the walks up ".." that find a directory holding one, and the
// removal of a tree by descriptors.

// fileID identifies a file on the host. While a descriptor of the file is
// held open its identity cannot be given to another file.
type fileID struct{ dev, ino uint64 }

func idOf(st *unix.Stat_t) fileID { return fileID{dev: uint64(st.Dev), ino: uint64(st.Ino)} }

// guardedDir is one protected directory.
type guardedDir struct {
	id   fileID
	f    *os.File // held open so the identity is not recycled
	show string   // workspace-relative path for messages; "" when not inside the workspace
}

func (g *guardedDir) label() string {
	if g.show == "" {
		return "the hub's state directory"
	}
	return g.show
}

// Protection is the set of protected directories and files (see
// protectfile.go). A Root opened with Open owns its set; the roots of its
// session workspaces (OpenShared) share it. The zero Protection, and a nil
// one, protect nothing.
type Protection struct {
	dirs []*guardedDir
	// files is the protected file set in force, replaced whole by
	// setFiles; nil when no file is protected.
	files atomic.Pointer[fileSet]
	// mu serialises setFiles and close; held keeps every directory that
	// holds a protected place open until close, since verbs use their
	// descriptors.
	mu   sync.Mutex
	held map[fileID]*heldDir
}

// lookup returns the protected directory with identity id.
func (p *Protection) lookup(id fileID) (*guardedDir, bool) {
	if p == nil {
		return nil, false
	}
	for _, g := range p.dirs {
		if g.id == id {
			return g, true
		}
	}
	return nil, false
}

// inDir reports whether a protected directory lies directly in the
// directory with identity id: whether id is the parent of one, read now
// through the protected directory's held descriptor, so that one renamed
// elsewhere since the workspace opened is found where it is. When a parent
// cannot be read the answer is yes.
func (p *Protection) inDir(id fileID) bool {
	if p == nil {
		return false
	}
	for _, g := range p.dirs {
		var st unix.Stat_t
		if err := unix.Fstatat(int(g.f.Fd()), "..", &st, 0); err != nil || idOf(&st) == id {
			return true
		}
	}
	return false
}

// LookupDir reports whether fi (a host stat result) describes a protected
// directory, with its name for messages.
func (p *Protection) LookupDir(fi fs.FileInfo) (string, bool) {
	if g, ok := p.lookupInfo(fi); ok {
		return g.label(), true
	}
	return "", false
}

// lookupInfo is lookup by a host stat result.
func (p *Protection) lookupInfo(fi fs.FileInfo) (*guardedDir, bool) {
	if st, ok := fi.Sys().(*unix.Stat_t); ok {
		return p.lookup(idOf(st))
	}
	if id, ok := hostFileID(fi); ok {
		return p.lookup(id)
	}
	return nil, false
}

// HoldingPath returns the name, for messages, of the protected directory
// that the host path real (its links resolved) is or lies in, checking it
// and each directory above it. It is for configuration (session mounts),
// checked once; paths are decided by descriptors.
func (p *Protection) HoldingPath(real string) (string, bool) {
	if p == nil || len(p.dirs) == 0 {
		return "", false
	}
	for cur := filepath.Clean(real); ; cur = filepath.Dir(cur) {
		if fi, err := os.Stat(cur); err == nil {
			if g, ok := p.lookupInfo(fi); ok {
				return g.label(), true
			}
		}
		if cur == filepath.Dir(cur) {
			return "", false
		}
	}
}

// OpenBelow opens the file rel (clean, slash-separated, links resolved
// beforehand) below the directory dir for reading, by descriptors: no link
// is followed (one in the way is an error), a protected directory or a
// protected file's place on the way is refused, and so is the file opened
// when it is a protected one. It returns the file and its description. It
// is how session mounts copy host files in.
func (p *Protection) OpenBelow(dir *os.File, rel string) (*os.File, fs.FileInfo, error) {
	pdir, base := path.Split(rel)
	if pdir == "" {
		pdir = "."
	}
	dfd, err := descend(int(dir.Fd()), strings.TrimSuffix(pdir, "/"), false, p)
	if err != nil {
		return nil, nil, err
	}
	if err := p.checkPlace(dfd, nil, base); err != nil {
		unix.Close(dfd)
		return nil, nil, err
	}
	fd, err := unix.Openat(dfd, base, unix.O_RDONLY|unix.O_NONBLOCK|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	unix.Close(dfd)
	if err != nil {
		return nil, nil, err
	}
	f := os.NewFile(uintptr(fd), rel)
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, nil, err
	}
	if err := p.checkFileInfo(fi); err != nil {
		f.Close()
		return nil, nil, err
	}
	return f, fi, nil
}

func (p *Protection) add(g *guardedDir) {
	if _, dup := p.lookup(g.id); dup {
		g.f.Close()
		return
	}
	p.dirs = append(p.dirs, g)
}

func (p *Protection) close() error {
	if p == nil {
		return nil
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	var errs []error
	for _, g := range p.dirs {
		errs = append(errs, g.f.Close())
	}
	p.dirs = nil
	if s := p.files.Swap(nil); s != nil {
		for _, g := range s.files {
			g.close()
		}
	}
	for _, d := range p.held {
		errs = append(errs, d.f.Close())
	}
	p.held = nil
	return errors.Join(errs...)
}

func fstatID(fd int) (fileID, error) {
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return fileID{}, err
	}
	return idOf(&st), nil
}

func lstatAt(fd int, name string) (*unix.Stat_t, error) {
	var st unix.Stat_t
	if err := unix.Fstatat(fd, name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return nil, err
	}
	return &st, nil
}

// lstatInfo is lstatAt as an fs.FileInfo.
func lstatInfo(fd int, name string) (*statInfo, error) {
	s := &statInfo{name: path.Base(name)}
	if err := unix.Fstatat(fd, name, &s.st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return nil, err
	}
	return s, nil
}

func isLink(st *unix.Stat_t) bool { return st.Mode&unix.S_IFMT == unix.S_IFLNK }
func isDir(st *unix.Stat_t) bool  { return st.Mode&unix.S_IFMT == unix.S_IFDIR }

// openDirAt opens directory name in dirfd without following a symbolic
// link: a link there is errChanged, a file ENOTDIR.
func openDirAt(dirfd int, name string) (int, error) {
	fd, err := unix.Openat(dirfd, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err == nil {
		return fd, nil
	}
	if errors.Is(err, unix.ELOOP) || errors.Is(err, unix.ENOTDIR) {
		if st, serr := lstatAt(dirfd, name); serr == nil && isLink(st) {
			return -1, errChanged
		}
		return -1, unix.ENOTDIR
	}
	return -1, err
}

// descend opens directory rel (clean, slash-separated, "." for top) below
// the directory top, one element at a time, following no symbolic link and
// refusing a directory of prot and the name of a protected file's place
// (top itself is not checked). With create, missing directories are made.
// Errors are *walkErr, wrapping errChanged, a *protectedErr, a
// *protectedFileErr or the system's error.
func descend(top int, rel string, create bool, prot *Protection) (int, error) {
	if rel == "." || rel == "" {
		fd, err := dupFD(top)
		if err != nil {
			return -1, &walkErr{at: ".", err: err}
		}
		return fd, nil
	}
	// The first element is opened from top itself, which the caller holds
	// open for the whole walk; every later one from the descriptor of its
	// parent, owned here.
	fd, done := top, 0
	var fdID *fileID // fd's identity, once known
	for seg := range strings.SplitSeq(rel, "/") {
		done += len(seg) + 1
		at := rel[:done-1]
		if err := prot.checkPlace(fd, fdID, seg); err != nil {
			if fd != top {
				unix.Close(fd)
			}
			return -1, &walkErr{at: at, err: err}
		}
		next, err := openDirAt(fd, seg)
		if errors.Is(err, unix.ENOENT) && create {
			if err = unix.Mkdirat(fd, seg, 0o755); err == nil || errors.Is(err, unix.EEXIST) {
				next, err = openDirAt(fd, seg)
			}
		}
		if fd != top {
			unix.Close(fd)
		}
		if err != nil {
			return -1, &walkErr{at: at, err: err}
		}
		fd = next
		id, err := fstatID(fd)
		if err != nil {
			unix.Close(fd)
			return -1, &walkErr{at: at, err: err}
		}
		if g, ok := prot.lookup(id); ok {
			unix.Close(fd)
			return -1, &walkErr{at: at, err: &protectedErr{dir: g}}
		}
		fdID = &id
	}
	return fd, nil
}

// maxAncestors bounds the ".." walks.
const maxAncestors = 4096

// ancestors calls f with the identity of each directory above the
// directory fd, nearest first, until f returns false or the filesystem's
// root is passed.
func ancestors(fd int, f func(fileID) bool) error {
	cur, err := unix.Openat(fd, ".", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return err
	}
	prev, err := fstatID(cur)
	if err != nil {
		unix.Close(cur)
		return err
	}
	for range maxAncestors {
		up, err := unix.Openat(cur, "..", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		unix.Close(cur)
		if err != nil {
			return err
		}
		cur = up
		id, err := fstatID(cur)
		if err != nil {
			unix.Close(cur)
			return err
		}
		if id == prev { // "/" is its own parent
			unix.Close(cur)
			return nil
		}
		if !f(id) {
			unix.Close(cur)
			return nil
		}
		prev = id
	}
	unix.Close(cur)
	return errors.New("too many directory levels")
}

// holding returns what protected target (an open directory) is or
// contains, a protected directory or the place of a protected file, by
// walking up from each one's own held descriptor to stop (the workspace
// root) or the filesystem's root: an error wrapping a *protectedErr or a
// *protectedFileErr, or nil.
func (p *Protection) holding(target int, stop fileID) error {
	if p == nil {
		return nil
	}
	tid, err := fstatID(target)
	if err != nil {
		return err
	}
	for _, g := range p.dirs {
		found, err := holds(tid, g.id, int(g.f.Fd()), stop)
		if err != nil {
			return fmt.Errorf("cannot tell whether it holds %s: %w", g.label(), err)
		}
		if found {
			return &protectedErr{dir: g}
		}
	}
	if s := p.loadFiles(); s != nil {
		for _, pl := range s.places {
			found, err := holds(tid, pl.dir.id, int(pl.dir.f.Fd()), stop)
			if err != nil {
				return fmt.Errorf("cannot tell whether it holds %s: %w", pl.what, err)
			}
			if found {
				return &protectedFileErr{what: pl.what}
			}
		}
	}
	return nil
}

// holds reports whether the directory tid is the directory id (open as fd)
// or one of its ancestors below stop.
func holds(tid, id fileID, fd int, stop fileID) (bool, error) {
	if id == tid {
		return true, nil
	}
	if id == stop {
		return false, nil // the workspace itself: what lies above it is out of reach
	}
	found := false
	err := ancestors(fd, func(a fileID) bool {
		found = a == tid
		return !found && a != stop
	})
	return found, err
}

// statInfo is an fs.FileInfo from a stat call on a descriptor.
type statInfo struct {
	name string
	st   unix.Stat_t
}

func (s *statInfo) Name() string       { return s.name }
func (s *statInfo) Size() int64        { return s.st.Size }
func (s *statInfo) ModTime() time.Time { return time.Unix(s.st.Mtim.Unix()) }
func (s *statInfo) IsDir() bool        { return isDir(&s.st) }
func (s *statInfo) Sys() any           { return &s.st }

func (s *statInfo) Mode() fs.FileMode {
	m := fs.FileMode(s.st.Mode&0o777) | modeType(&s.st)
	if s.st.Mode&unix.S_ISGID != 0 {
		m |= fs.ModeSetgid
	}
	if s.st.Mode&unix.S_ISUID != 0 {
		m |= fs.ModeSetuid
	}
	if s.st.Mode&unix.S_ISVTX != 0 {
		m |= fs.ModeSticky
	}
	return m
}

// modeType is the fs.FileMode type bits of st.
func modeType(st *unix.Stat_t) fs.FileMode {
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFBLK:
		return fs.ModeDevice
	case unix.S_IFCHR:
		return fs.ModeDevice | fs.ModeCharDevice
	case unix.S_IFDIR:
		return fs.ModeDir
	case unix.S_IFIFO:
		return fs.ModeNamedPipe
	case unix.S_IFLNK:
		return fs.ModeSymlink
	case unix.S_IFSOCK:
		return fs.ModeSocket
	}
	return 0
}

// removeTree empties the directory dir (an open descriptor) by descriptors:
// subdirectories are opened without following links, a protected one stops
// the removal, and nothing outside dir is reached.
func removeTree(dir int, rel string, prot *Protection) error {
	for {
		// Read a batch through a fresh descriptor, remove it, read again
		// from the start: removals shift a directory's read offset.
		fd, err := unix.Openat(dir, ".", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		if err != nil {
			return &walkErr{at: rel, err: err}
		}
		f := os.NewFile(uintptr(fd), rel)
		names, err := f.Readdirnames(1024)
		f.Close()
		if err != nil && !errors.Is(err, io.EOF) {
			return &walkErr{at: rel, err: err}
		}
		removed := 0
		for _, name := range names {
			gone, err := removeEntry(dir, name, rel, prot)
			if err != nil {
				return err
			}
			if gone {
				removed++
			}
		}
		if removed == 0 {
			return nil
		}
	}
}

// removeEntry removes one entry of the directory dir, recursively, and
// reports whether it removed something.
func removeEntry(dir int, name, rel string, prot *Protection) (bool, error) {
	child := Join(rel, name)
	st, err := lstatAt(dir, name)
	if errors.Is(err, unix.ENOENT) {
		return false, nil
	}
	if err != nil {
		return false, &walkErr{at: child, err: err}
	}
	if !isDir(st) {
		if err := prot.checkFile(st); err != nil {
			return false, &walkErr{at: child, err: err}
		}
		err := unix.Unlinkat(dir, name, 0)
		if errors.Is(err, unix.ENOENT) {
			return false, nil
		}
		if err != nil {
			return false, &walkErr{at: child, err: err}
		}
		return true, nil
	}
	sub, err := openDirAt(dir, name)
	if err != nil {
		return false, &walkErr{at: child, err: err}
	}
	defer unix.Close(sub)
	id, err := fstatID(sub)
	if err != nil {
		return false, &walkErr{at: child, err: err}
	}
	if g, ok := prot.lookup(id); ok {
		return false, &walkErr{at: child, err: &protectedErr{dir: g}}
	}
	if pl, ok := prot.loadFiles().placeIn(id); ok {
		return false, &walkErr{at: child, err: &protectedFileErr{what: pl.what}}
	}
	if err := removeTree(sub, child, prot); err != nil {
		return false, err
	}
	return true, rmdirSame(dir, name, id, child)
}

// rmdirSame removes the empty directory name of dir if it is still the
// directory with identity id.
func rmdirSame(dir int, name string, id fileID, rel string) error {
	st, err := lstatAt(dir, name)
	if err != nil {
		return &walkErr{at: rel, err: err}
	}
	if idOf(st) != id {
		return &walkErr{at: rel, err: errChanged}
	}
	if err := unix.Unlinkat(dir, name, unix.AT_REMOVEDIR); err != nil && !errors.Is(err, unix.ENOENT) {
		return &walkErr{at: rel, err: err}
	}
	return nil
}
