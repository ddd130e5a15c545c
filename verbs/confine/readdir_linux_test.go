package confine

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

// TestReadDirents compares the one-pass reader with os.File.ReadDir on a
// directory of files, directories, links and FIFOs with every kind of name.
func TestReadDirents(t *testing.T) {
	dir := t.TempDir()
	names := []string{"plain", "é → 世界", `qu"o'te`, "ctl\x01\x1f", "bad\xff\xfeutf8", "<&>", "line\u2028sep", "-dash", ".hidden", "..dots", strings.Repeat("n", 255)}
	for i := range 3000 {
		names = append(names, fmt.Sprintf("entry-%05d", i))
	}
	for i, n := range names {
		p := filepath.Join(dir, n)
		var err error
		switch i % 4 {
		case 0:
			err = os.Mkdir(p, 0o755)
		case 1:
			err = os.Symlink("plain", p)
		case 2:
			err = syscall.Mkfifo(p, 0o644)
		default:
			err = os.WriteFile(p, nil, 0o644)
		}
		if err != nil {
			t.Fatalf("%q: %v", n, err)
		}
	}
	d, err := os.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	got, err := readDirents(int(d.Fd()))
	if err != nil {
		t.Fatal(err)
	}
	d2, err := os.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer d2.Close()
	des, err := d2.ReadDir(-1)
	if err != nil {
		t.Fatal(err)
	}
	var want, have []string
	for _, de := range des {
		want = append(want, fmt.Sprintf("%q %v", de.Name(), de.Type()))
	}
	for _, e := range got {
		have = append(have, fmt.Sprintf("%q %v", e.Name, e.Type))
	}
	slices.Sort(want)
	slices.Sort(have)
	if len(want) != len(names) || !slices.Equal(have, want) {
		t.Fatalf("readDirents gave %d entries, ReadDir %d (of %d); first differences: %v", len(have), len(want), len(names), firstDiff(have, want))
	}
}

func firstDiff(a, b []string) string {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return a[i] + " vs " + b[i]
		}
	}
	return "one is a prefix of the other"
}

// TestModeType: the kind of an entry whose file system gives no d_type,
// read with lstat, is the kind os.Lstat reports.
func TestModeType(t *testing.T) {
	dir := t.TempDir()
	paths := map[string]func(string) error{
		"file": func(p string) error { return os.WriteFile(p, nil, 0o600) },
		"dir":  func(p string) error { return os.Mkdir(p, 0o700) },
		"link": func(p string) error { return os.Symlink("file", p) },
		"fifo": func(p string) error { return unix.Mkfifo(p, 0o600) },
		"char": nil, // /dev/null
	}
	for name, mk := range paths {
		p := filepath.Join(dir, name)
		if mk == nil {
			p = "/dev/null"
		} else if err := mk(p); err != nil {
			t.Fatal(err)
		}
		var st unix.Stat_t
		if err := unix.Lstat(p, &st); err != nil {
			t.Fatal(err)
		}
		fi, err := os.Lstat(p)
		if err != nil {
			t.Fatal(err)
		}
		if got, want := modeType(&st), fi.Mode().Type(); got != want {
			t.Errorf("%s: modeType %v, os.Lstat %v", name, got, want)
		}
	}
}
