package verbs

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
	"syscall"

	unix "github.com/a6afc2ce/hermes-hub/internal/posix"

	"github.com/a6afc2ce/hermes-hub/executor"
)

// Workspace limits used when WorkspaceOptions leaves a field zero.
const (
	DefaultMaxWriteChars = 48000
	DefaultMaxReadBytes  = 4 << 20
	DefaultMaxDepth      = 16
	DefaultMaxSegment    = 80
)

// maxSymlinks bounds how many symbolic links one path may traverse, matching
// os.Root's own limit.
const maxSymlinks = 8

// WorkspaceOptions configure a Workspace. Zero fields take the defaults above.
type WorkspaceOptions struct {
	// Protect lists directories, as absolute host paths, that no verb may
	// read, list, stat, write, create, move, copy or delete anything in,
	// such as the hub's state directory. They must exist when the workspace
	// opens: it records their identity (device and inode) and holds them
	// open, and every verb checks the directories it actually opens against
	// those identities, whatever the path looks like and whatever symbolic
	// links change while it runs. A protected directory inside the
	// workspace is also deny-listed by its path (see Deny); one that is the
	// workspace or contains it is refused.
	Protect []string
	// Deny lists workspace-relative prefixes refused by their spelling,
	// before anything is opened, with a message saying they are the hub's
	// state; listings leave them out. An entry that is a directory when the
	// workspace opens is protected by identity too, as with Protect.
	Deny []string
	// ProtectFiles lists files no verb may read, write, replace, delete,
	// move, copy, stat or list: the hub's configuration and secret files.
	// Each is refused by its identity (device and inode, recorded and held
	// open when the workspace opens, when the file exists) and by its place
	// (its directory's identity and its name there), so a file created or
	// renamed at that name later is refused too; see protectfile.go. A
	// file may lie inside the workspace or outside it, or not exist yet.
	// RefreshProtected resolves them again.
	ProtectFiles []ProtectedFile
	// MaxWriteChars caps the characters (runes) one write may carry.
	MaxWriteChars int
	// MaxReadBytes caps what fs.readFile returns and what one fs.readRange may return.
	MaxReadBytes int64
	// MaxDepth caps the number of segments in a path.
	MaxDepth int
	// MaxSegment caps the length of one path segment, in bytes.
	MaxSegment int
	// Name is the workspace's configured name ("default" when unnamed);
	// messages and runners use it.
	Name string
	// Runner runs proc.run's programs in this workspace (and its session
	// workspaces) somewhere other than on the host, in a container say;
	// nil runs them as host processes. With a Runner, proc.run is allowed in
	// session workspaces: each session's directory is all its sandbox sees.
	Runner Runner
}

func (o WorkspaceOptions) withDefaults() (WorkspaceOptions, error) {
	if o.MaxWriteChars < 0 || o.MaxReadBytes < 0 || o.MaxDepth < 0 || o.MaxSegment < 0 {
		return o, errors.New("workspace limits must not be negative (zero means the default)")
	}
	if o.MaxWriteChars == 0 {
		o.MaxWriteChars = DefaultMaxWriteChars
	}
	if o.MaxReadBytes == 0 {
		o.MaxReadBytes = DefaultMaxReadBytes
	}
	if o.MaxDepth == 0 {
		o.MaxDepth = DefaultMaxDepth
	}
	if o.MaxSegment == 0 {
		o.MaxSegment = DefaultMaxSegment
	}
	return o, nil
}

// WorkspaceSource hands a verb the workspace it acts in. *Workspace returns
// itself; a per-conversation source can pick a workspace from the call in ctx.
type WorkspaceSource interface {
	Workspace(ctx context.Context) (*Workspace, error)
}

var _ WorkspaceSource = (*Workspace)(nil)

// Workspace is a directory tree the fs verbs and proc.run are confined to.
// Every path is checked by the guard (CleanPath plus the deny list), its
// symbolic links are resolved inside the root, and the path is then opened
// from the root's descriptor one element at a time, following no link and
// refusing protected directories by identity (see WorkspaceOptions.Protect),
// so nothing outside the directory, and nothing in the hub's state, is
// reachable.
type Workspace struct {
	dir string
	// root and top are the workspace directory, as an os.Root and as an
	// open directory for descriptor-relative calls, with top's identity;
	// vfs.restore and vfs.reset swap them under sess.mu.
	root  *os.Root
	top   *os.File
	topID fileID
	opts  WorkspaceOptions
	deny  []string
	// prot holds the protected directories; a session workspace shares
	// its host workspace's (ownProt false).
	prot    *protection
	ownProt bool
	// lists keeps the host workspace's listings (see listCache), under
	// listID; nil for a session workspace, whose listings are never kept.
	lists  *listCache
	listID uint64
	// sess is the session a session workspace belongs to; nil for the host
	// workspace. Verbs lock it around their work and record file metadata.
	sess *session
}

// OpenWorkspace opens dir as a workspace.
func OpenWorkspace(dir string, opts WorkspaceOptions) (*Workspace, error) {
	w, err := openWorkspace(dir, opts, nil)
	if err != nil {
		return nil, fmt.Errorf("open workspace %s: %w", dir, err)
	}
	return w, nil
}

// openWorkspace opens dir; a session workspace passes its host's
// protection, shared, and no Protect or Deny entries of its own.
func openWorkspace(dir string, opts WorkspaceOptions, shared *protection) (*Workspace, error) {
	if err := unix.Supported(); err != nil {
		return nil, err
	}
	opts, err := opts.withDefaults()
	if err != nil {
		return nil, err
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	w := &Workspace{dir: abs, opts: opts, prot: shared}
	for _, d := range opts.Deny {
		clean, err := CleanPath(d, opts)
		if err != nil {
			return nil, fmt.Errorf("deny entry: %w", err)
		}
		if clean == "." {
			return nil, fmt.Errorf("deny entry %q would deny the whole workspace", d)
		}
		w.deny = append(w.deny, clean)
	}
	root, err := os.OpenRoot(abs)
	if err != nil {
		return nil, err
	}
	if err := w.setRoot(root); err != nil {
		root.Close()
		return nil, err
	}
	if shared != nil {
		return w, nil
	}
	w.prot, w.ownProt = &protection{}, true
	w.lists, w.listID = sharedLists, listIDs.Add(1)
	for _, p := range opts.Protect {
		if err := w.protect(p); err != nil {
			w.Close()
			return nil, err
		}
	}
	if len(opts.ProtectFiles) > 0 {
		if err := w.prot.setFiles(opts.ProtectFiles); err != nil {
			w.Close()
			return nil, err
		}
	}
	for _, d := range w.deny {
		// A deny entry that is a directory now is protected by identity.
		fd, err := descend(int(w.top.Fd()), d, false, nil)
		if err != nil {
			continue
		}
		id, err := fstatID(fd)
		if err != nil {
			unix.Close(fd)
			continue
		}
		w.prot.add(&guardedDir{id: id, f: os.NewFile(uintptr(fd), d), show: d})
	}
	return w, nil
}

// protect adds the host directory p to the workspace's protected set and,
// when it lies inside the workspace, its path to the deny list.
func (w *Workspace) protect(p string) error {
	if !filepath.IsAbs(p) {
		return fmt.Errorf("protected directory %q is not an absolute path", p)
	}
	f, err := os.Open(p)
	if err != nil {
		return fmt.Errorf("protected directory (create it before opening the workspace): %w", err)
	}
	var st unix.Stat_t
	if err := unix.Fstat(int(f.Fd()), &st); err != nil {
		f.Close()
		return fmt.Errorf("protected directory: %w", err)
	}
	if !isDir(&st) {
		f.Close()
		return fmt.Errorf("protected directory %s is not a directory", p)
	}
	g := &guardedDir{id: idOf(&st), f: f}
	if g.id == w.topID {
		f.Close()
		return fmt.Errorf("protected directory %s is the workspace itself; nothing could be accessed", p)
	}
	contains := false
	if err := ancestors(int(w.top.Fd()), func(id fileID) bool {
		contains = id == g.id
		return !contains
	}); err != nil {
		f.Close()
		return fmt.Errorf("protected directory %s: %w", p, err)
	}
	if contains {
		f.Close()
		return fmt.Errorf("protected directory %s contains the workspace; nothing could be accessed", p)
	}
	// Its path inside the workspace, for messages and the deny list.
	ws, rp := w.dir, filepath.Clean(p)
	if r, err := filepath.EvalSymlinks(ws); err == nil {
		ws = r
	}
	if r, err := filepath.EvalSymlinks(rp); err == nil {
		rp = r
	}
	if rel, err := filepath.Rel(ws, rp); err == nil && rel != ".." && !strings.HasPrefix(rel, "../") {
		if clean, err := CleanPath(filepath.ToSlash(rel), w.opts); err == nil && clean != "." {
			g.show = clean
			if _, dup := w.denied(clean); !dup {
				w.deny = append(w.deny, clean)
			}
		}
	}
	w.prot.add(g)
	return nil
}

// RefreshProtected resolves files again and protects them besides what
// the workspace protected already (see WorkspaceOptions.ProtectFiles): a
// configuration file an editor replaced has its new identity recorded,
// and an old one that still has a name stays protected. The workspace's
// kept listings are dropped, as what they leave out may have changed. Its
// session workspaces share the result.
func (w *Workspace) RefreshProtected(files []ProtectedFile) error {
	if !w.ownProt {
		return errors.New("a session workspace shares its host workspace's protection: refresh the host's")
	}
	if err := w.prot.setFiles(files); err != nil {
		return err
	}
	w.lists.drop(w.listID)
	return nil
}

// setRoot makes root the workspace's directory.
func (w *Workspace) setRoot(root *os.Root) error {
	top, err := root.Open(".")
	if err != nil {
		return err
	}
	id, err := fstatID(int(top.Fd()))
	if err != nil {
		top.Close()
		return err
	}
	if w.top != nil {
		w.top.Close()
	}
	if w.root != nil && w.root != root {
		w.root.Close()
	}
	w.root, w.top, w.topID = root, top, id
	return nil
}

// Close releases the workspace's directory handles and, for a host
// workspace, those of its protected directories.
func (w *Workspace) Close() error {
	w.lists.drop(w.listID)
	errs := []error{w.root.Close(), w.top.Close()}
	if w.ownProt {
		errs = append(errs, w.prot.close())
	}
	return errors.Join(errs...)
}

// Dir is the workspace's absolute directory on the host.
func (w *Workspace) Dir() string { return w.dir }

// Options returns the workspace's limits, defaults filled in.
func (w *Workspace) Options() WorkspaceOptions { return w.opts }

// Workspace implements WorkspaceSource by returning w.
func (w *Workspace) Workspace(context.Context) (*Workspace, error) { return w, nil }

// CleanPath is the lexical half of the path guard. It returns p as a clean
// workspace-relative name ("a//b/" becomes "a/b", "." is the root) or an
// *executor.Error with code forbidden_path saying why p is refused: empty,
// absolute, backslashes, NUL or control characters, non-ASCII, "." or ".."
// segments, too many segments or a segment too long (limits from opts, zero
// meaning the default).
func CleanPath(p string, opts WorkspaceOptions) (string, error) {
	if opts.MaxDepth <= 0 {
		opts.MaxDepth = DefaultMaxDepth
	}
	if opts.MaxSegment <= 0 {
		opts.MaxSegment = DefaultMaxSegment
	}
	switch {
	case p == "":
		return "", forbidden("Path is empty; give a path relative to the workspace root, like docs/readme.md (\".\" is the root)")
	case strings.IndexByte(p, 0) >= 0:
		return "", forbidden("Path %q contains a NUL byte", p)
	case strings.IndexByte(p, '\\') >= 0:
		return "", forbidden("Path %q contains a backslash; only POSIX '/' separators are accepted", p)
	case p[0] == '/':
		return "", forbidden("Path %q is absolute; give a path relative to the workspace root", p)
	}
	segs := make([]string, 0, 8)
	for seg := range strings.SplitSeq(p, "/") {
		if seg != "" {
			segs = append(segs, seg)
		}
	}
	if len(segs) == 1 && segs[0] == "." {
		return ".", nil
	}
	if len(segs) > opts.MaxDepth {
		return "", forbidden("Path %q has %d segments; at most %d are accepted", p, len(segs), opts.MaxDepth)
	}
	for _, seg := range segs {
		switch seg {
		case "..":
			return "", forbidden("Path %q contains '..'; paths stay inside the workspace and may not use '..' segments", p)
		case ".":
			return "", forbidden("Path %q contains a '.' segment; write the path without it", p)
		}
		if len(seg) > opts.MaxSegment {
			return "", forbidden("Path %q has a segment of %d characters; at most %d are accepted", p, len(seg), opts.MaxSegment)
		}
		for i := 0; i < len(seg); i++ {
			if c := seg[i]; c < 0x20 || c >= 0x7f {
				return "", forbidden("Path %q contains a non-ASCII or control character; only printable ASCII is accepted in paths", p)
			}
		}
	}
	return strings.Join(segs, "/"), nil
}

func forbidden(format string, args ...any) *executor.Error {
	return executor.Errorf(executor.CodeForbiddenPath, format, args...)
}

// denied reports the deny-list entry covering rel, if any.
func (w *Workspace) denied(rel string) (string, bool) {
	for _, d := range w.deny {
		if rel == d || strings.HasPrefix(rel, d+"/") {
			return d, true
		}
	}
	return "", false
}

// deniedBelow reports a deny-list entry inside directory rel (or equal to it).
func (w *Workspace) deniedBelow(rel string) (string, bool) {
	for _, d := range w.deny {
		if rel == "." || d == rel || strings.HasPrefix(d, rel+"/") {
			return d, true
		}
	}
	return "", false
}

// pathMode says how guard treats the last path element.
type pathMode int

const (
	// followFinal resolves a symbolic link in the last element too: the verb
	// acts on the link's target (reads, writes, listings).
	followFinal pathMode = 1 << iota
	// allowRoot accepts "." (the workspace root) as the path.
	allowRoot
	// statOnly says the verb needs only the last element's description
	// (loc.located), not its parent held open: for a path of one element,
	// locate then holds no descriptor (the parent is the root, which the
	// workspace holds) and loc.dir stays -1.
	statOnly
)

// errNotHeld is loc.dirEr when locate was asked (statOnly) not to hold the
// parent open.
var errNotHeld = errors.New("the parent directory is not held open (statOnly)")

// maxTries bounds how often a path is resolved again when a symbolic link
// appears in it while it is being opened.
const maxTries = 3

// loc is a path located for a verb: its parent directory is open (and was
// checked against the protected directories on the way down), and the verb
// acts on base relative to that descriptor, so a path that changes while
// the verb runs cannot redirect it.
type loc struct {
	w     *Workspace
	show  string // the clean path as given, for messages
	name  string // root-relative, symbolic links resolved; "." for the root
	pname string // name's parent directory, "." at the top
	base  string // name's last element; "." for the root
	dir   int    // pname, open (a descriptor of its own); -1 when it does not exist (yet)
	dirEr error  // why dir is -1
	// first is the lstat of base that locate decided on (nil when it made
	// none, or base did not exist: firstEr).
	first   *unix.Stat_t
	firstEr error
}

func (l *loc) close() {
	if l.dir >= 0 {
		unix.Close(l.dir)
		l.dir = -1
	}
}

func (l *loc) fd() int { return l.dir }

// lstat describes base without following a link.
func (l *loc) lstat() (*unix.Stat_t, error) {
	if l.dir < 0 {
		return nil, l.dirEr
	}
	return lstatAt(l.dir, l.base)
}

// located is lstat as locate saw it: the description locate made its
// decision on, without asking again, or lstat when it made none.
func (l *loc) located() (*unix.Stat_t, error) {
	if l.first != nil || l.firstEr != nil {
		return l.first, l.firstEr
	}
	return l.lstat()
}

// stat is lstat as an fs.FileInfo.
func (l *loc) stat() (fs.FileInfo, error) {
	st, err := l.lstat()
	if err != nil {
		return nil, err
	}
	return newStatInfo(l.name, st), nil
}

// open opens base, never through a symbolic link (one found there is
// errChanged: resolution saw none).
func (l *loc) open(flag int, perm uint32) (*os.File, error) {
	if l.dir < 0 {
		return nil, l.dirEr
	}
	fd, err := unix.Openat(l.fd(), l.base, flag|unix.O_NOFOLLOW|unix.O_CLOEXEC, perm)
	if err != nil {
		if errors.Is(err, unix.ELOOP) {
			if st, serr := l.lstat(); serr == nil && isLink(st) {
				return nil, errChanged
			}
		}
		return nil, err
	}
	return os.NewFile(uintptr(fd), l.name), nil
}

// openDir opens base as a directory and refuses a protected one.
func (l *loc) openDir() (*os.File, error) {
	if l.dir < 0 {
		return nil, l.dirEr
	}
	fd, err := openDirAt(l.fd(), l.base)
	if err != nil {
		return nil, err
	}
	id, err := fstatID(fd)
	if err != nil {
		unix.Close(fd)
		return nil, err
	}
	if g, ok := l.w.prot.lookup(id); ok {
		unix.Close(fd)
		return nil, &protectedErr{dir: g}
	}
	return os.NewFile(uintptr(fd), l.name), nil
}

// makeParents creates the missing directories above base and opens its
// parent, with the same checks as the descent that found it missing.
func (l *loc) makeParents() error {
	if l.dir >= 0 {
		return nil
	}
	fd, err := descend(int(l.w.top.Fd()), l.pname, true, l.w.prot)
	if err != nil {
		return err
	}
	l.dir, l.dirEr = fd, nil
	return nil
}

// guard is the path check proc.run uses: locate, keeping only the resolved
// name and the clean name as given.
func (w *Workspace) guard(p string, mode pathMode) (name, show string, err error) {
	l, err := w.locate(p, mode)
	if err != nil {
		return "", "", err
	}
	l.close()
	return l.name, l.show, nil
}

// locate is the single gate every verb path goes through. It applies
// CleanPath and the deny list (a fast refusal with a friendly message),
// resolves symbolic links inside the root (the last element only with
// followFinal) and applies the deny list again to the result. Then the
// decision: the parent directory is opened from the root's descriptor one
// element at a time without following links, every directory on the way
// is refused if it is a protected one, and so is the last element when it
// is one. A link met where resolution saw none means the path changed
// meanwhile: it is resolved again, a few times at most. Even when the last
// element is not followed, a link there that leads outside the root or into
// the hub's state is refused. Refusals are *executor.Error with code
// forbidden_path; a missing parent is not an error yet (see loc.dirEr).
func (w *Workspace) locate(p string, mode pathMode) (*loc, error) {
	show, err := CleanPath(p, w.opts)
	if err != nil {
		return nil, err
	}
	if show == "." && mode&allowRoot == 0 {
		return nil, forbidden("Path %q is the workspace root; name something inside it", p)
	}
	if _, ok := w.denied(show); ok {
		return nil, forbidden("Path %s is reserved for the hub's state and cannot be accessed", show)
	}
	for range maxTries {
		l, err := w.locateOnce(show, mode)
		if errors.Is(err, errChanged) {
			continue
		}
		return l, err
	}
	return nil, fsError(errChanged, show, "open")
}

func (w *Workspace) locateOnce(show string, mode pathMode) (*loc, error) {
	l := &loc{w: w, show: show, name: ".", pname: ".", base: ".", dir: -1}
	// pre is the last element's lstat when resolving took it (preEr: it
	// does not exist), kept for the decision below.
	var (
		pre   *unix.Stat_t
		preEr error
	)
	if show != "." {
		full := ""
		if mode&followFinal != 0 && show != ".." && !strings.Contains(show, "/") {
			// One element below the root: resolving it is one lstat
			// relative to the root's descriptor, the very call the decision
			// below makes, so its answer serves both. A link, or any other
			// error, takes the general way.
			switch st, err := lstatAt(int(w.top.Fd()), show); {
			case err == nil && !isLink(st):
				full, pre = show, st
			case errors.Is(err, unix.ENOENT):
				full, preEr = show, err
			}
		}
		if full == "" {
			var err error
			if full, err = w.resolve(show); err != nil {
				return nil, w.mapResolveErr(err, show)
			}
		}
		if _, ok := w.denied(full); ok {
			return nil, forbidden("Path %s leads to %s, which is reserved for the hub's state and cannot be accessed", show, full)
		}
		l.name = full
		if mode&followFinal == 0 {
			// Resolve the parent only, keeping the last element itself.
			dir, base := path.Split(show)
			l.name = base
			if dir != "" {
				pdir, err := w.resolve(strings.TrimSuffix(dir, "/"))
				if err != nil {
					return nil, w.mapResolveErr(err, show)
				}
				l.name = joinRel(pdir, base)
			}
			if _, ok := w.denied(l.name); ok {
				return nil, forbidden("Path %s leads to %s, which is reserved for the hub's state and cannot be accessed", show, l.name)
			}
		}
		if l.name != "." {
			l.pname, l.base = path.Dir(l.name), path.Base(l.name)
		}
	}
	known := pre != nil || preEr != nil
	st, err := pre, preEr
	if known && mode&statOnly != 0 && l.pname == "." {
		// The decision needs no descriptor: the parent is the root, which
		// is never checked against the protected directories, and the
		// last element's description was taken from the root's own.
		l.dirEr = errNotHeld
		if err := w.prot.checkPlace(-1, &w.topID, l.base); err != nil {
			return nil, fsError(err, show, "open")
		}
	} else {
		fd, err := descend(int(w.top.Fd()), l.pname, false, w.prot)
		switch {
		case err == nil:
			l.dir = fd
			var top *fileID
			if l.pname == "." {
				top = &w.topID
			}
			if l.base != "." {
				if err := w.prot.checkPlace(fd, top, l.base); err != nil {
					l.close()
					return nil, fsError(err, show, "open")
				}
			}
		case errors.Is(err, errChanged):
			return nil, errChanged
		case errors.Is(err, unix.ENOENT) || errors.Is(err, unix.ENOTDIR):
			l.dirEr = err
			return l, nil
		default:
			return nil, fsError(err, show, "open")
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
		l.close()
		return nil, fsError(err, show, "stat")
	case isLink(st) && mode&followFinal != 0:
		l.close()
		return nil, errChanged
	case isLink(st):
		// Not followed, but where it leads is checked as a followed path would be.
		t, err := w.locateOnce(show, mode|followFinal)
		if err != nil && executor.ErrorFrom(err).Code == executor.CodeForbiddenPath {
			l.close()
			return nil, err
		}
		if t != nil {
			t.close()
		}
	case isDir(st):
		if g, ok := w.prot.lookup(idOf(st)); ok {
			l.close()
			return nil, fsError(&protectedErr{dir: g}, show, "open")
		}
	default:
		if err := w.prot.checkFile(st); err != nil {
			l.close()
			return nil, fsError(err, show, "open")
		}
	}
	l.first = st
	return l, nil
}

// errEscapes marks a symbolic link that leaves the root.
var errEscapes = errors.New("path escapes from the workspace")

func (w *Workspace) mapResolveErr(err error, rel string) error {
	if errors.Is(err, errEscapes) || isEscape(err) {
		return forbidden("Path %s resolves outside the workspace", rel)
	}
	if errors.Is(err, syscall.ELOOP) {
		return forbidden("Path %s has too many levels of symbolic links (at most %d)", rel, maxSymlinks)
	}
	return fsError(err, rel, "resolve")
}

// resolve follows symbolic links in the clean relative path rel, staying
// inside the root, and returns the root-relative path with no links left in
// it (errEscapes when one leads outside). Elements from the first one that
// does not exist on are kept as they are.
func (w *Workspace) resolve(rel string) (string, error) {
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
		fi, err := w.root.Lstat(cand)
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
		target, err := w.root.Readlink(cand)
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

// isEscape reports os.Root's refusal of a path that leaves the root. The os
// package does not export that error, so it is matched by its text.
func isEscape(err error) bool {
	for err != nil {
		if err.Error() == "path escapes from parent" {
			return true
		}
		err = errors.Unwrap(err)
	}
	return false
}

// fsError turns an error from the os package into an *executor.Error whose
// message names the workspace-relative path rel and never a host path.
func fsError(err error, rel, op string) error {
	var e *executor.Error
	if errors.As(err, &e) {
		return e
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	var pe *protectedErr
	var fe *protectedFileErr
	switch {
	case errors.As(err, &pe):
		return fail(executor.CodeForbiddenPath, err, "Path %s leads into %s, which is reserved for the hub's state and cannot be accessed", rel, pe.dir.label())
	case errors.As(err, &fe):
		return fail(executor.CodeForbiddenPath, err, "Path %s leads to %s, a protected file of the hub (its configuration and secrets are out of the verbs' reach); it cannot be accessed", rel, fe.what)
	case errors.Is(err, errChanged):
		return fail(executor.CodeIOError, err, "Path %s changed while it was being opened (a symbolic link appeared in it); try again", rel)
	case isEscape(err):
		return fail(executor.CodeForbiddenPath, err, "Path %s resolves outside the workspace", rel)
	case errors.Is(err, syscall.ELOOP):
		return fail(executor.CodeForbiddenPath, err, "Path %s has too many levels of symbolic links", rel)
	case errors.Is(err, fs.ErrNotExist):
		return fail(executor.CodeNotFound, err, "File not found: %s", rel)
	case errors.Is(err, syscall.ENOTDIR):
		return fail(executor.CodeNotADirectory, err, "A parent of %s is a file, not a directory", rel)
	case errors.Is(err, syscall.EISDIR):
		return fail(executor.CodeIsADirectory, err, "Path is a directory: %s", rel)
	case errors.Is(err, fs.ErrPermission):
		return fail(executor.CodeIOError, err, "Permission denied: %s", rel)
	case errors.Is(err, syscall.ENOSPC):
		return fail(executor.CodeIOError, err, "No space left on the device holding %s", rel)
	}
	return fail(executor.CodeIOError, err, "%s %s: %s", op, rel, hostless(err))
}

// hostless is err's message without the host path that *fs.PathError and
// *os.LinkError carry: what a caller may see of an I/O failure.
func hostless(err error) string {
	var pe *fs.PathError
	var le *os.LinkError
	switch {
	case errors.As(err, &pe):
		return pe.Err.Error()
	case errors.As(err, &le):
		return le.Err.Error()
	}
	return err.Error()
}

// fail returns an *executor.Error with a formatted message and cause.
func fail(code executor.ErrorCode, cause error, format string, args ...any) *executor.Error {
	return &executor.Error{Code: code, Message: fmt.Sprintf(format, args...), Err: cause}
}
