package verbs_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/a6afc2ce/hermes-hub/clock"
	"github.com/a6afc2ce/hermes-hub/executor"
	"github.com/a6afc2ce/hermes-hub/verbs"
	"github.com/a6afc2ce/hermes-hub/verbs/internal/verbtest"
)

// TestStat describes files, directories, links inside the workspace and
// special files; the line count only when known or asked for, the SHA-256
// only when asked for.
func TestStat(t *testing.T) {
	e := verbtest.New(t)
	e.Put("a.txt", "one\ntwo\n")
	p := filepath.Join(e.Dir, "a.txt")
	if err := os.Chmod(p, 0o640); err != nil {
		t.Fatal(err)
	}
	mtime := time.Date(2026, 3, 4, 5, 6, 7, 890_000_000, time.UTC)
	if err := os.Chtimes(p, mtime, mtime); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("a.txt", filepath.Join(e.Dir, "link")); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(e.Dir, "tools"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(filepath.Join(e.Dir, "tools"), 0o755|os.ModeSetgid|os.ModeSticky); err != nil {
		t.Fatal(err)
	}

	r := verbtest.OK[verbs.FsStatResult](e, "fs.stat", verbs.FsStatArgs{Path: "a.txt"})
	if r.Type != verbs.TypeFile || r.Symlink || r.SizeBytes != 8 || r.Mode != "0640" || r.ModifiedAt != "2026-03-04T05:06:07.890Z" || r.LineCount != nil || r.Sha256 != "" {
		t.Fatalf("a.txt: %+v", r)
	}
	r = verbtest.OK[verbs.FsStatResult](e, "fs.stat", verbs.FsStatArgs{Path: "link", Sha256: true, CountLines: true})
	if r.Type != verbs.TypeFile || !r.Symlink || r.Sha256 != shaOf("one\ntwo\n") || r.LineCount == nil || *r.LineCount != 2 {
		t.Fatalf("link: %+v", r)
	}
	r = verbtest.OK[verbs.FsStatResult](e, "fs.stat", verbs.FsStatArgs{Path: "tools", Sha256: true, CountLines: true})
	if r.Type != verbs.TypeDirectory || r.Mode != "3755" || r.Sha256 != "" || r.LineCount != nil {
		t.Fatalf("tools: %+v", r)
	}
	if r := verbtest.OK[verbs.FsStatResult](e, "fs.stat", verbs.FsStatArgs{Path: "."}); r.Type != verbs.TypeDirectory {
		t.Fatalf(".: %+v", r)
	}
	e.Fails(executor.CodeNotFound, "fs.stat", verbs.FsStatArgs{Path: "missing"}, "missing")
	e.Fails(executor.CodeNotADirectory, "fs.stat", verbs.FsStatArgs{Path: "a.txt/x"}, "a.txt/x")

	// A count the line cache holds is given without asking.
	s := setAt(t, e, clock.Real{}.Now().Add(time.Hour))
	if _, err := s.LineCount(context.Background(), verbs.FsLineCountArgs{Path: "a.txt"}); err != nil {
		t.Fatal(err)
	}
	st, err := s.Stat(context.Background(), verbs.FsStatArgs{Path: "a.txt"})
	if err != nil || st.LineCount == nil || *st.LineCount != 2 {
		t.Fatalf("cached count: %+v %v", st, err)
	}
}

// TestStatSession: a session file's version and creation time.
func TestStatSession(t *testing.T) {
	e := newSessEnv(t)
	const s = "chat:telegram:9"
	sok[verbs.FsWriteFileResult](e, s, "fs.writeFile", map[string]any{"path": "n.md", "content": "a"})
	e.clock.Advance(time.Minute)
	sok[verbs.FsWriteFileResult](e, s, "fs.writeFile", map[string]any{"path": "n.md", "content": "b", "mode": "append"})
	r := sok[verbs.FsStatResult](e, s, "fs.stat", map[string]any{"path": "n.md"})
	if r.Version != 2 || r.CreatedAt != ms(t0) || r.SizeBytes != 2 {
		t.Fatalf("session stat: %+v", r)
	}
}

// TestReadMany reads files in order, each with its own outcome, within
// the count and byte limits.
func TestReadMany(t *testing.T) {
	e := verbtest.New(t, func(_ *verbs.Options, wo *verbs.WorkspaceOptions) { wo.MaxReadBytes = 100 })
	e.Put("a.txt", "alpha\n")
	e.Put("b.bin", "\x00\x01")
	e.Put("big.txt", strings.Repeat("x", 101))
	e.Put("sixty.txt", strings.Repeat("6", 60))
	e.Put("forty.txt", strings.Repeat("4", 40))
	e.Put("d/x", "")
	r := verbtest.OK[verbs.FsReadManyResult](e, "fs.readMany", verbs.FsReadManyArgs{Paths: []string{"a.txt", "missing", "b.bin", "d", ".hub/hub.db", "../outside/secret.txt", "big.txt", "a.txt"}})
	want := []struct {
		ok      bool
		content string
		code    executor.ErrorCode
		part    string
	}{
		{true, "alpha\n", "", ""},
		{false, "", executor.CodeNotFound, "missing"},
		{true, "AAE=", "", ""},
		{false, "", executor.CodeIsADirectory, "Path is a directory: d"},
		{false, "", executor.CodeForbiddenPath, ".hub"},
		{false, "", executor.CodeForbiddenPath, "'..'"},
		{false, "", executor.CodeTooLarge, "File big.txt is 101 bytes; fs.readMany returns at most 100 in all"},
		{true, "alpha\n", "", ""},
	}
	if len(r.Files) != len(want) {
		t.Fatalf("%d files", len(r.Files))
	}
	for i, w := range want {
		f := r.Files[i]
		if f.Path == "" || f.Succeeded != w.ok || f.Content != w.content || f.ErrorCode != w.code || !strings.Contains(f.ErrorMessage, w.part) {
			t.Errorf("file %d: %+v, want %+v", i, f, w)
		}
		if strings.Contains(f.ErrorMessage, e.Base) {
			t.Errorf("file %d: the message shows a host path: %s", i, f.ErrorMessage)
		}
	}
	if f := r.Files[2].File; f == nil || f.Encoding != verbs.EncodingBase64 || f.SizeBytes != 2 {
		t.Errorf("binary file: %+v", f)
	}
	// 6 + 60 + 40 > 100: the third does not fit in what is left; a smaller
	// file after it still does.
	r = verbtest.OK[verbs.FsReadManyResult](e, "fs.readMany", verbs.FsReadManyArgs{Paths: []string{"a.txt", "sixty.txt", "forty.txt", "a.txt"}})
	if !r.Files[0].Succeeded || !r.Files[1].Succeeded || r.Files[2].Succeeded || !r.Files[3].Succeeded {
		t.Fatalf("budget: %+v", r.Files)
	}
	if m := r.Files[2].ErrorMessage; !strings.Contains(m, "File forty.txt is 40 bytes, more than the 34 left of the 100 fs.readMany returns in one call") {
		t.Errorf("over the budget: %s", m)
	}
	e.Fails(executor.CodeInvalidArguments, "fs.readMany", verbs.FsReadManyArgs{Paths: []string{}}, "paths names 0 files; fs.readMany reads 1 to 32 per call")
	e.Fails(executor.CodeInvalidArguments, "fs.readMany", verbs.FsReadManyArgs{Paths: make([]string, 33)}, "paths names 33 files")
}

// TestStatNamedPipe: a named pipe is described, never opened (opening it
// would block).
func TestStatNamedPipe(t *testing.T) {
	e := verbtest.New(t)
	mkfifo(t, filepath.Join(e.Dir, "fifo"))
	r := verbtest.OK[verbs.FsStatResult](e, "fs.stat", verbs.FsStatArgs{Path: "fifo", Sha256: true, CountLines: true})
	if r.Type != verbs.TypeNamedPipe || r.Sha256 != "" || r.LineCount != nil {
		t.Fatalf("fifo: %+v", r)
	}
}
