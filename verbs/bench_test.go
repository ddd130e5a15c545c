package verbs_test

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/a6afc2ce/hermes-hub/verbs"
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
	e := newEnv(b)
	if err := os.WriteFile(filepath.Join(e.dir, "README.md"), []byte("x\n"), 0o644); err != nil {
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
				out := e.x.Execute(ctx, in)
				if len(out) < 20 || out[13] != 't' { // {"succeeded":true
					b.Fatalf("unexpected result %s", out)
				}
			}
		})
	}
}
