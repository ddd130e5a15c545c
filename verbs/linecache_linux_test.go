package verbs_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/a6afc2ce/hermes-hub/clock"
	"github.com/a6afc2ce/hermes-hub/verbs"
	"github.com/a6afc2ce/hermes-hub/verbs/internal/verbtest"
)

func changeTimeOf(fi os.FileInfo) time.Time {
	st := fi.Sys().(*syscall.Stat_t)
	return time.Unix(st.Ctim.Unix())
}

func changeTime(t *testing.T, p string) time.Time {
	t.Helper()
	fi, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	return changeTimeOf(fi)
}

// TestLineCountCacheSameSizeWrite: rewriting a file with content of the
// same length invalidates its cached count, even when its modification
// time is then set back to what it was (only the change time differs).
func TestLineCountCacheSameSizeWrite(t *testing.T) {
	e := verbtest.New(t)
	p := filepath.Join(e.Dir, "a.txt")
	before, after := "aa\nbb\ncc\n", "aaaaaaaa\n" // 9 bytes each: 3 lines, then 1
	verbtest.WriteFile(t, p, before)
	s := setAt(t, e, clock.Real{}.Now().Add(time.Hour))
	count := func() int {
		t.Helper()
		r, err := s.LineCount(context.Background(), verbs.FsLineCountArgs{Path: "a.txt"})
		if err != nil {
			t.Fatal(err)
		}
		return r.LineCount
	}
	if n := count(); n != 3 {
		t.Fatalf("count %d, want 3", n)
	}
	fi0, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	// Rewrite until the change time moves on (the clock behind it ticks
	// coarsely), then put the modification time back.
	for i := 0; ; i++ {
		if err := os.WriteFile(p, []byte(after), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(p, fi0.ModTime(), fi0.ModTime()); err != nil {
			t.Fatal(err)
		}
		if !changeTime(t, p).Equal(changeTimeOf(fi0)) {
			break
		}
		if i > 1000 {
			t.Fatal("the change time never moved")
		}
		verbtest.WriteFile(t, p, before)
	}
	fi1, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	if fi1.Size() != fi0.Size() || !fi1.ModTime().Equal(fi0.ModTime()) {
		t.Fatalf("size %d mtime %v, want %d %v", fi1.Size(), fi1.ModTime(), fi0.Size(), fi0.ModTime())
	}
	if n := count(); n != 1 {
		t.Fatalf("count after a same-size write %d, want 1", n)
	}
	r, err := s.ReadRange(context.Background(), verbs.FsReadRangeArgs{Path: "a.txt", StartLine: 1, EndLine: 1})
	if err != nil || r.Content != "1: aaaaaaaa" {
		t.Fatalf("readRange after the write: %q, %v", r.Content, err)
	}
}

// TestReadRangeIndexMatchesForward reads many ranges of files large enough
// to be indexed, with a Set that reads from the start and with one whose
// line index (built by fs.lineCount) starts reads at its marks. Results and
// errors must be identical.
func TestReadRangeIndexMatchesForward(t *testing.T) {
	e := verbtest.New(t, func(_ *verbs.Options, w *verbs.WorkspaceOptions) { w.MaxReadBytes = 300_000 })
	forward := setAt(t, e, time.Unix(0, 0))
	indexed := setAt(t, e, clock.Real{}.Now().Add(time.Hour))
	r := rand.New(rand.NewPCG(3, 4))
	for i, f := range []struct {
		lines       int
		long, final bool
	}{{150_000, false, true}, {1_500, true, false}, {300_000, false, false}} {
		name := fmt.Sprintf("big-%d.txt", i)
		verbtest.WriteFile(t, filepath.Join(e.Dir, name), genLines(r, f.lines, f.long, true, f.final))
		lc, err := indexed.LineCount(context.Background(), verbs.FsLineCountArgs{Path: name})
		if err != nil {
			t.Fatal(err)
		}
		n := lc.LineCount
		fi, err := os.Stat(filepath.Join(e.Dir, name))
		if err != nil {
			t.Fatal(err)
		}
		if m := verbs.LineIndexMarks(indexed, fi); m == 0 {
			t.Fatalf("%s (%d bytes): no line index after fs.lineCount", name, fi.Size())
		}
		var pairs [][2]int
		for s := 1; s <= n; s += n/97 + 1 {
			pairs = append(pairs, [2]int{s, s}, [2]int{s, s + 49})
		}
		for _, s := range []int{n - 60, n - 1, n, n + 1} {
			pairs = append(pairs, [2]int{s, s + 2}, [2]int{s, s})
		}
		for _, p := range pairs {
			args := verbs.FsReadRangeArgs{Path: name, StartLine: p[0], EndLine: p[1]}
			if got, want := outcome(indexed, args), outcome(forward, args); got != want {
				t.Fatalf("%s lines %d-%d: indexed read\n%.200q\nforward read\n%.200q", name, p[0], p[1], got, want)
			}
		}
	}
}
