package confine_test

import (
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/a6afc2ce/hermes-hub/executor"
	"github.com/a6afc2ce/hermes-hub/verbs"
	"github.com/a6afc2ce/hermes-hub/verbs/internal/verbtest"
)

// TestTraversalCorpus sends every hostile path to every verb that takes a
// path, in every path argument, and checks that each call is refused with
// forbidden_path and that nothing changed anywhere: not in the sentinel
// directory next to the workspace, not in the hub's state, not in the
// workspace itself.
func TestTraversalCorpus(t *testing.T) {
	e := verbtest.New(t)
	e.Put("ok.txt", "inside\n")
	e.Put("bin/tool.sh", "#!/bin/sh\ntouch pwned\n")
	if err := os.Chmod(filepath.Join(e.Dir, "bin/tool.sh"), 0o755); err != nil {
		t.Fatal(err)
	}
	verbtest.WriteFile(t, filepath.Join(e.Outside, "tool.sh"), "#!/bin/sh\ntouch pwned\n")
	if err := os.Chmod(filepath.Join(e.Outside, "tool.sh"), 0o755); err != nil {
		t.Fatal(err)
	}
	links := map[string]string{
		"rel-file":   "../outside/secret.txt",
		"abs-file":   filepath.Join(e.Outside, "secret.txt"),
		"dir-link":   "../outside",
		"abs-dir":    e.Outside,
		"link1":      "link2",
		"link2":      "link3",
		"link3":      "../outside/secret.txt",
		"state-link": ".hub",
		"db-link":    ".hub/hub.db",
		"loop":       "loop",
		"inner/up":   "../../outside",
	}
	for name, target := range links {
		p := filepath.Join(e.Dir, filepath.FromSlash(name))
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
		filepath.Join(e.Outside, "secret.txt"),
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
		{"fs.readRange", func(p string) any { return verbs.FsReadRangeArgs{Path: p, LastLines: verbtest.Ptr(1)} }},
		{"fs.stat", func(p string) any { return verbs.FsStatArgs{Path: p, Sha256: true} }},
		{"fs.edit", func(p string) any {
			return verbs.FsEditArgs{Path: p, OldText: "secret", NewText: verbtest.Ptr("pwned")}
		}},
		{"fs.edit", func(p string) any {
			return verbs.FsEditArgs{Path: p, OldText: "state", NewText: verbtest.Ptr("pwned"), DryRun: true}
		}},
		{"fs.lineCount", func(p string) any { return verbs.FsLineCountArgs{Path: p} }},
		{"fs.listDir", func(p string) any { return verbs.FsListDirArgs{Path: p} }},
		{"fs.writeFile", func(p string) any { return verbs.FsWriteFileArgs{Path: p, Content: "pwned"} }},
		{"fs.writeRange", func(p string) any {
			return verbs.FsWriteRangeArgs{Path: p, StartLine: 1, EndLine: verbtest.Ptr(1), Content: "pwned"}
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
	before := verbtest.Snapshot(t, e.Base)
	for _, p := range corpus {
		for _, c := range calls {
			args := c.args(p)
			out := e.Run(c.verb, args)
			if out.Err == nil || out.Err.Code != executor.CodeForbiddenPath {
				t.Errorf("%s %+v: got %v, want forbidden_path", c.verb, args, out.Err)
			}
			if out.Err != nil && !strings.Contains(p, e.Base) && strings.Contains(out.Err.Message, e.Base) {
				t.Errorf("%s %q: message shows a host path: %s", c.verb, p, out.Err.Message)
			}
			if after := verbtest.Snapshot(t, e.Base); !maps.Equal(before, after) {
				t.Fatalf("%s %+v changed the filesystem:\n%s", c.verb, args, verbtest.DiffSnapshots(before, after))
			}
		}
	}
	// fs.readMany refuses each such path in its own entry.
	for _, p := range corpus {
		r := verbtest.OK[verbs.FsReadManyResult](e, "fs.readMany", verbs.FsReadManyArgs{Paths: []string{p, "ok.txt"}})
		if f := r.Files[0]; f.Succeeded || f.ErrorCode != executor.CodeForbiddenPath || f.Content != "" {
			t.Errorf("fs.readMany %q: %+v, want forbidden_path", p, f)
		}
		if f := r.Files[1]; !f.Succeeded || f.Content != "inside\n" {
			t.Errorf("fs.readMany ok.txt after %q: %+v", p, f)
		}
	}

	// Executables named by a path go through the guard too.
	for _, exe := range []string{"../outside/tool.sh", "dir-link/tool.sh", "abs-dir/tool.sh", "./../outside/tool.sh"} {
		e.Fails(executor.CodeForbiddenPath, "proc.run", verbs.ProcRunArgs{Executable: exe, Arguments: []string{}})
	}
	e.Fails(executor.CodeForbiddenPath, "proc.run", verbs.ProcRunArgs{Executable: "../outside/tool.sh", Arguments: []string{}, WorkingDirectory: "bin"})
	if after := verbtest.Snapshot(t, e.Base); !maps.Equal(before, after) {
		t.Fatalf("proc.run changed the filesystem:\n%s", verbtest.DiffSnapshots(before, after))
	}

	// The reserved state is hidden from listings.
	for _, de := range verbtest.OK[verbs.FsListDirResult](e, "fs.listDir", verbs.FsListDirArgs{Path: "."}).Entries {
		if de.Name == ".hub" {
			t.Error("listDir shows .hub")
		}
	}
}
