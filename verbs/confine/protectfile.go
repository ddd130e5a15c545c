package confine

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"

	unix "github.com/a6afc2ce/hermes-hub/internal/posix"
)

// The hub's configuration file and the secret files it names (tokens, keys,
// a node's seed) may lie inside a workspace, as the README's layout puts
// hub.yml in the workspace's top. No verb may read, write, replace, delete,
// move, copy, stat or list them. The decision is made twice, and neither
// depends on how the path is spelled:
//
//   - by the file's identity (device and inode), recorded when the
//     workspace opens and held open: another name of the same file (a hard
//     link, a symbolic link, a renamed parent) leads to the same identity;
//   - by its place: the identity of the directory that holds it, held open
//     too, and its name there. A new file created at that name (an editor
//     that saves by renaming a new file over the old one, or a verb trying
//     to plant a file where the hub will read it) is refused by its place
//     before it exists. When the directory is missing, its nearest existing
//     ancestor and the name of the first missing element are the place, so
//     the missing directories cannot be made either.
//
// Every element of a path a verb opens, directories included, is compared
// with the places, and the last one also with the identities. A directory
// holding a place cannot be deleted. Root.Refresh resolves the files
// again (on a reload): the new file at a place gets its identity recorded,
// an old identity still reachable by a name (an editor's backup) stays.

// ProtectedFile is a file no path may reach.
type ProtectedFile struct {
	// Path is the file's absolute host path.
	Path string
	// What names it in refusals and reports: "the configuration file",
	// "telegram.token_file".
	What string
}

// ErrCannotProtect is wrapped by the error of a protected file that
// cannot be protected (Options.ProtectFiles, Root.Refresh).
var ErrCannotProtect = errors.New("cannot protect the hub's configuration and secret files")

// filePlace is where a protected file lies (or will): a held directory and
// a name in it.
type filePlace struct {
	dir  *heldDir
	name string
	what string
}

// heldDir is a directory held open so its identity is not recycled. It is
// closed only with the Protection: verbs use its descriptor.
type heldDir struct {
	id fileID
	f  *os.File
}

// guardedFile is one protected file, by identity.
type guardedFile struct {
	id fileID
	// f holds the file open, nil when it could not be opened (then its
	// other names cannot be ruled out, see fileSet.elsewhere).
	f    *os.File
	at   filePlace // where it was found, links resolved
	what string
}

// fileSet is the protected files at one time; never changed once stored
// (Protection.files), replaced whole by Refresh.
type fileSet struct {
	files  []*guardedFile
	places []filePlace
	gen    uint64 // counts the sets a Protection installed, from 1
}

// generation is s's gen; 0 for no set.
func (s *fileSet) generation() uint64 {
	if s == nil {
		return 0
	}
	return s.gen
}

// named reports whether name is the name of a protected place: a cheap test
// before a directory's identity is asked for.
func (s *fileSet) named(name string) bool {
	if s == nil {
		return false
	}
	for i := range s.places {
		if s.places[i].name == name {
			return true
		}
	}
	return false
}

// place returns the protected place name in the directory with identity dir.
func (s *fileSet) place(dir fileID, name string) (*filePlace, bool) {
	if s == nil {
		return nil, false
	}
	for i := range s.places {
		if p := &s.places[i]; p.name == name && p.dir.id == dir {
			return p, true
		}
	}
	return nil, false
}

// placeIn returns a protected place of the directory with identity dir.
func (s *fileSet) placeIn(dir fileID) (*filePlace, bool) {
	if s == nil {
		return nil, false
	}
	for i := range s.places {
		if s.places[i].dir.id == dir {
			return &s.places[i], true
		}
	}
	return nil, false
}

// lookup returns the protected file with identity id.
func (s *fileSet) lookup(id fileID) (*guardedFile, bool) {
	if s == nil {
		return nil, false
	}
	for _, g := range s.files {
		if g.id == id {
			return g, true
		}
	}
	return nil, false
}

// elsewhere reports whether a protected file may have a name other than its
// place: it has more than one link, or its place now holds another file (it
// was renamed away). A file whose links are gone has no name left. When it
// cannot tell, the answer is yes. Listings stat files only then.
func (s *fileSet) elsewhere() bool {
	if s == nil {
		return false
	}
	for _, g := range s.files {
		if g.f == nil {
			return true
		}
		fi, err := g.f.Stat() // safe if a refresh closes it meanwhile
		if err != nil {
			return true
		}
		n, ok := linkCount(fi)
		switch {
		case !ok || n > 1:
			return true
		case n == 0:
			continue
		}
		st, err := lstatAt(int(g.at.dir.f.Fd()), g.at.name)
		if err != nil || idOf(st) != g.id {
			return true
		}
	}
	return false
}

// loadFiles is the protected file set in force.
func (p *Protection) loadFiles() *fileSet {
	if p == nil {
		return nil
	}
	return p.files.Load()
}

// checkPlace refuses the element name of the directory dirfd (identity
// dirID when known, else asked for) when it is a protected place.
func (p *Protection) checkPlace(dirfd int, dirID *fileID, name string) error {
	s := p.loadFiles()
	if !s.named(name) {
		return nil
	}
	id := fileID{}
	if dirID != nil {
		id = *dirID
	} else {
		var err error
		if id, err = fstatID(dirfd); err != nil {
			return err
		}
	}
	if pl, ok := s.place(id, name); ok {
		return &protectedFileErr{what: pl.what}
	}
	return nil
}

// checkFile refuses st when it describes a protected file.
func (p *Protection) checkFile(st *unix.Stat_t) error {
	if st == nil || isDir(st) {
		return nil
	}
	if g, ok := p.loadFiles().lookup(idOf(st)); ok {
		return &protectedFileErr{what: g.what}
	}
	return nil
}

// checkFileInfo is checkFile for an open file's stat result.
func (p *Protection) checkFileInfo(fi fs.FileInfo) error {
	if fi.IsDir() {
		return nil
	}
	if id, ok := hostFileID(fi); ok {
		if g, ok := p.loadFiles().lookup(id); ok {
			return &protectedFileErr{what: g.what}
		}
	}
	return nil
}

// setFiles resolves files and installs them with the places and the
// identities of the set in force that still have a name: a refresh never
// protects less. Identities left out are closed.
func (p *Protection) setFiles(files []ProtectedFile) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	fresh := &fileSet{}
	for _, pf := range files {
		if err := p.resolveFile(pf, fresh); err != nil {
			for _, g := range fresh.files {
				g.close()
			}
			return fmt.Errorf("%w: %w", ErrCannotProtect, err)
		}
	}
	var drop []*guardedFile
	old := p.files.Load()
	fresh.gen = old.generation() + 1
	if old != nil {
		for _, pl := range old.places {
			fresh.addPlace(pl)
		}
		for _, g := range old.files {
			if _, dup := fresh.lookup(g.id); dup || !g.linked() {
				drop = append(drop, g)
				continue
			}
			fresh.files = append(fresh.files, g)
		}
	}
	p.files.Store(fresh)
	for _, g := range drop {
		g.close() // a verb still using the old set sees it closed: os.File allows that
	}
	return nil
}

// linked reports whether a name may still reach g: no when its link count
// is zero.
func (g *guardedFile) linked() bool {
	if g.f == nil {
		return true
	}
	fi, err := g.f.Stat()
	if err != nil {
		return true
	}
	n, ok := linkCount(fi)
	return !ok || n > 0
}

func (g *guardedFile) close() {
	if g.f != nil {
		g.f.Close()
	}
}

// resolveFile adds pf's places and identity to s. The file's place is its
// directory, with links resolved, and its name; when the path's last
// element is a symbolic link, the link's place too. A missing file has its
// place only; a missing directory makes its nearest existing ancestor and
// the first missing name the place.
func (p *Protection) resolveFile(pf ProtectedFile, s *fileSet) error {
	if !filepath.IsAbs(pf.Path) {
		return fmt.Errorf("protected file %s (%s) is not an absolute path", pf.Path, pf.What)
	}
	clean := filepath.Clean(pf.Path)
	lexical, err := p.placeOf(clean, pf.What)
	if err != nil {
		return err
	}
	s.addPlace(lexical)
	f, err := os.Open(clean)
	var fi fs.FileInfo
	switch {
	case err == nil:
		if fi, err = f.Stat(); err != nil {
			f.Close()
			return fmt.Errorf("protected file %s (%s): %w", clean, pf.What, err)
		}
	case errors.Is(err, fs.ErrNotExist):
		return nil // its place is protected: nothing can be made there
	default:
		// Not readable by the hub (it then cannot use it either): its
		// identity is still recorded, not held.
		f = nil
		if fi, err = os.Stat(clean); err != nil {
			return fmt.Errorf("protected file %s (%s): %w", clean, pf.What, err)
		}
	}
	if fi.IsDir() {
		if f != nil {
			f.Close()
		}
		return fmt.Errorf("protected file %s (%s) is a directory; name a file there", clean, pf.What)
	}
	id, _ := hostFileID(fi)
	at := lexical
	if real, err := filepath.EvalSymlinks(clean); err == nil && real != clean {
		if at, err = p.placeOf(real, pf.What); err != nil {
			if f != nil {
				f.Close()
			}
			return err
		}
		s.addPlace(at)
	}
	if _, dup := s.lookup(id); dup {
		if f != nil {
			f.Close()
		}
		return nil
	}
	s.files = append(s.files, &guardedFile{id: id, f: f, at: at, what: pf.What})
	return nil
}

// placeOf returns the place of the absolute path clean: its directory, held
// (links followed), and its name, or the nearest existing ancestor and the
// name of the first missing element.
func (p *Protection) placeOf(clean, what string) (filePlace, error) {
	dir, name := filepath.Dir(clean), filepath.Base(clean)
	for {
		d, err := p.holdDir(dir)
		if err == nil {
			return filePlace{dir: d, name: name, what: what}, nil
		}
		missing := errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR)
		if !missing || dir == filepath.Dir(dir) {
			return filePlace{}, fmt.Errorf("protected file %s (%s): %w", clean, what, err)
		}
		dir, name = filepath.Dir(dir), filepath.Base(dir)
	}
}

// holdDir opens the directory dir, or returns the one already held with
// its identity. Called with p.mu held.
func (p *Protection) holdDir(dir string) (*heldDir, error) {
	f, err := os.Open(dir)
	if err != nil {
		return nil, err
	}
	var st unix.Stat_t
	if err := unix.Fstat(int(f.Fd()), &st); err != nil {
		f.Close()
		return nil, err
	}
	if !isDir(&st) {
		f.Close()
		return nil, syscall.ENOTDIR
	}
	id := idOf(&st)
	if d, ok := p.held[id]; ok {
		f.Close()
		return d, nil
	}
	if p.held == nil {
		p.held = map[fileID]*heldDir{}
	}
	d := &heldDir{id: id, f: f}
	p.held[id] = d
	return d, nil
}

func (s *fileSet) addPlace(pl filePlace) {
	for _, q := range s.places {
		if q.dir == pl.dir && q.name == pl.name {
			return
		}
	}
	s.places = append(s.places, pl)
}

// fileFilter leaves the protected files out of one directory's listing.
type fileFilter struct {
	set  *fileSet
	dir  fileID
	here bool // a place lies in the directory: its name is left out
	stat bool // a protected file may have another name: files are stat'ed
}

// filesIn is the filter of the directory with identity dir.
func (p *Protection) filesIn(dir fileID) fileFilter {
	s := p.loadFiles()
	if s == nil {
		return fileFilter{}
	}
	_, here := s.placeIn(dir)
	return fileFilter{set: s, dir: dir, here: here, stat: s.elsewhere()}
}

// out reports whether the entry de of the directory dfd is left out: a
// protected place, or, when files are stat'ed, a protected file. Links are
// listed; what they lead to is refused when used.
func (f fileFilter) out(dfd int, de *Entry) bool {
	if f.set == nil {
		return false
	}
	if f.here {
		if _, ok := f.set.place(f.dir, de.Name); ok {
			return true
		}
	}
	if !f.stat || de.Type.IsDir() || de.Type&fs.ModeSymlink != 0 {
		return false
	}
	st, err := lstatAt(dfd, de.Name)
	return err == nil && f.hides(st)
}

// hides reports whether st is a protected file.
func (f fileFilter) hides(st *unix.Stat_t) bool {
	if f.set == nil || isDir(st) {
		return false
	}
	_, ok := f.set.lookup(idOf(st))
	return ok
}

// FileAt returns what protects the host path real (links resolved), when
// it is a protected file or a protected place. It is for configuration
// (session mounts), checked when a plan is made; copies decide by
// descriptors (OpenBelow).
func (p *Protection) FileAt(real string) (string, bool) {
	s := p.loadFiles()
	if s == nil {
		return "", false
	}
	if fi, err := os.Stat(real); err == nil && !fi.IsDir() {
		if id, ok := hostFileID(fi); ok {
			if g, ok := s.lookup(id); ok {
				return g.what, true
			}
		}
	}
	if name := filepath.Base(real); s.named(name) {
		if fi, err := os.Stat(filepath.Dir(real)); err == nil {
			if id, ok := hostFileID(fi); ok {
				if pl, ok := s.place(id, name); ok {
					return pl.what, true
				}
			}
		}
	}
	return "", false
}
