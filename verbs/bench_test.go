package verbs_test

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/a6afc2ce/hermes-hub/clock"
	"github.com/a6afc2ce/hermes-hub/verbs"
	"github.com/a6afc2ce/hermes-hub/verbs/internal/verbtest"
)

// benchLine is one 40-byte line of the benchmark files.
const benchLineLen = 40

func benchLine(i int) string { return fmt.Sprintf("line %09d of the benchmark file...\n", i) }

// benchFile returns the name, inside os.TempDir(), of a file of n lines,
// creating it unless a previous run left one of the right size.
func benchFile(b *testing.B, name string, lines int) string {
	b.Helper()
	if len(benchLine(1)) != benchLineLen {
		b.Fatalf("benchmark line is %d bytes, want %d", len(benchLine(1)), benchLineLen)
	}
	p := filepath.Join(os.TempDir(), name)
	if fi, err := os.Stat(p); err == nil && fi.Size() == int64(lines)*benchLineLen {
		return name
	}
	f, err := os.Create(p + ".part")
	if err != nil {
		b.Fatal(err)
	}
	w := bufio.NewWriterSize(f, 1<<20)
	for i := 1; i <= lines; i++ {
		w.WriteString(benchLine(i))
	}
	if err := w.Flush(); err != nil {
		b.Fatal(err)
	}
	if err := f.Close(); err != nil {
		b.Fatal(err)
	}
	if err := os.Rename(p+".part", p); err != nil {
		b.Fatal(err)
	}
	return name
}

// benchSet opens os.TempDir() as the workspace.
func benchSet(b *testing.B) *verbs.Set {
	b.Helper()
	ws, err := verbs.OpenWorkspace(os.TempDir(), verbs.WorkspaceOptions{})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { ws.Close() })
	s, err := verbs.NewSet(ws, verbs.DefaultOptions(b.TempDir()))
	if err != nil {
		b.Fatal(err)
	}
	return s
}

// BenchmarkReadRange reads 50 lines at line 500,000 of a 1,000,000-line
// (40 MB) file: the time is dominated by skipping the first 20 MB, and the
// bytes allocated per call stay small because nothing but the 50 lines is
// kept.
func BenchmarkReadRange(b *testing.B) {
	name := benchFile(b, "hub-bench-1m-lines.txt", 1_000_000)
	s := benchSet(b)
	args := verbs.FsReadRangeArgs{Path: name, StartLine: 500_000, EndLine: 500_049}
	want := "500000: " + benchLine(500_000)[:benchLineLen-1]
	b.SetBytes(500_049 * benchLineLen) // bytes scanned per call
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		r, err := s.ReadRange(context.Background(), args)
		if err != nil {
			b.Fatal(err)
		}
		if r.Content[:len(want)] != want {
			b.Fatalf("content starts %q", r.Content[:len(want)])
		}
	}
}

// BenchmarkReadRangeHead reads the first 50 lines of a 20,000-line file
// (800 KB) whose line count is known, as an agent looks at a file's head:
// the cost is the call's own, with the block it reads through kept between
// calls. A file made by this run is left 2 s first (racyWindow), so that
// its count is kept as a later run's would be.
func BenchmarkReadRangeHead(b *testing.B) {
	name := benchFile(b, "hub-bench-20k-lines.txt", 20_000)
	if fi, err := os.Stat(filepath.Join(os.TempDir(), name)); err == nil {
		time.Sleep(time.Until(fi.ModTime().Add(2500 * time.Millisecond)))
	}
	s := benchSet(b)
	no := false
	args := verbs.FsReadRangeArgs{Path: name, StartLine: 1, EndLine: 50, IncludeLineNumbers: &no}
	want := strings.TrimSuffix(benchLine(1), "\n")
	if _, err := s.ReadRange(context.Background(), args); err != nil { // the count, kept
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		r, err := s.ReadRange(context.Background(), args)
		if err != nil {
			b.Fatal(err)
		}
		if r.Content[:len(want)] != want {
			b.Fatalf("content starts %q", r.Content[:len(want)])
		}
	}
}

// BenchmarkLineCount counts a 20 MB and a 200 MB file; bytes allocated per
// operation are the same for both.
func BenchmarkLineCount(b *testing.B) {
	for _, c := range []struct {
		name  string
		lines int
	}{
		{"hub-bench-20mb.txt", 500_000},
		{"hub-bench-200mb.txt", 5_000_000},
	} {
		b.Run(fmt.Sprintf("%dMB", c.lines*benchLineLen/1_000_000), func(b *testing.B) {
			name := benchFile(b, c.name, c.lines)
			s := benchSet(b)
			b.SetBytes(int64(c.lines) * benchLineLen)
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				r, err := s.LineCount(context.Background(), verbs.FsLineCountArgs{Path: name})
				if err != nil {
					b.Fatal(err)
				}
				if r.LineCount != c.lines {
					b.Fatalf("%d lines, want %d", r.LineCount, c.lines)
				}
			}
			b.ReportMetric(float64(c.lines)*float64(b.N)/b.Elapsed().Seconds(), "lines/s")
		})
	}
}

// BenchmarkDispatchExists measures the executor's whole path for the
// cheapest verb: decode the envelope (JSON, or YAML normalised to JSON),
// decode the arguments strictly, run fs.exists, encode the result.
func BenchmarkDispatchExists(b *testing.B) {
	e := verbtest.New(b)
	if err := os.WriteFile(filepath.Join(e.Dir, "README.md"), []byte("x\n"), 0o644); err != nil {
		b.Fatal(err)
	}
	inputs := map[string]string{
		"json": `{"verb":"fs.exists","arguments":{"path":"README.md"}}`,
		"yaml": "verb: fs.exists\narguments:\n  path: README.md\n",
	}
	for _, name := range []string{"json", "yaml"} {
		in := []byte(inputs[name])
		b.Run(name, func(b *testing.B) {
			ctx := context.Background()
			b.ReportAllocs()
			for b.Loop() {
				out := e.X.Execute(ctx, in)
				if len(out) < 20 || out[13] != 't' { // {"succeeded":true
					b.Fatalf("unexpected result %s", out)
				}
			}
		})
	}
}

// tailFile writes, in dir, a file of about size bytes made of one 1 MiB block
// of benchLine lines written over and over (quick even for 1 GB), and returns
// its name and line count.
func tailFile(b *testing.B, dir string, size int) (string, int) {
	b.Helper()
	var block []byte
	per := 0
	for len(block)+benchLineLen <= 1<<20 {
		per++
		block = append(block, benchLine(per)...)
	}
	name := fmt.Sprintf("tail-%d.txt", size)
	f, err := os.Create(filepath.Join(dir, name))
	if err != nil {
		b.Fatal(err)
	}
	blocks := max(size/len(block), 1)
	for range blocks {
		if _, err := f.Write(block); err != nil {
			b.Fatal(err)
		}
	}
	if err := f.Close(); err != nil {
		b.Fatal(err)
	}
	return name, blocks * per
}

// dirSet opens dir as a host workspace. The clock stands an hour ahead, as
// if the benchmark files had been written long ago: the line-count cache
// leaves out files changed in the last seconds.
func dirSet(b *testing.B, dir string) *verbs.Set {
	b.Helper()
	ws, err := verbs.OpenWorkspace(dir, verbs.WorkspaceOptions{})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { ws.Close() })
	opts := verbs.DefaultOptions(b.TempDir())
	opts.Clock = clock.NewFake(clock.Real{}.Now().Add(time.Hour))
	s, err := verbs.NewSet(ws, opts)
	if err != nil {
		b.Fatal(err)
	}
	return s
}

// BenchmarkReadRangeTail reads the first and the last 50 lines of a 10 MB
// and a 1 GB file. The last 50 are read backwards from the end once the
// file's line count is known (the first call counts it), so their time does
// not grow with the file. The 1 GB file is left out with -short.
func BenchmarkReadRangeTail(b *testing.B) {
	for _, size := range []int{10 << 20, 1 << 30} {
		label := fmt.Sprintf("%dMB", size>>20)
		if size >= 1<<30 {
			label = "1GB"
			if testing.Short() {
				b.Logf("skipping %s with -short", label)
				continue
			}
		}
		dir := b.TempDir()
		name, lines := tailFile(b, dir, size)
		s := dirSet(b, dir)
		var first float64 // ns per read of the first 50 lines, the baseline
		for _, c := range []struct {
			part       string
			start, end int
		}{
			{"first50", 1, 50},
			{"last50", lines - 49, lines},
		} {
			b.Run(label+"/"+c.part, func(b *testing.B) {
				args := verbs.FsReadRangeArgs{Path: name, StartLine: c.start, EndLine: c.end}
				want := strconv.Itoa(c.start) + ": line "
				b.ReportAllocs()
				for b.Loop() {
					r, err := s.ReadRange(context.Background(), args)
					if err != nil {
						b.Fatal(err)
					}
					if !strings.HasPrefix(r.Content, want) {
						b.Fatalf("content starts %q", r.Content[:min(len(r.Content), 40)])
					}
				}
				per := float64(b.Elapsed().Nanoseconds()) / float64(b.N)
				if c.start == 1 {
					first = per
				} else if first > 0 {
					b.ReportMetric(per/first, "x-first50")
				}
			})
		}
	}
}

// BenchmarkReadRangeMiddle reads 50 lines of a 10 MB and a 1 GB file
// whose line count is cached (fs.lineCount ran first; it also records the
// file's sparse line index): middle50 at the middle line, spread50 from 64
// starting lines spread over the file (each read at its own distance from
// the mark below it), last50 at the end (read backwards). x-first50 is each
// as a multiple of the first 50 lines.
func BenchmarkReadRangeMiddle(b *testing.B) {
	for _, size := range []int{10 << 20, 1 << 30} {
		label := fmt.Sprintf("%dMB", size>>20)
		if size >= 1<<30 {
			label = "1GB"
			if testing.Short() {
				b.Logf("skipping %s with -short", label)
				continue
			}
		}
		dir, name := cachedTailFile(b, size)
		s := dirSet(b, dir)
		lc, err := s.LineCount(context.Background(), verbs.FsLineCountArgs{Path: name})
		if err != nil {
			b.Fatal(err)
		}
		lines := lc.LineCount
		var first float64 // ns per read of the first 50 lines, the baseline
		for _, c := range []struct {
			part   string
			starts []int
		}{
			{"first50", []int{1}},
			{"middle50", []int{lines / 2}},
			{"spread50", spread(lines-50, 64)},
			{"last50", []int{lines - 49}},
		} {
			b.Run(label+"/"+c.part, func(b *testing.B) {
				b.ReportAllocs()
				for i := 0; b.Loop(); i++ {
					start := c.starts[i%len(c.starts)]
					r, err := s.ReadRange(context.Background(), verbs.FsReadRangeArgs{Path: name, StartLine: start, EndLine: start + 49})
					if err != nil {
						b.Fatal(err)
					}
					if want := strconv.Itoa(start) + ": line "; !strings.HasPrefix(r.Content, want) {
						b.Fatalf("content starts %q, want %q", r.Content[:min(len(r.Content), 40)], want)
					}
				}
				per := float64(b.Elapsed().Nanoseconds()) / float64(b.N)
				if c.part == "first50" {
					first = per
				} else if first > 0 {
					b.ReportMetric(per/first, "x-first50")
				}
			})
		}
	}
}

// cachedTailFile is tailFile in a directory of os.TempDir() kept between
// runs (-count runs the benchmark again; a 1 GB file is written once).
func cachedTailFile(b *testing.B, size int) (dir, name string) {
	b.Helper()
	dir = filepath.Join(os.TempDir(), "hermes-bench-readrange-middle")
	marker := filepath.Join(dir, fmt.Sprintf("tail-%d.complete", size))
	if _, err := os.Stat(marker); err == nil {
		return dir, fmt.Sprintf("tail-%d.txt", size)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		b.Fatal(err)
	}
	name, _ = tailFile(b, dir, size)
	if err := os.WriteFile(marker, nil, 0o644); err != nil {
		b.Fatal(err)
	}
	return dir, name
}

// spread returns k line numbers spread evenly over 1..n.
func spread(n, k int) []int {
	out := make([]int, k)
	for i := range out {
		out[i] = 1 + i*(n-1)/k + i%7 // off the stride's rhythm
	}
	return out
}

// BenchmarkLineCountCache counts a 10 MB file: cold with a fresh Set (and
// so an empty cache) each time, cached with one Set whose cache answers for
// the unchanged file.
func BenchmarkLineCountCache(b *testing.B) {
	dir := b.TempDir()
	name, lines := tailFile(b, dir, 10<<20)
	shared := dirSet(b, dir)
	var cold float64 // ns per cold count, the baseline
	for _, mode := range []string{"cold", "cached"} {
		b.Run(mode, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				s := shared
				if mode == "cold" {
					b.StopTimer()
					s = dirSet(b, dir)
					b.StartTimer()
				}
				r, err := s.LineCount(context.Background(), verbs.FsLineCountArgs{Path: name})
				if err != nil {
					b.Fatal(err)
				}
				if r.LineCount != lines {
					b.Fatalf("%d lines, want %d", r.LineCount, lines)
				}
			}
			per := float64(b.Elapsed().Nanoseconds()) / float64(b.N)
			if mode == "cold" {
				cold = per
			} else if cold > 0 {
				b.ReportMetric(per/cold, "x-cold")
			}
		})
	}
}

// BenchmarkListDir lists a host directory of 100 and of 10,000 entries (a
// tenth of them subdirectories). ListDir/N lists one unchanged directory
// again and again: after the first listing it is answered from the listing
// cache (the Set's clock runs an hour ahead, so the directory is not racily
// new). ListDir/cold/N changes the directory before every listing (a file
// created and removed, outside the timed region), so every listing misses
// the cache and reads the directory again.
func BenchmarkListDir(b *testing.B) {
	var small float64 // ns per entry listing 100, the baseline
	for _, cold := range []bool{false, true} {
		for _, n := range []int{100, 10_000} {
			name := strconv.Itoa(n)
			if cold {
				name = "cold/" + name
			}
			b.Run(name, func(b *testing.B) {
				dir := listDirFixture(b, n)
				s := dirSet(b, dir)
				scratch := filepath.Join(dir, "scratch")
				b.ReportAllocs()
				b.ResetTimer()
				for b.Loop() {
					if cold {
						b.StopTimer()
						if err := os.WriteFile(scratch, nil, 0o644); err != nil {
							b.Fatal(err)
						}
						if err := os.Remove(scratch); err != nil {
							b.Fatal(err)
						}
						b.StartTimer()
					}
					r, err := s.ListDir(context.Background(), verbs.FsListDirArgs{Path: "."})
					if err != nil {
						b.Fatal(err)
					}
					if len(r.Entries) != n {
						b.Fatalf("%d entries, want %d", len(r.Entries), n)
					}
				}
				per := float64(b.Elapsed().Nanoseconds()) / float64(b.N) / float64(n)
				b.ReportMetric(per, "ns/entry")
				if cold {
					return
				}
				if n == 100 {
					small = per
				} else if small > 0 {
					b.ReportMetric(per/small, "x-per-entry-100")
				}
			})
		}
	}
}

// listDirFixture makes a directory of n entries, every tenth a directory.
func listDirFixture(b *testing.B, n int) string {
	b.Helper()
	dir := b.TempDir()
	for i := range n {
		p := filepath.Join(dir, fmt.Sprintf("entry-%05d", i))
		var err error
		if i%10 == 9 {
			err = os.Mkdir(p, 0o755)
		} else {
			err = os.WriteFile(p, []byte("x\n"), 0o644)
		}
		if err != nil {
			b.Fatal(err)
		}
	}
	return dir
}

// TestDispatchAllocs holds the executor's whole path for fs.exists (JSON
// envelope in, result JSON out) to its allocation budget: allocation counts
// do not depend on the machine's load, unlike times.
func TestDispatchAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("allocation counts are measured without the race detector (make test runs go test once without it for this)")
	}
	e := verbtest.New(t)
	e.Put("README.md", "x\n")
	in := []byte(`{"verb":"fs.exists","arguments":{"path":"README.md"}}`)
	ctx := context.Background()
	e.X.Execute(ctx, in) // warm the pools
	if n := testing.AllocsPerRun(200, func() { e.X.Execute(ctx, in) }); n > 12 {
		t.Errorf("fs.exists dispatch allocates %v times, over the budget of 12", n)
	}
}
