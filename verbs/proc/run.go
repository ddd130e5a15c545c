package proc

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"sync"
	"syscall"
	"time"
)

// waitDelay bounds how long Run waits for a program's output pipes to
// close after the program has exited or been killed (a process that left
// the process group may still hold them).
const waitDelay = 2 * time.Second

// Limits bound a program's process tree; zero fields bound nothing. They
// apply under the supervisor only (Linux).
type Limits struct {
	// MaxProcs bounds how many processes the program may have at once,
	// itself included; the whole tree is killed beyond it.
	MaxProcs int
	// MaxMemory is each process's address space limit in bytes (RLIMIT_AS).
	MaxMemory int64
	// MaxCPU is each process's CPU time limit in seconds (RLIMIT_CPU).
	MaxCPU int64
}

// Spec is one program for Run.
type Spec struct {
	// Path is the program's file; Args its arguments, Args[0] the name it
	// is shown as (to it, and in messages).
	Path string
	Args []string
	// Dir is the working directory and Env the whole environment.
	Dir string
	Env []string
	// Stdout and Stderr receive the program's output streams, each from a
	// goroutine of its own: one writer given as both must be safe for
	// concurrent use.
	Stdout, Stderr io.Writer
	Limits         Limits
	// User is whom the program runs as; nil is the hub's own user.
	User *User
}

// Result is how a program ended.
type Result struct {
	// ExitCode is the program's exit status, -1 when it was killed (at
	// the deadline, on cancellation, over a limit, by a signal).
	ExitCode int
	// TimedOut says it was killed at ctx's deadline.
	TimedOut bool
}

// StartError is a program that could not be started: Err is the system's
// reason (the file missing, not executable, not a program).
type StartError struct{ Err error }

func (e *StartError) Error() string { return "start: " + e.Err.Error() }
func (e *StartError) Unwrap() error { return e.Err }

// Error is Run failing for a reason other than the program's own: its
// process tree, a pipe or the supervisor could not be prepared, the
// supervisor failed, or waiting for the program did. Its message is a
// sentence naming the program, for the verb's caller.
type Error struct {
	msg string
	Err error
}

func (e *Error) Error() string { return e.msg }
func (e *Error) Unwrap() error { return e.Err }

func failf(err error, format string, args ...any) *Error {
	return &Error{msg: fmt.Sprintf(format, args...), Err: err}
}

// Run runs spec's program without a shell in its own process group, stdin
// from /dev/null, and waits for it. It runs under a supervisor (see
// MaybeRunSupervisor) that owns every process it starts, even those that
// leave its group or session: when ctx ends and when the program exits,
// all of them are killed, and the limits apply. Without the supervisor (a
// binary that does not call MaybeRunSupervisor), only the program's
// process group (its job object on Windows) is killed.
//
// A non-zero exit status, or a program killed when ctx ended, is not an
// error: Result says what happened. The errors are a *StartError and an
// *Error.
func Run(ctx context.Context, spec Spec) (Result, error) {
	name := spec.Args[0]
	cmd := exec.CommandContext(ctx, spec.Path, spec.Args[1:]...)
	cmd.Args[0] = name
	cmd.Dir = spec.Dir
	cmd.Env = spec.Env
	tree, err := newProcTree(cmd)
	if err != nil {
		return Result{}, failf(err, "Cannot prepare the process tree of %s: %v", name, err)
	}
	defer tree.close()
	cmd.Cancel = tree.kill
	cmd.WaitDelay = waitDelay
	// The program writes into pipes read here, so Wait returns when it
	// exits even if something it started still holds them.
	var readEnds, writeEnds []*os.File
	defer func() { closeAll(readEnds) }()
	for range 2 {
		r, w, err := os.Pipe()
		if err != nil {
			closeAll(writeEnds)
			return Result{}, failf(err, "Cannot create a pipe for %s: %v", name, err)
		}
		readEnds, writeEnds = append(readEnds, r), append(writeEnds, w)
	}
	cmd.Stdout, cmd.Stderr = writeEnds[0], writeEnds[1]
	var sup *supervision
	if supervisorReady.Load() {
		l := spec.Limits
		sup, err = supervise(cmd, supervisorSpec{MaxProcs: l.MaxProcs, MaxMemory: l.MaxMemory, MaxCPU: l.MaxCPU, User: spec.User})
		if err != nil {
			closeAll(writeEnds)
			return Result{}, failf(err, "Cannot prepare the supervisor of %s: %v", name, err)
		}
	} else if u := spec.User; u != nil {
		if err := runAs(cmd, u); err != nil {
			closeAll(writeEnds)
			return Result{}, failf(err, "Cannot run %s as %s: %v", name, u, err)
		}
	}

	err = cmd.Start()
	if err == nil {
		err = tree.started()
	}
	closeAll(writeEnds) // the program has its own copies
	if sup != nil {
		sup.started(err == nil)
	}
	if err != nil {
		return Result{}, &StartError{Err: err}
	}
	var pipes sync.WaitGroup
	for i, w := range []io.Writer{spec.Stdout, spec.Stderr} {
		pipes.Go(func() { _, _ = io.Copy(w, readEnds[i]) })
	}
	waitErr := cmd.Wait()
	var st supervisorStatus
	if sup != nil {
		var pid int
		st, pid = sup.result(waitDelay)
		if !st.Done && pid > 0 {
			// The supervisor died before it could stop the program (killed
			// after WaitDelay): stop at least the program's group.
			_ = killGroup(pid)
		}
		if st.Done {
			slog.Debug("proc.run supervised", "executable", name, "mode", st.Mode, "exit", st.Exit, "limit", st.Limit)
		}
	} else {
		_ = tree.kill() // whatever the program left running in its group (its job on Windows)
	}
	drained := make(chan struct{})
	go func() { pipes.Wait(); close(drained) }()
	select {
	case <-drained:
	case <-time.After(waitDelay):
		// A process that left the group still holds a pipe: stop reading.
		closeAll(readEnds)
		<-drained
	}
	return outcome(ctx, name, cmd, waitErr, sup != nil, st)
}

// outcome is how the program of cmd ended, from its wait and, when it was
// supervised, the supervisor's report st.
func outcome(ctx context.Context, name string, cmd *exec.Cmd, waitErr error, supervised bool, st supervisorStatus) (Result, error) {
	if st.StartErrno != 0 {
		return Result{}, &StartError{Err: syscall.Errno(st.StartErrno)}
	}
	if st.Err != "" {
		return Result{}, failf(errors.New(st.Err), "The supervisor of %s failed: %s", name, st.Err)
	}
	// Killed after the deadline: a program that exited by itself just as
	// the deadline passed keeps its own exit status.
	res := Result{ExitCode: cmd.ProcessState.ExitCode()}
	if st.Done {
		// The supervisor's own exit says nothing of the program's.
		res.ExitCode, waitErr = st.Exit, nil
	} else if supervised && res.ExitCode != -1 {
		return Result{}, failf(waitErr, "The supervisor of %s exited (status %d) without reporting the program's", name, res.ExitCode)
	}
	res.TimedOut = res.ExitCode == -1 && errors.Is(ctx.Err(), context.DeadlineExceeded)
	var exitErr *exec.ExitError
	if waitErr != nil && !errors.As(waitErr, &exitErr) && !errors.Is(waitErr, exec.ErrWaitDelay) && !res.TimedOut {
		return Result{}, failf(waitErr, "Waiting for %s failed: %v", name, waitErr)
	}
	return res, nil
}

func closeAll(files []*os.File) {
	for _, f := range files {
		f.Close()
	}
}
