package verbs

import (
	"context"
	"io"
	"time"
)

// A Runner runs proc.run's program somewhere other than as a host process:
// inside a container that sees the workspace directory, say. The proc
// verbs pick a workspace's Runner by its name (Options.Runners); a
// workspace without one runs programs on the host, under the supervisor
// (package proc).
//
// Run starts spec's program and waits for it. When ctx ends (the call's
// timeout or its cancellation) it kills every process the call started,
// including those that left its process group, and returns with ExitCode -1.
// A program that exits with a non-zero status is not an error: Run returns
// its status. An error is for what kept the program from running or from
// being waited for (the daemon unreachable, an image missing, the workspace
// directory gone); it should be an *executor.Error whose message names the
// workspace and the fix.
type Runner interface {
	Run(ctx context.Context, spec RunSpec) (RunResult, error)
}

// RunSpec is one program for a Runner.
type RunSpec struct {
	// Workspace is the name of the workspace the call acts in; Session the
	// session id in session mode ("" for the workspace itself). A runner
	// keeps one sandbox per workspace and session.
	Workspace string
	Session   string
	// Dir is the absolute host directory of the workspace (a session's own
	// directory in session mode): what the program sees as its workspace.
	Dir string
	// Hide lists slash-separated paths relative to Dir the program must not
	// see (the hub's state directory when it lies inside the workspace).
	Hide []string
	// WorkDir is the working directory, slash-separated, relative to Dir
	// ("." for Dir itself). It has passed the workspace's path guard.
	WorkDir string
	// Executable and Args are the program and its arguments, as the caller
	// gave them: a name without a slash is looked up in the sandbox's PATH,
	// a relative path is relative to WorkDir.
	Executable string
	Args       []string
	// Timeout is the call's timeout (ctx carries it as a deadline too).
	Timeout time.Duration
	// Stdout and Stderr receive the program's output streams.
	Stdout, Stderr io.Writer
}

// RunResult is how a program ended.
type RunResult struct {
	// ExitCode is the program's exit status, -1 when it was killed.
	ExitCode int
}

// RunnerSource picks the Runner of the workspace named workspace (the
// workspace's WorkspaceOptions.Name): nil, or false, runs its programs as
// host processes.
type RunnerSource interface {
	Runner(workspace string) (Runner, bool)
}

// Runners is a RunnerSource from a map of workspace names.
type Runners map[string]Runner

// Runner implements RunnerSource.
func (m Runners) Runner(workspace string) (Runner, bool) {
	r, ok := m[workspace]
	return r, ok
}

// runner is the Runner of w's programs; nil runs them on the host.
func (s *Set) runner(w *Workspace) Runner {
	if s.opts.Runners == nil {
		return nil
	}
	r, _ := s.opts.Runners.Runner(w.opts.Name)
	return r
}
