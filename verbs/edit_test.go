package verbs_test

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/a6afc2ce/hermes-hub/executor"
	"github.com/a6afc2ce/hermes-hub/verbs"
	"github.com/a6afc2ce/hermes-hub/verbs/internal/verbtest"
)

func shaOf(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}

const goSource = "package main\n\nimport \"fmt\"\n\nfunc main() {\n\tfmt.Println(\"hello\")\n}\n"

// TestEdit replaces one passage: the file holds the new text, keeps its
// permissions, and the result carries the diff, the count and the new
// SHA-256.
func TestEdit(t *testing.T) {
	e := verbtest.New(t)
	e.Put("main.go", goSource)
	if err := os.Chmod(filepath.Join(e.Dir, "main.go"), 0o640); err != nil {
		t.Fatal(err)
	}
	r := verbtest.OK[verbs.FsEditResult](e, "fs.edit", map[string]any{"path": "main.go", "oldText": `fmt.Println("hello")`, "newText": `fmt.Println("hello, world")`})
	want := strings.Replace(goSource, `"hello"`, `"hello, world"`, 1)
	if got := e.Get("main.go"); got != want {
		t.Fatalf("file holds %q", got)
	}
	wantDiff := "--- a/main.go\n+++ b/main.go\n@@ -3,5 +3,5 @@\n import \"fmt\"\n \n func main() {\n-\tfmt.Println(\"hello\")\n+\tfmt.Println(\"hello, world\")\n }\n"
	if r.Diff != wantDiff || r.Replacements != 1 || r.DryRun || r.Sha256 != shaOf(want) {
		t.Fatalf("result %+v\ndiff\n%s", r, r.Diff)
	}
	if r.File == nil || r.File.SizeBytes != int64(len(want)) || r.File.Version != 0 {
		t.Fatalf("file %+v", r.File)
	}
	fi, err := os.Stat(filepath.Join(e.Dir, "main.go"))
	if err != nil || fi.Mode().Perm() != 0o640 {
		t.Fatalf("mode after the edit: %v %v", fi.Mode(), err)
	}
	// Nothing is left beside it.
	entries, _ := os.ReadDir(e.Dir)
	for _, de := range entries {
		if strings.Contains(de.Name(), ".tmp-") {
			t.Errorf("left behind: %s", de.Name())
		}
	}
}

// TestEditMany applies edits in order, each to the result of the one
// before, with replaceAll per edit; a failing edit leaves the file as it
// was.
func TestEditMany(t *testing.T) {
	e := verbtest.New(t)
	e.Put("a.txt", "alpha\nbeta\nalpha\ngamma\n")
	r := verbtest.OK[verbs.FsEditResult](e, "fs.edit", map[string]any{"path": "a.txt", "edits": []map[string]any{
		{"oldText": "alpha", "newText": "ALPHA", "replaceAll": true},
		{"oldText": "ALPHA\nbeta", "newText": "one"}, // only after the first edit
		{"oldText": "gamma\n", "newText": ""},
	}})
	if got := e.Get("a.txt"); got != "one\nALPHA\n" || r.Replacements != 4 {
		t.Fatalf("file %q, %d replacements", got, r.Replacements)
	}
	before := e.Get("a.txt")
	e.Fails(executor.CodeInvalidArguments, "fs.edit", map[string]any{"path": "a.txt", "edits": []map[string]any{
		{"oldText": "one", "newText": "two"},
		{"oldText": "missing", "newText": "x"},
	}}, "The oldText of edit 2 of 2 does not occur in a.txt after the edits before it", "nothing was changed")
	if got := e.Get("a.txt"); got != before {
		t.Fatalf("a failed edit changed the file: %q", got)
	}
}

// TestEditRefusals: each refusal says why, and leaves the file as it was.
func TestEditRefusals(t *testing.T) {
	e := verbtest.New(t, func(_ *verbs.Options, wo *verbs.WorkspaceOptions) { wo.MaxWriteChars = 50; wo.MaxReadBytes = 1000 })
	e.Put("a.txt", "one\ntwo\none\nthree\nthreefold\n")
	e.Put("bin.dat", "text\x00more")
	e.Put("latin1.txt", "caf\xe9\n")
	e.Put("big.txt", strings.Repeat("x", 1001))
	e.Put("dir/x.txt", "x")
	e.Put("same.txt", "x\nxaaax\n")
	e.Put("many.txt", strings.Repeat("o\n", 100))
	old := e.Get("a.txt")
	for _, c := range []struct {
		name  string
		code  executor.ErrorCode
		args  map[string]any
		parts []string
	}{
		{"no match", executor.CodeInvalidArguments, map[string]any{"path": "a.txt", "oldText": "four", "newText": "4"},
			[]string{"oldText does not occur in a.txt", "nothing was changed", "indentation and line breaks"}},
		{"two matches", executor.CodeInvalidArguments, map[string]any{"path": "a.txt", "oldText": "one\n", "newText": "1\n"},
			[]string{"oldText occurs 2 times in a.txt (lines 1 and 3)", "include more of the surrounding text", "replaceAll"}},
		{"overlapping matches", executor.CodeInvalidArguments, map[string]any{"path": "a.txt", "oldText": "three", "newText": "3"},
			[]string{"occurs 2 times", "lines 4 and 5"}},
		{"matches on one line", executor.CodeInvalidArguments, map[string]any{"path": "same.txt", "oldText": "aa", "newText": "b"},
			[]string{"occurs 2 times in same.txt (on line 2)"}},
		{"many matches", executor.CodeInvalidArguments, map[string]any{"path": "a.txt", "oldText": "e", "newText": "E"},
			[]string{"occurs 6 times in a.txt (lines 1, 3, 4, 5, …)"}},
		{"binary", executor.CodeInvalidArguments, map[string]any{"path": "bin.dat", "oldText": "text", "newText": "t"},
			[]string{"File bin.dat is binary", "text files only"}},
		{"invalid utf-8", executor.CodeInvalidArguments, map[string]any{"path": "latin1.txt", "oldText": "caf", "newText": "cafe"},
			[]string{"latin1.txt is binary", "invalid UTF-8"}},
		{"stale sha256", executor.CodeConflict, map[string]any{"path": "a.txt", "oldText": "two", "newText": "2", "expectedSha256": shaOf("something else")},
			[]string{"File a.txt changed since the version the edit is based on", "its SHA-256 is " + shaOf(old), "not " + shaOf("something else"), "nothing was written"}},
		{"malformed sha256", executor.CodeInvalidArguments, map[string]any{"path": "a.txt", "oldText": "two", "newText": "2", "expectedSha256": "abc"},
			[]string{`expectedSha256 "abc" is not a SHA-256`, "64 hexadecimal digits"}},
		{"both forms", executor.CodeInvalidArguments, map[string]any{"path": "a.txt", "oldText": "two", "newText": "2", "edits": []map[string]any{{"oldText": "a", "newText": "b"}}},
			[]string{"Give oldText and newText, or edits, not both"}},
		{"neither", executor.CodeInvalidArguments, map[string]any{"path": "a.txt"}, []string{"Nothing to edit"}},
		{"no newText", executor.CodeInvalidArguments, map[string]any{"path": "a.txt", "oldText": "two"}, []string{"newText is missing", `"" deletes it`}},
		{"empty oldText", executor.CodeInvalidArguments, map[string]any{"path": "a.txt", "oldText": "", "newText": "x"}, []string{"oldText is empty"}},
		{"misspelt key in an edit", executor.CodeInvalidArguments, map[string]any{"path": "a.txt", "edits": []map[string]any{{"oldText": "two", "newTxt": "2"}}},
			[]string{`unknown field "newTxt"`}},
		{"edit without newText", executor.CodeInvalidArguments, map[string]any{"path": "a.txt", "edits": []map[string]any{{"oldText": "two"}}},
			[]string{"an edit needs both oldText and newText"}},
		{"replaceAll with edits", executor.CodeInvalidArguments, map[string]any{"path": "a.txt", "replaceAll": true, "edits": []map[string]any{{"oldText": "two", "newText": "2"}}},
			[]string{"set replaceAll on each edit"}},
		{"new text over the write limit", executor.CodeTooLarge, map[string]any{"path": "a.txt", "oldText": "two", "newText": strings.Repeat("é", 51)},
			[]string{"The new text is 51 characters", "at most 50", "verbs.max_write_chars"}},
		{"an edit making the file too large", executor.CodeTooLarge, map[string]any{"path": "many.txt", "oldText": "o", "newText": strings.Repeat("o", 45), "replaceAll": true},
			[]string{"The edits would make many.txt 4600 bytes; fs.edit writes files of at most 1000 (verbs.max_read_bytes)"}},
		{"file over the read limit", executor.CodeTooLarge, map[string]any{"path": "big.txt", "oldText": "x", "newText": "y", "replaceAll": true},
			[]string{"File big.txt is 1001 bytes", "at most 1000", "verbs.max_read_bytes"}},
		{"missing file", executor.CodeNotFound, map[string]any{"path": "nope.txt", "oldText": "a", "newText": "b"}, []string{"nope.txt"}},
		{"directory", executor.CodeIsADirectory, map[string]any{"path": "dir", "oldText": "a", "newText": "b"}, []string{"dir"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			e.Fails(c.code, "fs.edit", c.args, c.parts...)
			if got := e.Get("a.txt"); got != old {
				t.Fatalf("a.txt changed: %q", got)
			}
		})
	}
	// The right SHA-256, in capitals too, lets the edit through.
	r := verbtest.OK[verbs.FsEditResult](e, "fs.edit", map[string]any{"path": "a.txt", "oldText": "two", "newText": "2", "expectedSha256": strings.ToUpper(shaOf(old))})
	if r.Sha256 != shaOf(e.Get("a.txt")) || !strings.Contains(e.Get("a.txt"), "\n2\n") {
		t.Fatalf("edit with the current sha256: %+v", r)
	}
	// replaceAll replaces every one.
	r = verbtest.OK[verbs.FsEditResult](e, "fs.edit", map[string]any{"path": "a.txt", "oldText": "one", "newText": "1", "replaceAll": true})
	if r.Replacements != 2 || strings.Contains(e.Get("a.txt"), "one") {
		t.Fatalf("replaceAll: %+v %q", r, e.Get("a.txt"))
	}
}

// TestEditDryRun returns the diff and the current SHA-256 and writes
// nothing; an edit that changes nothing writes nothing either.
func TestEditDryRun(t *testing.T) {
	e := verbtest.New(t)
	e.Put("a.txt", "x\ny\n")
	fi0, _ := os.Stat(filepath.Join(e.Dir, "a.txt"))
	r := verbtest.OK[verbs.FsEditResult](e, "fs.edit", map[string]any{"path": "a.txt", "oldText": "y", "newText": "z", "dryRun": true})
	if !r.DryRun || r.Diff != "--- a/a.txt\n+++ b/a.txt\n@@ -1,2 +1,2 @@\n x\n-y\n+z\n" || r.Sha256 != shaOf("x\ny\n") {
		t.Fatalf("dry run: %+v", r)
	}
	r = verbtest.OK[verbs.FsEditResult](e, "fs.edit", map[string]any{"path": "a.txt", "oldText": "y", "newText": "y"})
	if r.Diff != "" || r.Replacements != 1 {
		t.Fatalf("no-op edit: %+v", r)
	}
	fi1, _ := os.Stat(filepath.Join(e.Dir, "a.txt"))
	if e.Get("a.txt") != "x\ny\n" || !os.SameFile(fi0, fi1) {
		t.Fatal("a dry run or a no-op edit replaced the file")
	}
}

// TestEditCRLF: in a file with CRLF line endings, texts given with LF
// match and are written with CRLF.
func TestEditCRLF(t *testing.T) {
	e := verbtest.New(t)
	e.Put("w.txt", "a\r\nb\r\nc\r\n")
	verbtest.OK[verbs.FsEditResult](e, "fs.edit", map[string]any{"path": "w.txt", "oldText": "a\nb\n", "newText": "A\nB\nB2\n"})
	if got := e.Get("w.txt"); got != "A\r\nB\r\nB2\r\nc\r\n" {
		t.Fatalf("file %q", got)
	}
	// A text with its own CR is matched as it is.
	verbtest.OK[verbs.FsEditResult](e, "fs.edit", map[string]any{"path": "w.txt", "oldText": "c\r\n", "newText": "d\n"})
	if got := e.Get("w.txt"); got != "A\r\nB\r\nB2\r\nd\n" {
		t.Fatalf("file %q", got)
	}
}

// TestEditSession: in a session workspace an edit is a write (the version
// grows); a dry run is not.
func TestEditSession(t *testing.T) {
	e := newSessEnv(t)
	const s = "chat:telegram:7"
	w := sok[verbs.FsWriteFileResult](e, s, "fs.writeFile", map[string]any{"path": "n.md", "content": "# title\nbody\n"})
	if w.File.Version != 1 {
		t.Fatalf("version %d", w.File.Version)
	}
	d := sok[verbs.FsEditResult](e, s, "fs.edit", map[string]any{"path": "n.md", "oldText": "body", "newText": "text", "dryRun": true})
	if d.File.Version != 1 {
		t.Fatalf("a dry run reports version %d", d.File.Version)
	}
	r := sok[verbs.FsEditResult](e, s, "fs.edit", map[string]any{"path": "n.md", "oldText": "body", "newText": "text"})
	if r.File.Version != 2 || r.File.UpdatedAt == "" {
		t.Fatalf("after the edit: %+v", r.File)
	}
	if b, err := os.ReadFile(filepath.Join(e.sessionDir(s), "n.md")); err != nil || string(b) != "# title\ntext\n" {
		t.Fatalf("session file %q %v", b, err)
	}
	// A file written as base64 is binary to fs.edit, whatever it holds.
	sok[verbs.FsWriteFileResult](e, s, "fs.writeFile", map[string]any{"path": "b.bin", "content": "aGVsbG8=", "encoding": "base64"})
	e.sfails(s, executor.CodeInvalidArguments, "fs.edit", map[string]any{"path": "b.bin", "oldText": "hello", "newText": "x"}, "is binary")
	// The host workspace is not the session's.
	if _, err := os.Stat(filepath.Join(e.hostDir, "n.md")); err == nil {
		t.Fatal("the session's edit reached the host workspace")
	}
}

// TestFileVerbsSessionConfinement: in a session workspace the new verbs
// reach the session's own files only: a link to the host workspace or to
// another session's file, and `..`, are refused; another session's file is
// not there.
func TestFileVerbsSessionConfinement(t *testing.T) {
	e := newSessEnv(t)
	sok[verbs.FsWriteFileResult](e, chatA, "fs.writeFile", map[string]any{"path": "mine.txt", "content": "A's\n"})
	sok[verbs.FsWriteFileResult](e, chatB, "fs.writeFile", map[string]any{"path": "theirs.txt", "content": "B's\n"})
	dir := e.sessionDir(chatA)
	for name, target := range map[string]string{
		"to-host":  filepath.Join(e.hostDir, "host-only.txt"),
		"to-other": filepath.Join(e.sessionDir(chatB), "theirs.txt"),
		"up":       "../../" + verbs.SessionDirName(chatB) + "/live/theirs.txt",
	} {
		if err := os.Symlink(target, filepath.Join(dir, name)); err != nil {
			t.Fatal(err)
		}
	}
	for _, p := range []string{"to-host", "to-other", "up", "../x", "a/../../theirs.txt"} {
		for _, c := range []struct {
			verb string
			args map[string]any
		}{
			{"fs.edit", map[string]any{"path": p, "oldText": "s", "newText": "x"}},
			{"fs.edit", map[string]any{"path": p, "oldText": "s", "newText": "x", "dryRun": true}},
			{"fs.stat", map[string]any{"path": p, "sha256": true}},
			{"fs.readRange", map[string]any{"path": p, "lastLines": 1}},
		} {
			e.sfails(chatA, executor.CodeForbiddenPath, c.verb, c.args)
		}
		r := sok[verbs.FsReadManyResult](e, chatA, "fs.readMany", map[string]any{"paths": []string{p}})
		if f := r.Files[0]; f.Succeeded || f.ErrorCode != executor.CodeForbiddenPath {
			t.Errorf("fs.readMany %q: %+v", p, f)
		}
	}
	e.sfails(chatA, executor.CodeNotFound, "fs.edit", map[string]any{"path": "theirs.txt", "oldText": "B", "newText": "A"})
	if b, _ := os.ReadFile(filepath.Join(e.sessionDir(chatB), "theirs.txt")); string(b) != "B's\n" {
		t.Fatalf("B's file holds %q", b)
	}
	if b, _ := os.ReadFile(filepath.Join(e.hostDir, "host-only.txt")); string(b) != "host\n" {
		t.Fatalf("the host file holds %q", b)
	}
}

// TestEditCountsOccurrencesUpToABound: an oldText found very many times
// (overlapping ones too) is counted up to a bound, which the error says.
func TestEditCountsOccurrencesUpToABound(t *testing.T) {
	e := verbtest.New(t)
	e.Put("a.txt", strings.Repeat("a", 5000)+"\n")
	e.Fails(executor.CodeInvalidArguments, "fs.edit", map[string]any{"path": "a.txt", "oldText": strings.Repeat("a", 100), "newText": "b"},
		"occurs at least 1000 times in a.txt (on line 1, …)")
	e.Fails(executor.CodeInvalidArguments, "fs.edit", map[string]any{"path": "a.txt", "oldText": strings.Repeat("a", 4500), "newText": "b"},
		"occurs 501 times in a.txt (on line 1, …)")
}
