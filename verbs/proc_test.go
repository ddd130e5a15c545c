//go:build unix

package verbs_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/a6afc2ce/hermes-hub/executor"
	"github.com/a6afc2ce/hermes-hub/verbs"
	"github.com/a6afc2ce/hermes-hub/verbs/internal/verbtest"
)

func TestProcRunEcho(t *testing.T) {
	e := verbtest.New(t)
	r := verbtest.RunProc(t, e, "web.t1", verbs.ProcRunArgs{Executable: "echo", Arguments: []string{"hello", "$HOME", "a b"}})
	if r.ExitCode != 0 || r.TimedOut {
		t.Fatalf("exit %d timedOut %v", r.ExitCode, r.TimedOut)
	}
	if r.StdoutPath != "proc/web.t1/stdout.txt" || r.StderrPath != "proc/web.t1/stderr.txt" {
		t.Errorf("paths %q %q", r.StdoutPath, r.StderrPath)
	}
	const want = "hello $HOME a b\n" // no shell: nothing expanded
	if got := e.StateFile(r.StdoutPath); got != want {
		t.Errorf("stdout file %q, want %q", got, want)
	}
	if r.StdoutTail != want || r.StdoutBytes != int64(len(want)) || r.StderrBytes != 0 || r.StderrTail != "" {
		t.Errorf("result %+v", r)
	}
	for _, p := range []string{"proc/web.t1", r.StdoutPath, r.StderrPath} {
		fi, err := os.Stat(filepath.Join(e.State, p))
		if err != nil {
			t.Fatal(err)
		}
		want := os.FileMode(0o600)
		if fi.IsDir() {
			want = 0o700
		}
		if fi.Mode().Perm() != want {
			t.Errorf("%s mode %v, want %v", p, fi.Mode().Perm(), want)
		}
	}
	// Direct call without a turn id: a cli.<time>.<hex> directory.
	res, err := e.Set.ProcRun(context.Background(), verbs.ProcRunArgs{Executable: "sh", Arguments: []string{"-c", "echo err >&2; exit 0"}})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(res.StderrPath, "proc/cli.") || res.StderrTail != "err\n" {
		t.Errorf("cli run: %+v", res)
	}
}

func TestProcRunExitCodes(t *testing.T) {
	e := verbtest.New(t)
	r := verbtest.RunProc(t, e, "t.exit", verbs.ProcRunArgs{Executable: "sh", Arguments: []string{"-c", "echo out; echo bad >&2; exit 3"}})
	if r.ExitCode != 3 || r.TimedOut || r.StdoutTail != "out\n" || r.StderrTail != "bad\n" {
		t.Errorf("result %+v", r)
	}
	// The executor reports a non-zero exit as a succeeded verb.
	out := e.RunCtx(verbtest.WithTurn("t.exit2"), "proc.run", verbs.ProcRunArgs{Executable: "false", Arguments: []string{}})
	if !out.Succeeded() || !strings.Contains(string(out.JSON()), `"succeeded":true`) || !strings.Contains(string(out.JSON()), `"exitCode":1`) {
		t.Errorf("false: %s", out.JSON())
	}
	// A signal death reads as -1.
	if r := verbtest.RunProc(t, e, "t.sig", verbs.ProcRunArgs{Executable: "sh", Arguments: []string{"-c", "kill -9 $$"}}); r.ExitCode != -1 || r.TimedOut {
		t.Errorf("killed: %+v", r)
	}
}

// TestProcRunWithoutArguments: an envelope without arguments runs the
// program with none, as one with an empty list does (the schema says the
// field is optional); chat's `/proc.run echo` too.
func TestProcRunWithoutArguments(t *testing.T) {
	e := verbtest.New(t)
	for _, args := range []any{map[string]any{"executable": "echo"}, map[string]any{"executable": "echo", "arguments": []string{}}} {
		out := e.Run("proc.run", args)
		if !out.Succeeded() {
			t.Fatalf("%v: %s", args, out.JSON())
		}
		if r := out.Value.(*verbs.ProcRunResult); r.ExitCode != 0 || r.StdoutTail != "\n" {
			t.Fatalf("%v: %+v", args, r)
		}
	}
	cmd, err := e.X.ParseCommand("/proc.run echo")
	if err != nil || string(cmd.Envelope().Arguments) != `{"executable":"echo","arguments":[]}` {
		t.Fatalf("/proc.run echo: %s %v", cmd.Envelope().Arguments, err)
	}
	cmd, err = e.X.ParseCommand("/proc.run git status --short")
	if err != nil || string(cmd.Envelope().Arguments) != `{"executable":"git","arguments":["status","--short"]}` {
		t.Fatalf("/proc.run git status --short: %s %v", cmd.Envelope().Arguments, err)
	}
}

func TestProcRunFailures(t *testing.T) {
	e := verbtest.New(t)
	e.Put("data.txt", "not a program")
	e.Put("noexec.sh", "#!/bin/sh\n")
	e.Fails(executor.CodeNotFound, "proc.run", verbs.ProcRunArgs{Executable: "no-such-program-here", Arguments: []string{}}, "Executable not found: no-such-program-here")
	e.Fails(executor.CodeNotFound, "proc.run", verbs.ProcRunArgs{Executable: "/no/such/program", Arguments: []string{}}, "Executable not found: /no/such/program")
	e.Fails(executor.CodeNotFound, "proc.run", verbs.ProcRunArgs{Executable: "./missing.sh", Arguments: []string{}}, "Executable not found: ./missing.sh")
	e.Fails(executor.CodeInvalidArguments, "proc.run", verbs.ProcRunArgs{Executable: "./noexec.sh", Arguments: []string{}}, "not an executable file")
	e.Fails(executor.CodeInvalidArguments, "proc.run", verbs.ProcRunArgs{Executable: "", Arguments: []string{}}, "empty")
	e.Fails(executor.CodeInvalidArguments, "proc.run", verbs.ProcRunArgs{Executable: "echo", Arguments: []string{"a\x00b"}}, "NUL")
	e.Fails(executor.CodeInvalidArguments, "proc.run", verbs.ProcRunArgs{Executable: "echo", Arguments: []string{}, TimeoutSeconds: verbtest.Ptr(0)}, "timeoutSeconds is 0")
	e.Fails(executor.CodeNotFound, "proc.run", verbs.ProcRunArgs{Executable: "echo", Arguments: []string{}, WorkingDirectory: "nowhere"}, "Directory not found: nowhere")
	e.Fails(executor.CodeNotADirectory, "proc.run", verbs.ProcRunArgs{Executable: "echo", Arguments: []string{}, WorkingDirectory: "data.txt"})
	for _, id := range []string{"../x", "a/b", "..", "a..b", "chat:1", strings.Repeat("x", 201)} {
		_, err := e.Set.ProcRun(verbtest.WithTurn(id), verbs.ProcRunArgs{Executable: "echo", Arguments: []string{}})
		verbtest.CheckErr(t, err, executor.CodeInvalidArguments, "Turn id")
	}
	if _, err := os.Stat(filepath.Join(e.Base, "x")); err == nil {
		t.Error("a bad turn id created a directory outside the state root")
	}
}

func TestProcRunWorkingDirectory(t *testing.T) {
	e := verbtest.New(t)
	e.Put("sub/dir/script.sh", "#!/bin/sh\npwd\necho \"$@\"\n")
	if err := os.Chmod(filepath.Join(e.Dir, "sub/dir/script.sh"), 0o755); err != nil {
		t.Fatal(err)
	}
	r := verbtest.RunProc(t, e, "t.wd", verbs.ProcRunArgs{Executable: "pwd", Arguments: []string{}, WorkingDirectory: "sub"})
	if want := filepath.Join(e.Dir, "sub") + "\n"; r.StdoutTail != want {
		t.Errorf("pwd %q, want %q", r.StdoutTail, want)
	}
	r = verbtest.RunProc(t, e, "t.script", verbs.ProcRunArgs{Executable: "./script.sh", Arguments: []string{"x"}, WorkingDirectory: "sub/dir"})
	if want := filepath.Join(e.Dir, "sub/dir") + "\nx\n"; r.StdoutTail != want {
		t.Errorf("script %q, want %q", r.StdoutTail, want)
	}
	r = verbtest.RunProc(t, e, "t.script2", verbs.ProcRunArgs{Executable: "sub/dir/script.sh", Arguments: []string{}})
	if r.ExitCode != 0 || !strings.HasPrefix(r.StdoutTail, e.Dir+"\n") {
		t.Errorf("script from root: %+v", r)
	}
	e.Fails(executor.CodeForbiddenPath, "proc.run", verbs.ProcRunArgs{Executable: "pwd", Arguments: []string{}, WorkingDirectory: ".."})
	e.Fails(executor.CodeForbiddenPath, "proc.run", verbs.ProcRunArgs{Executable: "pwd", Arguments: []string{}, WorkingDirectory: ".hub"})
}

func TestProcRunEnvironment(t *testing.T) {
	t.Setenv("HUB_TEST_SECRET", "s3cr3t")
	t.Setenv("TELEGRAM_TOKEN", "123:abc")
	t.Setenv("LANG", "C.UTF-8")
	e := verbtest.New(t)
	r := verbtest.RunProc(t, e, "t.env", verbs.ProcRunArgs{Executable: "env", Arguments: []string{}})
	out := e.StateFile(r.StdoutPath)
	if strings.Contains(out, "s3cr3t") || strings.Contains(out, "HUB_TEST_SECRET") || strings.Contains(out, "123:abc") {
		t.Errorf("the child saw the hub's secrets:\n%s", out)
	}
	if !strings.Contains(out, "PATH=") || !strings.Contains(out, "LANG=C.UTF-8") {
		t.Errorf("allow-listed variables missing:\n%s", out)
	}
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		name, _, _ := strings.Cut(line, "=")
		allowed := false
		for _, a := range verbs.DefaultEnvAllow {
			allowed = allowed || name == a
		}
		if !allowed && name != "PWD" && name != "SHLVL" && name != "_" {
			t.Errorf("unexpected variable %s", name)
		}
	}
}

func TestProcRunTimeoutKillsGroup(t *testing.T) {
	e := verbtest.New(t)
	r := verbtest.RunProc(t, e, "t.timeout", verbs.ProcRunArgs{
		Executable:     "sh",
		Arguments:      []string{"-c", "sleep 100 & echo $! > pid; echo started; wait"},
		TimeoutSeconds: verbtest.Ptr(1),
	})
	if !r.TimedOut || r.ExitCode != -1 {
		t.Errorf("result %+v, want timedOut and exit -1", r)
	}
	if r.StdoutTail != "started\n" {
		t.Errorf("output before the timeout was lost: %q", r.StdoutTail)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(e.Get("pid")))
	if err != nil {
		t.Fatal(err)
	}
	// Killed processes may take a moment to be reaped by init.
	gone := false
	for range 100 {
		if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
			gone = true
			break
		}
		if verbtest.Zombie(pid) {
			gone = true
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if !gone {
		_ = syscall.Kill(pid, syscall.SIGKILL)
		t.Fatalf("grandchild %d survived the timeout", pid)
	}
}

func TestProcRunLeftoverProcessesDoNotHang(t *testing.T) {
	e := verbtest.New(t)
	// The background sleep holds stdout; the run must end when sh exits
	// and the leftover must be killed.
	r := verbtest.RunProc(t, e, "t.bg", verbs.ProcRunArgs{
		Executable: "sh",
		Arguments:  []string{"-c", "sleep 100 & echo $! > pid; echo done"},
	})
	if r.ExitCode != 0 || r.TimedOut || r.StdoutTail != "done\n" {
		t.Errorf("result %+v", r)
	}
	pid, _ := strconv.Atoi(strings.TrimSpace(e.Get("pid")))
	for range 100 {
		if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) || verbtest.Zombie(pid) {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	_ = syscall.Kill(pid, syscall.SIGKILL)
	t.Fatalf("leftover %d still running", pid)
}

func TestProcRunCanceled(t *testing.T) {
	e := verbtest.New(t)
	ctx, cancel := context.WithCancel(verbtest.WithTurn("t.cancel"))
	done := make(chan error, 1)
	go func() {
		_, err := e.Set.ProcRun(ctx, verbs.ProcRunArgs{Executable: "sh", Arguments: []string{"-c", "echo go; sleep 100"}})
		done <- err
	}()
	// Cancel once the child has written, so it is running.
	for range 200 {
		if b, _ := os.ReadFile(filepath.Join(e.State, "proc/t.cancel/stdout.txt")); len(b) > 0 {
			break
		}
		time.Sleep(25 * time.Millisecond)
	}
	cancel()
	err := <-done
	// One spelling, no context error, no path of the state directory, and
	// the command that reads the output.
	verbtest.CheckErr(t, err, executor.CodeCanceled, "sh was cancelled before it finished; all of its output so far: `/proc.output outputId=t.cancel stream=stdout startLine=1`")
	if msg := err.Error(); strings.Contains(msg, "context canceled") || strings.Contains(msg, "proc/") || strings.Contains(msg, "canceled") {
		t.Fatalf("message %q", msg)
	}
}

func TestProcRunOutputCap(t *testing.T) {
	e := verbtest.New(t, func(o *verbs.Options, _ *verbs.WorkspaceOptions) {
		o.MaxOutputBytes = 1000
		o.TailBytes = 100
	})
	r := verbtest.RunProc(t, e, "t.cap", verbs.ProcRunArgs{Executable: "head", Arguments: []string{"-c", "5000", "/dev/zero"}})
	if r.StdoutBytes != 5000 {
		t.Errorf("stdoutBytes %d, want 5000", r.StdoutBytes)
	}
	got := e.StateFile(r.StdoutPath)
	want := strings.Repeat("\x00", 1000) + "\n[output truncated: 4000 bytes dropped]\n"
	if got != want {
		t.Errorf("file is %d bytes ending %q", len(got), got[max(0, len(got)-60):])
	}
	if len(r.StdoutTail) != 100 {
		t.Errorf("tail is %d bytes, want 100", len(r.StdoutTail))
	}
	// The tail starts at a rune boundary and is valid UTF-8.
	r = verbtest.RunProc(t, e, "t.utf8", verbs.ProcRunArgs{Executable: "printf", Arguments: []string{strings.Repeat("é", 75)}})
	if r.StdoutTail != strings.Repeat("é", 50) {
		t.Errorf("tail %q", r.StdoutTail)
	}
	if r.StdoutBytes != 150 || e.StateFile(r.StdoutPath) != strings.Repeat("é", 75) {
		t.Errorf("utf8 run %+v", r)
	}
	r = verbtest.RunProc(t, e, "t.utf8odd", verbs.ProcRunArgs{Executable: "printf", Arguments: []string{strings.Repeat("é", 75) + "x"}})
	if r.StdoutTail != strings.Repeat("é", 49)+"x" {
		t.Errorf("tail cut inside a rune: %q", r.StdoutTail)
	}
	// A tail that cuts a line starts at the next line; one that starts
	// where a line does keeps it.
	r = verbtest.RunProc(t, e, "t.lines", verbs.ProcRunArgs{Executable: "sh", Arguments: []string{"-c", "for i in $(seq 1 40); do echo line$i; done"}})
	if want := "line27\nline28\nline29\nline30\nline31\nline32\nline33\nline34\nline35\nline36\nline37\nline38\nline39\nline40\n"; r.StdoutTail != want {
		t.Errorf("line tail %q, want %q", r.StdoutTail, want)
	}
	r = verbtest.RunProc(t, e, "t.aligned", verbs.ProcRunArgs{Executable: "printf", Arguments: []string{strings.Repeat("a", 99) + "\n" + strings.Repeat("b", 99) + "\n"}})
	if want := strings.Repeat("b", 99) + "\n"; r.StdoutTail != want {
		t.Errorf("aligned tail %q, want %q", r.StdoutTail, want)
	}
	r = verbtest.RunProc(t, e, "t.aligned2", verbs.ProcRunArgs{Executable: "printf", Arguments: []string{strings.Repeat("a", 99) + "\n" + strings.Repeat("b", 49) + "\n" + strings.Repeat("c", 50)}})
	if want := strings.Repeat("b", 49) + "\n" + strings.Repeat("c", 50); r.StdoutTail != want {
		t.Errorf("tail starting at a line %q, want %q", r.StdoutTail, want)
	}
}

func TestProcRunTimeoutCapped(t *testing.T) {
	e := verbtest.New(t, func(o *verbs.Options, _ *verbs.WorkspaceOptions) { o.MaxTimeout = time.Second })
	r := verbtest.RunProc(t, e, "t.cap2", verbs.ProcRunArgs{Executable: "sleep", Arguments: []string{"100"}, TimeoutSeconds: verbtest.Ptr(3600)})
	if !r.TimedOut {
		t.Errorf("a timeout over the maximum was not capped: %+v", r)
	}
	// A huge value does not overflow into an instant timeout.
	r = verbtest.RunProc(t, e, "t.cap3", verbs.ProcRunArgs{Executable: "true", Arguments: []string{}, TimeoutSeconds: verbtest.Ptr(1 << 62)})
	if r.TimedOut || r.ExitCode != 0 {
		t.Errorf("huge timeout: %+v", r)
	}
}
