package verbs_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/a6afc2ce/hermes-hub/executor"
	"github.com/a6afc2ce/hermes-hub/verbs"
	"github.com/a6afc2ce/hermes-hub/verbs/internal/verbtest"
)

// hits are a search's matches as "path:line:column:text".
func hits(r verbs.FsSearchResult) []string {
	out := []string{}
	for _, m := range r.Matches {
		out = append(out, fmt.Sprintf("%s:%d:%d:%s", m.Path, m.Line, m.Column, m.Text))
	}
	return out
}

func paths(r verbs.FsSearchResult) []string {
	out := []string{}
	for _, m := range r.Matches {
		if len(out) == 0 || out[len(out)-1] != m.Path {
			out = append(out, m.Path)
		}
	}
	return out
}

func found(r verbs.FsFindResult) []string {
	out := []string{}
	for _, e := range r.Entries {
		out = append(out, string(e.Type)+" "+e.Path)
	}
	return out
}

func searchOK(e *verbtest.Env, args map[string]any) verbs.FsSearchResult {
	e.T.Helper()
	return verbtest.OK[verbs.FsSearchResult](e, "fs.search", args)
}

func same(t *testing.T, what string, got, want []string) {
	t.Helper()
	if !slices.Equal(got, want) {
		t.Errorf("%s:\n got %q\nwant %q", what, got, want)
	}
}

func TestSearchFindsLines(t *testing.T) {
	e := verbtest.New(t)
	e.Put("b.go", "package b\n\nfunc (s *Server) Close() error { return nil }\n")
	e.Put("a/x.go", "// Close closes\nfunc (c *conn) Close() {}\r\nfunc Close() {}\n")
	e.Put("a/y.txt", "nothing here\n")
	r := searchOK(e, map[string]any{"pattern": `func \(\w+ \*\w+\) Close\(`})
	same(t, "regexp", hits(r), []string{"a/x.go:2:1:func (c *conn) Close() {}", "b.go:3:1:func (s *Server) Close() error { return nil }"})
	if r.Truncated || r.FilesSearched != 3 || r.FilesSkipped != 0 {
		t.Errorf("truncated %v, searched %d, skipped %d", r.Truncated, r.FilesSearched, r.FilesSkipped)
	}
	r = searchOK(e, map[string]any{"pattern": "Close(", "fixedStrings": true, "path": "a"})
	same(t, "literal under a", hits(r), []string{"a/x.go:2:16:func (c *conn) Close() {}", "a/x.go:3:6:func Close() {}"})
	r = searchOK(e, map[string]any{"pattern": "CLOSES", "ignoreCase": true, "fixedStrings": true})
	same(t, "ignoreCase", hits(r), []string{"a/x.go:1:10:// Close closes"})
	r = searchOK(e, map[string]any{"pattern": "^$"})
	same(t, "an empty line", hits(r), []string{"b.go:2:1:"})
	r = searchOK(e, map[string]any{"pattern": "Close", "path": "b.go"})
	same(t, "one file", hits(r), []string{"b.go:3:18:func (s *Server) Close() error { return nil }"})
	r = searchOK(e, map[string]any{"pattern": "Close", "include": []string{"*.txt"}})
	same(t, "include", hits(r), []string{})
	r = searchOK(e, map[string]any{"pattern": "Close", "exclude": []string{"a"}})
	same(t, "exclude a directory", paths(r), []string{"b.go"})
	r = searchOK(e, map[string]any{"pattern": "Close", "include": []string{"a/*.go"}})
	same(t, "include a path", paths(r), []string{"a/x.go"})

	e.Fails(executor.CodeInvalidArguments, "fs.search", map[string]any{"pattern": "a("}, "not a valid regular expression", "fixedStrings")
	e.Fails(executor.CodeInvalidArguments, "fs.search", map[string]any{"pattern": ""}, "empty")
	e.Fails(executor.CodeInvalidArguments, "fs.search", map[string]any{"pattern": "a\nb"}, "line break")
	e.Fails(executor.CodeInvalidArguments, "fs.search", map[string]any{"pattern": "a", "include": []string{"[a"}}, "include glob", "accepted")
	e.Fails(executor.CodeNotFound, "fs.search", map[string]any{"pattern": "a", "path": "nope"}, "nope")
}

// The regular expression runs only on the lines holding its longest
// required literal, and in either case when asked: the prefilter never
// hides a match the expression alone would find.
func TestSearchPrefilterAgreesWithTheExpression(t *testing.T) {
	e := verbtest.New(t)
	lines := []string{
		"Kelvin \u212aelvin kelvin", "ſtraße STRASSE strasse", "x.Close(y)", "x.close(y)", "abcabc", "ab\tc",
		"func (a *B) Close(", "func (a B) Close(", "Ünïcode ünïcode", "", "end",
	}
	e.Put("f.txt", strings.Join(lines, "\n")+"\n")
	for _, tc := range []struct {
		pattern    string
		ignoreCase bool
	}{
		{"kelvin", true}, {"KELVIN", true}, {"strasse", true}, {"STRAßE", true}, {"close\\(", true}, {"Close\\(", false},
		{"(abc)+", false}, {"a(b|x)c", false}, {"b\\s+c", false}, {`func \(\w+ \*?\w+\) Close\(`, false},
		{"ünïcode", true}, {"^end$", false}, {"^$", false}, {"x{0}", false}, {"[sS]trasse", false},
	} {
		prefix := ""
		if tc.ignoreCase {
			prefix = "(?i)"
		}
		re := regexp.MustCompile(prefix + tc.pattern)
		var want []string
		for i, l := range lines {
			if loc := re.FindStringIndex(l); loc != nil {
				want = append(want, fmt.Sprintf("f.txt:%d:%d:%s", i+1, loc[0]+1, l))
			}
		}
		r := searchOK(e, map[string]any{"pattern": tc.pattern, "ignoreCase": tc.ignoreCase})
		same(t, tc.pattern, hits(r), append([]string{}, want...))
	}
}

// Files larger than a read piece are searched piece by piece: line
// numbers, columns and context lines across the pieces are those of a
// plain reading, line by line.
func TestSearchAcrossPieces(t *testing.T) {
	e := verbtest.New(t)
	var b strings.Builder
	var lines []string
	for i := 1; i <= 40_000; i++ {
		l := fmt.Sprintf("line %06d %s", i, strings.Repeat("x", i%37))
		if i%997 == 0 || i == 1 || i == 40_000 {
			l += " needle"
		}
		lines = append(lines, l)
		b.WriteString(l + "\n")
	}
	e.Put("big.txt", b.String())
	if b.Len() < 1<<20 {
		t.Fatalf("the file is %d bytes, want several pieces", b.Len())
	}
	r := searchOK(e, map[string]any{"pattern": "needle", "fixedStrings": true, "contextLines": 2, "maxResults": 2000})
	var want []string
	for i, l := range lines {
		if strings.Contains(l, "needle") {
			want = append(want, fmt.Sprintf("big.txt:%d:%d:%s", i+1, strings.Index(l, "needle")+1, l))
		}
	}
	same(t, "matches", hits(r), want)
	for _, m := range r.Matches {
		i := m.Line - 1
		wb := lines[max(0, i-2):i]
		wa := lines[i+1 : min(len(lines), i+3)]
		if !slices.Equal(m.Before, wb) || !slices.Equal(m.After, wa) {
			t.Errorf("line %d: context %q / %q, want %q / %q", m.Line, m.Before, m.After, wb, wa)
		}
	}
}

// A line longer than a read piece is searched in its first piece and
// shown cut around its match; the lines after it keep their numbers.
func TestSearchLongLine(t *testing.T) {
	e := verbtest.New(t)
	long := "start needle " + strings.Repeat("y", 600<<10) + " needle end"
	e.Put("min.js", "first\n"+long+"\nafter needle\n")
	r := searchOK(e, map[string]any{"pattern": "needle", "fixedStrings": true})
	if len(r.Matches) != 2 {
		t.Fatalf("matches %q", hits(r))
	}
	m := r.Matches[0]
	if m.Line != 2 || m.Column != 7 || !m.TextCut || len(m.Text) > verbs.MaxSearchLineBytes || !strings.Contains(m.Text, "start needle") {
		t.Errorf("long line: %+v", m)
	}
	if m := r.Matches[1]; m.Line != 3 || m.Text != "after needle" {
		t.Errorf("line after: %+v", m)
	}
}

// The state directory, protected files and the world outside the
// workspace are never walked, opened or shown, whatever the flags and
// links.
func TestSearchConfinement(t *testing.T) {
	cfg := ""
	e := verbtest.New(t, func(_ *verbs.Options, w *verbs.WorkspaceOptions) {
		cfg = filepath.Join(filepath.Dir(w.Protect[0]), "hub.yml")
		verbtest.WriteFile(t, cfg, "token: SECRET-needle\n")
		w.ProtectFiles = []verbs.ProtectedFile{{Path: cfg, What: "the configuration file"}}
	})
	verbtest.WriteFile(t, filepath.Join(e.State, "hub.db"), "SECRET-needle in the state\n")
	verbtest.WriteFile(t, filepath.Join(e.State, "sessions", "x", "live", "a.txt"), "SECRET-needle in a session\n")
	verbtest.WriteFile(t, filepath.Join(e.Outside, "secret.txt"), "SECRET-needle outside\n")
	e.Put("ok.txt", "needle here\n")
	// Links leading out, into the state and to the configuration, and one
	// staying in: none is followed.
	for name, target := range map[string]string{"out": e.Outside, "out.txt": filepath.Join(e.Outside, "secret.txt"),
		"state": e.State, "cfg.yml": cfg, "in.txt": filepath.Join(e.Dir, "ok.txt")} {
		if err := os.Symlink(target, filepath.Join(e.Dir, name)); err != nil {
			t.Fatal(err)
		}
	}
	// A hard link to the configuration elsewhere in the workspace.
	if err := os.Link(cfg, filepath.Join(e.Dir, "copy.yml")); err != nil {
		t.Fatal(err)
	}
	all := map[string]any{"pattern": "needle", "hidden": true, "noIgnore": true, "binary": true}
	r := searchOK(e, all)
	same(t, "everything searched", hits(r), []string{"ok.txt:1:1:needle here"})
	// The state directory renamed keeps its protection (by identity).
	if err := os.Rename(e.State, filepath.Join(e.Dir, "stash")); err != nil {
		t.Fatal(err)
	}
	r = searchOK(e, all)
	same(t, "state renamed", hits(r), []string{"ok.txt:1:1:needle here"})
	f := verbtest.OK[verbs.FsFindResult](e, "fs.find", map[string]any{"pattern": "**", "hidden": true, "noIgnore": true})
	same(t, "find shows", found(f), []string{"file ok.txt"})

	e.Fails(executor.CodeForbiddenPath, "fs.search", map[string]any{"pattern": "x", "path": "stash"}, "reserved for the hub's state")
	e.Fails(executor.CodeForbiddenPath, "fs.search", map[string]any{"pattern": "x", "path": "hub.yml"}, "protected file")
	e.Fails(executor.CodeForbiddenPath, "fs.search", map[string]any{"pattern": "x", "path": "copy.yml"}, "protected file")
	e.Fails(executor.CodeForbiddenPath, "fs.search", map[string]any{"pattern": "x", "path": "out"}, "outside the workspace")
	e.Fails(executor.CodeForbiddenPath, "fs.search", map[string]any{"pattern": "x", "path": "../outside"}, "'..'")
	e.Fails(executor.CodeForbiddenPath, "fs.find", map[string]any{"pattern": "*", "path": "a/../.."}, "'..'")
	e.Fails(executor.CodeForbiddenPath, "fs.find", map[string]any{"pattern": "*", "path": "stash"}, "reserved")
}

// .gitignore and .ignore files: negation, anchoring, directory-only
// patterns, nested files overriding their parents, .ignore over
// .gitignore, the parents' files when a subdirectory is searched; hidden
// entries and .git left out.
func TestSearchIgnoreRules(t *testing.T) {
	e := verbtest.New(t)
	e.Put(".gitignore", "*.log\n!keep.log\n/top.txt\nbuild/\ndocs/*.html\n")
	e.Put(".ignore", "ignored-by-dot-ignore.txt\n")
	for _, p := range []string{"a.log", "keep.log", "top.txt", "sub/top.txt", "build/x.txt", "sub/build/y.txt", "buildfile/z.txt",
		"docs/a.html", "docs/deep/b.html", "ignored-by-dot-ignore.txt", "sub/inner/c.log", "sub/d.md", "sub/README.md",
		".hidden.txt", ".config/x.txt", ".git/config", "sub/local.txt", "sub/x/local.txt", "plain.txt"} {
		e.Put(p, "needle\n")
	}
	e.Put("sub/.gitignore", "*.md\n!README.md\n/local.txt\n")
	e.Put("sub/inner/.gitignore", "!*.log\n")
	r := searchOK(e, map[string]any{"pattern": "needle"})
	same(t, "honoured", paths(r), []string{"buildfile/z.txt", "docs/deep/b.html", "keep.log", "plain.txt",
		"sub/README.md", "sub/inner/c.log", "sub/top.txt", "sub/x/local.txt"})
	r = searchOK(e, map[string]any{"pattern": "needle", "path": "sub"})
	same(t, "from sub, the root's files apply", paths(r), []string{"sub/README.md", "sub/inner/c.log", "sub/top.txt", "sub/x/local.txt"})
	r = searchOK(e, map[string]any{"pattern": "needle", "path": "build"})
	same(t, "an ignored directory named is searched", paths(r), []string{"build/x.txt"})
	r = searchOK(e, map[string]any{"pattern": "needle", "hidden": true})
	same(t, "hidden", paths(r), []string{".config/x.txt", ".hidden.txt", "buildfile/z.txt", "docs/deep/b.html", "keep.log", "plain.txt",
		"sub/README.md", "sub/inner/c.log", "sub/top.txt", "sub/x/local.txt"})
	r = searchOK(e, map[string]any{"pattern": "needle", "noIgnore": true})
	if len(paths(r)) != 16 {
		t.Errorf("noIgnore: %q", paths(r))
	}
	r = searchOK(e, map[string]any{"pattern": "needle", "noIgnore": true, "hidden": true})
	if !slices.Contains(paths(r), ".git/config") {
		t.Errorf("noIgnore and hidden leave .git out: %q", paths(r))
	}
	f := verbtest.OK[verbs.FsFindResult](e, "fs.find", map[string]any{"pattern": "**/*.log"})
	same(t, "find honours them too", found(f), []string{"file keep.log", "file sub/inner/c.log"})
}

// Binary files are skipped unless asked for; a file whose NUL byte comes
// after its first piece is searched up to it.
func TestSearchBinary(t *testing.T) {
	e := verbtest.New(t)
	e.Put("bin.dat", "needle\x00\x01\x02")
	e.Put("text.txt", "needle\n")
	e.Put("late.bin", "needle early\n"+strings.Repeat("filler line\n", 40_000)+"\x00needle late\n") // NUL after one piece
	r := searchOK(e, map[string]any{"pattern": "needle"})
	same(t, "without binary", hits(r), []string{"late.bin:1:1:needle early", "text.txt:1:1:needle"})
	if r.FilesSkipped != 1 || r.FilesSearched != 2 {
		t.Errorf("without binary: searched %d, skipped %d", r.FilesSearched, r.FilesSkipped)
	}
	r = searchOK(e, map[string]any{"pattern": "needle", "binary": true, "include": []string{"*.dat"}})
	same(t, "binary", hits(r), []string{"bin.dat:1:1:needle\x00\x01\x02"})
}

// The caps: maxResults (by count), maxFileBytes and the result's size (by
// bytes), and the arguments' bounds.
func TestSearchCaps(t *testing.T) {
	e := verbtest.New(t, func(_ *verbs.Options, w *verbs.WorkspaceOptions) { w.MaxReadBytes = 2000 })
	for i := range 10 {
		e.Put(fmt.Sprintf("f%d.txt", i), "needle\n")
	}
	e.Put("big/huge.txt", strings.Repeat("needle\n", 1000))
	r := searchOK(e, map[string]any{"pattern": "needle", "maxResults": 3, "exclude": []string{"big"}})
	if len(r.Matches) != 3 || !r.Truncated || r.TruncatedBy != verbs.CutByCount {
		t.Errorf("maxResults 3: %d matches, truncated %v by %q", len(r.Matches), r.Truncated, r.TruncatedBy)
	}
	r = searchOK(e, map[string]any{"pattern": "needle", "maxResults": 10, "exclude": []string{"big"}})
	if len(r.Matches) != 10 || r.Truncated {
		t.Errorf("exactly maxResults: %d matches, truncated %v", len(r.Matches), r.Truncated)
	}
	r = searchOK(e, map[string]any{"pattern": "needle", "maxFileBytes": 100})
	if len(r.Matches) != 10 || !r.Truncated || r.TruncatedBy != verbs.CutByBytes || r.FilesSkipped != 1 {
		t.Errorf("maxFileBytes: %d matches, truncated %v by %q, skipped %d", len(r.Matches), r.Truncated, r.TruncatedBy, r.FilesSkipped)
	}
	r = searchOK(e, map[string]any{"pattern": "needle", "path": "big", "maxResults": 2000})
	if n := len(r.Matches); n == 0 || n*len("needle") > 2000 || r.TruncatedBy != verbs.CutByBytes {
		t.Errorf("result size: %d matches, truncated by %q", n, r.TruncatedBy)
	}
	for _, bad := range []map[string]any{{"maxResults": 0}, {"maxResults": verbs.MaxSearchResults + 1}, {"contextLines": 11},
		{"contextLines": -1}, {"maxFileBytes": 0}} {
		bad["pattern"] = "x"
		e.Fails(executor.CodeInvalidArguments, "fs.search", bad, "accepted")
	}
	e.Fails(executor.CodeInvalidArguments, "fs.find", map[string]any{"pattern": "*", "maxResults": 0}, "accepted: 1 to 2000")
}

// deadlineCtx has a deadline that has passed but is not done: a call that
// starts this late stops at once.
type deadlineCtx struct{ context.Context }

func (deadlineCtx) Deadline() (time.Time, bool) { return time.Now().Add(-time.Second), true }

// A search that meets its deadline ends with what it found and
// truncated: true; it never hangs, and never fails for it.
func TestSearchDeadline(t *testing.T) {
	e := verbtest.New(t)
	e.Put("a.txt", "needle\n")
	res, err := e.Set.Search(deadlineCtx{context.Background()}, verbs.FsSearchArgs{Pattern: "needle"})
	if err != nil || !res.Truncated || res.TruncatedBy != verbs.CutByTime {
		t.Fatalf("past its deadline: %+v, %v", res, err)
	}
	f, err := e.Set.Find(deadlineCtx{context.Background()}, verbs.FsFindArgs{Pattern: "**"})
	if err != nil || !f.Truncated || f.TruncatedBy != verbs.CutByTime {
		t.Fatalf("find past its deadline: %+v, %v", f, err)
	}
	// A big tree and a tiny verb timeout, through the executor: 64 MiB
	// that a regular expression without a literal runs over.
	line := []byte(strings.Repeat("abcdefgh ", 14) + "\n")
	big := bytes.Repeat(line, (64<<20)/len(line))
	for i := range 8 {
		verbtest.WriteFile(t, filepath.Join(e.Dir, "tree", fmt.Sprint(i), "f.txt"), string(big[:len(big)/8]))
	}
	reg := e.X.Registry()
	x := executor.New(reg, executor.Options{Timeout: 50 * time.Millisecond})
	out := x.ExecuteInput(context.Background(), []byte(`{"verb":"fs.search","arguments":{"pattern":"[0-9]{3}z","path":"tree"}}`))
	if out.Err != nil {
		t.Fatalf("with a tiny timeout: %s", out.Err.Message)
	}
	if r := out.Value.(*verbs.FsSearchResult); !r.Truncated || r.TruncatedBy != verbs.CutByTime {
		t.Fatalf("with a tiny timeout: truncated %v by %q after %d files", r.Truncated, r.TruncatedBy, r.FilesSearched)
	}
}

func TestFind(t *testing.T) {
	e := verbtest.New(t)
	for _, p := range []string{"cmd/hub/main.go", "cmd/hub/main_test.go", "cmd/tool/main.go", "cmd/tool/sub/main.go", "a_test.go",
		"verbs/x_test.go", "verbs/deep/er/y_test.go", ".hidden/z_test.go", "docs/readme.md"} {
		e.Put(p, "x")
	}
	r := verbtest.OK[verbs.FsFindResult](e, "fs.find", map[string]any{"pattern": "**/*_test.go"})
	same(t, "**/*_test.go", found(r), []string{"file a_test.go", "file cmd/hub/main_test.go", "file verbs/deep/er/y_test.go", "file verbs/x_test.go"})
	r = verbtest.OK[verbs.FsFindResult](e, "fs.find", map[string]any{"pattern": "cmd/*/main.go"})
	same(t, "cmd/*/main.go", found(r), []string{"file cmd/hub/main.go", "file cmd/tool/main.go"})
	r = verbtest.OK[verbs.FsFindResult](e, "fs.find", map[string]any{"pattern": "*/main.go", "path": "cmd"})
	same(t, "from cmd", found(r), []string{"file cmd/hub/main.go", "file cmd/tool/main.go"})
	r = verbtest.OK[verbs.FsFindResult](e, "fs.find", map[string]any{"pattern": "**", "type": "dir", "path": "cmd"})
	same(t, "dirs", found(r), []string{"dir cmd/hub", "dir cmd/tool", "dir cmd/tool/sub"})
	r = verbtest.OK[verbs.FsFindResult](e, "fs.find", map[string]any{"pattern": "*.go"})
	same(t, "*.go at the top", found(r), []string{"file a_test.go"})
	r = verbtest.OK[verbs.FsFindResult](e, "fs.find", map[string]any{"pattern": "**/*_test.go", "hidden": true, "exclude": []string{"verbs"}})
	same(t, "hidden, exclude", found(r), []string{"file .hidden/z_test.go", "file a_test.go", "file cmd/hub/main_test.go"})
	r = verbtest.OK[verbs.FsFindResult](e, "fs.find", map[string]any{"pattern": "**/*.go", "maxResults": 2})
	if len(r.Entries) != 2 || r.TruncatedBy != verbs.CutByCount {
		t.Errorf("maxResults: %q by %q", found(r), r.TruncatedBy)
	}
	fi, err := os.Stat(filepath.Join(e.Dir, "docs", "readme.md"))
	if err != nil {
		t.Fatal(err)
	}
	r = verbtest.OK[verbs.FsFindResult](e, "fs.find", map[string]any{"pattern": "docs/*"})
	if len(r.Entries) != 1 || r.Entries[0].SizeBytes != 1 || r.Entries[0].ModifiedAt != fi.ModTime().UTC().Truncate(time.Millisecond).Format(verbs.TimeFormat) {
		t.Errorf("size and time: %+v", r.Entries)
	}
	e.Fails(executor.CodeInvalidArguments, "fs.find", map[string]any{"pattern": "[a"}, "not a valid glob")
	e.Fails(executor.CodeInvalidArguments, "fs.find", map[string]any{"pattern": "*", "type": "link"}, "accepted: file, dir")
	e.Fails(executor.CodeNotADirectory, "fs.find", map[string]any{"pattern": "*", "path": "a_test.go"}, "not a directory")
}

// In a session workspace the verbs search the conversation's own files.
func TestSearchSessionWorkspace(t *testing.T) {
	e := newSessEnv(t)
	const sess = "chat:telegram:7"
	sok[verbs.FsWriteFileResult](e, sess, "fs.writeFile", map[string]any{"path": "notes/a.md", "content": "session needle\n"})
	r := sok[verbs.FsSearchResult](e, sess, "fs.search", map[string]any{"pattern": "needle|Guide"})
	if got := hits(r); !slices.Equal(got, []string{"docs/guide.md:1:3:# Guide", "notes/a.md:1:9:session needle"}) {
		t.Errorf("session: %q", got)
	}
	r = sok[verbs.FsSearchResult](e, "", "fs.search", map[string]any{"pattern": "needle|Guide|host"})
	if got := hits(r); !slices.Equal(got, []string{"host-only.txt:1:1:host"}) {
		t.Errorf("host: %q", got)
	}
	f := sok[verbs.FsFindResult](e, sess, "fs.find", map[string]any{"pattern": "**/*.md"})
	if got := found(f); !slices.Equal(got, []string{"file docs/guide.md", "file docs/sub/deep.md", "file notes/a.md"}) {
		t.Errorf("session find: %q", got)
	}
}
