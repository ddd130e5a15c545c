// Command testreport runs `go test -json` and prints what `go test`
// prints (a line per package, and the output of each failed test or
// build), then what plain `go test` hides: the tests that were skipped,
// with their reasons, and the slowest packages and tests. `make test` runs
// the unit tests through it.
//
// Usage:
//
//	go run ./internal/testreport [-go GO] [-json FILE] [-slowest N] -- [go test flags] [packages]
//
// -go names the go command (default go); -json FILE keeps the whole event
// stream (for timings). The exit status
// is go test's, or 1 when a test failed although go test exited 0.
package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func run(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("testreport", flag.ContinueOnError)
	fs.SetOutput(stderr)
	jsonOut := fs.String("json", "", "also write go test's JSON event stream to this file")
	slowest := fs.Int("slowest", 5, "list this many of the slowest packages and tests (0: none)")
	goCmd := fs.String("go", "go", "the go command")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	goTest := append([]string{"test", "-json"}, fs.Args()...)
	cmd := exec.Command(*goCmd, goTest...)
	cmd.Stderr = stderr
	events, err := cmd.StdoutPipe()
	if err != nil {
		fmt.Fprintln(stderr, "testreport:", err)
		return 1
	}
	var in io.Reader = events
	if *jsonOut != "" {
		f, err := os.Create(*jsonOut)
		if err != nil {
			fmt.Fprintln(stderr, "testreport:", err)
			return 1
		}
		defer f.Close()
		in = io.TeeReader(events, f)
	}
	if err := cmd.Start(); err != nil {
		fmt.Fprintln(stderr, "testreport: go test:", err)
		return 1
	}
	r := newReport(stdout)
	readErr := r.read(in)
	err = cmd.Wait()
	r.summary(*slowest)
	if readErr != nil {
		fmt.Fprintln(stderr, "testreport: reading go test's events:", readErr)
		return 1
	}
	if ee, ok := err.(*exec.ExitError); ok {
		return ee.ExitCode()
	}
	if err != nil {
		fmt.Fprintln(stderr, "testreport: go test:", err)
		return 1
	}
	if r.failed > 0 {
		return 1
	}
	return 0
}
