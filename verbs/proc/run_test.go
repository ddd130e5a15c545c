//go:build linux

package proc_test

import (
	"bytes"
	"context"
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"strconv"
	"testing"
	"time"

	"github.com/a6afc2ce/hermes-hub/verbs/proc"
)

// run runs sh with args (args[0] the name it is shown as) in a temporary
// directory and returns how it ended and what it wrote.
func run(t *testing.T, ctx context.Context, args ...string) (proc.Result, string, string, error) {
	t.Helper()
	sh, err := exec.LookPath("sh")
	if err != nil {
		t.Fatal(err)
	}
	var stdout, stderr bytes.Buffer
	r, err := proc.Run(ctx, proc.Spec{
		Path: sh, Args: args, Dir: t.TempDir(), Env: []string{"PATH=" + os.Getenv("PATH")},
		Stdout: &stdout, Stderr: &stderr, Limits: proc.Limits{MaxProcs: 64},
	})
	return r, stdout.String(), stderr.String(), err
}

// TestRun: Run reports a program's exit status and streams, shows it the
// name it is given, kills it at the deadline and tells a program that
// could not start from one that failed.
func TestRun(t *testing.T) {
	r, out, errOut, err := run(t, context.Background(), "shown-as", "-c", `tr '\0' ' ' < /proc/$$/cmdline; echo; echo oops >&2; exit 3`)
	if err != nil || r.ExitCode != 3 || r.TimedOut {
		t.Fatalf("exit 3: %+v %v", r, err)
	}
	if out != "shown-as -c "+`tr '\0' ' ' < /proc/$$/cmdline; echo; echo oops >&2; exit 3`+" \n" || errOut != "oops\n" {
		t.Errorf("stdout %q, stderr %q", out, errOut)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	r, _, _, err = run(t, ctx, "sh", "-c", "sleep 300")
	if err != nil || r.ExitCode != -1 || !r.TimedOut {
		t.Fatalf("at the deadline: %+v %v", r, err)
	}

	// Reported by the supervisor's exec stage, or by the start itself.
	for _, supervised := range []bool{true, false} {
		t.Run("missing program, supervised="+strconv.FormatBool(supervised), func(t *testing.T) {
			if !supervised {
				proc.WithoutSupervisor(t)
			}
			var stdout, stderr bytes.Buffer
			_, err := proc.Run(context.Background(), proc.Spec{Path: "/no/such/program", Args: []string{"x"}, Dir: t.TempDir(), Stdout: &stdout, Stderr: &stderr})
			var se *proc.StartError
			if !errors.As(err, &se) || !errors.Is(err, fs.ErrNotExist) {
				t.Fatalf("%v, want a *StartError for a missing file", err)
			}
		})
	}
}
