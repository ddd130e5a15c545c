package main

import (
	"bufio"
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"regexp"
	"slices"
	"strings"
	"time"
)

// event is one event of `go test -json` (see `go doc cmd/test2json`), or
// of the build output it interleaves (`go help buildjson`).
type event struct {
	Time       time.Time
	Action     string
	Package    string
	Test       string
	Elapsed    float64
	Output     string
	ImportPath string
}

// line is one line of a package's output and the test that printed it
// ("" for the package itself).
type line struct{ test, text string }

// pkg is what a package's tests printed until the package ends.
type pkg struct {
	lines  []line
	failed map[string]bool // tests that failed
}

// result is a test or package that ended, for the summary.
type result struct {
	pkg, test string
	elapsed   float64
	reason    string // a skipped test's
}

// report prints go test's events as go test prints them without -v, and
// keeps what the summary lists.
type report struct {
	out     io.Writer
	start   time.Time
	pkgs    map[string]*pkg
	skipped []result
	tests   []result // top-level tests that ran
	ended   []result // packages
	passed  int
	failed  int
}

func newReport(out io.Writer) *report {
	return &report{out: out, start: time.Now(), pkgs: map[string]*pkg{}}
}

// read consumes the event stream to its end. A line that is not an event
// (go test's own messages) is printed as it is.
func (r *report) read(in io.Reader) error {
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	for sc.Scan() {
		var e event
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil || e.Action == "" {
			fmt.Fprintln(r.out, sc.Text())
			continue
		}
		r.add(e)
	}
	return sc.Err()
}

func (r *report) add(e event) {
	switch e.Action {
	case "build-output":
		fmt.Fprint(r.out, e.Output)
		return
	case "build-fail", "start", "run", "pause", "cont", "bench":
		return
	}
	p := r.pkgs[e.Package]
	if p == nil {
		p = &pkg{failed: map[string]bool{}}
		r.pkgs[e.Package] = p
	}
	switch {
	case e.Action == "output":
		p.lines = append(p.lines, line{e.Test, e.Output})
	case e.Test != "":
		r.testEnded(e, p)
	default:
		r.packageEnded(e, p)
	}
}

func (r *report) testEnded(e event, p *pkg) {
	switch e.Action {
	case "pass":
		r.passed++
	case "fail":
		r.failed++
		p.failed[e.Test] = true
	case "skip":
		r.skipped = append(r.skipped, result{pkg: e.Package, test: e.Test, reason: skipReason(p.lines, e.Test)})
	}
	if e.Action != "skip" && !strings.Contains(e.Test, "/") {
		r.tests = append(r.tests, result{pkg: e.Package, test: e.Test, elapsed: e.Elapsed})
	}
}

// packageEnded prints the package's line, and before it, when it failed,
// the output of its failed tests and its own (a panic, a timeout).
func (r *report) packageEnded(e event, p *pkg) {
	for _, l := range p.lines {
		show := l.test == "" || e.Action == "fail" && p.failed[l.test]
		if l.test == "" && e.Action != "fail" {
			// A passing package says only its ok line, as go test does.
			show = strings.HasPrefix(l.text, "ok ") || strings.HasPrefix(l.text, "?")
		}
		if show && !isProgress(l.text) {
			fmt.Fprint(r.out, l.text)
		}
	}
	if e.Action != "skip" {
		r.ended = append(r.ended, result{pkg: e.Package, elapsed: e.Elapsed})
	}
	delete(r.pkgs, e.Package)
}

// isProgress tells the lines go test -v adds and go test does not print.
func isProgress(text string) bool {
	for _, p := range []string{"=== RUN", "=== PAUSE", "=== CONT", "=== NAME", "PASS\n"} {
		if strings.HasPrefix(text, p) {
			return true
		}
	}
	return false
}

// logPrefix is how t.Log and t.Skip start a line: "    file_test.go:12: ".
var logPrefix = regexp.MustCompile(`^\s+[\w.-]+\.go:\d+: `)

// skipReason is what a skipped test said, on one line.
func skipReason(lines []line, test string) string {
	var said []string
	for _, l := range lines {
		if l.test != test || isProgress(l.text) || strings.HasPrefix(strings.TrimSpace(l.text), "--- SKIP") {
			continue
		}
		said = append(said, strings.TrimSpace(logPrefix.ReplaceAllString(l.text, "")))
	}
	if len(said) == 0 {
		return "(no reason given)"
	}
	return strings.Join(said, " ")
}

// summary prints the skipped tests and their reasons, the slowest packages
// and tests, and the counts.
func (r *report) summary(slowest int) {
	w := r.out
	fmt.Fprintln(w)
	if len(r.skipped) > 0 {
		fmt.Fprintf(w, "Skipped (%d):\n", len(r.skipped))
		slices.SortFunc(r.skipped, func(a, b result) int { return cmp.Or(cmp.Compare(a.pkg, b.pkg), cmp.Compare(a.test, b.test)) })
		for _, s := range r.skipped {
			fmt.Fprintf(w, "  %s %s: %s\n", short(s.pkg), s.test, s.reason)
		}
	}
	if slowest > 0 {
		printSlowest(w, "Slowest packages:", r.ended, slowest)
		printSlowest(w, "Slowest tests:", r.tests, slowest)
	}
	fmt.Fprintf(w, "%d packages; tests and subtests: %d passed, %d failed, %d skipped; %s\n",
		len(r.ended), r.passed, r.failed, len(r.skipped), time.Since(r.start).Round(time.Second))
}

func printSlowest(w io.Writer, title string, rs []result, n int) {
	rs = slices.Clone(rs)
	slices.SortFunc(rs, func(a, b result) int { return cmp.Compare(b.elapsed, a.elapsed) })
	if len(rs) > n {
		rs = rs[:n]
	}
	if len(rs) == 0 {
		return
	}
	fmt.Fprintln(w, title)
	for _, x := range rs {
		name := short(x.pkg)
		if x.test != "" {
			name += " " + x.test
		}
		fmt.Fprintf(w, "  %6.1fs  %s\n", x.elapsed, name)
	}
}

// short drops the module's path from a package's.
func short(p string) string {
	if _, rest, ok := strings.Cut(p, "/hermes-hub/"); ok {
		return rest
	}
	return p
}
