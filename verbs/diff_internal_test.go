package verbs

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/a6afc2ce/hermes-hub/internal/testkit"
)

// gnuDiff is `diff -u` (with extra flags) of old and new, without its two
// header lines.
func gnuDiff(t *testing.T, old, new string, flags ...string) string {
	t.Helper()
	path, err := exec.LookPath("diff")
	if err != nil {
		testkit.Unavailable(t, "diff (diffutils) is not installed")
	}
	dir := t.TempDir()
	a, b := filepath.Join(dir, "a"), filepath.Join(dir, "b")
	if err := os.WriteFile(a, []byte(old), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(b, []byte(new), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(path, append(append([]string{"-u"}, flags...), a, b)...).Output()
	if ee, ok := err.(*exec.ExitError); err != nil && (!ok || ee.ExitCode() != 1) {
		t.Fatalf("diff: %v", err)
	}
	if len(out) == 0 {
		return ""
	}
	_, body, _ := strings.Cut(string(out), "\n+++ ")
	_, body, _ = strings.Cut(body, "\n")
	return body
}

// ourBody is unifiedDiff without its header lines.
func ourBody(t *testing.T, old, new string) string {
	t.Helper()
	d := unifiedDiff("f.txt", old, new)
	if d == "" {
		return ""
	}
	head := "--- a/f.txt\n+++ b/f.txt\n"
	if !strings.HasPrefix(d, head) {
		t.Fatalf("diff starts %q", d[:min(len(d), 40)])
	}
	return d[len(head):]
}

func numbered(from, to int) string {
	var b strings.Builder
	for i := from; i <= to; i++ {
		fmt.Fprintf(&b, "line %d\n", i)
	}
	return b.String()
}

// TestUnifiedDiffMatchesDiff compares the diff with `diff -u`'s, byte for
// byte, on edits whose shortest script is unique.
func TestUnifiedDiffMatchesDiff(t *testing.T) {
	base := numbered(1, 40)
	for _, tc := range []struct{ name, old, new string }{
		{"equal", base, base},
		{"one line changed", base, strings.Replace(base, "line 20\n", "line twenty\n", 1)},
		{"first line", base, strings.Replace(base, "line 1\n", "first\n", 1)},
		{"last line", base, strings.Replace(base, "line 40\n", "last\n", 1)},
		{"two changes share a hunk", base, strings.NewReplacer("line 10\n", "ten\n", "line 15\n", "fifteen\n").Replace(base)},
		{"two hunks", base, strings.NewReplacer("line 5\n", "five\n", "line 30\n", "thirty\n").Replace(base)},
		{"gap of exactly six", base, strings.NewReplacer("line 10\n", "ten\n", "line 17\n", "seventeen\n").Replace(base)},
		{"gap of seven", base, strings.NewReplacer("line 10\n", "ten\n", "line 18\n", "eighteen\n").Replace(base)},
		{"insert lines", base, strings.Replace(base, "line 20\n", "line 20\nnew a\nnew b\n", 1)},
		{"delete lines", base, strings.Replace(base, "line 20\nline 21\nline 22\n", "", 1)},
		{"insert at start", base, "zero\n" + base},
		{"append at end", base, base + "forty-one\n"},
		{"no newline at end, old", strings.TrimSuffix(base, "\n"), base},
		{"no newline at end, new", base, strings.TrimSuffix(base, "\n")},
		{"no newline at end, both changed", strings.TrimSuffix(base, "\n"), strings.TrimSuffix(strings.Replace(base, "line 40\n", "end\n", 1), "\n")},
		{"from empty", "", "a\nb\n"},
		{"to empty", "a\nb\n", ""},
		{"short file", "a\nb\nc\n", "a\nx\nc\n"},
		{"crlf", strings.ReplaceAll(base, "\n", "\r\n"), strings.ReplaceAll(strings.Replace(base, "line 3\n", "three\n", 1), "\n", "\r\n")},
		{"whole rewrite", numbered(1, 5), "p\nq\nr\n"},
		{"utf-8", "α\nβ\nγ\n", "α\nβ2\nγ\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			want := gnuDiff(t, tc.old, tc.new)
			if got := ourBody(t, tc.old, tc.new); got != want {
				t.Fatalf("got\n%s\nwant (diff -u)\n%s", got, want)
			}
		})
	}
}

// TestUnifiedDiffRandom: on random edits of texts with many equal lines,
// the diff applies with patch to give the new text, and it changes as few
// lines as `diff -u --minimal` does (both are shortest scripts, which may
// differ in where they put an ambiguous change).
func TestUnifiedDiffRandom(t *testing.T) {
	patchBin, err := exec.LookPath("patch")
	if err != nil {
		testkit.Unavailable(t, "patch is not installed")
	}
	seed := rand.Uint64()
	rng := rand.New(rand.NewPCG(seed, 1))
	t.Logf("seed %d", seed)
	words := []string{"a\n", "b\n", "c\n", "}\n", "\n", "return nil\n", "x\r\n"}
	text := func(n int) []string {
		l := make([]string, n)
		for i := range l {
			l[i] = words[rng.IntN(len(words))]
		}
		return l
	}
	for round := range 150 {
		old := text(rng.IntN(60))
		nw := append([]string(nil), old...)
		for range 1 + rng.IntN(6) {
			at := rng.IntN(len(nw) + 1)
			switch rng.IntN(3) {
			case 0:
				nw = append(nw[:at], append(text(1+rng.IntN(4)), nw[at:]...)...)
			case 1:
				nw = append(nw[:at], nw[min(len(nw), at+1+rng.IntN(4)):]...)
			default:
				if at < len(nw) {
					nw[at] = words[rng.IntN(len(words))]
				}
			}
		}
		o, n := strings.Join(old, ""), strings.Join(nw, "")
		if rng.IntN(4) == 0 && o != "" {
			o = strings.TrimSuffix(o, "\n")
		}
		if rng.IntN(4) == 0 && n != "" {
			n = strings.TrimSuffix(n, "\n")
		}
		d := unifiedDiff("f.txt", o, n)
		if (d == "") != (o == n) {
			t.Fatalf("round %d: empty diff %v for equal texts %v", round, d == "", o == n)
		}
		if d == "" {
			continue
		}
		dir := t.TempDir()
		f := filepath.Join(dir, "f.txt")
		if err := os.WriteFile(f, []byte(o), 0o644); err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command(patchBin, "-s", "--no-backup-if-mismatch", f)
		cmd.Stdin = strings.NewReader(d)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("round %d: patch: %v\n%s\nold %q\nnew %q\ndiff\n%s", round, err, out, o, n, d)
		}
		if got, _ := os.ReadFile(f); !bytes.Equal(got, []byte(n)) {
			t.Fatalf("round %d: patched text %q, want %q\ndiff\n%s", round, got, n, d)
		}
		if c, w := changed(ourBody(t, o, n)), changed(gnuDiff(t, o, n, "--minimal")); c != w {
			t.Fatalf("round %d: %d lines changed, diff --minimal changes %d\nold %q\nnew %q", round, c, w, o, n)
		}
	}
}

// changed counts the deleted and inserted lines of a diff body.
func changed(body string) int {
	n := 0
	for _, l := range strings.Split(body, "\n") {
		if strings.HasPrefix(l, "-") || strings.HasPrefix(l, "+") {
			n++
		}
	}
	return n
}

// TestUnifiedDiffLargeFileSmallEdit: a one-line change in a large text
// compares only the lines around it.
func TestUnifiedDiffLargeFileSmallEdit(t *testing.T) {
	old := numbered(1, 200_000)
	nw := strings.Replace(old, "line 123456\n", "changed\n", 1)
	want := "--- a/f.txt\n+++ b/f.txt\n@@ -123453,7 +123453,7 @@\n line 123453\n line 123454\n line 123455\n-line 123456\n+changed\n line 123457\n line 123458\n line 123459\n"
	if got := unifiedDiff("f.txt", old, nw); got != want {
		t.Fatalf("got\n%s\nwant\n%s", got, want)
	}
}

// TestUnifiedDiffLargeChanges: changes too many for an exact script in
// reasonable time (a word renamed on every 7th line of 100,000, and two
// texts with no line in common) still give a diff that patch applies.
func TestUnifiedDiffLargeChanges(t *testing.T) {
	patchBin, err := exec.LookPath("patch")
	if err != nil {
		testkit.Unavailable(t, "patch is not installed")
	}
	var renamed strings.Builder
	old := numbered(1, 100_000)
	for i, l := range strings.SplitAfter(old, "\n") {
		if i%7 == 0 {
			l = strings.Replace(l, "line", "row", 1)
		}
		renamed.WriteString(l)
	}
	for name, c := range map[string][2]string{
		"renamed":      {old, renamed.String()},
		"no line kept": {numbered(1, 30_000), strings.ReplaceAll(numbered(1, 30_000), "line", "other")},
	} {
		d := unifiedDiff("f.txt", c[0], c[1])
		f := filepath.Join(t.TempDir(), "f.txt")
		if err := os.WriteFile(f, []byte(c[0]), 0o644); err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command(patchBin, "-s", "--no-backup-if-mismatch", f)
		cmd.Stdin = strings.NewReader(d)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("%s: patch: %v\n%s", name, err, out)
		}
		if got, _ := os.ReadFile(f); string(got) != c[1] {
			t.Fatalf("%s: the patched text differs", name)
		}
	}
}
