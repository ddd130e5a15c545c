package verbs_test

import (
	"context"
	"encoding/base64"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/a6afc2ce/hermes-hub/executor"
	"github.com/a6afc2ce/hermes-hub/verbs"
	"github.com/a6afc2ce/hermes-hub/verbs/internal/verbtest"
)

func TestRegisterAllVerbs(t *testing.T) {
	e := verbtest.New(t)
	reg := e.X.Registry()
	want := map[string]bool{ // name -> read-only
		"fs.exists": true, "fs.readFile": true, "fs.readRange": true, "fs.writeFile": false,
		"fs.writeRange": false, "fs.deleteFile": false, "fs.moveFile": false, "fs.copyFile": false,
		"fs.createDirectory": false, "fs.deleteDirectory": false, "fs.lineCount": true,
		"fs.listDir": true, "fs.search": true, "fs.find": true, "fs.watch": true, "proc.run": false, "proc.output": true, "sys.machineInfo": true,
		"fs.upload": false, "fs.send": true,
		"fs.edit": false, "fs.stat": true, "fs.readMany": true,
	}
	infos := reg.Verbs()
	if len(infos) != len(want) {
		t.Fatalf("registered %d verbs, want %d", len(infos), len(want))
	}
	for _, info := range infos {
		ro, known := want[info.Name]
		if !known {
			t.Errorf("unexpected verb %s", info.Name)
			continue
		}
		if info.ReadOnly != ro {
			t.Errorf("%s: ReadOnly %v, want %v", info.Name, info.ReadOnly, ro)
		}
		if info.Summary == "" {
			t.Errorf("%s: no summary", info.Name)
		}
		s, ok := reg.Schema(info.Name)
		if !ok {
			t.Fatalf("%s: no schema", info.Name)
		}
		for _, ts := range []executor.TypeSchema{s.Arguments, s.Result} {
			for _, f := range ts.Fields {
				if f.Description == "" && f.Name != "succeeded" { // executor.Result's own field
					t.Errorf("%s: %s.%s has no desc", info.Name, ts.Name, f.Name)
				}
			}
		}
	}
	if err := e.Set.Register(reg); err == nil {
		t.Error("registering twice succeeded")
	}
	if _, err := verbs.NewSet(nil, verbs.DefaultOptions(e.State)); err == nil {
		t.Error("NewSet accepted a nil workspace source")
	}
	if _, err := verbs.NewSet(e.WS, verbs.Options{}); err == nil {
		t.Error("NewSet accepted options without a state dir")
	}
}

func TestSchemaShapes(t *testing.T) {
	e := verbtest.New(t)
	cases := []struct {
		verb     string
		required []string
		optional []string
	}{
		{"fs.readRange", []string{"path"}, []string{"startLine", "endLine", "lastLines", "includeLineNumbers"}},
		{"fs.edit", []string{"path"}, []string{"oldText", "newText", "replaceAll", "edits", "dryRun", "expectedSha256"}},
		{"fs.stat", []string{"path"}, []string{"sha256", "countLines"}},
		{"fs.readMany", []string{"paths"}, nil},
		{"fs.writeRange", []string{"path", "startLine", "content"}, []string{"endLine"}},
		{"fs.moveFile", []string{"sourcePath", "destinationPath"}, nil},
		{"fs.copyFile", []string{"sourcePath", "destinationPath"}, nil},
		{"proc.run", []string{"executable"}, []string{"arguments", "timeoutSeconds", "workingDirectory"}},
		{"proc.output", []string{"outputId"}, []string{"stream", "startLine", "endLine", "asFile"}},
		{"fs.upload", nil, []string{"path", "overwrite"}},
		{"fs.send", []string{"path"}, []string{"offset", "length"}},
		{"sys.machineInfo", nil, nil},
	}
	for _, c := range cases {
		s, _ := e.X.Registry().Schema(c.verb)
		var req, opt []string
		for _, f := range s.Arguments.Fields {
			if f.Required {
				req = append(req, f.Name)
			} else {
				opt = append(opt, f.Name)
				if f.Default == "" && f.Kind != executor.KindString { // a string's default would be a value
					t.Errorf("%s: optional %s has no default", c.verb, f.Name)
				}
			}
		}
		if !slices.Equal(req, c.required) || !slices.Equal(opt, c.optional) {
			t.Errorf("%s: required %v optional %v, want %v %v", c.verb, req, opt, c.required, c.optional)
		}
	}
}

func TestExists(t *testing.T) {
	e := verbtest.New(t)
	e.Put("a/b.txt", "x")
	e.Put("top.txt", "x")
	for name, target := range map[string]string{"ln-in": "a/b.txt", "ln-dangling": "missing", "ln-dir": "a"} {
		if err := os.Symlink(target, filepath.Join(e.Dir, name)); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range []struct {
		path string
		want bool
	}{
		{"a/b.txt", true}, {"a", true}, {"a/", true}, {"a//b.txt", true}, {".", true},
		{"a/missing", false}, {"a/b.txt/c", false},
		// One element below the root (resolved and decided on one lstat).
		{"top.txt", true}, {"missing", false}, {"top.txt/c", false},
		{"ln-in", true}, {"ln-dangling", false}, {"ln-dir", true}, {"ln-dir/b.txt", true},
	} {
		if got := verbtest.OK[verbs.FsExistsResult](e, "fs.exists", verbs.FsExistsArgs{Path: c.path}).Exists; got != c.want {
			t.Errorf("exists %q = %v, want %v", c.path, got, c.want)
		}
	}
	e.Fails(executor.CodeForbiddenPath, "fs.exists", verbs.FsExistsArgs{Path: "../outside/secret.txt"}, "'..'")
	for name, target := range map[string]string{"ln-abs": "/etc", "ln-up": "../outside"} {
		if err := os.Symlink(target, filepath.Join(e.Dir, name)); err != nil {
			t.Fatal(err)
		}
		e.Fails(executor.CodeForbiddenPath, "fs.exists", verbs.FsExistsArgs{Path: name}, "resolves outside the workspace")
	}
	e.Fails(executor.CodeForbiddenPath, "fs.exists", verbs.FsExistsArgs{Path: ""}, "empty")
	e.Fails(executor.CodeInvalidArguments, "fs.exists", map[string]any{}, "path")
}

func TestReadFile(t *testing.T) {
	e := verbtest.New(t, func(_ *verbs.Options, w *verbs.WorkspaceOptions) { w.MaxReadBytes = 100 })
	e.Put("docs/a.md", "héllo\nworld\n")
	e.Put("big.txt", strings.Repeat("x", 101))
	e.Put("nul.bin", "ab\x00cd")
	e.Put("latin1.txt", "caf\xe9")
	mkfifo(t, filepath.Join(e.Dir, "fifo"))

	if got := verbtest.OK[verbs.FsReadFileResult](e, "fs.readFile", verbs.FsReadFileArgs{Path: "docs/a.md"}).Content; got != "héllo\nworld\n" {
		t.Errorf("content %q", got)
	}
	// Direct call, no executor.
	res, err := e.Set.ReadFile(context.Background(), verbs.FsReadFileArgs{Path: "docs//a.md"})
	if err != nil || res.Content != "héllo\nworld\n" {
		t.Errorf("direct call: %q, %v", res.Content, err)
	}
	e.Fails(executor.CodeNotFound, "fs.readFile", verbs.FsReadFileArgs{Path: "docs/none.md"}, "File not found: docs/none.md")
	e.Fails(executor.CodeIsADirectory, "fs.readFile", verbs.FsReadFileArgs{Path: "docs"}, "Path is a directory: docs")
	e.Fails(executor.CodeTooLarge, "fs.readFile", verbs.FsReadFileArgs{Path: "big.txt"}, "101 bytes", "100", "fs.readRange")
	// Content that is not UTF-8 text comes back base64, named as such, so
	// what fs.writeFile can write with encoding base64 can be read back.
	for p, raw := range map[string]string{"nul.bin": "ab\x00cd", "latin1.txt": "caf\xe9"} {
		r := verbtest.OK[verbs.FsReadFileResult](e, "fs.readFile", verbs.FsReadFileArgs{Path: p})
		want := verbs.VfsFile{Path: p, Encoding: verbs.EncodingBase64, SizeBytes: int64(len(raw))}
		if r.Content != base64.StdEncoding.EncodeToString([]byte(raw)) || r.File == nil || *r.File != want {
			t.Errorf("read %s: %q %+v", p, r.Content, r.File)
		}
	}
	// Host files carry no versions or times.
	if r := verbtest.OK[verbs.FsReadFileResult](e, "fs.readFile", verbs.FsReadFileArgs{Path: "docs/a.md"}); r.File == nil || *r.File != (verbs.VfsFile{Path: "docs/a.md", Encoding: verbs.EncodingUTF8, SizeBytes: 13}) {
		t.Errorf("host file metadata %+v", r.File)
	}
	e.Fails(executor.CodeInvalidArguments, "fs.readFile", verbs.FsReadFileArgs{Path: "fifo"}, "named pipe")
	e.Fails(executor.CodeForbiddenPath, "fs.readFile", verbs.FsReadFileArgs{Path: "."}, "root")

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err = e.Set.ReadFile(ctx, verbs.FsReadFileArgs{Path: "docs/a.md"})
	verbtest.CheckErr(t, err, executor.CodeCanceled)
}

func TestReadRange(t *testing.T) {
	e := verbtest.New(t)
	e.Put("five.txt", "one\ntwo\r\nthree\nfour\nfive")
	e.Put("empty.txt", "")
	e.Put("bad.txt", "ok\ncaf\xe9\n")
	cr := strings.Repeat("a", 64<<10-1) // '\r' lands at the end of the first 64 KiB read
	e.Put("cr.txt", cr+"\r\nnext\n")
	long := strings.Repeat("0123456789", 30000) // 300 KB line
	e.Put("long.txt", "first\n"+long+"\nlast\n")

	for _, c := range []struct {
		name     string
		path     string
		start    int
		end      int
		numbered *bool
		want     string
	}{
		{"one line", "five.txt", 2, 2, nil, "2: two"},
		{"range strips CRLF", "five.txt", 1, 3, nil, "1: one\n2: two\n3: three"},
		{"unnumbered", "five.txt", 2, 3, verbtest.Ptr(false), "two\nthree"},
		{"last line without newline", "five.txt", 4, 5, verbtest.Ptr(true), "4: four\n5: five"},
		{"whole", "five.txt", 1, 5, verbtest.Ptr(false), "one\ntwo\nthree\nfour\nfive"},
		{"invalid UTF-8 replaced", "bad.txt", 2, 2, verbtest.Ptr(false), "caf\uFFFD"},
		{"CR at buffer boundary", "cr.txt", 1, 2, verbtest.Ptr(false), cr + "\nnext"},
		{"long line", "long.txt", 2, 3, verbtest.Ptr(false), long + "\nlast"},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := verbtest.OK[verbs.FsReadRangeResult](e, "fs.readRange", verbs.FsReadRangeArgs{Path: c.path, StartLine: c.start, EndLine: c.end, IncludeLineNumbers: c.numbered}).Content
			if got != c.want {
				t.Errorf("got %.80q, want %.80q", got, c.want)
			}
		})
	}
	for _, c := range []struct {
		path       string
		start, end int
		msg        string
	}{
		{"five.txt", 0, 1, "Invalid line range: 0-1 (file has 5 lines"},
		{"five.txt", -3, 2, "Invalid line range: -3-2 (file has 5 lines"},
		{"five.txt", 3, 2, "Invalid line range: 3-2 (file has 5 lines"},
		{"five.txt", 5, 6, "Invalid line range: 5-6 (file has 5 lines"},
		{"five.txt", 7, 9, "Invalid line range: 7-9 (file has 5 lines"},
		{"empty.txt", 1, 1, "Invalid line range: 1-1 (file has 0 lines"},
	} {
		e.Fails(executor.CodeInvalidArguments, "fs.readRange", verbs.FsReadRangeArgs{Path: c.path, StartLine: c.start, EndLine: c.end}, c.msg)
	}
	e.Fails(executor.CodeNotFound, "fs.readRange", verbs.FsReadRangeArgs{Path: "none.txt", StartLine: 1, EndLine: 1}, "File not found: none.txt")
}

func TestReadRangeCaps(t *testing.T) {
	e := verbtest.New(t, func(_ *verbs.Options, w *verbs.WorkspaceOptions) { w.MaxReadBytes = 1000 })
	e.Put("long.txt", "short\n"+strings.Repeat("y", 5000)+"\nshort\n")
	e.Put("d/x", "")
	e.Fails(executor.CodeTooLarge, "fs.readRange", verbs.FsReadRangeArgs{Path: "long.txt", StartLine: 1, EndLine: 3}, "more than 1000 bytes")
	if got := verbtest.OK[verbs.FsReadRangeResult](e, "fs.readRange", verbs.FsReadRangeArgs{Path: "long.txt", StartLine: 3, EndLine: 3}).Content; got != "3: short" {
		t.Errorf("line after a long skipped line: %q", got)
	}
	e.Fails(executor.CodeIsADirectory, "fs.readRange", verbs.FsReadRangeArgs{Path: "d", StartLine: 1, EndLine: 1})
}

func TestLineCountAgreesWithReadRange(t *testing.T) {
	e := verbtest.New(t)
	many := strings.Repeat("line\n", 150000) // crosses many 64 KiB blocks
	for _, c := range []struct {
		content string
		want    int
	}{
		{"", 0}, {"a", 1}, {"a\n", 1}, {"a\nb", 2}, {"\n", 1}, {"\n\n", 2},
		{"a\r\nb\r\n", 2}, {"a\r\nb", 2}, {many, 150000}, {many + "tail", 150001},
	} {
		e.Put("f.txt", c.content)
		got := verbtest.OK[verbs.FsLineCountResult](e, "fs.lineCount", verbs.FsLineCountArgs{Path: "f.txt"}).LineCount
		if got != c.want {
			t.Errorf("lineCount(%.20q) = %d, want %d", c.content, got, c.want)
			continue
		}
		if got > 0 {
			verbtest.OK[verbs.FsReadRangeResult](e, "fs.readRange", verbs.FsReadRangeArgs{Path: "f.txt", StartLine: got, EndLine: got})
		}
		e.Fails(executor.CodeInvalidArguments, "fs.readRange", verbs.FsReadRangeArgs{Path: "f.txt", StartLine: got + 1, EndLine: got + 1})
	}
	e.Fails(executor.CodeNotFound, "fs.lineCount", verbs.FsLineCountArgs{Path: "nope"}, "File not found: nope")
	e.Put("dir/x", "")
	e.Fails(executor.CodeIsADirectory, "fs.lineCount", verbs.FsLineCountArgs{Path: "dir"})
}

// TestWriteFileKeepsEveryMode: replacing a file keeps its permission bits,
// whether or not they are what a new file gets under the umask.
func TestWriteFileKeepsEveryMode(t *testing.T) {
	e := verbtest.New(t)
	for i, mode := range []os.FileMode{0o600, 0o644, 0o664, 0o666, 0o755, 0o400, 0o751} {
		name := fmt.Sprintf("m%d.txt", i)
		p := filepath.Join(e.Dir, name)
		if err := os.WriteFile(p, []byte("old"), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(p, mode); err != nil {
			t.Fatal(err)
		}
		verbtest.OK[verbs.FsWriteFileResult](e, "fs.writeFile", verbs.FsWriteFileArgs{Path: name, Content: "new"})
		if fi, err := os.Stat(p); err != nil || fi.Mode().Perm() != mode {
			t.Errorf("mode %04o: after replace %v (%v)", mode, fi.Mode().Perm(), err)
		}
		if got := e.Get(name); got != "new" {
			t.Errorf("mode %04o: content %q", mode, got)
		}
	}
}

func TestWriteFile(t *testing.T) {
	e := verbtest.New(t, func(_ *verbs.Options, w *verbs.WorkspaceOptions) { w.MaxWriteChars = 10 })
	verbtest.OK[verbs.FsWriteFileResult](e, "fs.writeFile", verbs.FsWriteFileArgs{Path: "new/deep/file.txt", Content: "hello"})
	if got := e.Get("new/deep/file.txt"); got != "hello" {
		t.Errorf("content %q", got)
	}
	// Replacing keeps the permission bits.
	p := filepath.Join(e.Dir, "new/deep/file.txt")
	if err := os.Chmod(p, 0o600); err != nil {
		t.Fatal(err)
	}
	verbtest.OK[verbs.FsWriteFileResult](e, "fs.writeFile", verbs.FsWriteFileArgs{Path: "new/deep/file.txt", Content: "éééééééééé"}) // 10 characters, 20 bytes
	if fi, _ := os.Stat(p); fi.Mode().Perm() != 0o600 {
		t.Errorf("mode %v after replace, want 0600", fi.Mode().Perm())
	}
	if got := e.Get("new/deep/file.txt"); got != "éééééééééé" {
		t.Errorf("content %q", got)
	}
	e.Fails(executor.CodeTooLarge, "fs.writeFile", verbs.FsWriteFileArgs{Path: "x.txt", Content: "12345678901"}, "11 characters", "at most 10")
	e.Fails(executor.CodeIsADirectory, "fs.writeFile", verbs.FsWriteFileArgs{Path: "new/deep", Content: "x"}, "Path is a directory: new/deep")
	e.Fails(executor.CodeNotADirectory, "fs.writeFile", verbs.FsWriteFileArgs{Path: "new/deep/file.txt/x", Content: "x"}, "new/deep/file.txt")
	e.Fails(executor.CodeForbiddenPath, "fs.writeFile", verbs.FsWriteFileArgs{Path: ".", Content: "x"})
	// Writing through a link inside the workspace replaces the target's
	// content and keeps the link.
	if err := os.Symlink("new/deep/file.txt", filepath.Join(e.Dir, "link")); err != nil {
		t.Fatal(err)
	}
	verbtest.OK[verbs.FsWriteFileResult](e, "fs.writeFile", verbs.FsWriteFileArgs{Path: "link", Content: "via link"})
	if fi, err := os.Lstat(filepath.Join(e.Dir, "link")); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Errorf("link replaced: %v %v", fi, err)
	}
	if got := e.Get("new/deep/file.txt"); got != "via link" {
		t.Errorf("target content %q", got)
	}
	noTempFiles(t, e.Dir)
}

// noTempFiles fails if a temporary file was left anywhere under dir.
func noTempFiles(t *testing.T, dir string) {
	t.Helper()
	_ = filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err == nil && strings.Contains(d.Name(), ".tmp-") {
			t.Errorf("temporary file left behind: %s", p)
		}
		return nil
	})
}

func TestDeleteFile(t *testing.T) {
	e := verbtest.New(t)
	e.Put("a.txt", "x")
	e.Put("d/b.txt", "y")
	if err := os.Symlink("d/b.txt", filepath.Join(e.Dir, "ln")); err != nil {
		t.Fatal(err)
	}
	verbtest.OK[verbs.FsDeleteFileResult](e, "fs.deleteFile", verbs.FsDeleteFileArgs{Path: "a.txt"})
	if e.Exists("a.txt") {
		t.Error("a.txt still exists")
	}
	verbtest.OK[verbs.FsDeleteFileResult](e, "fs.deleteFile", verbs.FsDeleteFileArgs{Path: "ln"})
	if e.Exists("ln") || !e.Exists("d/b.txt") {
		t.Error("deleting a link must remove the link, not its target")
	}
	e.Fails(executor.CodeNotFound, "fs.deleteFile", verbs.FsDeleteFileArgs{Path: "a.txt"}, "File not found: a.txt")
	e.Fails(executor.CodeIsADirectory, "fs.deleteFile", verbs.FsDeleteFileArgs{Path: "d"}, "fs.deleteDirectory")
}

func TestMoveFile(t *testing.T) {
	e := verbtest.New(t)
	e.Put("a.txt", "A")
	e.Put("b.txt", "B")
	e.Put("dir/x", "")
	verbtest.OK[verbs.FsMoveFileResult](e, "fs.moveFile", verbs.FsMoveFileArgs{SourcePath: "a.txt", DestinationPath: "p/q/a2.txt"})
	if e.Exists("a.txt") || e.Get("p/q/a2.txt") != "A" {
		t.Error("move did not happen")
	}
	e.Fails(executor.CodeAlreadyExists, "fs.moveFile", verbs.FsMoveFileArgs{SourcePath: "b.txt", DestinationPath: "p/q/a2.txt"}, "File already exists: p/q/a2.txt")
	if e.Get("b.txt") != "B" || e.Get("p/q/a2.txt") != "A" {
		t.Error("a refused move changed a file")
	}
	e.Fails(executor.CodeNotFound, "fs.moveFile", verbs.FsMoveFileArgs{SourcePath: "none", DestinationPath: "z"}, "File not found: none")
	e.Fails(executor.CodeIsADirectory, "fs.moveFile", verbs.FsMoveFileArgs{SourcePath: "dir", DestinationPath: "dir2"}, "files only")
	e.Fails(executor.CodeNotADirectory, "fs.moveFile", verbs.FsMoveFileArgs{SourcePath: "b.txt", DestinationPath: "p/q/a2.txt/c"}, "p/q/a2.txt is a file")
}

func TestCopyFile(t *testing.T) {
	e := verbtest.New(t)
	big := strings.Repeat("0123456789abcdef", 100000) // 1.6 MB, streamed
	e.Put("src.bin", big)
	if err := os.Chmod(filepath.Join(e.Dir, "src.bin"), 0o751); err != nil {
		t.Fatal(err)
	}
	e.Put("other", "o")
	e.Put("dir/x", "")
	verbtest.OK[verbs.FsCopyFileResult](e, "fs.copyFile", verbs.FsCopyFileArgs{SourcePath: "src.bin", DestinationPath: "c/d/copy.bin"})
	if e.Get("c/d/copy.bin") != big || e.Get("src.bin") != big {
		t.Error("copy content differs")
	}
	if fi, _ := os.Stat(filepath.Join(e.Dir, "c/d/copy.bin")); fi.Mode().Perm() != 0o751 {
		t.Errorf("copy mode %v, want 0751", fi.Mode().Perm())
	}
	e.Fails(executor.CodeAlreadyExists, "fs.copyFile", verbs.FsCopyFileArgs{SourcePath: "other", DestinationPath: "c/d/copy.bin"}, "File already exists: c/d/copy.bin")
	if e.Get("c/d/copy.bin") != big {
		t.Error("refused copy overwrote the destination")
	}
	e.Fails(executor.CodeNotFound, "fs.copyFile", verbs.FsCopyFileArgs{SourcePath: "none", DestinationPath: "z"}, "File not found: none")
	e.Fails(executor.CodeIsADirectory, "fs.copyFile", verbs.FsCopyFileArgs{SourcePath: "dir", DestinationPath: "z"}, "files only")
	noTempFiles(t, e.Dir)
}

func TestCreateDirectory(t *testing.T) {
	e := verbtest.New(t)
	verbtest.OK[verbs.FsCreateDirectoryResult](e, "fs.createDirectory", verbs.FsCreateDirectoryArgs{Path: "a/b/c"})
	if fi, err := os.Stat(filepath.Join(e.Dir, "a/b/c")); err != nil || !fi.IsDir() {
		t.Fatal("directory not created")
	}
	verbtest.OK[verbs.FsCreateDirectoryResult](e, "fs.createDirectory", verbs.FsCreateDirectoryArgs{Path: "a/b"})
	verbtest.OK[verbs.FsCreateDirectoryResult](e, "fs.createDirectory", verbs.FsCreateDirectoryArgs{Path: "."})
	e.Put("f.txt", "x")
	e.Fails(executor.CodeAlreadyExists, "fs.createDirectory", verbs.FsCreateDirectoryArgs{Path: "f.txt"}, "File already exists: f.txt")
	e.Fails(executor.CodeNotADirectory, "fs.createDirectory", verbs.FsCreateDirectoryArgs{Path: "f.txt/sub"}, "f.txt is a file")
}

func TestDeleteDirectory(t *testing.T) {
	e := verbtest.New(t)
	e.Put("tree/a/b/c.txt", "x")
	e.Put("tree/d.txt", "y")
	e.Put("file.txt", "z")
	verbtest.OK[verbs.FsDeleteDirectoryResult](e, "fs.deleteDirectory", verbs.FsDeleteDirectoryArgs{Path: "tree"})
	if e.Exists("tree") {
		t.Error("tree still exists")
	}
	e.Fails(executor.CodeForbiddenPath, "fs.deleteDirectory", verbs.FsDeleteDirectoryArgs{Path: "."}, "workspace root")
	e.Fails(executor.CodeForbiddenPath, "fs.deleteDirectory", verbs.FsDeleteDirectoryArgs{Path: "./"}, "workspace root")
	e.Fails(executor.CodeForbiddenPath, "fs.deleteDirectory", verbs.FsDeleteDirectoryArgs{Path: ""}, "empty")
	e.Fails(executor.CodeNotFound, "fs.deleteDirectory", verbs.FsDeleteDirectoryArgs{Path: "tree"}, "Directory not found: tree")
	e.Fails(executor.CodeNotADirectory, "fs.deleteDirectory", verbs.FsDeleteDirectoryArgs{Path: "file.txt"}, "fs.deleteFile")
	if !e.Exists(".hub/hub.db") || !e.Exists("file.txt") {
		t.Error("refused deletes removed something")
	}
}

func TestDeleteDirectoryHoldingState(t *testing.T) {
	e := verbtest.New(t, func(_ *verbs.Options, w *verbs.WorkspaceOptions) { w.Deny = []string{"var/hub"} })
	e.Put("var/hub/hub.db", "state")
	e.Put("var/other.txt", "x")
	e.Fails(executor.CodeForbiddenPath, "fs.deleteDirectory", verbs.FsDeleteDirectoryArgs{Path: "var"}, "var/hub", "reserved for the hub's state")
	if !e.Exists("var/hub/hub.db") || !e.Exists("var/other.txt") {
		t.Error("refused delete removed something")
	}
}

func TestListDir(t *testing.T) {
	e := verbtest.New(t)
	e.Put("b.txt", "bb")
	e.Put("a.txt", "")
	e.Put("zdir/x", "xxx")
	e.Put("adir/y", "")
	if err := os.Symlink("zdir", filepath.Join(e.Dir, "mlink")); err != nil {
		t.Fatal(err)
	}
	got := verbtest.EntryStrings(verbtest.OK[verbs.FsListDirResult](e, "fs.listDir", verbs.FsListDirArgs{Path: "."}).Entries)
	want := []string{"adir/", "mlink/", "zdir/", "a.txt", "b.txt"} // no sizes or versions in the host workspace
	if !slices.Equal(got, want) {
		t.Errorf("entries %v, want %v (.hub must be hidden)", got, want)
	}
	if got := verbtest.EntryStrings(verbtest.OK[verbs.FsListDirResult](e, "fs.listDir", verbs.FsListDirArgs{Path: "mlink"}).Entries); !slices.Equal(got, []string{"x"}) {
		t.Errorf("listing through a link: %v", got)
	}
	empty := verbtest.OK[verbs.FsListDirResult](e, "fs.listDir", verbs.FsListDirArgs{Path: "adir/"})
	if len(empty.Entries) != 1 {
		t.Errorf("adir: %v", empty.Entries)
	}
	// Without a path, the root: by arguments, by envelope, by chat.
	if got := verbtest.EntryStrings(verbtest.OK[verbs.FsListDirResult](e, "fs.listDir", verbs.FsListDirArgs{}).Entries); !slices.Equal(got, want) {
		t.Errorf("no path: %v, want the root %v", got, want)
	}
	if out := e.X.ExecuteInput(context.Background(), []byte(`{"verb":"fs.listDir"}`)); out.Err != nil || !strings.Contains(string(out.JSON()), `"adir"`) {
		t.Errorf("envelope without arguments: %s", out.JSON())
	}
	for in, args := range map[string]string{"/fs.listDir": `{}`, "/fs.listDir zdir": `{"path":"zdir"}`} {
		cmd, err := e.X.ParseCommand(in)
		if err != nil || string(cmd.Arguments) != args {
			t.Errorf("%s: %v %s, want %s", in, err, cmd.Arguments, args)
		}
	}
	e.Fails(executor.CodeNotFound, "fs.listDir", verbs.FsListDirArgs{Path: "none"}, "Directory not found: none")
	e.Fails(executor.CodeNotADirectory, "fs.listDir", verbs.FsListDirArgs{Path: "a.txt"}, "a.txt is a file")
}

func TestSymlinksInsideWorkspace(t *testing.T) {
	e := verbtest.New(t)
	e.Put("real/docs/a.md", "A\n")
	e.Put("b/file.txt", "B\n")
	links := map[string]string{
		"a/up":     "../b/file.txt", // '..' in a target that stays inside
		"docs":     "real/docs",
		"chain1":   "chain2",
		"chain2":   "b/file.txt",
		"dangling": "b/new.txt",
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
	for path, want := range map[string]string{"a/up": "B\n", "docs/a.md": "A\n", "chain1": "B\n"} {
		if got := verbtest.OK[verbs.FsReadFileResult](e, "fs.readFile", verbs.FsReadFileArgs{Path: path}).Content; got != want {
			t.Errorf("read %s = %q, want %q", path, got, want)
		}
	}
	verbtest.OK[verbs.FsWriteFileResult](e, "fs.writeFile", verbs.FsWriteFileArgs{Path: "dangling", Content: "N"})
	if e.Get("b/new.txt") != "N" {
		t.Error("writing through a dangling link did not create its target")
	}
	verbtest.OK[verbs.FsWriteRangeResult](e, "fs.writeRange", verbs.FsWriteRangeArgs{Path: "docs/a.md", StartLine: 2, Content: "more"})
	if e.Get("real/docs/a.md") != "A\nmore\n" {
		t.Errorf("writeRange through a directory link: %q", e.Get("real/docs/a.md"))
	}
	// A link inside the workspace whose target is inside the state is refused.
	if err := os.Symlink("../.hub", filepath.Join(e.Dir, "b/state")); err != nil {
		t.Fatal(err)
	}
	e.Fails(executor.CodeForbiddenPath, "fs.readFile", verbs.FsReadFileArgs{Path: "b/state/hub.db"}, "reserved for the hub's state")
}

// TestReadFileRelease: a large file's result gives its buffer back
// (Release) and forgets its content; the reads after it, which may take
// that buffer, each read their own file whole, of any size, text or
// binary.
func TestReadFileRelease(t *testing.T) {
	e := verbtest.New(t, func(_ *verbs.Options, w *verbs.WorkspaceOptions) { w.MaxReadBytes = 4 << 20 })
	files := map[string]string{
		"a.txt": strings.Repeat("a", 300<<10) + "\n",
		"b.txt": strings.Repeat("b", 100<<10),
		"c.txt": strings.Repeat("c", 1<<20),
		"d.txt": "small\n",
		"e.bin": strings.Repeat("\x00e", 80<<10),
	}
	for p, s := range files {
		e.Put(p, s)
	}
	for _, p := range []string{"a.txt", "b.txt", "c.txt", "a.txt", "d.txt", "e.bin", "c.txt", "b.txt", "b.txt"} {
		res, err := e.Set.ReadFile(context.Background(), verbs.FsReadFileArgs{Path: p})
		if err != nil {
			t.Fatal(err)
		}
		want := files[p]
		if res.File.Encoding == verbs.EncodingBase64 {
			want = base64.StdEncoding.EncodeToString([]byte(want))
		}
		if res.Content != want {
			t.Fatalf("%s: %d bytes, not the file's %d", p, len(res.Content), len(want))
		}
		var _ executor.Releaser = &res
		res.Release()
		if res.Content != "" && res.File.Encoding != verbs.EncodingBase64 {
			t.Fatalf("%s: content kept after Release", p)
		}
	}
}

// TestListDirRelease: a large listing gives its slice back (Release) and
// forgets its entries; the listings after it, which may take that slice,
// each hold their own directory's entries, kinds included, and nothing of
// a longer listing before them.
func TestListDirRelease(t *testing.T) {
	e := verbtest.New(t, func(*verbs.Options, *verbs.WorkspaceOptions) {})
	sizes := map[string]int{"big": 3000, "mid": 1500, "small": 3}
	for d, n := range sizes {
		for i := range n {
			if i%10 == 0 {
				if err := os.MkdirAll(filepath.Join(e.Dir, d, fmt.Sprintf("d%05d", i)), 0o755); err != nil {
					t.Fatal(err)
				}
				continue
			}
			e.Put(fmt.Sprintf("%s/f%05d", d, i), "x")
		}
	}
	for _, d := range []string{"big", "mid", "big", "small", "mid", "mid", "big"} {
		res, err := e.Set.ListDir(context.Background(), verbs.FsListDirArgs{Path: d})
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Entries) != sizes[d] {
			t.Fatalf("%s: %d entries, want %d", d, len(res.Entries), sizes[d])
		}
		dirs := (sizes[d] + 9) / 10
		for i, en := range res.Entries {
			wantDir := i < dirs
			want := fmt.Sprintf("d%05d", i*10)
			if !wantDir {
				k := i - dirs
				want = fmt.Sprintf("f%05d", k+k/9+1)
			}
			if en.Name != want || en.IsDirectory != wantDir {
				t.Fatalf("%s: entry %d is %+v, want %s (directory %v)", d, i, en, want, wantDir)
			}
		}
		var _ executor.Releaser = &res
		res.Release()
		if res.Entries != nil {
			t.Fatalf("%s: entries kept after Release", d)
		}
	}
}
