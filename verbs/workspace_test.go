package verbs_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/a6afc2ce/hermes-hub/executor"
	"github.com/a6afc2ce/hermes-hub/verbs"
)

func TestCleanPath(t *testing.T) {
	for _, c := range []struct {
		in, want string
		msg      string // part of the refusal; empty when accepted
	}{
		{"a/b.txt", "a/b.txt", ""},
		{"a//b", "a/b", ""},
		{"a/b/", "a/b", ""},
		{".", ".", ""},
		{"./", ".", ""},
		{".hidden/x", ".hidden/x", ""},
		{"a/..b/c", "a/..b/c", ""},
		{"with space/x y", "with space/x y", ""},
		{"", "", "empty"},
		{"/etc/passwd", "", "absolute"},
		{"//x", "", "absolute"},
		{"../x", "", "'..'"},
		{"a/../b", "", "'..'"},
		{"a/../../x", "", "'..'"},
		{"./a", "", "'.' segment"},
		{"a/./b", "", "'.' segment"},
		{`..\x`, "", "only POSIX '/' separators are accepted"},
		{`a\b`, "", "backslash"},
		{"x\x00y", "", "NUL"},
		{"caf\u00e9.txt", "", "non-ASCII"},
		{"tab\there", "", "control character"},
		{"del\x7f", "", "non-ASCII or control"},
		{strings.Repeat("a/", 15) + "a", strings.Repeat("a/", 15) + "a", ""},
		{strings.Repeat("a/", 16) + "a", "", "17 segments; at most 16"},
		{strings.Repeat("b", 80), strings.Repeat("b", 80), ""},
		{strings.Repeat("b", 81), "", "81 characters; at most 80"},
	} {
		got, err := verbs.CleanPath(c.in, verbs.WorkspaceOptions{})
		if c.msg == "" {
			if err != nil || got != c.want {
				t.Errorf("CleanPath(%q) = %q, %v; want %q", c.in, got, err, c.want)
			}
			continue
		}
		if err == nil {
			t.Errorf("CleanPath(%q) = %q, want a refusal", c.in, got)
			continue
		}
		checkErr(t, err, executor.CodeForbiddenPath, c.msg)
	}
	// Limits are configurable.
	if _, err := verbs.CleanPath("a/b/c", verbs.WorkspaceOptions{MaxDepth: 2}); err == nil {
		t.Error("MaxDepth 2 accepted three segments")
	}
	if _, err := verbs.CleanPath("abcd", verbs.WorkspaceOptions{MaxSegment: 3}); err == nil {
		t.Error("MaxSegment 3 accepted four characters")
	}
}

func TestOpenWorkspaceOptions(t *testing.T) {
	dir := t.TempDir()
	for _, o := range []verbs.WorkspaceOptions{
		{Deny: []string{"../x"}},
		{Deny: []string{"."}},
		{MaxDepth: -1},
	} {
		if ws, err := verbs.OpenWorkspace(dir, o); err == nil {
			ws.Close()
			t.Errorf("OpenWorkspace accepted %+v", o)
		}
	}
	if _, err := verbs.OpenWorkspace(filepath.Join(dir, "missing"), verbs.WorkspaceOptions{}); err == nil {
		t.Error("OpenWorkspace accepted a missing directory")
	}
	ws, err := verbs.OpenWorkspace(dir, verbs.WorkspaceOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer ws.Close()
	if o := ws.Options(); o.MaxWriteChars != 48000 || o.MaxReadBytes != 4<<20 || o.MaxDepth != 16 || o.MaxSegment != 80 {
		t.Errorf("defaults %+v", o)
	}
	if got, err := ws.Workspace(context.Background()); got != ws || err != nil {
		t.Error("a Workspace is its own WorkspaceSource")
	}
}

// snapshot records everything under dir: type, mode, size, content hash,
// link target and modification time of every entry.
func snapshot(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		fi, err := os.Lstat(p)
		if err != nil {
			return err
		}
		v := fmt.Sprintf("%v %d %d", fi.Mode(), fi.Size(), fi.ModTime().UnixNano())
		switch {
		case fi.Mode()&fs.ModeSymlink != 0:
			target, _ := os.Readlink(p)
			v += " -> " + target
		case fi.Mode().IsRegular():
			b, _ := os.ReadFile(p)
			sum := sha256.Sum256(b)
			v += " " + hex.EncodeToString(sum[:])
		}
		out[p] = v
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestTraversalCorpus sends every hostile path to every verb that takes a
// path, in every path argument, and checks that each call is refused with
// forbidden_path and that nothing changed anywhere: not in the sentinel
// directory next to the workspace, not in the hub's state, not in the
// workspace itself.
func TestTraversalCorpus(t *testing.T) {
	e := newEnv(t)
	e.put("ok.txt", "inside\n")
	e.put("bin/tool.sh", "#!/bin/sh\ntouch pwned\n")
	if err := os.Chmod(filepath.Join(e.dir, "bin/tool.sh"), 0o755); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(e.outside, "tool.sh"), "#!/bin/sh\ntouch pwned\n")
	if err := os.Chmod(filepath.Join(e.outside, "tool.sh"), 0o755); err != nil {
		t.Fatal(err)
	}
	links := map[string]string{
		"rel-file":   "../outside/secret.txt",
		"abs-file":   filepath.Join(e.outside, "secret.txt"),
		"dir-link":   "../outside",
		"abs-dir":    e.outside,
		"link1":      "link2",
		"link2":      "link3",
		"link3":      "../outside/secret.txt",
		"state-link": ".hub",
		"db-link":    ".hub/hub.db",
		"loop":       "loop",
		"inner/up":   "../../outside",
	}
	for name, target := range links {
		p := filepath.Join(e.dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(target, p); err != nil {
			t.Fatal(err)
		}
	}

	corpus := []string{
		"../x",
		"../outside/secret.txt",
		"a/../../x",
		"a/../b",
		"/etc/passwd",
		filepath.Join(e.outside, "secret.txt"),
		`..\x`,
		`..\outside\secret.txt`,
		"x\x00y",
		"rel-file",
		"abs-file",
		"dir-link",
		"dir-link/secret.txt",
		"dir-link/new.txt",
		"dir-link/sub/deep.txt",
		"abs-dir/secret.txt",
		"link1",
		"inner/up/secret.txt",
		"loop",
		strings.Repeat("a/", 16) + "a",
		strings.Repeat("c", 81),
		"caf\u00e9.txt",
		".hub/hub.db",
		".hub",
		".hub/new.txt",
		"state-link/hub.db",
		"db-link",
	}
	type call struct {
		verb string
		args func(p string) any
	}
	calls := []call{
		{"fs.exists", func(p string) any { return verbs.FsExistsArgs{Path: p} }},
		{"fs.readFile", func(p string) any { return verbs.FsReadFileArgs{Path: p} }},
		{"fs.readRange", func(p string) any { return verbs.FsReadRangeArgs{Path: p, StartLine: 1, EndLine: 1} }},
		{"fs.lineCount", func(p string) any { return verbs.FsLineCountArgs{Path: p} }},
		{"fs.listDir", func(p string) any { return verbs.FsListDirArgs{Path: p} }},
		{"fs.writeFile", func(p string) any { return verbs.FsWriteFileArgs{Path: p, Content: "pwned"} }},
		{"fs.writeRange", func(p string) any {
			return verbs.FsWriteRangeArgs{Path: p, StartLine: 1, EndLine: ptr(1), Content: "pwned"}
		}},
		{"fs.writeRange", func(p string) any { return verbs.FsWriteRangeArgs{Path: p, StartLine: 1, Content: "pwned"} }},
		{"fs.deleteFile", func(p string) any { return verbs.FsDeleteFileArgs{Path: p} }},
		{"fs.moveFile", func(p string) any { return verbs.FsMoveFileArgs{SourcePath: p, DestinationPath: "moved.txt"} }},
		{"fs.moveFile", func(p string) any { return verbs.FsMoveFileArgs{SourcePath: "ok.txt", DestinationPath: p} }},
		{"fs.copyFile", func(p string) any { return verbs.FsCopyFileArgs{SourcePath: p, DestinationPath: "copied.txt"} }},
		{"fs.copyFile", func(p string) any { return verbs.FsCopyFileArgs{SourcePath: "ok.txt", DestinationPath: p} }},
		{"fs.createDirectory", func(p string) any { return verbs.FsCreateDirectoryArgs{Path: p} }},
		{"fs.createDirectory", func(p string) any { return verbs.FsCreateDirectoryArgs{Path: p + "/sub"} }},
		{"fs.deleteDirectory", func(p string) any { return verbs.FsDeleteDirectoryArgs{Path: p} }},
		{"proc.run", func(p string) any {
			return verbs.ProcRunArgs{Executable: "touch", Arguments: []string{"pwned"}, WorkingDirectory: p}
		}},
	}
	before := snapshot(t, e.base)
	for _, p := range corpus {
		for _, c := range calls {
			args := c.args(p)
			out := e.run(c.verb, args)
			if out.Err == nil || out.Err.Code != executor.CodeForbiddenPath {
				t.Errorf("%s %+v: got %v, want forbidden_path", c.verb, args, out.Err)
			}
			if out.Err != nil && !strings.Contains(p, e.base) && strings.Contains(out.Err.Message, e.base) {
				t.Errorf("%s %q: message shows a host path: %s", c.verb, p, out.Err.Message)
			}
			if after := snapshot(t, e.base); !maps.Equal(before, after) {
				t.Fatalf("%s %+v changed the filesystem:\n%s", c.verb, args, diffSnapshots(before, after))
			}
		}
	}
	// Executables named by a path go through the guard too.
	for _, exe := range []string{"../outside/tool.sh", "dir-link/tool.sh", "abs-dir/tool.sh", "./../outside/tool.sh"} {
		e.fails(executor.CodeForbiddenPath, "proc.run", verbs.ProcRunArgs{Executable: exe, Arguments: []string{}})
	}
	e.fails(executor.CodeForbiddenPath, "proc.run", verbs.ProcRunArgs{Executable: "../outside/tool.sh", Arguments: []string{}, WorkingDirectory: "bin"})
	if after := snapshot(t, e.base); !maps.Equal(before, after) {
		t.Fatalf("proc.run changed the filesystem:\n%s", diffSnapshots(before, after))
	}

	// The reserved state is hidden from listings.
	for _, de := range ok[verbs.FsListDirResult](e, "fs.listDir", verbs.FsListDirArgs{Path: "."}).Entries {
		if de.Name == ".hub" {
			t.Error("listDir shows .hub")
		}
	}
}

func diffSnapshots(a, b map[string]string) string {
	var lines []string
	for _, k := range slices.Sorted(maps.Keys(a)) {
		if b[k] != a[k] {
			lines = append(lines, fmt.Sprintf("  %s: %q -> %q", k, a[k], b[k]))
		}
	}
	for _, k := range slices.Sorted(maps.Keys(b)) {
		if _, ok := a[k]; !ok {
			lines = append(lines, fmt.Sprintf("  %s: new %q", k, b[k]))
		}
	}
	return strings.Join(lines, "\n")
}

// FuzzPathGuard checks that any string is either accepted as a clean
// relative ASCII path without '.' or '..' segments, NUL bytes or empty
// segments, at most 16 deep, or refused with forbidden_path; never a panic.
func FuzzPathGuard(f *testing.F) {
	for _, s := range []string{
		"a/b.txt", ".", "./", "../x", "a/../../x", "/etc/passwd", `..\x`, "x\x00y",
		"caf\u00e9.txt", strings.Repeat("a/", 17), strings.Repeat("b", 81), "a//b/", "...", "..",
		"\xff\xfe", " ", "a/./b", ".hub/hub.db",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, p string) {
		got, err := verbs.CleanPath(p, verbs.WorkspaceOptions{})
		if err != nil {
			if e := executor.ErrorFrom(err); e.Code != executor.CodeForbiddenPath || e.Message == "" {
				t.Fatalf("CleanPath(%q): error %v with code %s", p, err, e.Code)
			}
			return
		}
		if got == "." {
			return
		}
		if got == "" || strings.HasPrefix(got, "/") || strings.Contains(got, "\\") || strings.IndexByte(got, 0) >= 0 {
			t.Fatalf("CleanPath(%q) = %q", p, got)
		}
		segs := strings.Split(got, "/")
		if len(segs) > 16 {
			t.Fatalf("CleanPath(%q) = %q: %d segments", p, got, len(segs))
		}
		for _, s := range segs {
			if s == "" || s == "." || s == ".." || len(s) > 80 {
				t.Fatalf("CleanPath(%q) = %q: bad segment %q", p, got, s)
			}
			for i := 0; i < len(s); i++ {
				if s[i] < 0x20 || s[i] >= 0x7f {
					t.Fatalf("CleanPath(%q) = %q: byte %#x", p, got, s[i])
				}
			}
		}
		// Clean is idempotent.
		if again, err := verbs.CleanPath(got, verbs.WorkspaceOptions{}); err != nil || again != got {
			t.Fatalf("CleanPath(%q) = %q, then %q, %v", p, got, again, err)
		}
	})
}
