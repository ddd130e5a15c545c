package verbs_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/a6afc2ce/hermes-hub/executor"
	"github.com/a6afc2ce/hermes-hub/verbs"
	"github.com/a6afc2ce/hermes-hub/verbs/internal/verbtest"
)

func TestWriteRange(t *testing.T) {
	e := verbtest.New(t)
	long := strings.Repeat("z", 200000) // longer than the 64 KiB read buffer
	for _, c := range []struct {
		name    string
		file    string
		start   int
		end     *int
		content string
		want    string
	}{
		{"replace one line", "a\nb\nc\n", 2, verbtest.Ptr(2), "B", "a\nB\nc\n"},
		{"replace a range", "a\nb\nc\nd\n", 2, verbtest.Ptr(3), "X\nY\nZ", "a\nX\nY\nZ\nd\n"},
		{"replace with fewer lines", "a\nb\nc\nd\n", 1, verbtest.Ptr(3), "X", "X\nd\n"},
		{"delete a range", "a\nb\nc\nd\n", 2, verbtest.Ptr(3), "", "a\nd\n"},
		{"content's final newline is an ending", "a\nb\n", 1, verbtest.Ptr(1), "X\n", "X\nb\n"},
		{"content's empty line", "a\nb\n", 1, verbtest.Ptr(1), "\n", "\nb\n"},
		{"insert before a line", "a\nb\n", 2, nil, "new", "a\nnew\nb\n"},
		{"insert at the top", "a\nb\n", 1, nil, "n1\nn2", "n1\nn2\na\nb\n"},
		{"append at count+1", "a\nb\n", 3, nil, "c", "a\nb\nc\n"},
		{"append without final newline", "a\nb", 3, nil, "c", "a\nb\nc"},
		{"replace last line without final newline", "a\nb", 2, verbtest.Ptr(2), "B", "a\nB"},
		{"replace middle without final newline", "a\nb\nc", 2, verbtest.Ptr(2), "B", "a\nB\nc"},
		{"delete last line without final newline", "a\nb\nc", 3, verbtest.Ptr(3), "", "a\nb"},
		{"delete last lines with final newline", "a\nb\nc\n", 2, verbtest.Ptr(3), "", "a\n"},
		{"delete everything", "a\nb\n", 1, verbtest.Ptr(2), "", ""},
		{"CRLF stays CRLF", "a\r\nb\r\nc\r\n", 2, verbtest.Ptr(2), "X\nY", "a\r\nX\r\nY\r\nc\r\n"},
		{"CRLF content into LF file", "a\nb\n", 1, verbtest.Ptr(1), "X\r\nY\r\n", "X\nY\nb\n"},
		{"CRLF append without final newline", "a\r\nb", 3, nil, "c", "a\r\nb\r\nc"},
		{"CRLF delete last lines", "a\r\nb\r\nc", 2, verbtest.Ptr(3), "", "a"},
		{"untouched lines keep their own endings", "a\r\nb\nc\r\n", 3, verbtest.Ptr(3), "C", "a\r\nb\nC\r\n"},
		{"insert into empty file", "", 1, nil, "x\ny", "x\ny"},
		{"insert into empty file with newline", "", 1, nil, "x\ny\n", "x\ny\n"},
		{"long lines copied", "s\n" + long + "\n" + long, 1, verbtest.Ptr(1), "S", "S\n" + long + "\n" + long},
		{"long line replaced", long + "\nb\n", 1, verbtest.Ptr(1), "a", "a\nb\n"},
	} {
		t.Run(c.name, func(t *testing.T) {
			e.Put("f.txt", c.file)
			verbtest.OK[verbs.FsWriteRangeResult](e, "fs.writeRange", verbs.FsWriteRangeArgs{Path: "f.txt", StartLine: c.start, EndLine: c.end, Content: c.content})
			if got := e.Get("f.txt"); got != c.want {
				t.Errorf("file %.60q, want %.60q", got, c.want)
			}
		})
	}
	noTempFiles(t, e.Dir)
}

func TestWriteRangeFailures(t *testing.T) {
	e := verbtest.New(t, func(_ *verbs.Options, w *verbs.WorkspaceOptions) { w.MaxWriteChars = 20 })
	const orig = "a\nb\nc\n"
	e.Put("f.txt", orig)
	e.Put("d/x", "")
	for _, c := range []struct {
		start int
		end   *int
		msg   string
	}{
		{0, verbtest.Ptr(1), "Invalid line range: 0-1 (file has 3 lines"},
		{2, verbtest.Ptr(1), "Invalid line range: 2-1 (file has 3 lines"},
		{3, verbtest.Ptr(4), "Invalid line range: 3-4 (file has 3 lines"},
		{4, verbtest.Ptr(4), "Invalid line range: 4-4 (file has 3 lines"},
		{9, verbtest.Ptr(12), "Invalid line range: 9-12 (file has 3 lines"},
		{5, nil, "insert before line 5 (file has 3 lines; insert before lines 1 to 4"},
		{0, nil, "insert before line 0 (file has 3 lines"},
		{-1, nil, "insert before line -1"},
	} {
		e.Fails(executor.CodeInvalidArguments, "fs.writeRange", verbs.FsWriteRangeArgs{Path: "f.txt", StartLine: c.start, EndLine: c.end, Content: "X"}, c.msg)
	}
	e.Fails(executor.CodeTooLarge, "fs.writeRange", verbs.FsWriteRangeArgs{Path: "f.txt", StartLine: 1, EndLine: verbtest.Ptr(1), Content: strings.Repeat("x", 21)}, "21 characters")
	e.Fails(executor.CodeNotFound, "fs.writeRange", verbs.FsWriteRangeArgs{Path: "none.txt", StartLine: 1, Content: "x"}, "File not found: none.txt")
	e.Fails(executor.CodeIsADirectory, "fs.writeRange", verbs.FsWriteRangeArgs{Path: "d", StartLine: 1, Content: "x"})
	if got := e.Get("f.txt"); got != orig {
		t.Errorf("a refused writeRange changed the file: %q", got)
	}
	noTempFiles(t, e.Dir)
}

func TestWriteRangeKeepsMode(t *testing.T) {
	e := verbtest.New(t)
	e.Put("run.sh", "#!/bin/sh\necho a\n")
	p := filepath.Join(e.Dir, "run.sh")
	if err := os.Chmod(p, 0o750); err != nil {
		t.Fatal(err)
	}
	verbtest.OK[verbs.FsWriteRangeResult](e, "fs.writeRange", verbs.FsWriteRangeArgs{Path: "run.sh", StartLine: 2, EndLine: verbtest.Ptr(2), Content: "echo b"})
	if fi, _ := os.Stat(p); fi.Mode().Perm() != 0o750 {
		t.Errorf("mode %v, want 0750", fi.Mode().Perm())
	}
	if got := e.Get("run.sh"); got != "#!/bin/sh\necho b\n" {
		t.Errorf("content %q", got)
	}
}
