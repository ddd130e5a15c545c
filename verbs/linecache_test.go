package verbs_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/a6afc2ce/hermes-hub/clock"
	"github.com/a6afc2ce/hermes-hub/executor"
	"github.com/a6afc2ce/hermes-hub/verbs"
	"github.com/a6afc2ce/hermes-hub/verbs/internal/verbtest"
)

// setAt returns a second Set on e's workspace whose clock reads now.
func setAt(t *testing.T, e *verbtest.Env, now time.Time) *verbs.Set {
	t.Helper()
	opts := verbs.DefaultOptions(t.TempDir())
	opts.Clock = clock.NewFake(now)
	s, err := verbs.NewSet(e.WS, opts)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// genLines returns a file of n lines drawn by r: empty, short and (when
// long) 100 KB lines, CRLF or LF endings, some invalid UTF-8, with or
// without a final ending.
func genLines(r *rand.Rand, n int, long, crlf, final bool) string {
	var b strings.Builder
	for i := 1; i <= n; i++ {
		switch k := r.IntN(20); {
		case k == 0:
		case k == 1 && long:
			b.WriteString(strings.Repeat("L", 100_000+r.IntN(50_000)))
		case k == 2:
			b.WriteString("bad \xff\xfe utf-8")
		case k == 3:
			b.WriteString("a\rb") // a lone '\r' is text
		default:
			fmt.Fprintf(&b, "line %d %s", i, strings.Repeat("x", r.IntN(80)))
		}
		if i < n || final {
			if crlf && r.IntN(4) > 0 {
				b.WriteString("\r\n")
			} else {
				b.WriteByte('\n')
			}
		}
	}
	return b.String()
}

// outcome is a readRange result or error, for comparing two paths.
func outcome(s *verbs.Set, args verbs.FsReadRangeArgs) string {
	r, err := s.ReadRange(context.Background(), args)
	if err != nil {
		if xe, ok := err.(*executor.Error); ok {
			return "error " + string(xe.Code) + ": " + xe.Message
		}
		return "error: " + err.Error()
	}
	return r.Content
}

// TestReadRangeBackwardMatchesForward reads many ranges of many generated
// files twice: with a Set that never caches line counts (so it reads from
// the start) and with one that counted the file first (so ranges near the
// end are read backwards). Results and errors must be identical.
func TestReadRangeBackwardMatchesForward(t *testing.T) {
	e := verbtest.New(t, func(_ *verbs.Options, w *verbs.WorkspaceOptions) { w.MaxReadBytes = 300_000 })
	forward := setAt(t, e, time.Unix(0, 0))                    // every file is "just written": never cached
	backward := setAt(t, e, clock.Real{}.Now().Add(time.Hour)) // every file is old: cached
	r := rand.New(rand.NewPCG(1, 2))
	type file struct {
		lines             int
		long, crlf, final bool
	}
	var files []file
	for _, n := range []int{0, 1, 2, 3, 7, 50, 600} {
		for _, long := range []bool{false, true} {
			for _, crlf := range []bool{false, true} {
				for _, final := range []bool{false, true} {
					if long && n < 50 {
						continue
					}
					files = append(files, file{n, long, crlf, final})
				}
			}
		}
	}
	ranges := 0
	for i, f := range files {
		name := fmt.Sprintf("gen-%d.txt", i)
		content := genLines(r, f.lines, f.long, f.crlf, f.final)
		if f.lines == 1 && !f.final && content == "" {
			content = "x" // a one-line file without an ending must not be empty
		}
		verbtest.WriteFile(t, filepath.Join(e.Dir, name), content)
		lc, err := backward.LineCount(context.Background(), verbs.FsLineCountArgs{Path: name})
		if err != nil {
			t.Fatal(err)
		}
		n := lc.LineCount
		var pairs [][2]int
		if n <= 7 {
			for s := 0; s <= n+2; s++ {
				for end := s - 1; end <= n+2; end++ {
					pairs = append(pairs, [2]int{s, end})
				}
			}
		} else {
			for _, s := range []int{1, 2, n / 3, n / 2, n/2 + 1, n - 60, n - 49, n - 1, n} {
				for _, l := range []int{1, 2, 50} {
					pairs = append(pairs, [2]int{s, s + l - 1})
				}
			}
			pairs = append(pairs, [2]int{n - 10, n + 1}, [2]int{n, n + 5}, [2]int{n + 1, n + 1}, [2]int{n - 20, n - 21})
		}
		for _, p := range pairs {
			for _, numbered := range []bool{true, false} {
				args := verbs.FsReadRangeArgs{Path: name, StartLine: p[0], EndLine: p[1], IncludeLineNumbers: &numbered}
				want, got := outcome(forward, args), outcome(backward, args)
				if got != want {
					t.Fatalf("%s (%+v, %d lines) lines %d-%d numbered %v:\nbackward %.200q\nforward  %.200q", name, f, n, p[0], p[1], numbered, got, want)
				}
				ranges++
			}
		}
	}
	if h, _, _ := verbs.LineCacheStats(backward); h < int64(len(files)) {
		t.Errorf("backward set: %d cache hits, want at least %d", h, len(files))
	}
	if _, _, n := verbs.LineCacheStats(forward); n != 0 {
		t.Errorf("forward set cached %d counts of files it saw as just written", n)
	}
	t.Logf("%d files, %d ranges", len(files), ranges)
}

// TestLineCountCached: a second count of an unchanged file is a cache hit,
// and is not read; a file changed within the last seconds is not cached.
func TestLineCountCached(t *testing.T) {
	e := verbtest.New(t)
	verbtest.WriteFile(t, filepath.Join(e.Dir, "a.txt"), "1\n2\n3\n")
	old := setAt(t, e, clock.Real{}.Now().Add(time.Hour))
	count := func(s *verbs.Set) int {
		t.Helper()
		r, err := s.LineCount(context.Background(), verbs.FsLineCountArgs{Path: "a.txt"})
		if err != nil {
			t.Fatal(err)
		}
		return r.LineCount
	}
	if n := count(old); n != 3 {
		t.Fatalf("count %d, want 3", n)
	}
	if h, m, n := verbs.LineCacheStats(old); h != 0 || m != 1 || n != 1 {
		t.Fatalf("after the first count: hits %d misses %d entries %d, want 0 1 1", h, m, n)
	}
	for range 3 {
		if n := count(old); n != 3 {
			t.Fatalf("count %d, want 3", n)
		}
	}
	if h, _, _ := verbs.LineCacheStats(old); h != 3 {
		t.Fatalf("hits %d, want 3", h)
	}

	fresh := setAt(t, e, clock.Real{}.Now())
	count(fresh)
	count(fresh)
	if h, _, n := verbs.LineCacheStats(fresh); h != 0 || n != 0 {
		t.Errorf("a just-written file: hits %d entries %d, want none", h, n)
	}
}
