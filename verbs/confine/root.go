package confine

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	unix "github.com/a6afc2ce/hermes-hub/internal/posix"
)

// Options configure a Root. Zero limits take the defaults.
type Options struct {
	// Protect lists directories, as absolute host paths, that no path may
	// reach: nothing in them may be read, listed, stat'ed, written,
	// created, moved, copied or deleted, such as the hub's state directory.
	// They must exist when the root opens: it records their identity
	// (device and inode) and holds them open, and every directory a path
	// opens is checked against those identities, whatever the path looks
	// like and whatever symbolic links change meanwhile. A protected
	// directory inside the root is also deny-listed by its path (see Deny);
	// one that is the root or contains it is refused.
	Protect []string
	// Deny lists root-relative prefixes refused by their spelling, before
	// anything is opened, with a message saying they are the hub's state;
	// listings leave them out. An entry that is a directory when the root
	// opens is protected by identity too, as with Protect.
	Deny []string
	// ProtectFiles lists files no path may reach: the hub's configuration
	// and secret files. Each is refused by its identity (recorded and held
	// open when the root opens, when the file exists) and by its place (its
	// directory's identity and its name there), so a file created or
	// renamed at that name later is refused too; see protectfile.go. A
	// file may lie inside the root or outside it, or not exist yet.
	// Refresh resolves them again.
	ProtectFiles []ProtectedFile
	Limits
}

// Root is a directory tree paths are confined to (see the package
// documentation). Its methods may be called concurrently, except Reopen,
// which the caller serialises with every other use.
type Root struct {
	dir string
	// root and top are the directory, as an os.Root and as an open
	// directory for descriptor-relative calls, with top's identity.
	root  *os.Root
	top   *os.File
	topID fileID
	lim   Limits
	deny  []string
	// prot holds the protected directories and files; a shared root
	// (OpenShared) uses another root's (ownProt false).
	prot    *Protection
	ownProt bool
}

// Open opens dir as a root with the protected directories and files of o.
func Open(dir string, o Options) (*Root, error) {
	if err := unix.Supported(); err != nil {
		return nil, err
	}
	l, err := o.Limits.withDefaults()
	if err != nil {
		return nil, err
	}
	deny, err := cleanDeny(o.Deny, l)
	if err != nil {
		return nil, err
	}
	r, err := open(dir, l, nil)
	if err != nil {
		return nil, err
	}
	r.deny = deny
	r.prot, r.ownProt = &Protection{}, true
	for _, p := range o.Protect {
		if err := r.protect(p); err != nil {
			r.Close()
			return nil, err
		}
	}
	if len(o.ProtectFiles) > 0 {
		if err := r.prot.setFiles(o.ProtectFiles); err != nil {
			r.Close()
			return nil, err
		}
	}
	for _, d := range r.deny {
		// A deny entry that is a directory now is protected by identity.
		fd, err := descend(int(r.top.Fd()), d, false, nil)
		if err != nil {
			continue
		}
		id, err := fstatID(fd)
		if err != nil {
			unix.Close(fd)
			continue
		}
		r.prot.add(&guardedDir{id: id, f: os.NewFile(uintptr(fd), d), show: d})
	}
	return r, nil
}

// cleanDeny checks the deny entries and returns them clean.
func cleanDeny(entries []string, l Limits) ([]string, error) {
	var out []string
	for _, d := range entries {
		clean, err := CleanPath(d, l)
		if err != nil {
			return nil, fmt.Errorf("deny entry: %w", err)
		}
		if clean == "." {
			return nil, fmt.Errorf("deny entry %q would deny the whole workspace", d)
		}
		out = append(out, clean)
	}
	return out, nil
}

// OpenShared opens dir as a root protected by p, another root's protection
// (nil: none), with no deny list of its own: a session's workspace, which
// lies in the hub's state (its sessions directory) and shares its host
// workspace's protected identities, checked below its own directory only.
func OpenShared(dir string, l Limits, p *Protection) (*Root, error) {
	if err := unix.Supported(); err != nil {
		return nil, err
	}
	l, err := l.withDefaults()
	if err != nil {
		return nil, err
	}
	return open(dir, l, p)
}

// open opens dir as a root with limits l (defaults filled in) protected by p.
func open(dir string, l Limits, p *Protection) (*Root, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	root, err := os.OpenRoot(abs)
	if err != nil {
		return nil, err
	}
	r := &Root{dir: abs, lim: l, prot: p}
	if err := r.setRoot(root); err != nil {
		root.Close()
		return nil, err
	}
	return r, nil
}

// protect adds the host directory p to the root's protected set and, when
// it lies inside the root, its path to the deny list.
func (r *Root) protect(p string) error {
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
	if g.id == r.topID {
		f.Close()
		return fmt.Errorf("protected directory %s is the workspace itself; nothing could be accessed", p)
	}
	contains := false
	if err := ancestors(int(r.top.Fd()), func(id fileID) bool {
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
	// Its path inside the root, for messages and the deny list.
	ws, rp := r.dir, filepath.Clean(p)
	if real, err := filepath.EvalSymlinks(ws); err == nil {
		ws = real
	}
	if real, err := filepath.EvalSymlinks(rp); err == nil {
		rp = real
	}
	if rel, err := filepath.Rel(ws, rp); err == nil && rel != ".." && !strings.HasPrefix(rel, "../") {
		if clean, err := CleanPath(filepath.ToSlash(rel), r.lim); err == nil && clean != "." {
			g.show = clean
			if _, dup := r.denied(clean); !dup {
				r.deny = append(r.deny, clean)
			}
		}
	}
	r.prot.add(g)
	return nil
}

// Refresh resolves files again and protects them besides what the root
// protected already (see Options.ProtectFiles): a configuration file an
// editor replaced has its new identity recorded, and an old one that still
// has a name stays protected. The roots sharing its protection share the
// result. What was read under the previous Generation may show a file
// protected since.
func (r *Root) Refresh(files []ProtectedFile) error {
	if !r.ownProt {
		return errors.New("a session workspace shares its host workspace's protection: refresh the host's")
	}
	return r.prot.setFiles(files)
}

// Generation counts the times the protected files were resolved (Refresh);
// what a listing showed under one generation holds under it only.
func (r *Root) Generation() uint64 { return r.prot.loadFiles().generation() }

// Reopen opens the root's directory path again, for when another directory
// was put in its place (a session workspace restored from a snapshot); the
// root then works in the new one. The caller serialises it with every other
// use of r.
func (r *Root) Reopen() error {
	root, err := os.OpenRoot(r.dir)
	if err != nil {
		return err
	}
	if err := r.setRoot(root); err != nil {
		root.Close()
		return err
	}
	return nil
}

// setRoot makes root the root's directory.
func (r *Root) setRoot(root *os.Root) error {
	top, err := root.Open(".")
	if err != nil {
		return err
	}
	id, err := fstatID(int(top.Fd()))
	if err != nil {
		top.Close()
		return err
	}
	if r.top != nil {
		r.top.Close()
	}
	if r.root != nil && r.root != root {
		r.root.Close()
	}
	r.root, r.top, r.topID = root, top, id
	return nil
}

// Close releases the root's directory handles and, when it owns its
// protection, those of the protected directories and files.
func (r *Root) Close() error {
	errs := []error{r.root.Close(), r.top.Close()}
	if r.ownProt {
		errs = append(errs, r.prot.close())
	}
	return errors.Join(errs...)
}

// Dir is the root's absolute directory on the host.
func (r *Root) Dir() string { return r.dir }

// Protection is the root's protected directories and files, for the roots
// that share them (OpenShared) and for copies into them (session mounts).
func (r *Root) Protection() *Protection { return r.prot }

// SameDir reports whether fi (a host stat result) describes the root's own
// directory: whether the directory at its path is still the one it opened.
func (r *Root) SameDir(fi fs.FileInfo) bool {
	id, ok := hostFileID(fi)
	return ok && id == r.topID
}

// OS is the root's directory as an os.Root, for walking, reading and
// copying by name. It stays inside the directory but checks no protected
// identity: it is for the trees of session workspaces, which no protected
// directory lies in.
func (r *Root) OS() *os.Root { return r.root }

// Hidden returns the root-relative paths a program given the root's
// directory must not see: its protected directories inside it and its
// deny list. A shared root has none (its protected directories lie outside
// it).
func (r *Root) Hidden() []string {
	if !r.ownProt {
		return nil
	}
	seen := map[string]bool{}
	var out []string
	for _, g := range r.prot.dirs {
		if g.show != "" && !seen[g.show] {
			seen[g.show] = true
			out = append(out, g.show)
		}
	}
	for _, d := range r.deny {
		if !seen[d] {
			seen[d] = true
			out = append(out, d)
		}
	}
	sort.Strings(out)
	return out
}
