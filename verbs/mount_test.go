package verbs_test

import (
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/a6afc2ce/hermes-hub/executor"
	"github.com/a6afc2ce/hermes-hub/verbs"
	"github.com/a6afc2ce/hermes-hub/verbs/internal/verbtest"
)

// projectTree is written under the mount root "hostdata/proj".
var projectTree = map[string]string{
	"README.md":         "readme",
	"main.go":           "main",
	"src/a.go":          "a",
	"src/b_test.go":     "b",
	"src/deep/c.go":     "c",
	"src/deep/notes.md": "notes",
	"drafts/d.md":       "d",
	"drafts/sub/e.md":   "e",
	"node_modules/x.js": "x",
	".hidden/h.md":      "h",
}

// withProject writes projectTree and mounts it with m (HostPath defaulting
// to "proj").
func withProject(mounts ...verbs.Mount) sessOption {
	return func(o *verbs.SessionOptions, e *sessEnv) {
		for p, c := range projectTree {
			verbtest.WriteFile(e.t, filepath.Join(e.mountDir, "proj", filepath.FromSlash(p)), c)
		}
		for i := range mounts {
			if mounts[i].HostPath == "" {
				mounts[i].HostPath = "proj"
			}
		}
		o.Mounts = mounts
	}
}

// sessionTree opens chatA's session and lists its files.
func sessionTree(t *testing.T, e *sessEnv) []string {
	t.Helper()
	sok[verbs.FsExistsResult](e, chatA, "fs.exists", verbs.FsExistsArgs{Path: "."})
	return verbtest.Tree(t, e.sessionDir(chatA))
}

func TestMountGlobs(t *testing.T) {
	for _, c := range []struct {
		name  string
		mount verbs.Mount
		want  []string
	}{
		{"name pattern at any depth", verbs.Mount{MountPath: ".", Include: []string{"*.md"}},
			[]string{".hidden/h.md=h", "README.md=readme", "drafts/d.md=d", "drafts/sub/e.md=e", "src/deep/notes.md=notes"}},
		{"double star and exclude", verbs.Mount{MountPath: "code", Include: []string{"src/**/*.go"}, Exclude: []string{"*_test.go"}},
			[]string{"code/src/a.go=a", "code/src/deep/c.go=c"}},
		{"excluded directories are not entered", verbs.Mount{Exclude: []string{"drafts", "node_modules", ".*"}},
			[]string{"proj/README.md=readme", "proj/main.go=main", "proj/src/a.go=a", "proj/src/b_test.go=b", "proj/src/deep/c.go=c", "proj/src/deep/notes.md=notes"}},
		{"dir/* excludes the directory's contents, subdirectories too", verbs.Mount{MountPath: "p", Include: []string{"*.md"}, Exclude: []string{"drafts/*", ".hidden/**"}},
			[]string{"p/README.md=readme", "p/src/deep/notes.md=notes"}},
		{"a single file at a mount path", verbs.Mount{HostPath: "proj/src/deep/c.go", MountPath: "c.go"},
			[]string{"c.go=c"}},
		{"a single file at its host-relative path", verbs.Mount{HostPath: "proj/main.go"},
			[]string{"proj/main.go=main"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			e := newSessEnv(t, withProject(c.mount))
			if got := sessionTree(t, e); !slices.Equal(got, c.want) {
				t.Fatalf("mounted %v\nwant    %v", got, c.want)
			}
		})
	}
}

func TestMountAllowList(t *testing.T) {
	base := t.TempDir()
	data, data2, other := filepath.Join(base, "data"), filepath.Join(base, "data2"), filepath.Join(base, "other")
	verbtest.WriteFile(t, filepath.Join(data, "docs", "a.md"), "a")
	verbtest.WriteFile(t, filepath.Join(data2, "secret.txt"), "secret")
	verbtest.WriteFile(t, filepath.Join(other, "only-here", "o.txt"), "o")
	if err := os.Symlink(data2, filepath.Join(data, "escape")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(data, "docs"), filepath.Join(base, "docs-link")); err != nil {
		t.Fatal(err)
	}
	open := func(roots []string, m verbs.Mount) error {
		src, err := verbs.OpenSessions(nil, verbs.SessionOptions{
			Root: filepath.Join(t.TempDir(), "s"), Meta: verbs.NewMemoryMeta(), MountRoots: roots, Mounts: []verbs.Mount{m},
			Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
		})
		if err == nil {
			src.Close()
		}
		return err
	}
	roots := []string{data, other}
	for _, c := range []struct {
		name  string
		roots []string
		m     verbs.Mount
		err   string // empty: accepted
	}{
		{"absolute inside a root", roots, verbs.Mount{HostPath: filepath.Join(data, "docs")}, ""},
		{"relative, found in the second root", roots, verbs.Mount{HostPath: "only-here"}, ""},
		{"a link into a root resolves inside it", roots, verbs.Mount{HostPath: filepath.Join(base, "docs-link")}, ""},
		{"a sibling sharing the root's prefix is outside", roots, verbs.Mount{HostPath: data2}, "outside every mount root"},
		{"dot-dot out of the root", roots, verbs.Mount{HostPath: "../data2"}, "outside its mount root"},
		{"a link out of the root", roots, verbs.Mount{HostPath: "escape/secret.txt"}, "outside its mount root"},
		{"absolute link out of the root", roots, verbs.Mount{HostPath: filepath.Join(data, "escape")}, "outside every mount root"},
		{"missing", roots, verbs.Mount{HostPath: "nope"}, "does not exist under any mount root"},
		{"no roots", nil, verbs.Mount{HostPath: "docs"}, "mounts need mount roots"},
		{"non-ASCII host path", roots, verbs.Mount{HostPath: "d\u00f6cs"}, "printable ASCII"},
		{"bad glob", roots, verbs.Mount{HostPath: "docs", Include: []string{"[a"}}, "not a valid pattern"},
		{"absolute glob", roots, verbs.Mount{HostPath: "docs", Exclude: []string{"/x"}}, "relative to the mounted directory"},
		{"mount path escaping", roots, verbs.Mount{HostPath: "docs", MountPath: "../x"}, "'..'"},
		{"file at the root", roots, verbs.Mount{HostPath: "docs/a.md", MountPath: "."}, "cannot be mounted at the workspace root"},
		{"missing root", []string{filepath.Join(base, "none")}, verbs.Mount{HostPath: "x"}, "mount root"},
	} {
		t.Run(c.name, func(t *testing.T) {
			err := open(c.roots, c.m)
			if c.err == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Fatalf("got %v, want an error containing %q", err, c.err)
			}
		})
	}
}

func TestMountByteBudget(t *testing.T) {
	total := int64(0)
	for _, c := range projectTree {
		total += int64(len(c))
	}
	// Exactly the budget fits.
	e := newSessEnv(t, withProject(verbs.Mount{MaxBytes: total}))
	if got := sessionTree(t, e); len(got) != len(projectTree) {
		t.Fatalf("mounted %d files, want %d", len(got), len(projectTree))
	}
	// One byte less fails at start, naming the budget.
	_, err := verbs.OpenSessions(nil, verbs.SessionOptions{
		Root: filepath.Join(t.TempDir(), "s"), Meta: verbs.NewMemoryMeta(), MountRoots: []string{e.mountDir},
		Mounts: []verbs.Mount{{HostPath: "proj", MaxBytes: total - 1}},
	})
	if err == nil || !strings.Contains(err.Error(), "max_bytes budget of "+strconv.FormatInt(total-1, 10)+" bytes") {
		t.Fatalf("over budget at start: %v", err)
	}
	// The host grows after the start: no session is created from a mount
	// over its budget, and the chat is told why.
	verbtest.WriteFile(t, filepath.Join(e.mountDir, "proj", "zzz.txt"), "grown")
	e.sfails(chatB, executor.CodeTooLarge, "fs.listDir", verbs.FsListDirArgs{Path: "."}, "max_bytes budget")
	if _, err := os.Stat(filepath.Dir(e.sessionDir(chatB))); err == nil {
		if des, _ := os.ReadDir(filepath.Dir(e.sessionDir(chatB))); len(des) != 0 {
			t.Fatalf("a half-built session was left: %v", des)
		}
	}
	os.Remove(filepath.Join(e.mountDir, "proj", "zzz.txt"))
	sok[verbs.FsListDirResult](e, chatB, "fs.listDir", verbs.FsListDirArgs{Path: "."})
}

func TestOverlappingMountsMergeLaterWins(t *testing.T) {
	files := map[string]string{
		"one/x": "1", "one/y": "1", "one/d/z": "1", "one/e": "1",
		"two/x": "2", "two/d": "2", "two/e/f": "2", "two/w": "2",
		"three.txt": "3",
	}
	e := newSessEnv(t, func(o *verbs.SessionOptions, e *sessEnv) {
		for p, c := range files {
			verbtest.WriteFile(e.t, filepath.Join(e.mountDir, filepath.FromSlash(p)), c)
		}
		o.Mounts = []verbs.Mount{
			{HostPath: "one", MountPath: "shared"},
			{HostPath: "two", MountPath: "shared"},
			{HostPath: "three.txt", MountPath: "shared/w"},
		}
	})
	want := []string{"shared/d=2", "shared/e/f=2", "shared/w=3", "shared/x=2", "shared/y=1"}
	if got := sessionTree(t, e); !slices.Equal(got, want) {
		t.Fatalf("merged %v\nwant   %v", got, want)
	}
	// The merge is deterministic: a reset and another session agree.
	sok[verbs.VfsResetResult](e, chatA, "vfs.reset", verbs.VfsResetArgs{})
	if got := verbtest.Tree(t, e.sessionDir(chatA)); !slices.Equal(got, want) {
		t.Fatalf("after reset %v", got)
	}
	sok[verbs.FsExistsResult](e, chatB, "fs.exists", verbs.FsExistsArgs{Path: "."})
	if got := verbtest.Tree(t, e.sessionDir(chatB)); !slices.Equal(got, want) {
		t.Fatalf("another session %v", got)
	}
}

func TestMountSymlinksAndOddNames(t *testing.T) {
	setup := func(follow bool) sessOption {
		return func(o *verbs.SessionOptions, e *sessEnv) {
			proj := filepath.Join(e.mountDir, "proj")
			verbtest.WriteFile(e.t, filepath.Join(proj, "real.txt"), "real")
			verbtest.WriteFile(e.t, filepath.Join(proj, "caf\u00e9.txt"), "non-ascii name")
			verbtest.WriteFile(e.t, filepath.Join(proj, strings.Repeat("n", 81)), "long name")
			verbtest.WriteFile(e.t, filepath.Join(e.base, "outside", "secret.txt"), "secret")
			for name, target := range map[string]string{
				"link-in":  filepath.Join(proj, "real.txt"),
				"link-out": filepath.Join(e.base, "outside", "secret.txt"),
				"dir-out":  filepath.Join(e.base, "outside"),
				"loop":     proj,
				"dangling": filepath.Join(proj, "none"),
			} {
				if err := os.Symlink(target, filepath.Join(proj, name)); err != nil {
					e.t.Fatal(err)
				}
			}
			o.Mounts = []verbs.Mount{{HostPath: "proj", MountPath: ".", FollowSymlinks: follow}}
		}
	}
	e := newSessEnv(t, setup(false))
	if got := sessionTree(t, e); !slices.Equal(got, []string{"real.txt=real"}) {
		t.Fatalf("links not followed: %v", got)
	}
	e = newSessEnv(t, setup(true))
	if got := sessionTree(t, e); !slices.Equal(got, []string{"link-in=real", "real.txt=real"}) {
		t.Fatalf("links followed: %v", got)
	}
	// Mounted files are copies, never links.
	fi, err := os.Lstat(filepath.Join(e.sessionDir(chatA), "link-in"))
	if err != nil || !fi.Mode().IsRegular() {
		t.Fatalf("link-in in the session: %v %v", fi, err)
	}
}
