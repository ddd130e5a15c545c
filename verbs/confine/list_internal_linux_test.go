package confine

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// entryKinds renders entries as their names, sorted, a directory with "/"
// and a link with "@".
func entryKinds(des []Entry) []string {
	out := make([]string, 0, len(des))
	for _, de := range des {
		switch {
		case de.Type.IsDir():
			out = append(out, de.Name+"/")
		case de.Type&os.ModeSymlink != 0:
			out = append(out, de.Name+"@")
		default:
			out = append(out, de.Name)
		}
	}
	slices.Sort(out)
	return out
}

// TestHostListingStats: the kinds of a listing come from the directory
// read; when a protected directory lies in the listed one, directories are
// stat'ed, which leaves out the protected one and sees a directory removed
// or replaced since the read. The cases are made between the read and the
// filtering of the entries.
func TestHostListingStats(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "ws")
	state := filepath.Join(dir, ".hub")
	do := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	do(os.MkdirAll(state, 0o755))
	r, err := Open(dir, Options{Protect: []string{state}, Deny: []string{"secret", "d/secret"}})
	do(err)
	defer r.Close()
	path := func(rel string) string { return filepath.Join(dir, rel) }
	for _, d := range []string{"gone", "tolink", "todirlink", "tofile", "kept", "target"} {
		do(os.Mkdir(path(d), 0o755))
	}
	do(os.WriteFile(path("f"), nil, 0o644))
	d, err := os.Open(dir)
	do(err)
	defer d.Close()
	id, err := fstatID(int(d.Fd()))
	do(err)
	if !r.prot.inDir(id) {
		t.Fatal("the root holds .hub, inDir says it does not")
	}
	des, err := readDirents(int(d.Fd()))
	do(err)
	do(os.Remove(path("gone")))
	do(os.Remove(path("tolink")))
	do(os.Symlink("f", path("tolink")))
	do(os.Remove(path("todirlink")))
	do(os.Symlink("target", path("todirlink")))
	do(os.Remove(path("tofile")))
	do(os.WriteFile(path("tofile"), nil, 0o644))
	for _, c := range []struct {
		hold bool
		want []string
	}{
		// Stat'ed: .hub left out by identity (.hub is also denied, so the
		// deny list is bypassed here by filtering with no deny entries),
		// the removed directory left out, the replaced ones as they are now.
		{true, []string{"f", "kept/", "target/", "todirlink@", "tofile", "tolink@"}},
		// As read.
		{false, []string{".hub/", "f", "gone/", "kept/", "target/", "todirlink/", "tofile/", "tolink/"}},
	} {
		deny := r.deny
		r.deny = nil
		got := entryKinds(r.filter(int(d.Fd()), slices.Clone(des), ".", c.hold, false, fileFilter{}))
		r.deny = deny
		if !slices.Equal(got, c.want) {
			t.Errorf("hold %v: %q, want %q", c.hold, got, c.want)
		}
	}
	sub, err := os.Open(path("kept"))
	do(err)
	defer sub.Close()
	id, err = fstatID(int(sub.Fd()))
	do(err)
	if r.prot.inDir(id) {
		t.Error("kept holds no protected directory, inDir says it does")
	}
}
