package verbs_test

import (
	"context"
	"encoding/base64"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/a6afc2ce/hermes-hub/executor"
	"github.com/a6afc2ce/hermes-hub/verbs"
	"github.com/a6afc2ce/hermes-hub/verbs/internal/verbtest"
)

const chatA, chatB = "chat:telegram:-100:5", "chat:discord:42"

func TestSessionStartsEmptyApartFromMounts(t *testing.T) {
	e := newSessEnv(t)
	got := verbtest.EntryStrings(sok[verbs.FsListDirResult](e, chatA, "fs.listDir", verbs.FsListDirArgs{Path: "."}).Entries)
	if !slices.Equal(got, []string{"docs/"}) {
		t.Fatalf("root of a new session: %v", got)
	}
	// Only the included files, at the host-relative path, version 1, created now.
	got = verbtest.EntryStrings(sok[verbs.FsListDirResult](e, chatA, "fs.listDir", verbs.FsListDirArgs{Path: "docs"}).Entries)
	if want := []string{"sub/", "guide.md 8 v1 " + ms(t0)}; !slices.Equal(got, want) {
		t.Fatalf("docs: %v, want %v", got, want)
	}
	if got := verbtest.Tree(t, e.sessionDir(chatA)); !slices.Equal(got, []string{"docs/guide.md=# Guide", "docs/sub/deep.md=deep"}) {
		t.Fatalf("session tree %v", got)
	}
	// The host workspace is untouched and not visible.
	e.sfails(chatA, executor.CodeNotFound, "fs.readFile", verbs.FsReadFileArgs{Path: "host-only.txt"}, "File not found: host-only.txt")
	// Owner-only directories.
	for _, d := range []string{e.root, filepath.Dir(e.sessionDir(chatA))} {
		fi, err := os.Stat(d)
		if err != nil || fi.Mode().Perm() != 0o700 {
			t.Errorf("%s: mode %v, %v; want 0700", d, fi.Mode().Perm(), err)
		}
	}
	// Writes never reach the mount's host files.
	sok[verbs.FsWriteFileResult](e, chatA, "fs.writeFile", verbs.FsWriteFileArgs{Path: "docs/guide.md", Content: "changed"})
	if b, _ := os.ReadFile(filepath.Join(e.mountDir, "docs", "guide.md")); string(b) != "# Guide\n" {
		t.Fatalf("host file changed: %q", b)
	}
}

func TestSessionPathRules(t *testing.T) {
	e := newSessEnv(t)
	for _, c := range []struct{ path, msg string }{
		{"/etc/passwd", "absolute"},
		{"../x", "'..'"},
		{"a/../../x", "'..'"},
		{"./a", "'.' segment"},
		{"caf\u00e9.txt", "non-ASCII"},
		{strings.Repeat("d/", 16) + "f", "17 segments; at most 16"},
		{strings.Repeat("s", 81), "81 characters; at most 80"},
		{"", "empty"},
	} {
		e.sfails(chatA, executor.CodeForbiddenPath, "fs.writeFile", verbs.FsWriteFileArgs{Path: c.path, Content: "x"}, c.msg)
	}
	// Duplicate slashes collapse; the normalised path is what is stored.
	r := sok[verbs.FsWriteFileResult](e, chatA, "fs.writeFile", verbs.FsWriteFileArgs{Path: "a//b///c.txt", Content: "x"})
	if r.File.Path != "a/b/c.txt" || r.File.Version != 1 {
		t.Fatalf("file %+v", r.File)
	}
	if _, ok, _ := e.meta.Get(chatA, "a/b/c.txt"); !ok {
		t.Fatal("no metadata under the clean path")
	}
	deep := strings.Repeat("d/", 15) + strings.Repeat("s", 80)
	sok[verbs.FsWriteFileResult](e, chatA, "fs.writeFile", verbs.FsWriteFileArgs{Path: deep, Content: "x"})
}

func TestWriteModesVersionsAndTimes(t *testing.T) {
	e := newSessEnv(t, func(o *verbs.SessionOptions, _ *sessEnv) { o.Workspace.MaxWriteChars = 10 })
	write := func(mode verbs.WriteMode, content string) *verbs.VfsFile {
		t.Helper()
		return sok[verbs.FsWriteFileResult](e, chatA, "fs.writeFile", verbs.FsWriteFileArgs{Path: "log.txt", Content: content, Mode: mode}).File
	}
	read := func() verbs.FsReadFileResult {
		t.Helper()
		return sok[verbs.FsReadFileResult](e, chatA, "fs.readFile", verbs.FsReadFileArgs{Path: "log.txt"})
	}
	e.sfails(chatA, executor.CodeNotFound, "fs.writeFile", verbs.FsWriteFileArgs{Path: "log.txt", Content: "x", Mode: verbs.ModeOverwrite}, "File not found: log.txt")
	e.sfails(chatA, executor.CodeNotFound, "fs.writeFile", verbs.FsWriteFileArgs{Path: "log.txt", Content: "x", Mode: verbs.ModeAppend}, "File not found: log.txt")

	f := write(verbs.ModeCreate, "one\n")
	want := verbs.VfsFile{Path: "log.txt", Encoding: verbs.EncodingUTF8, SizeBytes: 4, Version: 1, CreatedAt: ms(t0), UpdatedAt: ms(t0)}
	if *f != want {
		t.Fatalf("create: %+v, want %+v", *f, want)
	}
	if !strings.HasSuffix(f.CreatedAt, ".678Z") {
		t.Fatalf("times are not UTC with milliseconds: %s", f.CreatedAt)
	}
	e.sfails(chatA, executor.CodeAlreadyExists, "fs.writeFile", verbs.FsWriteFileArgs{Path: "log.txt", Content: "x", Mode: verbs.ModeCreate}, "File already exists: log.txt")

	t1 := e.clock.Advance(1500 * time.Millisecond)
	f = write(verbs.ModeOverwrite, "two\n")
	if f.Version != 2 || f.CreatedAt != ms(t0) || f.UpdatedAt != ms(t1) || f.SizeBytes != 4 {
		t.Fatalf("overwrite: %+v", *f)
	}
	t2 := e.clock.Advance(time.Second)
	f = write(verbs.ModeAppend, "three\n")
	if f.Version != 3 || f.CreatedAt != ms(t0) || f.UpdatedAt != ms(t2) || f.SizeBytes != 10 {
		t.Fatalf("append: %+v", *f)
	}
	r := read()
	if r.Content != "two\nthree\n" || *r.File != *f {
		t.Fatalf("read: %q %+v, want the written file %+v", r.Content, r.File, f)
	}
	// No mode: create or replace, as before modes existed.
	t3 := e.clock.Advance(time.Second)
	if f = write("", "four\n"); f.Version != 4 || f.UpdatedAt != ms(t3) {
		t.Fatalf("replace without mode: %+v", *f)
	}
	// fs.writeRange is a write too.
	t4 := e.clock.Advance(time.Second)
	wr := sok[verbs.FsWriteRangeResult](e, chatA, "fs.writeRange", verbs.FsWriteRangeArgs{Path: "log.txt", StartLine: 2, Content: "five"})
	if wr.File.Version != 5 || wr.File.UpdatedAt != ms(t4) || wr.File.CreatedAt != ms(t0) {
		t.Fatalf("writeRange: %+v", *wr.File)
	}
	got := verbtest.EntryStrings(sok[verbs.FsListDirResult](e, chatA, "fs.listDir", verbs.FsListDirArgs{Path: "."}).Entries)
	if !slices.Contains(got, "log.txt 10 v5 "+ms(t4)) {
		t.Fatalf("listing %v", got)
	}
	// Bad modes and encodings are refused with what is accepted.
	e.sfails(chatA, executor.CodeInvalidArguments, "fs.writeFile", map[string]any{"path": "x", "content": "x", "mode": "replace"}, `Mode "replace" is not accepted`, "create, overwrite, append")
	e.sfails(chatA, executor.CodeInvalidArguments, "fs.writeFile", map[string]any{"path": "x", "content": "x", "encoding": "latin1"}, `Encoding "latin1" is not accepted`, "utf-8, base64")
	// The limit counts characters for text.
	e.sfails(chatA, executor.CodeTooLarge, "fs.writeFile", verbs.FsWriteFileArgs{Path: "big", Content: "ééééééééééé"}, "11 characters", "at most 10")
	sok[verbs.FsWriteFileResult](e, chatA, "fs.writeFile", verbs.FsWriteFileArgs{Path: "ok", Content: "éééééééééé"})
}

func TestBinaryContent(t *testing.T) {
	e := newSessEnv(t, func(o *verbs.SessionOptions, _ *sessEnv) { o.Workspace.MaxWriteChars = 10 })
	bin := []byte{0, 1, 2, 0xff, 'x', 0, 7, 8, 9, 10}
	b64 := base64.StdEncoding.EncodeToString(bin)
	w := sok[verbs.FsWriteFileResult](e, chatA, "fs.writeFile", verbs.FsWriteFileArgs{Path: "blob.bin", Content: b64, Encoding: verbs.ContentBase64})
	if w.File.Encoding != verbs.EncodingBase64 || w.File.SizeBytes != 10 {
		t.Fatalf("write: %+v", *w.File)
	}
	if b, _ := os.ReadFile(filepath.Join(e.sessionDir(chatA), "blob.bin")); string(b) != string(bin) {
		t.Fatalf("on disk: %v", b)
	}
	r := sok[verbs.FsReadFileResult](e, chatA, "fs.readFile", verbs.FsReadFileArgs{Path: "blob.bin"})
	if r.Content != b64 || r.File.Encoding != verbs.EncodingBase64 {
		t.Fatalf("read: %q %+v", r.Content, r.File)
	}
	// The encoding hint is kept even for bytes that happen to be text.
	hello := base64.StdEncoding.EncodeToString([]byte("hello"))
	sok[verbs.FsWriteFileResult](e, chatA, "fs.writeFile", verbs.FsWriteFileArgs{Path: "h.bin", Content: hello, Encoding: verbs.EncodingBinary})
	if r := sok[verbs.FsReadFileResult](e, chatA, "fs.readFile", verbs.FsReadFileArgs{Path: "h.bin"}); r.Content != hello || r.File.Encoding != verbs.EncodingBase64 {
		t.Fatalf("hinted read: %q %+v", r.Content, r.File)
	}
	// Line-wrapped and unpadded base64 is accepted.
	wrapped := "aGVs\r\nbG 8" // "hello", wrapped, a space, no padding
	sok[verbs.FsWriteFileResult](e, chatA, "fs.writeFile", verbs.FsWriteFileArgs{Path: "w.bin", Content: wrapped, Encoding: verbs.ContentBase64})
	if b, _ := os.ReadFile(filepath.Join(e.sessionDir(chatA), "w.bin")); string(b) != "hello" {
		t.Fatalf("wrapped base64 decoded to %q", b)
	}
	// The limit applies to the decoded bytes.
	eleven := base64.StdEncoding.EncodeToString(make([]byte, 11))
	e.sfails(chatA, executor.CodeTooLarge, "fs.writeFile", verbs.FsWriteFileArgs{Path: "x", Content: eleven, Encoding: verbs.ContentBase64}, "11 bytes once decoded", "at most 10")
	e.sfails(chatA, executor.CodeInvalidArguments, "fs.writeFile", verbs.FsWriteFileArgs{Path: "x", Content: "not base64!", Encoding: verbs.ContentBase64}, "not valid base64")
	// Appending text to a binary file keeps it binary.
	sok[verbs.FsWriteFileResult](e, chatA, "fs.writeFile", verbs.FsWriteFileArgs{Path: "h.bin", Content: "!", Mode: verbs.ModeAppend})
	if r := sok[verbs.FsReadFileResult](e, chatA, "fs.readFile", verbs.FsReadFileArgs{Path: "h.bin"}); r.File.Encoding != verbs.EncodingBase64 || r.File.Version != 2 {
		t.Fatalf("after append: %+v", r.File)
	}
}

func TestHostWorkspaceHasNoVersionsOrVfs(t *testing.T) {
	e := newSessEnv(t)
	w := sok[verbs.FsWriteFileResult](e, "", "fs.writeFile", verbs.FsWriteFileArgs{Path: "h.txt", Content: "hi", Mode: verbs.ModeCreate})
	if *w.File != (verbs.VfsFile{Path: "h.txt", Encoding: verbs.EncodingUTF8, SizeBytes: 2}) {
		t.Fatalf("host write: %+v", *w.File)
	}
	if b, _ := os.ReadFile(filepath.Join(e.hostDir, "h.txt")); string(b) != "hi" {
		t.Fatal("host write did not reach the host workspace")
	}
	if got := verbtest.EntryStrings(sok[verbs.FsListDirResult](e, "", "fs.listDir", verbs.FsListDirArgs{Path: "."}).Entries); !slices.Equal(got, []string{"h.txt", "host-only.txt"}) {
		t.Fatalf("host listing %v", got)
	}
	for _, v := range []string{"vfs.snapshot", "vfs.reset", "vfs.info", "vfs.list"} {
		e.sfails("", executor.CodeForbidden, v, map[string]any{}, v+" works in session workspaces; this conversation uses the host workspace")
	}
	e.sfails("", executor.CodeForbidden, "vfs.restore", verbs.VfsRestoreArgs{SnapshotID: "20260102T030405.678Z-3f9a"}, "host workspace")
	// A session id that is not accepted is refused, never mapped to a path.
	e.sfails("bad id", executor.CodeInvalidArguments, "fs.listDir", verbs.FsListDirArgs{Path: "."}, "Session id", "printable ASCII")
}

func TestDeleteDirectoryRemovesOnlyItsFiles(t *testing.T) {
	e := newSessEnv(t, func(o *verbs.SessionOptions, _ *sessEnv) { o.Mounts = nil })
	for _, p := range []string{"a/x", "a/y/z", "a/y/w/v", "ab/keep", "a.txt", "b/a/keep"} {
		sok[verbs.FsWriteFileResult](e, chatA, "fs.writeFile", verbs.FsWriteFileArgs{Path: p, Content: p})
	}
	sok[verbs.FsWriteFileResult](e, chatA, "fs.writeFile", verbs.FsWriteFileArgs{Path: "ab/keep", Content: "v2"})
	sok[verbs.FsDeleteDirectoryResult](e, chatA, "fs.deleteDirectory", verbs.FsDeleteDirectoryArgs{Path: "a"})
	if got := verbtest.Tree(t, e.sessionDir(chatA)); !slices.Equal(got, []string{"a.txt=a.txt", "ab/keep=v2", "b/a/keep=b/a/keep"}) {
		t.Fatalf("tree after deleting a: %v", got)
	}
	ms, _ := e.meta.List(chatA, ".")
	var got []string
	for _, m := range ms {
		got = append(got, fmt.Sprintf("%s v%d", m.Path, m.Version))
	}
	if !slices.Equal(got, []string{"a.txt v1", "ab/keep v2", "b/a/keep v1"}) {
		t.Fatalf("metadata after deleting a: %v", got)
	}
	// Deleting a file forgets its version: a new file starts at 1.
	sok[verbs.FsDeleteFileResult](e, chatA, "fs.deleteFile", verbs.FsDeleteFileArgs{Path: "ab/keep"})
	if f := sok[verbs.FsWriteFileResult](e, chatA, "fs.writeFile", verbs.FsWriteFileArgs{Path: "ab/keep", Content: "new"}).File; f.Version != 1 {
		t.Fatalf("recreated file: %+v", *f)
	}
	// Moves keep the version; copies start at 1.
	sok[verbs.FsWriteFileResult](e, chatA, "fs.writeFile", verbs.FsWriteFileArgs{Path: "a.txt", Content: "v2"})
	sok[verbs.FsMoveFileResult](e, chatA, "fs.moveFile", verbs.FsMoveFileArgs{SourcePath: "a.txt", DestinationPath: "m/a.txt"})
	sok[verbs.FsCopyFileResult](e, chatA, "fs.copyFile", verbs.FsCopyFileArgs{SourcePath: "m/a.txt", DestinationPath: "c.txt"})
	for p, v := range map[string]int64{"m/a.txt": 2, "c.txt": 1} {
		if f := sok[verbs.FsReadFileResult](e, chatA, "fs.readFile", verbs.FsReadFileArgs{Path: p}).File; f.Version != v {
			t.Errorf("%s: version %d, want %d", p, f.Version, v)
		}
	}
	if _, ok, _ := e.meta.Get(chatA, "a.txt"); ok {
		t.Error("the moved file's old path keeps metadata")
	}
}

func TestSessionsAreIsolated(t *testing.T) {
	e := newSessEnv(t)
	sok[verbs.FsWriteFileResult](e, chatA, "fs.writeFile", verbs.FsWriteFileArgs{Path: "secret.txt", Content: "A's"})
	sok[verbs.FsWriteFileResult](e, chatA, "fs.writeFile", verbs.FsWriteFileArgs{Path: "docs/guide.md", Content: "A's guide"})
	e.sfails(chatB, executor.CodeNotFound, "fs.readFile", verbs.FsReadFileArgs{Path: "secret.txt"}, "File not found: secret.txt")
	r := sok[verbs.FsReadFileResult](e, chatB, "fs.readFile", verbs.FsReadFileArgs{Path: "docs/guide.md"})
	if r.Content != "# Guide\n" || r.File.Version != 1 {
		t.Fatalf("B sees %q %+v", r.Content, r.File)
	}
	// Ids that look like paths stay inside the root, each in its own directory.
	odd := []string{"../../etc", "a/b", "..", "chat:telegram:1", "chat_telegram_1", "web"}
	for _, id := range odd {
		sok[verbs.FsWriteFileResult](e, id, "fs.writeFile", verbs.FsWriteFileArgs{Path: "id.txt", Content: id})
	}
	for _, id := range odd {
		if r := sok[verbs.FsReadFileResult](e, id, "fs.readFile", verbs.FsReadFileArgs{Path: "id.txt"}); r.Content != id {
			t.Errorf("session %q reads %q", id, r.Content)
		}
	}
	des, _ := os.ReadDir(e.root)
	if len(des) != 2+len(odd) {
		t.Errorf("%d session directories for %d sessions", len(des), 2+len(odd))
	}
	if _, err := os.Stat(filepath.Join(e.base, "etc")); err == nil {
		t.Error("a session id escaped the root")
	}
}

func TestSnapshotAndRestore(t *testing.T) {
	e := newSessEnv(t)
	sok[verbs.FsWriteFileResult](e, chatA, "fs.writeFile", verbs.FsWriteFileArgs{Path: "plan.md", Content: "v1"})
	snap := sok[verbs.VfsSnapshotResult](e, chatA, "vfs.snapshot", verbs.VfsSnapshotArgs{}).Snapshot
	if snap.FileCount != 3 || snap.TotalBytes != 2+8+5 || snap.CreatedAt != ms(t0) || snap.ExpiresAt != ms(t0.Add(verbs.DefaultSnapshotTTL)) {
		t.Fatalf("snapshot %+v", snap)
	}
	e.clock.Advance(time.Minute)
	sok[verbs.FsWriteFileResult](e, chatA, "fs.writeFile", verbs.FsWriteFileArgs{Path: "plan.md", Content: "v2"})
	sok[verbs.FsWriteFileResult](e, chatA, "fs.writeFile", verbs.FsWriteFileArgs{Path: "later.txt", Content: "later"})
	sok[verbs.FsDeleteDirectoryResult](e, chatA, "fs.deleteDirectory", verbs.FsDeleteDirectoryArgs{Path: "docs/sub"})

	restore := func() {
		t.Helper()
		r := sok[verbs.VfsRestoreResult](e, chatA, "vfs.restore", verbs.VfsRestoreArgs{SnapshotID: snap.SnapshotID})
		if r.FileCount != 3 || r.TotalBytes != 15 {
			t.Fatalf("restore %+v", r)
		}
		if got := verbtest.Tree(t, e.sessionDir(chatA)); !slices.Equal(got, []string{"docs/guide.md=# Guide", "docs/sub/deep.md=deep", "plan.md=v1"}) {
			t.Fatalf("tree after restore: %v", got)
		}
		f := sok[verbs.FsReadFileResult](e, chatA, "fs.readFile", verbs.FsReadFileArgs{Path: "plan.md"}).File
		if f.Version != 1 || f.UpdatedAt != ms(t0) {
			t.Fatalf("restored metadata %+v", f)
		}
	}
	restore()
	// Later writes change the fresh directory, never the snapshot.
	sok[verbs.FsWriteFileResult](e, chatA, "fs.writeFile", verbs.FsWriteFileArgs{Path: "plan.md", Content: "v3", Mode: verbs.ModeOverwrite})
	if f := sok[verbs.FsReadFileResult](e, chatA, "fs.readFile", verbs.FsReadFileArgs{Path: "plan.md"}).File; f.Version != 2 {
		t.Fatalf("write after restore: %+v", f)
	}
	restore()

	info := sok[verbs.VfsInfoResult](e, chatA, "vfs.info", verbs.VfsInfoArgs{})
	if info.Session != chatA || info.Root != verbs.SessionDirName(chatA)+"/live" || info.FileCount != 3 || info.TotalBytes != 15 || info.SnapshotCount != 1 || len(info.Files) != 3 {
		t.Fatalf("info %+v", info)
	}
	if info.Files[0].Path != "plan.md" && info.Files[2].Path != "plan.md" {
		t.Fatalf("files not sorted by path: %+v", info.Files)
	}
	list := sok[verbs.VfsListResult](e, chatA, "vfs.list", verbs.VfsListArgs{}).Snapshots
	if len(list) != 1 || list[0] != snap {
		t.Fatalf("list %+v, want %+v", list, snap)
	}
	// Another chat cannot see or restore this chat's snapshot.
	if l := sok[verbs.VfsListResult](e, chatB, "vfs.list", verbs.VfsListArgs{}).Snapshots; len(l) != 0 {
		t.Fatalf("B lists %v", l)
	}
	e.sfails(chatB, executor.CodeNotFound, "vfs.restore", verbs.VfsRestoreArgs{SnapshotID: snap.SnapshotID}, "Snapshot not found: "+snap.SnapshotID)
	e.sfails(chatA, executor.CodeInvalidArguments, "vfs.restore", verbs.VfsRestoreArgs{SnapshotID: "../x"}, "is not accepted", "vfs.list")
}

func TestSnapshotIDsSortAndAreCapped(t *testing.T) {
	e := newSessEnv(t, func(o *verbs.SessionOptions, _ *sessEnv) { o.MaxSnapshots = 3 })
	var ids []string
	for i := range 5 {
		sok[verbs.FsWriteFileResult](e, chatA, "fs.writeFile", verbs.FsWriteFileArgs{Path: "n", Content: fmt.Sprint(i)})
		ids = append(ids, sok[verbs.VfsSnapshotResult](e, chatA, "vfs.snapshot", verbs.VfsSnapshotArgs{}).Snapshot.SnapshotID)
	}
	if !slices.IsSorted(ids) || len(slices.Compact(slices.Clone(ids))) != 5 {
		t.Fatalf("ids taken at the same instant must be unique and sorted: %v", ids)
	}
	var kept []string
	for _, s := range sok[verbs.VfsListResult](e, chatA, "vfs.list", verbs.VfsListArgs{}).Snapshots {
		kept = append(kept, s.SnapshotID)
	}
	if !slices.Equal(kept, ids[2:]) {
		t.Fatalf("kept %v, want the newest three %v", kept, ids[2:])
	}
	sok[verbs.VfsRestoreResult](e, chatA, "vfs.restore", verbs.VfsRestoreArgs{SnapshotID: ids[2]})
	if r := sok[verbs.FsReadFileResult](e, chatA, "fs.readFile", verbs.FsReadFileArgs{Path: "n"}); r.Content != "2" {
		t.Fatalf("restored %q", r.Content)
	}
}

func TestResetReplaysMounts(t *testing.T) {
	e := newSessEnv(t)
	sok[verbs.FsWriteFileResult](e, chatA, "fs.writeFile", verbs.FsWriteFileArgs{Path: "docs/guide.md", Content: "edited"})
	sok[verbs.FsWriteFileResult](e, chatA, "fs.writeFile", verbs.FsWriteFileArgs{Path: "mine.txt", Content: "mine"})
	sok[verbs.VfsSnapshotResult](e, chatA, "vfs.snapshot", verbs.VfsSnapshotArgs{})
	// The host changed since the session was created: reset picks it up.
	verbtest.WriteFile(t, filepath.Join(e.mountDir, "docs", "new.md"), "new\n")
	t1 := e.clock.Advance(time.Hour)
	r := sok[verbs.VfsResetResult](e, chatA, "vfs.reset", verbs.VfsResetArgs{})
	if r.FileCount != 3 || r.TotalBytes != 8+5+4 {
		t.Fatalf("reset %+v", r)
	}
	if got := verbtest.Tree(t, e.sessionDir(chatA)); !slices.Equal(got, []string{"docs/guide.md=# Guide", "docs/new.md=new", "docs/sub/deep.md=deep"}) {
		t.Fatalf("tree after reset: %v", got)
	}
	if f := sok[verbs.FsReadFileResult](e, chatA, "fs.readFile", verbs.FsReadFileArgs{Path: "docs/guide.md"}).File; f.Version != 1 || f.CreatedAt != ms(t1) {
		t.Fatalf("after reset: %+v", f)
	}
	if n := len(sok[verbs.VfsListResult](e, chatA, "vfs.list", verbs.VfsListArgs{}).Snapshots); n != 1 {
		t.Fatalf("reset dropped snapshots: %d left", n)
	}
}

func TestSessionSurvivesRestart(t *testing.T) {
	e := newSessEnv(t)
	sok[verbs.FsWriteFileResult](e, chatA, "fs.writeFile", verbs.FsWriteFileArgs{Path: "a.txt", Content: "1"})
	sok[verbs.FsWriteFileResult](e, chatA, "fs.writeFile", verbs.FsWriteFileArgs{Path: "a.txt", Content: "2"})
	snap := sok[verbs.VfsSnapshotResult](e, chatA, "vfs.snapshot", verbs.VfsSnapshotArgs{}).Snapshot
	// The mounts change on the host: an existing session is not rebuilt.
	verbtest.WriteFile(t, filepath.Join(e.mountDir, "docs", "new.md"), "new\n")
	e.reopen()
	if r := sok[verbs.FsReadFileResult](e, chatA, "fs.readFile", verbs.FsReadFileArgs{Path: "a.txt"}); r.Content != "2" || r.File.Version != 2 {
		t.Fatalf("after restart: %q %+v", r.Content, r.File)
	}
	e.sfails(chatA, executor.CodeNotFound, "fs.readFile", verbs.FsReadFileArgs{Path: "docs/new.md"})
	if l := sok[verbs.VfsListResult](e, chatA, "vfs.list", verbs.VfsListArgs{}).Snapshots; len(l) != 1 || l[0].SnapshotID != snap.SnapshotID {
		t.Fatalf("snapshots after restart: %+v", l)
	}
	// A crash in the middle of a restore left old-* and no live/: it is
	// recovered on open, and tmp-* leftovers are removed.
	e.src.Close()
	dir := filepath.Dir(e.sessionDir(chatA))
	if err := os.Rename(e.sessionDir(chatA), filepath.Join(dir, "old-abc")); err != nil {
		t.Fatal(err)
	}
	verbtest.WriteFile(t, filepath.Join(dir, "tmp-def", "half.txt"), "half")
	e.open()
	if r := sok[verbs.FsReadFileResult](e, chatA, "fs.readFile", verbs.FsReadFileArgs{Path: "a.txt"}); r.Content != "2" {
		t.Fatalf("after recovery: %q", r.Content)
	}
	des, _ := os.ReadDir(dir)
	var names []string
	for _, de := range des {
		names = append(names, de.Name())
	}
	if !slices.Equal(names, []string{"live", "snapshots"}) {
		t.Fatalf("session directory after recovery: %v", names)
	}
}

func TestSweepExpiresIdleSessionsAndSnapshots(t *testing.T) {
	day := 24 * time.Hour
	e := newSessEnv(t, func(o *verbs.SessionOptions, _ *sessEnv) { o.IdleTTL, o.SnapshotTTL = day, 3*day })
	sok[verbs.FsWriteFileResult](e, chatA, "fs.writeFile", verbs.FsWriteFileArgs{Path: "a.txt", Content: "A"})
	snap := sok[verbs.VfsSnapshotResult](e, chatA, "vfs.snapshot", verbs.VfsSnapshotArgs{}).Snapshot
	sok[verbs.FsWriteFileResult](e, chatB, "fs.writeFile", verbs.FsWriteFileArgs{Path: "b.txt", Content: "B"})

	// Half a day later B is used again; a day after the start A is idle.
	e.clock.Advance(12 * time.Hour)
	sok[verbs.FsListDirResult](e, chatB, "fs.listDir", verbs.FsListDirArgs{Path: "."})
	now := e.clock.Advance(12 * time.Hour)
	st, err := e.src.Sweep(now)
	if err != nil || st.Sessions != 1 || st.Snapshots != 0 {
		t.Fatalf("sweep: %+v %v", st, err)
	}
	if _, err := os.Stat(e.sessionDir(chatA)); !os.IsNotExist(err) {
		t.Fatalf("A's workspace still exists: %v", err)
	}
	if ms, _ := e.meta.List(chatA, "."); len(ms) != 0 {
		t.Fatalf("A's metadata kept: %v", ms)
	}
	if _, err := os.Stat(e.sessionDir(chatB)); err != nil {
		t.Fatalf("B's workspace was swept while in use: %v", err)
	}
	// A comes back to a fresh workspace, its snapshot still restorable.
	e.sfails(chatA, executor.CodeNotFound, "fs.readFile", verbs.FsReadFileArgs{Path: "a.txt"})
	sok[verbs.VfsRestoreResult](e, chatA, "vfs.restore", verbs.VfsRestoreArgs{SnapshotID: snap.SnapshotID})
	if r := sok[verbs.FsReadFileResult](e, chatA, "fs.readFile", verbs.FsReadFileArgs{Path: "a.txt"}); r.Content != "A" {
		t.Fatalf("restored %q", r.Content)
	}
	// Three days after it was taken the snapshot expires; idle sessions go
	// too, and then their directories.
	now = e.clock.Advance(2 * day)
	st, err = e.src.Sweep(now)
	if err != nil || st.Sessions != 2 || st.Snapshots != 1 {
		t.Fatalf("second sweep: %+v %v", st, err)
	}
	if st, err = e.src.Sweep(now); err != nil || st != (verbs.SweepStats{}) {
		t.Fatalf("third sweep: %+v %v", st, err)
	}
	if des, _ := os.ReadDir(e.root); len(des) != 0 {
		t.Fatalf("session directories left: %v", des)
	}
}

func TestSweepAfterRestart(t *testing.T) {
	e := newSessEnv(t, func(o *verbs.SessionOptions, _ *sessEnv) { o.IdleTTL = time.Hour })
	sok[verbs.FsWriteFileResult](e, chatA, "fs.writeFile", verbs.FsWriteFileArgs{Path: "a.txt", Content: "A"})
	// Records of a session whose directory is gone (a wiped temporary root).
	e.meta.Put("chat:telegram:999", verbs.Meta{Path: "ghost", Version: 3})
	e.reopen()
	// Sessions found on disk count as used when a sweep first sees them.
	now := e.clock.Advance(2 * time.Hour)
	st, err := e.src.Sweep(now)
	if err != nil || st.Sessions != 0 || st.Orphans != 1 {
		t.Fatalf("first sweep after restart: %+v %v", st, err)
	}
	if ids, _ := e.meta.Sessions(); !slices.Equal(ids, []string{chatA}) {
		t.Fatalf("metadata sessions %v", ids)
	}
	st, err = e.src.Sweep(e.clock.Advance(time.Hour))
	if err != nil || st.Sessions != 1 || st.Orphans != 1 {
		t.Fatalf("second sweep: %+v %v", st, err)
	}
	if des, _ := os.ReadDir(e.root); len(des) != 0 {
		t.Fatalf("left: %v", des)
	}
}

func TestConcurrentTurnsOfOneSession(t *testing.T) {
	e := newSessEnv(t, func(o *verbs.SessionOptions, _ *sessEnv) { o.Mounts = nil })
	sok[verbs.FsWriteFileResult](e, chatA, "fs.writeFile", verbs.FsWriteFileArgs{Path: "log", Content: ""})
	const n = 20
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if out := e.run(chatA, "fs.writeFile", verbs.FsWriteFileArgs{Path: "log", Content: fmt.Sprintf("line %02d\n", i), Mode: verbs.ModeAppend}); out.Err != nil {
				t.Errorf("append %d: %s", i, out.Err.Message)
			}
			if i%5 == 0 {
				if out := e.run(chatA, "vfs.snapshot", verbs.VfsSnapshotArgs{}); out.Err != nil {
					t.Errorf("snapshot: %s", out.Err.Message)
				}
			}
			if out := e.run(chatA, "vfs.info", verbs.VfsInfoArgs{}); out.Err != nil {
				t.Errorf("info: %s", out.Err.Message)
			}
		}()
	}
	wg.Wait()
	r := sok[verbs.FsReadFileResult](e, chatA, "fs.readFile", verbs.FsReadFileArgs{Path: "log"})
	lines := strings.Split(strings.TrimSuffix(r.Content, "\n"), "\n")
	slices.Sort(lines)
	if len(lines) != n || lines[0] != "line 00" || lines[n-1] != fmt.Sprintf("line %02d", n-1) || r.File.Version != n+1 {
		t.Fatalf("after %d concurrent appends: version %d, %d lines %v", n, r.File.Version, len(lines), lines)
	}
}

func TestProcRunInSessions(t *testing.T) {
	e := newSessEnv(t)
	e.sfails(chatA, executor.CodeForbidden, "proc.run", verbs.ProcRunArgs{Executable: "true", Arguments: []string{}}, "sessions.allow_proc")
	e = newSessEnv(t, func(o *verbs.SessionOptions, _ *sessEnv) { o.AllowProc = true })
	r := sok[verbs.ProcRunResult](e, chatA, "proc.run", verbs.ProcRunArgs{Executable: "ls", Arguments: []string{"docs"}})
	if r.ExitCode != 0 || !strings.Contains(r.StdoutTail, "guide.md") {
		t.Fatalf("ls in the session: %+v", r)
	}
	// A file the process made has a version once the hub sees it.
	sok[verbs.ProcRunResult](e, chatA, "proc.run", verbs.ProcRunArgs{Executable: "touch", Arguments: []string{"made"}})
	if f := sok[verbs.FsReadFileResult](e, chatA, "fs.readFile", verbs.FsReadFileArgs{Path: "made"}).File; f.Version != 1 || f.CreatedAt == "" {
		t.Fatalf("file made by a process: %+v", f)
	}
}

func TestSessionDirNames(t *testing.T) {
	seen := map[string]string{}
	for _, id := range []string{"web", "chat:telegram:-100:5", "chat:telegram:-100_5", "../..", ".", "a/b", strings.Repeat("x", verbs.MaxSessionID), "chat:discord:1", "chat:discord:1 "} {
		n := verbs.SessionDirName(id)
		if strings.ContainsAny(n, "/.:") || n == "" || len(n) > 70 {
			t.Errorf("SessionDirName(%q) = %q", id, n)
		}
		if other, dup := seen[n]; dup {
			t.Errorf("%q and %q share directory %s", id, other, n)
		}
		seen[n] = id
	}
	for _, bad := range []string{"", "a b", "tab\t", "caf\u00e9", strings.Repeat("x", verbs.MaxSessionID+1), "nul\x00"} {
		if err := verbs.ValidSessionID(bad); err == nil {
			t.Errorf("ValidSessionID(%q) accepted", bad)
		}
	}
}

func FuzzSessionDirName(f *testing.F) {
	for _, s := range []string{"web", "chat:telegram:-100:5", "../..", "a/b/c", "\x00", "é"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, id string) {
		n := verbs.SessionDirName(id)
		if n == "" || n == "." || n == ".." || strings.ContainsAny(n, "/\\\x00") || len(n) > 70 {
			t.Fatalf("SessionDirName(%q) = %q", id, n)
		}
	})
}

func TestSessionRootMustBeSafe(t *testing.T) {
	base := t.TempDir()
	meta := verbs.NewMemoryMeta()
	// A symbolic link planted where the root should be is refused.
	if err := os.Symlink(base, filepath.Join(base, "link")); err != nil {
		t.Fatal(err)
	}
	if _, err := verbs.OpenSessions(nil, verbs.SessionOptions{Root: filepath.Join(base, "link"), Meta: meta}); err == nil || !strings.Contains(err.Error(), "symbolic link") {
		t.Fatalf("link root: %v", err)
	}
	// An existing root open to others is made owner-only.
	open := filepath.Join(base, "open")
	os.Mkdir(open, 0o777)
	os.Chmod(open, 0o777)
	src, err := verbs.OpenSessions(nil, verbs.SessionOptions{Root: open, Meta: meta})
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	if fi, _ := os.Stat(open); fi.Mode().Perm() != 0o700 {
		t.Fatalf("root mode %v", fi.Mode().Perm())
	}
	if _, err := verbs.OpenSessions(nil, verbs.SessionOptions{Root: open}); err == nil {
		t.Fatal("no metadata store accepted")
	}
	// Without a host workspace, calls without a session fail clearly.
	ctxless := executor.NewRegistry()
	if err := verbs.Register(ctxless, src, verbs.DefaultOptions(base)); err != nil {
		t.Fatal(err)
	}
	out := executor.New(ctxless, executor.Options{}).ExecuteInput(t.Context(), []byte(`{"verb":"fs.listDir","arguments":{"path":"."}}`))
	if out.Err == nil || !strings.Contains(out.Err.Message, "no host workspace") {
		t.Fatalf("no host: %+v", out.Err)
	}
}

func TestSessionRootRemovedWhileRunning(t *testing.T) {
	e := newSessEnv(t)
	sok[verbs.FsWriteFileResult](e, chatA, "fs.writeFile", verbs.FsWriteFileArgs{Path: "a", Content: "a"})
	if err := os.RemoveAll(e.root); err != nil {
		t.Fatal(err)
	}
	sok[verbs.FsWriteFileResult](e, chatB, "fs.writeFile", verbs.FsWriteFileArgs{Path: "b", Content: "b"})
	if fi, err := os.Stat(e.root); err != nil || fi.Mode().Perm() != 0o700 {
		t.Fatalf("root not recreated owner-only: %v %v", fi, err)
	}
}

func TestRunSweeperStopsWithItsContext(t *testing.T) {
	e := newSessEnv(t, func(o *verbs.SessionOptions, _ *sessEnv) { o.IdleTTL = time.Minute })
	sok[verbs.FsWriteFileResult](e, chatA, "fs.writeFile", verbs.FsWriteFileArgs{Path: "a", Content: "a"})
	e.clock.Advance(time.Hour)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		e.src.RunSweeper(ctx, time.Millisecond)
		close(done)
	}()
	deadline := time.After(10 * time.Second)
	for {
		if _, err := os.Stat(e.sessionDir(chatA)); os.IsNotExist(err) {
			break
		}
		select {
		case <-deadline:
			t.Fatal("the sweeper never removed the idle session")
		case <-time.After(5 * time.Millisecond):
		}
	}
	cancel()
	<-done
}

// TestSessionRecreatedWhenItsDirectoryDisappears: a session whose directory
// (or its live workspace, or the whole root) is removed while the hub runs
// is built again from the mounts by the next call, which succeeds and says
// so in a note that the rendered reply shows.
func TestSessionRecreatedWhenItsDirectoryDisappears(t *testing.T) {
	for _, tc := range []struct {
		name   string
		remove func(e *sessEnv) string
		note   string
	}{
		{"session directory", func(e *sessEnv) string { return filepath.Dir(e.sessionDir(chatA)) }, "created again from the mounts"},
		{"live workspace", func(e *sessEnv) string { return e.sessionDir(chatA) }, "created again from the mounts"},
		{"sessions root", func(e *sessEnv) string { return e.root }, "created again from the mounts"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newSessEnv(t)
			sok[verbs.FsWriteFileResult](e, chatA, "fs.writeFile", verbs.FsWriteFileArgs{Path: "mine.txt", Content: "x"})
			if err := os.RemoveAll(tc.remove(e)); err != nil {
				t.Fatal(err)
			}
			out := e.run(chatA, "fs.listDir", verbs.FsListDirArgs{})
			if out.Err != nil {
				t.Fatalf("listDir after the removal: %v", out.Err)
			}
			if got := verbtest.EntryStrings(out.Value.(*verbs.FsListDirResult).Entries); !slices.Equal(got, []string{"docs/"}) {
				t.Fatalf("recreated workspace: %v, want the mounts only", got)
			}
			if len(out.Notes) != 1 || !strings.Contains(out.Notes[0], tc.note) {
				t.Fatalf("notes %q, want one saying %q", out.Notes, tc.note)
			}
			if txt := executor.RenderText(out, false); !strings.Contains(txt, "ℹ This session's workspace had disappeared") {
				t.Fatalf("rendered reply does not say so: %q", txt)
			}
			// The mounts' files are back with their records; the next call has no note.
			r := sok[verbs.FsReadFileResult](e, chatA, "fs.readFile", verbs.FsReadFileArgs{Path: "docs/guide.md"})
			if r.Content != "# Guide\n" || r.File.Version != 1 {
				t.Fatalf("mounted file: %q %+v", r.Content, r.File)
			}
			if out := e.run(chatA, "fs.exists", verbs.FsExistsArgs{Path: "docs"}); out.Err != nil || len(out.Notes) != 0 {
				t.Fatalf("next call: %v %q", out.Err, out.Notes)
			}
		})
	}
}
