package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/a6afc2ce/hermes-hub/internal/testkit"
)

// stream is go test -json's output for three packages: one passing with a
// skipped test, one failing in a subtest, one without tests.
const stream = `{"Action":"start","Package":"example.org/hermes-hub/a"}
{"Action":"run","Package":"example.org/hermes-hub/a","Test":"TestOK"}
{"Action":"output","Package":"example.org/hermes-hub/a","Test":"TestOK","Output":"=== RUN   TestOK\n"}
{"Action":"output","Package":"example.org/hermes-hub/a","Test":"TestOK","Output":"    a_test.go:9: chatter of a passing test\n"}
{"Action":"pass","Package":"example.org/hermes-hub/a","Test":"TestOK","Elapsed":1.5}
{"Action":"run","Package":"example.org/hermes-hub/a","Test":"TestNeedsChromium"}
{"Action":"output","Package":"example.org/hermes-hub/a","Test":"TestNeedsChromium","Output":"=== RUN   TestNeedsChromium\n"}
{"Action":"output","Package":"example.org/hermes-hub/a","Test":"TestNeedsChromium","Output":"    a_test.go:20: chromium not installed\n"}
{"Action":"output","Package":"example.org/hermes-hub/a","Test":"TestNeedsChromium","Output":"--- SKIP: TestNeedsChromium (0.00s)\n"}
{"Action":"skip","Package":"example.org/hermes-hub/a","Test":"TestNeedsChromium","Elapsed":0}
{"Action":"output","Package":"example.org/hermes-hub/a","Output":"PASS\n"}
{"Action":"output","Package":"example.org/hermes-hub/a","Output":"ok  \texample.org/hermes-hub/a\t1.6s\n"}
{"Action":"pass","Package":"example.org/hermes-hub/a","Elapsed":1.6}
{"Action":"start","Package":"example.org/hermes-hub/b"}
{"Action":"run","Package":"example.org/hermes-hub/b","Test":"TestTable"}
{"Action":"output","Package":"example.org/hermes-hub/b","Test":"TestTable","Output":"=== RUN   TestTable\n"}
{"Action":"run","Package":"example.org/hermes-hub/b","Test":"TestTable/good"}
{"Action":"output","Package":"example.org/hermes-hub/b","Test":"TestTable/good","Output":"    b_test.go:5: fine\n"}
{"Action":"pass","Package":"example.org/hermes-hub/b","Test":"TestTable/good","Elapsed":0}
{"Action":"run","Package":"example.org/hermes-hub/b","Test":"TestTable/bad"}
{"Action":"output","Package":"example.org/hermes-hub/b","Test":"TestTable/bad","Output":"    b_test.go:7: want 2, got 3\n"}
{"Action":"output","Package":"example.org/hermes-hub/b","Test":"TestTable/bad","Output":"    --- FAIL: TestTable/bad (0.00s)\n"}
{"Action":"fail","Package":"example.org/hermes-hub/b","Test":"TestTable/bad","Elapsed":0}
{"Action":"output","Package":"example.org/hermes-hub/b","Test":"TestTable","Output":"--- FAIL: TestTable (0.20s)\n"}
{"Action":"fail","Package":"example.org/hermes-hub/b","Test":"TestTable","Elapsed":0.2}
{"Action":"output","Package":"example.org/hermes-hub/b","Output":"FAIL\n"}
{"Action":"output","Package":"example.org/hermes-hub/b","Output":"FAIL\texample.org/hermes-hub/b\t0.3s\n"}
{"Action":"fail","Package":"example.org/hermes-hub/b","Elapsed":0.3}
{"ImportPath":"example.org/hermes-hub/c [example.org/hermes-hub/c.test]","Action":"build-output","Output":"# example.org/hermes-hub/c\n"}
{"ImportPath":"example.org/hermes-hub/c [example.org/hermes-hub/c.test]","Action":"build-output","Output":"c/c.go:3:1: syntax error\n"}
{"Action":"output","Package":"example.org/hermes-hub/d","Output":"?   \texample.org/hermes-hub/d\t[no test files]\n"}
{"Action":"skip","Package":"example.org/hermes-hub/d","Elapsed":0}
`

// TestReport: what go test prints, then the skipped tests with their
// reasons, the slowest, and the counts.
func TestReport(t *testing.T) {
	var out bytes.Buffer
	r := newReport(&out)
	if err := r.read(strings.NewReader(stream)); err != nil {
		t.Fatal(err)
	}
	r.summary(2)
	got := out.String()
	for _, want := range []string{
		"ok  \texample.org/hermes-hub/a\t1.6s\n",
		"    b_test.go:7: want 2, got 3\n    --- FAIL: TestTable/bad (0.00s)\n--- FAIL: TestTable (0.20s)\nFAIL\nFAIL\texample.org/hermes-hub/b\t0.3s\n",
		"# example.org/hermes-hub/c\nc/c.go:3:1: syntax error\n",
		"?   \texample.org/hermes-hub/d\t[no test files]\n",
		"Skipped (1):\n  a TestNeedsChromium: chromium not installed\n",
		"Slowest packages:\n     1.6s  a\n     0.3s  b\n",
		"Slowest tests:\n     1.5s  a TestOK\n     0.2s  b TestTable\n",
		"2 packages; tests and subtests: 2 passed, 2 failed, 1 skipped;",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("the report lacks %q:\n%s", want, got)
		}
	}
	for _, not := range []string{"chatter of a passing test", "fine", "=== RUN", "PASS\n"} {
		if strings.Contains(got, not) {
			t.Errorf("the report shows %q, which go test hides:\n%s", not, got)
		}
	}
	if r.failed != 2 {
		t.Errorf("failed: %d", r.failed)
	}
}

// TestRunExitStatus: the program's status is go test's, and 1 when a test
// failed while go test said 0.
func TestRunExitStatus(t *testing.T) {
	if _, err := exec.LookPath("sh"); err != nil {
		testkit.Unavailable(t, "sh not installed: the test's stand-in go command is a shell script")
	}
	dir := t.TempDir()
	events := filepath.Join(dir, "events.json")
	os.WriteFile(events, []byte(stream), 0o600)
	for status, want := range map[string]int{"0": 1, "2": 2} {
		fake := filepath.Join(dir, "go"+status)
		os.WriteFile(fake, []byte("#!/bin/sh\ncat "+events+"\nexit "+status+"\n"), 0o755)
		var out, errb bytes.Buffer
		kept := filepath.Join(dir, "kept"+status+".json")
		if got := run([]string{"-go", fake, "-json", kept, "--", "./..."}, &out, &errb); got != want {
			t.Errorf("go test exiting %s: status %d, want %d\n%s%s", status, got, want, out.String(), errb.String())
		}
		if b, _ := os.ReadFile(kept); string(b) != stream {
			t.Errorf("-json kept %d bytes of %d", len(b), len(stream))
		}
	}
}
