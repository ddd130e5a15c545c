package confine

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"io/fs"
	"os"
	"syscall"
	"time"

	unix "github.com/a6afc2ce/hermes-hub/internal/posix"

	"github.com/a6afc2ce/hermes-hub/executor"
)

// The operations below create, replace, move and remove the last element
// of a Loc relative to its held parent, never by a path: a name changed
// while they run cannot send them elsewhere.

// WriteAtomic writes the last element through a temporary file in the same
// directory: fill writes the content, the file is synced, then renamed over
// the name (or, with noReplace, linked to it, failing with already_exists
// if something is there). Nothing is left behind on failure. With keepPerm,
// perm is applied exactly; otherwise the file is created with perm less the
// umask. The parent must be open (MakeParents). An error fill returns is
// returned as it is when it is an *executor.Error, else through FSError.
func (l *Loc) WriteAtomic(perm fs.FileMode, keepPerm, noReplace bool, fill func(*os.File) error) (err error) {
	show, dir := l.show, l.dir
	if dir < 0 {
		return FSError(l.dirEr, show, "create temporary file for")
	}
	var tmp string
	var f *os.File
	for range 10 {
		tmp = "." + l.base + ".tmp-" + randHex(6)
		var fd int
		fd, err = unix.Openat(dir, tmp, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, uint32(perm.Perm()))
		if err == nil {
			f = os.NewFile(uintptr(fd), tmp)
		}
		if !errors.Is(err, fs.ErrExist) {
			break
		}
	}
	if err != nil {
		return FSError(err, show, "create temporary file for")
	}
	committed := false
	defer func() {
		if !committed {
			f.Close()
			_ = unix.Unlinkat(dir, tmp, 0)
		}
	}()
	if err := fill(f); err != nil {
		if _, ok := err.(*executor.Error); ok {
			return err
		}
		return FSError(err, show, "write")
	}
	if keepPerm {
		if err := f.Chmod(perm); err != nil {
			return FSError(err, show, "chmod")
		}
	}
	if err := f.Sync(); err != nil {
		return FSError(err, show, "sync")
	}
	if err := f.Close(); err != nil {
		return FSError(err, show, "close")
	}
	if noReplace {
		err = unix.Linkat(dir, tmp, dir, l.base, 0)
		switch {
		case errors.Is(err, fs.ErrExist):
			return executor.Errorf(executor.CodeAlreadyExists, "File already exists: %s (it is never overwritten)", show)
		case err != nil:
			// Filesystems without hard links: check, then rename.
			if _, lerr := l.lstat(); lerr == nil {
				return executor.Errorf(executor.CodeAlreadyExists, "File already exists: %s (it is never overwritten)", show)
			}
			if err := unix.Renameat(dir, tmp, dir, l.base); err != nil {
				return FSError(err, show, "rename")
			}
		default:
			_ = unix.Unlinkat(dir, tmp, 0)
		}
	} else if err := unix.Renameat(dir, tmp, dir, l.base); err != nil {
		return FSError(err, show, "rename")
	}
	committed = true
	_ = syncFD(dir)
	return nil
}

// tempSuffixLen is the length of the random part of a temporary file's
// name (randHex(6)).
const tempSuffixLen = 12

// RemoveStaleTemps removes the temporary files WriteAtomic left in the
// last element's directory when the process writing them died between
// their creation and their rename (a SIGKILL): the regular files named
// .<name>.tmp-<12 hex digits> last written before before, the time the
// current process started, so that none a live write holds is touched.
// The parent must be open (MakeParents). It returns how many it removed;
// a leftover that cannot be removed is left (it is only clutter).
func (l *Loc) RemoveStaleTemps(before time.Time) int {
	if l.dir < 0 {
		return 0
	}
	fd, err := unix.Openat(l.dir, ".", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return 0
	}
	d := os.NewFile(uintptr(fd), ".")
	defer d.Close()
	names, _ := d.Readdirnames(-1)
	n := 0
	for _, name := range names {
		if !isTempName(name) {
			continue
		}
		st, err := lstatInfo(l.dir, name)
		if err != nil || !st.Mode().IsRegular() || !st.ModTime().Before(before) {
			continue
		}
		if unix.Unlinkat(l.dir, name, 0) == nil {
			n++
		}
	}
	return n
}

// isTempName reports whether name is one WriteAtomic gives its temporary
// files: .<name>.tmp-<12 lower-case hex digits>.
func isTempName(name string) bool {
	const infix = ".tmp-"
	i := len(name) - tempSuffixLen - len(infix)
	if i < 2 || name[0] != '.' || name[i:i+len(infix)] != infix {
		return false
	}
	for _, c := range name[i+len(infix):] {
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}

// Remove removes the last element, a file or a symbolic link; a directory
// is refused (is_a_directory), whatever is there by the time it is removed.
func (l *Loc) Remove() error {
	st, err := l.lstat()
	if err != nil {
		return FSError(err, l.show, "stat")
	}
	if isDir(&st.st) {
		return executor.Errorf(executor.CodeIsADirectory, "Path is a directory: %s (use fs.deleteDirectory)", l.show)
	}
	// Without AT_REMOVEDIR no directory can be removed.
	if err := unix.Unlinkat(l.dir, l.base, 0); err != nil {
		return FSError(err, l.show, "delete")
	}
	return nil
}

// Free fails with already_exists when something is at the last element.
func (l *Loc) Free() error {
	_, err := l.lstat()
	switch {
	case err == nil:
		return executor.Errorf(executor.CodeAlreadyExists, "File already exists: %s (it is never overwritten)", l.show)
	case errors.Is(err, fs.ErrNotExist):
		return nil
	case errors.Is(err, syscall.ENOTDIR):
		return mkdirError(err, l.show)
	}
	return FSError(err, l.show, "stat")
}

// MoveTo moves the file at l to dst, which must be free; its missing
// parents are made. It never replaces
// what is at dst, and it never moves a directory, nor anything holding the
// hub's state: a directory swapped in at l meanwhile is moved back.
func (l *Loc) MoveTo(dst *Loc) error {
	st, err := l.lstat()
	if err != nil {
		return FSError(err, l.show, "stat")
	}
	if isDir(&st.st) {
		return movesFilesOnly(l.show)
	}
	if err := dst.Free(); err != nil {
		return err
	}
	if err := dst.MakeParents(); err != nil {
		return err
	}
	// A hard link fails if the destination appeared meanwhile, which a
	// rename would silently replace; it never links a directory.
	switch err := unix.Linkat(l.dir, l.base, dst.dir, dst.base, 0); {
	case err == nil:
		if err := unix.Unlinkat(l.dir, l.base, 0); err != nil {
			return FSError(err, l.show, "remove moved")
		}
	case errors.Is(err, fs.ErrExist):
		return executor.Errorf(executor.CodeAlreadyExists, "File already exists: %s (it is never overwritten)", dst.show)
	default:
		if err := dst.Free(); err != nil {
			return err
		}
		if err := l.rename(dst, idOf(&st.st)); err != nil {
			return err
		}
	}
	_ = syncFD(dst.dir)
	if l.pname != dst.pname {
		_ = syncFD(l.dir)
	}
	return nil
}

func movesFilesOnly(show string) error {
	return executor.Errorf(executor.CodeIsADirectory, "Path is a directory: %s (fs.moveFile moves files only)", show)
}

// rename renames the file at l to dst (filesystems without hard links).
// If what was renamed is not the file with identity want (a directory was
// swapped in meanwhile), it is renamed back and the move refused.
func (l *Loc) rename(dst *Loc, want fileID) error {
	if err := unix.Renameat(l.dir, l.base, dst.dir, dst.base); err != nil {
		return FSError(err, l.show, "move")
	}
	st, err := dst.lstat()
	if err == nil && idOf(&st.st) == want {
		return nil
	}
	if err == nil && isDir(&st.st) {
		if berr := unix.Renameat(dst.dir, dst.base, l.dir, l.base); berr != nil {
			return FSError(berr, l.show, "move back")
		}
		return movesFilesOnly(l.show)
	}
	return nil // another file, swapped in by someone else: moved as asked
}

// MkdirAll creates the directory the Loc names (links resolved) and its
// missing parents, by descriptors, each checked as Locate checks a path.
// A directory already there is success; a file is already_exists.
func (l *Loc) MkdirAll() error {
	switch st, err := l.lstat(); {
	case err == nil && isDir(&st.st):
		return nil // Locate refused it if it is protected
	case err == nil:
		return executor.Errorf(executor.CodeAlreadyExists, "File already exists: %s (it is a file, so no directory can be created there)", l.show)
	}
	fd, err := descend(int(l.r.top.Fd()), l.name, true, l.r.prot)
	if err != nil {
		return mkdirError(err, l.show)
	}
	unix.Close(fd)
	return nil
}

// RemoveAll removes the directory the Loc names and everything in it; Locate
// it with AllowRoot (and without FollowFinal) so that the root and a link
// are refused here with a message saying so. The tree is removed by
// descriptors from the directory opened here: no link is followed, and a
// directory that is a protected one or holds one, or holds a protected
// file's place, is refused; a protected file met inside stops the removal.
func (l *Loc) RemoveAll() error {
	show, r := l.show, l.r
	if l.name == "." {
		return forbidden("Refusing to delete the workspace root; name a directory inside it")
	}
	if d, ok := r.deniedBelow(l.name); ok {
		return forbidden("Directory %s holds %s, which is reserved for the hub's state; it cannot be deleted", show, d)
	}
	st, err := l.lstat()
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return executor.Errorf(executor.CodeNotFound, "Directory not found: %s", show)
	case err != nil:
		return FSError(err, show, "stat")
	case isLink(&st.st):
		return executor.Errorf(executor.CodeNotADirectory, "Path %s is a symbolic link, not a directory (delete the link with fs.deleteFile)", show)
	case !isDir(&st.st):
		return executor.Errorf(executor.CodeNotADirectory, "Path %s is a file, not a directory (use fs.deleteFile)", show)
	}
	d, err := l.OpenDir()
	if err != nil {
		return err
	}
	defer d.Close()
	if err := r.refuseHolding(d, show, "deleted"); err != nil {
		return err
	}
	id, err := fstatID(int(d.Fd()))
	if err != nil {
		return FSError(err, show, "stat")
	}
	err = removeTree(int(d.Fd()), l.name, r.prot)
	if err == nil {
		err = rmdirSame(l.dir, l.base, id, l.name)
	}
	if err != nil {
		var we *walkErr
		if errors.As(err, &we) && we.at != l.name {
			return FSError(err, we.at, "delete")
		}
		return FSError(err, show, "delete")
	}
	_ = syncFD(l.dir)
	return nil
}

// refuseHolding refuses an operation on the whole directory d (shown as
// show) when d is or holds a protected directory or a protected file's
// place.
func (r *Root) refuseHolding(d *os.File, show, what string) error {
	err := r.prot.holding(int(d.Fd()), r.topID)
	var pe *protectedErr
	var fe *protectedFileErr
	switch {
	case err == nil:
		return nil
	case errors.As(err, &pe):
		return forbidden("Directory %s holds %s, which is reserved for the hub's state; it cannot be %s", show, pe.dir.label(), what)
	case errors.As(err, &fe):
		return forbidden("Directory %s holds %s, a protected file of the hub (its configuration and secrets are out of the verbs' reach); it cannot be %s", show, fe.what, what)
	}
	return executor.Errorf(executor.CodeIOError, "Directory %s cannot be %s: %s", show, what, Hostless(err))
}

func randHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
