package confine

import (
	"errors"
	"io/fs"
	"os"
	"path"
	"strings"
	"syscall"

	unix "github.com/a6afc2ce/hermes-hub/internal/posix"

	"github.com/a6afc2ce/hermes-hub/executor"
)

// maxSymlinks bounds how many symbolic links one path may traverse, matching
// os.Root's own limit.
const maxSymlinks = 8

// maxTries bounds how often a path is resolved again when a symbolic link
// appears in it while it is being opened.
const maxTries = 3

// Mode says how Locate treats a path's last element.
type Mode int

const (
	// FollowFinal resolves a symbolic link in the last element too: the
	// caller acts on the link's target (reads, writes, listings).
	FollowFinal Mode = 1 << iota
	// AllowRoot accepts "." (the root itself) as the path.
	AllowRoot
	// StatOnly says the caller needs only the last element's description
	// (Located), not its parent held open: for a path of one element,
	// Locate then holds no descriptor (the parent is the root, which the
	// Root holds), and every operation but Located fails.
	StatOnly
)

// errNotHeld is the error of a Loc whose parent Locate was asked
// (StatOnly) not to hold open.
var errNotHeld = errors.New("the parent directory is not held open (statOnly)")

// Loc is a path Locate let through: its parent directory is open (and was
// checked against the protected directories on the way down), and every
// operation acts on the last element relative to that descriptor, so a
// path that changes meanwhile cannot redirect it. Close releases it.
type Loc struct {
	r     *Root
	show  string // the clean path as given, for messages
	name  string // root-relative, symbolic links resolved; "." for the root
	pname string // name's parent directory, "." at the top
	base  string // name's last element; "." for the root
	dir   int    // pname, open (a descriptor of its own); -1 when it does not exist (yet)
	dirEr error  // why dir is -1
	// first is the description of base that Locate decided on (nil when
	// it made none, or base did not exist: firstEr).
	first   *statInfo
	firstEr error
}

// Close releases the parent directory's descriptor.
func (l *Loc) Close() {
	if l.dir >= 0 {
		unix.Close(l.dir)
		l.dir = -1
	}
}

// Name is the root-relative path with its symbolic links resolved ("."
// for the root).
func (l *Loc) Name() string { return l.name }

// Show is the clean path as the caller gave it, for messages.
func (l *Loc) Show() string { return l.show }

// Located describes the last element as Locate saw it when it decided,
// without asking again, or as Lstat does when it made no description.
func (l *Loc) Located() (fs.FileInfo, error) {
	switch {
	case l.first != nil:
		return l.first, nil
	case l.firstEr != nil:
		return nil, l.firstEr
	}
	return l.Lstat()
}

// Lstat describes the last element now, without following a link.
func (l *Loc) Lstat() (fs.FileInfo, error) {
	s, err := l.lstat()
	if err != nil {
		return nil, err
	}
	return s, nil
}

// Stat describes the last element now, for a Loc located with
// FollowFinal: as Lstat does, but a symbolic link there (one appeared since
// Locate resolved the path) is an error, which FSError explains as a path
// changed meanwhile.
func (l *Loc) Stat() (fs.FileInfo, error) {
	s, err := l.lstat()
	if err != nil {
		return nil, err
	}
	if isLink(&s.st) {
		return nil, errChanged
	}
	return s, nil
}

func (l *Loc) lstat() (*statInfo, error) {
	if l.dir < 0 {
		return nil, l.dirEr
	}
	return lstatInfo(l.dir, l.base)
}

// Open opens the last element, never through a symbolic link (one found
// there is refused as a path changed meanwhile), and refuses it when what
// was opened is a protected file. It returns the file and its description.
func (l *Loc) Open(flag int, perm uint32) (*os.File, fs.FileInfo, error) {
	if l.dir < 0 {
		return nil, nil, FSError(l.dirEr, l.show, "open")
	}
	fd, err := unix.Openat(l.dir, l.base, flag|unix.O_NOFOLLOW|unix.O_CLOEXEC, perm)
	if err != nil {
		if errors.Is(err, unix.ELOOP) {
			if st, serr := l.lstat(); serr == nil && isLink(&st.st) {
				err = errChanged
			}
		}
		return nil, nil, FSError(err, l.show, "open")
	}
	f := os.NewFile(uintptr(fd), l.name)
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, nil, FSError(err, l.show, "stat")
	}
	// What was opened, not only what Locate saw, must not be protected.
	if err := l.r.prot.checkFileInfo(fi); err != nil {
		f.Close()
		return nil, nil, FSError(err, l.show, "open")
	}
	return f, fi, nil
}

// OpenDir opens the last element as a directory, refusing a protected one.
func (l *Loc) OpenDir() (*os.File, error) {
	if l.dir < 0 {
		return nil, FSError(l.dirEr, l.show, "open")
	}
	fd, err := openDirAt(l.dir, l.base)
	if err != nil {
		return nil, FSError(err, l.show, "open")
	}
	id, err := fstatID(fd)
	if err != nil {
		unix.Close(fd)
		return nil, FSError(err, l.show, "open")
	}
	if g, ok := l.r.prot.lookup(id); ok {
		unix.Close(fd)
		return nil, FSError(&protectedErr{dir: g}, l.show, "open")
	}
	return os.NewFile(uintptr(fd), l.name), nil
}

// MakeParents creates the missing directories above the last element and
// opens its parent, with the same checks as the descent that found them
// missing.
func (l *Loc) MakeParents() error {
	if l.dir >= 0 {
		return nil
	}
	fd, err := descend(int(l.r.top.Fd()), l.pname, true, l.r.prot)
	if err != nil {
		return mkdirError(err, l.show)
	}
	l.dir, l.dirEr = fd, nil
	return nil
}

// Locate is the single gate every path goes through. It applies CleanPath
// and the deny list (a fast refusal with a friendly message), resolves
// symbolic links inside the root (the last element only with FollowFinal)
// and applies the deny list again to the result. Then the decision: the
// parent directory is opened from the root's descriptor one element at a
// time without following links, every directory on the way is refused if
// it is a protected one, and so is the last element when it is one. A link
// met where resolution saw none means the path changed meanwhile: it is
// resolved again, a few times at most. Even when the last element is not
// followed, a link there that leads outside the root or into the hub's
// state is refused. Refusals are *executor.Error with code forbidden_path;
// a missing parent is not an error yet (operations report it, and
// MakeParents makes it).
func (r *Root) Locate(p string, m Mode) (*Loc, error) {
	show, err := CleanPath(p, r.lim)
	if err != nil {
		return nil, err
	}
	if show == "." && m&AllowRoot == 0 {
		return nil, forbidden("Path %q is the workspace root; name something inside it", p)
	}
	if _, ok := r.denied(show); ok {
		return nil, forbidden("Path %s is reserved for the hub's state and cannot be accessed", show)
	}
	for range maxTries {
		l, err := r.locateOnce(show, m)
		if errors.Is(err, errChanged) {
			continue
		}
		return l, err
	}
	return nil, FSError(errChanged, show, "open")
}

func (r *Root) locateOnce(show string, m Mode) (*Loc, error) {
	l := &Loc{r: r, show: show, name: ".", pname: ".", base: ".", dir: -1}
	// pre is the last element's description when resolving took it
	// (preEr: it does not exist), kept for the decision below.
	var (
		pre   *statInfo
		preEr error
	)
	if show != "." {
		full := ""
		if m&FollowFinal != 0 && show != ".." && !strings.Contains(show, "/") {
			// One element below the root: resolving it is one lstat
			// relative to the root's descriptor, the very call the decision
			// below makes, so its answer serves both. A link, or any other
			// error, takes the general way.
			switch st, err := lstatInfo(int(r.top.Fd()), show); {
			case err == nil && !isLink(&st.st):
				full, pre = show, st
			case errors.Is(err, unix.ENOENT):
				full, preEr = show, err
			}
		}
		if full == "" {
			var err error
			if full, err = r.resolve(show); err != nil {
				return nil, mapResolveErr(err, show)
			}
		}
		if _, ok := r.denied(full); ok {
			return nil, forbidden("Path %s leads to %s, which is reserved for the hub's state and cannot be accessed", show, full)
		}
		l.name = full
		if m&FollowFinal == 0 {
			// Resolve the parent only, keeping the last element itself.
			dir, base := path.Split(show)
			l.name = base
			if dir != "" {
				pdir, err := r.resolve(strings.TrimSuffix(dir, "/"))
				if err != nil {
					return nil, mapResolveErr(err, show)
				}
				l.name = Join(pdir, base)
			}
			if _, ok := r.denied(l.name); ok {
				return nil, forbidden("Path %s leads to %s, which is reserved for the hub's state and cannot be accessed", show, l.name)
			}
		}
		if l.name != "." {
			l.pname, l.base = path.Dir(l.name), path.Base(l.name)
		}
	}
	known := pre != nil || preEr != nil
	st, err := pre, preEr
	if known && m&StatOnly != 0 && l.pname == "." {
		// The decision needs no descriptor: the parent is the root, which
		// is never checked against the protected directories, and the
		// last element's description was taken from the root's own.
		l.dirEr = errNotHeld
		if err := r.prot.checkPlace(-1, &r.topID, l.base); err != nil {
			return nil, FSError(err, show, "open")
		}
	} else {
		fd, err := descend(int(r.top.Fd()), l.pname, false, r.prot)
		switch {
		case err == nil:
			l.dir = fd
			var top *fileID
			if l.pname == "." {
				top = &r.topID
			}
			if l.base != "." {
				if err := r.prot.checkPlace(fd, top, l.base); err != nil {
					l.Close()
					return nil, FSError(err, show, "open")
				}
			}
		case errors.Is(err, errChanged):
			return nil, errChanged
		case errors.Is(err, unix.ENOENT) || errors.Is(err, unix.ENOTDIR):
			l.dirEr = err
			return l, nil
		default:
			return nil, FSError(err, show, "open")
		}
	}
	if !known {
		st, err = l.lstat()
	}
	switch {
	case errors.Is(err, unix.ENOENT):
		l.firstEr = err
		return l, nil
	case err != nil:
		l.Close()
		return nil, FSError(err, show, "stat")
	case isLink(&st.st) && m&FollowFinal != 0:
		l.Close()
		return nil, errChanged
	case isLink(&st.st):
		// Not followed, but where it leads is checked as a followed path would be.
		t, err := r.locateOnce(show, m|FollowFinal)
		if err != nil && executor.ErrorFrom(err).Code == executor.CodeForbiddenPath {
			l.Close()
			return nil, err
		}
		if t != nil {
			t.Close()
		}
	case isDir(&st.st):
		if g, ok := r.prot.lookup(idOf(&st.st)); ok {
			l.Close()
			return nil, FSError(&protectedErr{dir: g}, show, "open")
		}
	default:
		if err := r.prot.checkFile(&st.st); err != nil {
			l.Close()
			return nil, FSError(err, show, "open")
		}
	}
	l.first = st
	return l, nil
}

func mapResolveErr(err error, rel string) error {
	if errors.Is(err, errEscapes) || isEscape(err) {
		return forbidden("Path %s resolves outside the workspace", rel)
	}
	if errors.Is(err, syscall.ELOOP) {
		return forbidden("Path %s has too many levels of symbolic links (at most %d)", rel, maxSymlinks)
	}
	return FSError(err, rel, "resolve")
}

// resolve follows symbolic links in the clean relative path rel, staying
// inside the root, and returns the root-relative path with no links left in
// it (errEscapes when one leads outside). Elements from the first one that
// does not exist on are kept as they are.
func (r *Root) resolve(rel string) (string, error) {
	if rel == "." {
		return ".", nil
	}
	todo := strings.Split(rel, "/")
	var done []string
	links := 0
	missing := false
	for len(todo) > 0 {
		seg := todo[0]
		todo = todo[1:]
		switch seg {
		case "", ".":
			continue
		case "..":
			if len(done) == 0 {
				return "", errEscapes
			}
			done = done[:len(done)-1]
			continue
		}
		if missing {
			done = append(done, seg)
			continue
		}
		cand := seg
		if len(done) > 0 {
			cand = strings.Join(done, "/") + "/" + seg
		}
		fi, err := r.root.Lstat(cand)
		switch {
		case errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR):
			missing = true
			done = append(done, seg)
			continue
		case err != nil:
			return "", err
		}
		if fi.Mode()&fs.ModeSymlink == 0 {
			done = append(done, seg)
			continue
		}
		links++
		if links > maxSymlinks {
			return "", syscall.ELOOP
		}
		target, err := r.root.Readlink(cand)
		if err != nil {
			return "", err
		}
		if target == "" || target[0] == '/' {
			return "", errEscapes
		}
		todo = append(strings.Split(target, "/"), todo...)
	}
	if len(done) == 0 {
		return ".", nil
	}
	return strings.Join(done, "/"), nil
}
