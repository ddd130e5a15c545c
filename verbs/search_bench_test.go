package verbs_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/a6afc2ce/hermes-hub/verbs"
)

// searchTree opens the Go toolchain's own source tree ($(go env
// GOROOT)/src: about 11k files, 157 MB, the same on every machine with
// Go) as a workspace, the hub's state outside it.
func searchTree(b *testing.B) (*verbs.Set, string) {
	b.Helper()
	src := goSrc(b)
	if _, err := os.Stat(filepath.Join(src, "go.mod")); err != nil {
		b.Skipf("GOROOT/src not found: %v", err)
	}
	ws, err := verbs.OpenWorkspace(src, verbs.WorkspaceOptions{})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { ws.Close() })
	set, err := verbs.NewSet(ws, verbs.DefaultOptions(b.TempDir()))
	if err != nil {
		b.Fatal(err)
	}
	return set, src
}

// BenchmarkSearchVersusRipgrep runs fs.search and ripgrep (`rg`, as the
// ripgrep package installs it) on the same tree, for the same pattern,
// alternately in each iteration, with the page cache warm (a first round
// of each is not counted). rg runs with the options that make it search
// what fs.search searches: line numbers, no heading, .gitignore files
// honoured outside git repositories too (--no-require-git), as many
// threads as the hub's workers. Both must find the same number of
// matching lines. Reported: each one's median wall time and their ratio.
func BenchmarkSearchVersusRipgrep(b *testing.B) {
	rg, err := exec.LookPath("rg")
	if err != nil {
		b.Skip("rg not installed (apt-get install ripgrep)")
	}
	set, src := searchTree(b)
	workers := runtime.GOMAXPROCS(0)
	for _, tc := range []struct {
		name, pattern string
		fixed         bool
	}{
		{"literal", "ErrUnexpectedEOF", true},
		{"regexp", `func \(\w+ \*\w+\) Close\(`, false},
		{"regexp-ignorecase-literal", `(?i)unexpected eof`, false},
	} {
		b.Run(tc.name, func(b *testing.B) {
			max := verbs.MaxSearchResults
			args := verbs.FsSearchArgs{Pattern: tc.pattern, FixedStrings: tc.fixed, MaxResults: &max}
			argv := []string{"-n", "--no-heading", "--no-require-git", "-j", fmt.Sprint(workers)}
			if tc.fixed {
				argv = append(argv, "-F")
			}
			argv = append(argv, "-e", tc.pattern, ".")
			hubRun := func() (time.Duration, int) {
				t0 := time.Now()
				res, err := set.Search(context.Background(), args)
				d := time.Since(t0)
				if err != nil {
					b.Fatal(err)
				}
				if res.Truncated {
					b.Fatalf("fs.search was cut (%s)", res.TruncatedBy)
				}
				return d, len(res.Matches)
			}
			rgRun := func() (time.Duration, int) {
				cmd := exec.Command(rg, argv...)
				cmd.Dir = src
				t0 := time.Now()
				out, err := cmd.Output()
				d := time.Since(t0)
				if err != nil {
					b.Fatalf("rg: %v", err)
				}
				return d, bytes.Count(out, []byte{'\n'})
			}
			// Warm the page cache and check both agree.
			_, hn := hubRun()
			_, rn := rgRun()
			if hn != rn {
				b.Fatalf("fs.search found %d matching lines, rg %d", hn, rn)
			}
			var hub, ref []time.Duration
			i := 0
			for b.Loop() {
				if i%2 == 0 {
					d, _ := hubRun()
					hub = append(hub, d)
					d, _ = rgRun()
					ref = append(ref, d)
				} else {
					d, _ := rgRun()
					ref = append(ref, d)
					d, _ = hubRun()
					hub = append(hub, d)
				}
				i++
			}
			h, r := median(hub), median(ref)
			b.ReportMetric(float64(h.Microseconds())/1000, "hub-ms")
			b.ReportMetric(float64(r.Microseconds())/1000, "rg-ms")
			b.ReportMetric(float64(h)/float64(r), "hub/rg")
			b.ReportMetric(float64(hn), "lines")
			b.ReportMetric(0, "ns/op")
		})
	}
}

// BenchmarkSearchCold is fs.search and rg on the same tree with the page
// cache dropped before every run (as root: it writes 3 to
// /proc/sys/vm/drop_caches); it skips when that cannot be done.
func BenchmarkSearchCold(b *testing.B) {
	rg, err := exec.LookPath("rg")
	if err != nil {
		b.Skip("rg not installed (apt-get install ripgrep)")
	}
	drop := func() {
		exec.Command("sync").Run()
		if err := os.WriteFile("/proc/sys/vm/drop_caches", []byte("3\n"), 0o200); err != nil {
			b.Skipf("cannot drop the page cache (needs root): %v", err)
		}
	}
	drop()
	set, src := searchTree(b)
	max := verbs.MaxSearchResults
	args := verbs.FsSearchArgs{Pattern: "ErrUnexpectedEOF", FixedStrings: true, MaxResults: &max}
	var hub, ref []time.Duration
	i := 0
	for b.Loop() {
		runHub := func() {
			drop()
			t0 := time.Now()
			if _, err := set.Search(context.Background(), args); err != nil {
				b.Fatal(err)
			}
			hub = append(hub, time.Since(t0))
		}
		runRg := func() {
			drop()
			cmd := exec.Command(rg, "-n", "--no-heading", "--no-require-git", "-j", fmt.Sprint(runtime.GOMAXPROCS(0)), "-F", "-e", "ErrUnexpectedEOF", ".")
			cmd.Dir = src
			t0 := time.Now()
			if err := cmd.Run(); err != nil {
				b.Fatal(err)
			}
			ref = append(ref, time.Since(t0))
		}
		if i%2 == 0 {
			runHub()
			runRg()
		} else {
			runRg()
			runHub()
		}
		i++
	}
	h, r := median(hub), median(ref)
	b.ReportMetric(float64(h.Microseconds())/1000, "hub-ms")
	b.ReportMetric(float64(r.Microseconds())/1000, "rg-ms")
	b.ReportMetric(float64(h)/float64(r), "hub/rg")
	b.ReportMetric(0, "ns/op")
}

// BenchmarkFind is fs.find of **/*_test.go on the same tree.
func BenchmarkFind(b *testing.B) {
	set, _ := searchTree(b)
	max := verbs.MaxSearchResults
	args := verbs.FsFindArgs{Pattern: "**/*_test.go", Type: verbs.FindFile, MaxResults: &max}
	n := 0
	for b.Loop() {
		res, err := set.Find(context.Background(), args)
		if err != nil {
			b.Fatal(err)
		}
		n = len(res.Entries)
	}
	b.ReportMetric(float64(n), "entries")
}

func median(d []time.Duration) time.Duration {
	s := slices.Clone(d)
	slices.Sort(s)
	return s[len(s)/2]
}

// goSrc is $(go env GOROOT)/src, the Go toolchain's own source tree.
func goSrc(b *testing.B) string {
	b.Helper()
	out, err := exec.Command("go", "env", "GOROOT").Output()
	if err != nil {
		b.Skipf("go env GOROOT: %v", err)
	}
	return filepath.Join(strings.TrimSpace(string(out)), "src")
}
