package verbs_test

import (
	"context"
	"fmt"
	"math/rand/v2"
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

func tail(t *testing.T, e *verbtest.Env, path string, n int, numbered bool) verbs.FsReadRangeResult {
	t.Helper()
	return verbtest.OK[verbs.FsReadRangeResult](e, "fs.readRange", map[string]any{"path": path, "lastLines": n, "includeLineNumbers": numbered})
}

// TestReadLastLines: the last lines, with and without a final newline,
// with CRLF endings, more than the file has, of an empty file; numbered
// from the end when the line count is not known, from the start when the
// read reached the file's start.
func TestReadLastLines(t *testing.T) {
	e := verbtest.New(t)
	e.Put("log.txt", "one\ntwo\nthree\nfour\nfive\n")
	e.Put("open.txt", "one\ntwo\nthree") // the last line has no newline yet
	e.Put("crlf.txt", "a\r\nb\r\nc\r\n")
	e.Put("lone-cr.txt", "a\r\nb\r")
	e.Put("empty.txt", "")
	e.Put("blank.txt", "\n\n")
	e.Put("latin1.txt", "ok\ncaf\xe9\n")
	for _, c := range []struct {
		path     string
		n        int
		numbered bool
		content  string
		start    int
		lines    int
	}{
		{"log.txt", 2, true, "-2: four\n-1: five", 0, 2},
		{"log.txt", 2, false, "four\nfive", 0, 2},
		{"log.txt", 5, true, "1: one\n2: two\n3: three\n4: four\n5: five", 1, 5},
		{"log.txt", 99, true, "1: one\n2: two\n3: three\n4: four\n5: five", 1, 5},
		{"open.txt", 1, true, "-1: three", 0, 1},
		{"open.txt", 2, false, "two\nthree", 0, 2},
		{"crlf.txt", 2, true, "-2: b\n-1: c", 0, 2},
		{"lone-cr.txt", 1, false, "b\r", 0, 1},
		{"empty.txt", 3, true, "", 0, 0},
		{"blank.txt", 1, true, "-1: ", 0, 1},
		{"blank.txt", 3, true, "1: \n2: ", 1, 2},
		{"latin1.txt", 1, false, "caf\uFFFD", 0, 1},
	} {
		r := tail(t, e, c.path, c.n, c.numbered)
		if r.Content != c.content || r.StartLine != c.start || r.Lines != c.lines {
			t.Errorf("%s last %d: %q start %d lines %d, want %q start %d lines %d", c.path, c.n, r.Content, r.StartLine, r.Lines, c.content, c.start, c.lines)
		}
	}
	for _, c := range []struct {
		args  map[string]any
		parts []string
	}{
		{map[string]any{"path": "log.txt", "lastLines": 2, "startLine": 1}, []string{"lastLines reads the end of the file: give it without startLine and endLine"}},
		{map[string]any{"path": "log.txt", "lastLines": 2, "endLine": 3}, []string{"without startLine and endLine"}},
		{map[string]any{"path": "log.txt", "lastLines": 0}, []string{"lastLines is 0", "at least 1"}},
		{map[string]any{"path": "log.txt", "lastLines": -4}, []string{"lastLines is -4"}},
		{map[string]any{"path": "log.txt"}, []string{"Give startLine and endLine", "or lastLines"}},
	} {
		e.Fails(executor.CodeInvalidArguments, "fs.readRange", c.args, c.parts...)
	}
	e.Fails(executor.CodeNotFound, "fs.readRange", map[string]any{"path": "missing.txt", "lastLines": 1}, "missing.txt")
	e.Put("d/x", "")
	e.Fails(executor.CodeIsADirectory, "fs.readRange", map[string]any{"path": "d", "lastLines": 1}, "d")
}

// TestReadLastLinesKnownCount: once the file's line count is cached (and
// the file unchanged), the last lines carry their numbers from the start;
// after an append the count is stale and the new last lines are numbered
// from the end, without the file being counted again.
func TestReadLastLinesKnownCount(t *testing.T) {
	e := verbtest.New(t)
	var sb strings.Builder
	for i := 1; i <= 5000; i++ {
		fmt.Fprintf(&sb, "entry %d\n", i)
	}
	e.Put("app.log", sb.String())
	s := setAt(t, e, clock.Real{}.Now().Add(time.Hour))
	ctx := context.Background()
	if _, err := s.LineCount(ctx, verbs.FsLineCountArgs{Path: "app.log"}); err != nil {
		t.Fatal(err)
	}
	hits, _, _ := verbs.LineCacheStats(s)
	r, err := s.ReadRange(ctx, verbs.FsReadRangeArgs{Path: "app.log", LastLines: verbtest.Ptr(2)})
	if err != nil || r.Content != "4999: entry 4999\n5000: entry 5000" || r.StartLine != 4999 || r.Lines != 2 {
		t.Fatalf("known count: %+v %v", r, err)
	}
	if h, _, _ := verbs.LineCacheStats(s); h != hits+1 {
		t.Fatalf("the cache was not asked: %d hits, was %d", h, hits)
	}
	f, err := os.OpenFile(filepath.Join(e.Dir, "app.log"), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprintf(f, "entry 5001\nentry 50")
	f.Close()
	r, err = s.ReadRange(ctx, verbs.FsReadRangeArgs{Path: "app.log", LastLines: verbtest.Ptr(3)})
	if err != nil || r.Content != "-3: entry 5000\n-2: entry 5001\n-1: entry 50" || r.StartLine != 0 {
		t.Fatalf("after an append: %+v %v", r, err)
	}
}

// TestReadLastLinesAgree: on random files (long lines over many blocks,
// CRLF, invalid UTF-8, with or without a final newline), the last n lines
// are what a range read of the same lines returns, numbers included once
// the count is known.
func TestReadLastLinesAgree(t *testing.T) {
	e := verbtest.New(t, func(_ *verbs.Options, wo *verbs.WorkspaceOptions) { wo.MaxReadBytes = 64 << 20 })
	seed := rand.Uint64()
	r := rand.New(rand.NewPCG(seed, 3))
	t.Logf("seed %d", seed)
	ctx := context.Background()
	for round := range 40 {
		content := genLines(r, 1+r.IntN(400), round%4 == 0, r.IntN(2) == 0, r.IntN(2) == 0)
		if round == 0 {
			content = "" // as genLines makes, rarely, from one empty line without a final newline
		}
		e.Put("f.txt", content)
		s := setAt(t, e, clock.Real{}.Now().Add(time.Hour))
		lc, err := s.LineCount(ctx, verbs.FsLineCountArgs{Path: "f.txt"})
		if err != nil {
			t.Fatal(err)
		}
		count := lc.LineCount
		if count == 0 {
			one := 1
			got, err := s.ReadRange(ctx, verbs.FsReadRangeArgs{Path: "f.txt", LastLines: &one})
			if err != nil || got.Content != "" {
				t.Fatalf("round %d, the last line of an empty file: %+v %v", round, got, err)
			}
			continue
		}
		for _, n := range []int{1, 1 + r.IntN(count), count, count + 3} {
			start := max(1, count-n+1)
			want, err := s.ReadRange(ctx, verbs.FsReadRangeArgs{Path: "f.txt", StartLine: start, EndLine: count})
			if err != nil {
				t.Fatal(err)
			}
			got, err := s.ReadRange(ctx, verbs.FsReadRangeArgs{Path: "f.txt", LastLines: &n})
			if err != nil {
				t.Fatal(err)
			}
			if got.Content != want.Content || got.StartLine != start {
				t.Fatalf("round %d, last %d of %d lines: start %d\n%.300q\nwant\n%.300q", round, n, count, got.StartLine, got.Content, want.Content)
			}
		}
	}
}

// TestReadLastLinesTooLarge: lines over the read limit are refused, after
// reading no more than the limit (and a block).
func TestReadLastLinesTooLarge(t *testing.T) {
	e := verbtest.New(t, func(_ *verbs.Options, wo *verbs.WorkspaceOptions) { wo.MaxReadBytes = 100 })
	e.Put("wide.txt", "short\n"+strings.Repeat("w", 200)+"\nend\n")
	if r := tail(t, e, "wide.txt", 1, false); r.Content != "end" {
		t.Fatalf("last line %q", r.Content)
	}
	e.Fails(executor.CodeTooLarge, "fs.readRange", map[string]any{"path": "wide.txt", "lastLines": 2},
		"The last 2 lines of wide.txt are more than 100 bytes", "ask for fewer lines")
}
