package store

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"

	bolt "go.etcd.io/bbolt"
)

// Directories of the state root that the hub creates and owns.
const (
	PMADir  = "pma"
	ChatDir = "chat"
)

// layoutDirs are the directories OpenStateDir creates.
var layoutDirs = []string{PMADir, ChatDir, FlowsDir, ProcDir, FilesDir}

// StateDir is the state directory, opened once and held open for as long
// as the process uses it. Every file the hub keeps there is reached through
// it (an os.Root of the directory, and of its flows/ and pma/) by its name
// in the layout, never by a host path: a symbolic link planted in the
// state directory cannot lead a read or a write outside it, and a parent
// directory renamed or replaced after the open changes nothing (the hub
// keeps working in the directories it opened).
type StateDir struct {
	root  *os.Root
	flows *os.Root
	pma   *os.Root
	files *os.Root
	// filesMu orders a Put that renews a stored file against a Sweep
	// that would remove it.
	filesMu sync.Mutex
}

// OpenStateDir creates the state directory dir with owner-only permissions
// when it is missing, opens it, and creates its layout (pma/, chat/,
// flows/, proc/, files/) through it. A directory of the layout that is a symbolic
// link, or not a directory, is refused: the hub keeps its own directories
// there.
func OpenStateDir(dir string) (*StateDir, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("open state: %w", err)
	}
	if err := os.MkdirAll(abs, 0o700); err != nil {
		return nil, fmt.Errorf("open state: create %s: %w", abs, err)
	}
	root, err := os.OpenRoot(abs)
	if err != nil {
		return nil, fmt.Errorf("open state: %w", err)
	}
	d := &StateDir{root: root}
	if err := d.openLayout(); err != nil {
		d.Close()
		return nil, err
	}
	return d, nil
}

func (d *StateDir) openLayout() error {
	for _, name := range layoutDirs {
		if err := d.root.Mkdir(name, 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
			return fmt.Errorf("open state: create %s: %w", d.Path(name), err)
		}
		if err := ownDir(d.root, name); err != nil {
			return fmt.Errorf("open state: %w", err)
		}
	}
	var err error
	if d.flows, err = d.root.OpenRoot(FlowsDir); err != nil {
		return fmt.Errorf("open state: %w", err)
	}
	if d.pma, err = d.root.OpenRoot(PMADir); err != nil {
		return fmt.Errorf("open state: %w", err)
	}
	if d.files, err = d.root.OpenRoot(FilesDir); err != nil {
		return fmt.Errorf("open state: %w", err)
	}
	return nil
}

// ownDir refuses name in root unless it is a directory itself, not a
// symbolic link to one.
func ownDir(root *os.Root, name string) error {
	fi, err := root.Lstat(name)
	if err != nil {
		return err
	}
	if !fi.IsDir() {
		return fmt.Errorf("%s is %s, not a directory: the hub keeps its own directory there; move it away", filepath.Join(root.Name(), name), FileKind(fi.Mode()))
	}
	return nil
}

// FileKind names the kind of file a mode is, for messages: "a symbolic
// link", "a directory"...
func FileKind(m fs.FileMode) string {
	switch {
	case m&fs.ModeSymlink != 0:
		return "a symbolic link"
	case m.IsDir():
		return "a directory"
	case m.IsRegular():
		return "a regular file"
	case m&fs.ModeSocket != 0:
		return "a socket"
	case m&fs.ModeNamedPipe != 0:
		return "a named pipe"
	case m&fs.ModeDevice != 0:
		return "a device"
	}
	return "a special file"
}

// Dir is the absolute path of the state directory, as it was opened.
func (d *StateDir) Dir() string { return d.root.Name() }

// Path joins elem onto the state directory's path, for messages and for
// the few places that need a host path (the admin socket's clients).
func (d *StateDir) Path(elem ...string) string {
	return filepath.Join(append([]string{d.root.Name()}, elem...)...)
}

// Root is the state directory.
func (d *StateDir) Root() *os.Root { return d.root }

// Flows is the state directory's flows/: the chat mirrors.
func (d *StateDir) Flows() *os.Root { return d.flows }

// PMA is the state directory's pma/: the delivery targets and the files of
// local delivery targets.
func (d *StateDir) PMA() *os.Root { return d.pma }

// Close closes the directories.
func (d *StateDir) Close() error {
	var errs []error
	for _, r := range []*os.Root{d.files, d.pma, d.flows, d.root} {
		if r != nil {
			errs = append(errs, r.Close())
		}
	}
	return errors.Join(errs...)
}

// OpenBolt opens the bbolt database name inside root. bbolt opens its file
// by path; here it is opened through root instead (a symbolic link leading
// out of root is refused), must be a regular file and not a symbolic link,
// and must still be the file found at name once it is open. Copies bbolt
// makes to other files (Tx.CopyFile) are opened as bbolt does.
func OpenBolt(root *os.Root, name string, mode os.FileMode, opts bolt.Options) (*bolt.DB, error) {
	path := filepath.Join(root.Name(), name)
	if err := regularOrMissing(root, name); err != nil {
		return nil, err
	}
	opts.OpenFile = func(p string, flag int, perm os.FileMode) (*os.File, error) {
		if p != path {
			return os.OpenFile(p, flag, perm)
		}
		return openRegular(root, name, flag, perm)
	}
	return bolt.Open(path, mode, &opts)
}

// regularOrMissing refuses name in root when it exists and is not a
// regular file (a symbolic link, a directory, a device...).
func regularOrMissing(root *os.Root, name string) error {
	fi, err := root.Lstat(name)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	if !fi.Mode().IsRegular() {
		return fmt.Errorf("%s is %s, not a regular file: the hub keeps its own file there; move it away", filepath.Join(root.Name(), name), FileKind(fi.Mode()))
	}
	return nil
}

// openRegular opens name in root and checks that what it opened is the
// regular file now at name, not something a symbolic link there led to.
func openRegular(root *os.Root, name string, flag int, perm os.FileMode) (*os.File, error) {
	f, err := root.OpenFile(name, flag, perm)
	if err != nil {
		return nil, err
	}
	opened, err := f.Stat()
	if err == nil {
		var there fs.FileInfo
		if there, err = root.Lstat(name); err == nil && (!there.Mode().IsRegular() || !os.SameFile(opened, there)) {
			err = fmt.Errorf("%s was replaced while it was being opened (it is %s now): the hub keeps its own file there", f.Name(), FileKind(there.Mode()))
		}
	}
	if err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// HubOwns reports whether rel, a path relative to the state directory,
// names something the hub keeps for itself: everything in the state
// directory except the files under pma/, and there the delivery targets
// file and the temporary files it is written through. A local delivery
// target may name only a file the hub does not own.
func HubOwns(rel string) bool {
	rel = filepath.ToSlash(filepath.Clean(rel))
	dir, rest, ok := strings.Cut(rel, "/")
	if !ok || dir != PMADir || rest == "" {
		return true
	}
	targets := filepath.Base(DeliveryTargetsFile)
	return rest == targets || strings.HasPrefix(rest, "."+targets+tempInfix)
}

// IsEscape reports whether err is os.Root's refusal of a path that leads
// out of the root (through "..", an absolute symbolic link, or one pointing
// outside); the error is not exported.
func IsEscape(err error) bool {
	for e := err; e != nil; e = errors.Unwrap(e) {
		if strings.HasPrefix(e.Error(), "path escapes from parent") {
			return true
		}
	}
	return false
}
