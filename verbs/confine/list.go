package confine

import (
	"io/fs"
	"os"
)

// Entry is one entry of a directory a listing may show.
type Entry struct {
	Name string
	// Type is the type bits of the entry's mode (fs.ModeDir,
	// fs.ModeSymlink, ...; 0 for a regular file), as the directory read
	// gave them, or as a description of the entry made since.
	Type fs.FileMode
	// Info describes the entry, not following a link, when ReadDir was
	// asked to describe the entries; nil for a link, and otherwise.
	Info fs.FileInfo
}

// ReadDir reads the directory d, opened by OpenDir, in one pass and returns
// the entries a listing may show: the deny list's entries, the protected
// directories and the protected files are left out. With describe, every
// entry but a link is described (relative to d) and carries its Info.
// Without, an entry's kind comes from the directory read, and an entry is
// described only when it must be: when it is a directory and a protected
// directory lies in d (checked by each protected directory's parent,
// before and after the read), to leave that one out by its identity, or
// when it is not a directory and a protected file may have a name other
// than its place (see fileSet.elsewhere). A described entry that is gone is
// left out, and one that changed kind has its kind now. Protected files'
// places in d are left out by name.
func (l *Loc) ReadDir(d *os.File, describe bool) ([]Entry, error) {
	dfd := int(d.Fd())
	id, err := fstatID(dfd)
	if err != nil {
		return nil, FSError(err, l.show, "stat")
	}
	return l.r.readDir(dfd, id, l.name, l.show, describe)
}

// readDir is ReadDir of the open directory dfd, with identity id, at
// root-relative path name (show for messages).
func (r *Root) readDir(dfd int, id fileID, name, show string, describe bool) ([]Entry, error) {
	hold := !describe && r.prot.inDir(id)
	des, err := readDirents(dfd)
	if err != nil {
		return nil, FSError(err, show, "list")
	}
	hold = hold || !describe && r.prot.inDir(id)
	return r.filter(dfd, des, name, hold, describe, r.prot.filesIn(id)), nil
}

// filter keeps the entries des of the directory dfd (at root-relative path
// name) that a listing may show, in place; see ReadDir.
func (r *Root) filter(dfd int, des []Entry, name string, hold, describe bool, ff fileFilter) []Entry {
	out := des[:0]
	_, denyHere := r.deniedBelow(name)
	for _, de := range des {
		if denyHere {
			if _, ok := r.denied(Join(name, de.Name)); ok {
				continue
			}
		}
		if ff.out(dfd, &de) {
			continue
		}
		if describe && de.Type&fs.ModeSymlink == 0 || hold && de.Type.IsDir() {
			st, err := lstatInfo(dfd, de.Name)
			if err != nil {
				continue // removed meanwhile
			}
			if _, ok := r.prot.lookup(idOf(&st.st)); ok && isDir(&st.st) || ff.hides(&st.st) {
				continue
			}
			de.Type = modeType(&st.st)
			if describe {
				de.Info = st
			}
		}
		out = append(out, de)
	}
	return out
}
