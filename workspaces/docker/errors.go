package docker

import (
	"errors"
	"path"
	"strings"

	"github.com/a6afc2ce/hermes-hub/executor"
	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/client"
)

const (
	codeIO       = executor.CodeIOError
	codeNotFound = executor.CodeNotFound
	codeInvalid  = executor.CodeInvalidArguments
)

// errorf is an *executor.Error whose one line starts with the workspace.
func (r *Runner) errorf(code executor.ErrorCode, format string, args ...any) *executor.Error {
	e := executor.Errorf(code, "workspace %s: "+format, append([]any{r.cfg.Workspace}, args...)...)
	return e
}

// apiError turns an error of the Docker API into a workspace error: the
// daemon unreachable is told apart; anything else is said with what was
// being done.
func (r *Runner) apiError(doing string, err error) error {
	var xe *executor.Error
	if errors.As(err, &xe) {
		return err
	}
	if client.IsErrConnectionFailed(err) || isUnreachable(err) {
		return r.errorf(codeIO, "the Docker daemon at %s is not reachable: %s; start it or change the workspace's destination",
			r.daemonAddr(), oneLine(err))
	}
	return r.errorf(codeIO, "Docker could not %s: %s; check the daemon (hub doctor) or reset the workspace (hub workspaces reset %s)",
		doing, oneLine(err), r.cfg.Workspace)
}

// isUnreachable tells errors of a connection that broke or never opened.
func isUnreachable(err error) bool {
	if cerrdefs.IsUnavailable(err) {
		return true
	}
	s := err.Error()
	if strings.Contains(s, "dial ") && strings.Contains(s, "no such file or directory") {
		return true
	}
	for _, m := range []string{"connection refused", "connection reset", "broken pipe", "EOF", "Cannot connect to the Docker daemon"} {
		if strings.Contains(s, m) {
			return true
		}
	}
	return false
}

// oneLine keeps the first line of err's message.
func oneLine(err error) string {
	s := strings.TrimSpace(err.Error())
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	return s
}

// startError maps the runtime's message for an exec that could not start
// to the error a host process gets (verbs' findExecutable and startError):
// the same codes and messages.
func startError(msg, exe, workDir string) error {
	low := strings.ToLower(msg)
	switch {
	case strings.Contains(low, "executable file not found"):
		return executor.Errorf(codeNotFound, "Executable not found: %s (not in the PATH given to programs; use a path with a slash to run a file in the workspace)", exe)
	case strings.Contains(low, "no such file or directory"), strings.Contains(low, "not a directory"):
		if !strings.HasPrefix(exe, "/") && strings.Contains(exe, "/") {
			rel := exe
			for strings.HasPrefix(rel, "./") {
				rel = strings.TrimLeft(rel[2:], "/")
			}
			return executor.Errorf(codeNotFound, "Executable not found: %s (looked for %s in the workspace)", exe, path.Join(workDir, rel))
		}
		return executor.Errorf(codeNotFound, "Executable not found: %s", exe)
	case strings.Contains(low, "permission denied"), strings.Contains(low, "is a directory"):
		return executor.Errorf(codeInvalid, "Executable %s cannot be run: it is not an executable file", exe)
	case strings.Contains(low, "exec format error"):
		return executor.Errorf(codeInvalid, "Executable %s is not a program this machine can run (a script needs a #! line)", exe)
	}
	return executor.Errorf(codeIO, "Cannot start %s: %s", exe, strings.TrimSpace(msg))
}
