package verbs_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/a6afc2ce/hermes-hub/verbs"
)

// BenchmarkReadLastLines reads the last 50 lines (lastLines: 50) of a
// 10 MB and a 1 GB file, each appended to a moment before every read, as a
// log being written is: the append changes the file, so no line count is
// known and the lines are found by reading backwards from its end. The
// append is not timed; us/read is the mean time of one read, in process,
// and x-10MB the 1 GB file's time as a multiple of the 10 MB one's. The
// 1 GB file is BenchmarkReadRangeMiddle's, cut back to its size when the
// benchmark ends; it is left out with -short.
func BenchmarkReadLastLines(b *testing.B) {
	var base float64 // us per read of the 10 MB file
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
		p := filepath.Join(dir, name)
		fi, err := os.Stat(p)
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { os.Truncate(p, fi.Size()) })
		f, err := os.OpenFile(p, os.O_APPEND|os.O_WRONLY, 0)
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { f.Close() })
		b.Run(label, func(b *testing.B) {
			n := 50
			args := verbs.FsReadRangeArgs{Path: name, LastLines: &n}
			var spent time.Duration
			b.ReportAllocs()
			for i := 0; b.Loop(); i++ {
				line := benchLine(900_000_000 + i)
				if _, err := f.WriteString(line); err != nil {
					b.Fatal(err)
				}
				t0 := time.Now()
				r, err := s.ReadRange(context.Background(), args)
				spent += time.Since(t0)
				if err != nil {
					b.Fatal(err)
				}
				if r.Lines != 50 || !strings.HasPrefix(r.Content, "-50: line ") || !strings.HasSuffix(r.Content, "-1: "+strings.TrimSuffix(line, "\n")) {
					b.Fatalf("lines %d, content %q…%q", r.Lines, r.Content[:min(len(r.Content), 30)], r.Content[max(0, len(r.Content)-50):])
				}
			}
			us := float64(spent.Microseconds()) / float64(b.N)
			b.ReportMetric(us, "us/read")
			if size == 10<<20 {
				base = us
			} else if base > 0 {
				b.ReportMetric(us/base, "x-10MB")
			}
		})
	}
}
