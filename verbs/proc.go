package verbs

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"
	"unicode/utf8"

	"github.com/a6afc2ce/hermes-hub/executor"
	"github.com/a6afc2ce/hermes-hub/verbs/confine"
	"github.com/a6afc2ce/hermes-hub/verbs/proc"
)

// ProcUser is a user proc.run runs programs as, other than the hub's own
// (see proc.User).
type ProcUser = proc.User

// ChooseProcUser decides whom proc.run runs programs as, from the
// configured user (verbs.proc.user), and says why (see proc.ChooseUser).
func ChooseProcUser(configured string) (*ProcUser, string, error) {
	return proc.ChooseUser(configured)
}

// MaybeRunSupervisor must be called first thing in main, and in TestMain of
// tests that run proc.run: see proc.MaybeRunSupervisor.
func MaybeRunSupervisor() { proc.MaybeRunSupervisor() }

// ProcRun implements proc.run. The program runs without a shell in its own
// process tree (package proc: under a supervisor that owns every process
// it starts, within the process, memory and CPU limits), with only the
// allow-listed environment, stdin from /dev/null and stdout/stderr
// streamed to files under the proc directory; or, in a workspace whose
// programs run elsewhere (Options.Runners), by that workspace's Runner.
//
// A non-zero exit status or a timeout is a successful verb: ExitCode and
// TimedOut say what happened (ExitCode is -1 for a timeout or a signal).
// The timeout error code is kept for the executor's own deadline: when ctx
// ends first, the tree is killed and ctx's error is returned.
func (s *Set) ProcRun(ctx context.Context, a ProcRunArgs) (ProcRunResult, error) {
	var res ProcRunResult
	p, release, err := s.use(ctx, false)
	if err != nil {
		return res, err
	}
	// The session lock covers the checks below, not the run: a process may
	// run for minutes, and it works on paths, not on the workspace handle.
	release = sync.OnceFunc(release)
	defer release()
	w, runner := p.ws, s.runner(p.ws)
	if p.sess != nil && !p.sess.src.opts.AllowProc && runner == nil {
		return res, executor.Errorf(executor.CodeForbidden,
			"proc.run is not available in session workspaces: a process is not confined to its directory (the operator can allow it with sessions.allow_proc)")
	}
	timeout, err := s.checkRun(a)
	if err != nil {
		return res, err
	}
	wdName, err := w.workDir(a.WorkingDirectory)
	if err != nil {
		return res, err
	}
	var env []string
	exe := a.Executable
	if runner == nil {
		env = s.childEnv()
		if exe, err = s.findExecutable(w, a.Executable, wdName, env); err != nil {
			return res, err
		}
	}

	turn, err := turnDir(ctx, s.opts.Clock.Now())
	if err != nil {
		return res, err
	}
	state, err := s.stateRoot()
	if err != nil {
		return res, err
	}
	outDir, err := s.outputDir(ctx, state, turn)
	if err != nil {
		return res, err
	}
	res.OutputID = turn
	stdout, err := s.newCapture(state, filepath.Join(outDir, "stdout.txt"))
	if err != nil {
		return res, err
	}
	defer stdout.f.Close()
	stderr, err := s.newCapture(state, filepath.Join(outDir, "stderr.txt"))
	if err != nil {
		return res, err
	}
	defer stderr.f.Close()
	res.StdoutPath = filepath.ToSlash(stdout.name)
	res.StderrPath = filepath.ToSlash(stderr.name)
	// Both streams also feed the progress reports, in arrival order.
	recent := &recentOutput{}
	stdout.also, stderr.also = recent, recent
	stopProgress := reportProgress(ctx, s.opts.Clock, recent)
	defer stopProgress()

	runCtx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	release()
	start := s.opts.Clock.Now()
	var end proc.Result
	if runner != nil {
		spec := RunSpec{
			Workspace: w.opts.Name, Dir: w.Dir(), Hide: w.root.Hidden(), WorkDir: wdName,
			Executable: a.Executable, Args: a.Arguments, Timeout: timeout, Stdout: stdout, Stderr: stderr,
		}
		if p.sess != nil {
			spec.Session = p.sess.id
		}
		var rr RunResult
		rr, err = runner.Run(runCtx, spec)
		end = proc.Result{ExitCode: rr.ExitCode, TimedOut: rr.ExitCode == -1 && errors.Is(runCtx.Err(), context.DeadlineExceeded)}
	} else {
		end, err = proc.Run(runCtx, proc.Spec{
			Path: exe, Args: append([]string{a.Executable}, a.Arguments...),
			Dir: filepath.Join(w.Dir(), filepath.FromSlash(wdName)), Env: env,
			Stdout: stdout, Stderr: stderr, Limits: s.limits(timeout), User: s.opts.User,
		})
	}
	res.DurationMs = s.opts.Clock.Now().Sub(start).Milliseconds()
	return s.ended(ctx, res, stdout, stderr, a.Executable, end, err)
}

// checkRun checks proc.run's executable and arguments and returns the
// call's timeout.
func (s *Set) checkRun(a ProcRunArgs) (time.Duration, error) {
	if a.Executable == "" {
		return 0, executor.Errorf(executor.CodeInvalidArguments, "Executable is empty; name a program such as git or ./script.sh")
	}
	if strings.IndexByte(a.Executable, 0) >= 0 {
		return 0, executor.Errorf(executor.CodeInvalidArguments, "Executable %q contains a NUL byte", a.Executable)
	}
	for i, arg := range a.Arguments {
		if strings.IndexByte(arg, 0) >= 0 {
			return 0, executor.Errorf(executor.CodeInvalidArguments, "Argument %d contains a NUL byte, which a program cannot receive", i+1)
		}
	}
	timeout := s.opts.DefaultTimeout
	if a.TimeoutSeconds != nil {
		if *a.TimeoutSeconds < 1 {
			return 0, executor.Errorf(executor.CodeInvalidArguments, "timeoutSeconds is %d; give a number of seconds from 1 to %d", *a.TimeoutSeconds, int(s.opts.MaxTimeout/time.Second))
		}
		timeout = s.opts.MaxTimeout
		if secs := int64(*a.TimeoutSeconds); secs < int64(s.opts.MaxTimeout/time.Second) {
			timeout = time.Duration(secs) * time.Second
		}
	}
	return timeout, nil
}

// workDir checks proc.run's working directory wd ("" is the root) and
// returns its root-relative name, links resolved.
func (w *Workspace) workDir(wd string) (string, error) {
	if wd == "" {
		wd = "."
	}
	l, err := w.root.Locate(wd, confine.FollowFinal|confine.AllowRoot)
	if err != nil {
		return "", err
	}
	defer l.Close()
	switch fi, err := l.Stat(); {
	case errors.Is(err, fs.ErrNotExist):
		return "", executor.Errorf(executor.CodeNotFound, "Directory not found: %s", l.Show())
	case err != nil:
		return "", confine.FSError(err, l.Show(), "stat")
	case !fi.IsDir():
		return "", executor.Errorf(executor.CodeNotADirectory, "Working directory %s is a file, not a directory", l.Show())
	}
	return l.Name(), nil
}

// limits are the process limits of a call with timeout.
func (s *Set) limits(timeout time.Duration) proc.Limits {
	cpu := int64(s.opts.MaxCPUSeconds)
	if cpu == 0 {
		cpu = int64((timeout + time.Second - 1) / time.Second)
	}
	return proc.Limits{MaxProcs: s.opts.MaxProcs, MaxMemory: s.opts.MaxMemory, MaxCPU: cpu}
}

// ended fills res once the program has ended (end, or runErr when it could
// not be run): its output's sizes and tails, and how it ended.
func (s *Set) ended(ctx context.Context, res ProcRunResult, stdout, stderr *capture, exe string, end proc.Result, runErr error) (ProcRunResult, error) {
	for _, c := range []*capture{stdout, stderr} {
		if err := c.finish(); err != nil {
			return res, s.stateError("write output of "+exe+" to", c.name, err)
		}
	}
	res.StdoutBytes, res.StderrBytes = stdout.total, stderr.total
	res.StdoutTail, res.StderrTail = stdout.tailString(), stderr.tailString()
	if err := ctx.Err(); err != nil {
		return res, stoppedError(exe, err, res)
	}
	var se *proc.StartError
	var pe *proc.Error
	switch {
	case errors.As(runErr, &se):
		return res, s.runError(se.Err, exe)
	case errors.As(runErr, &pe):
		return res, &executor.Error{Code: executor.CodeIOError, Err: pe.Err, Message: pe.Error()}
	case runErr != nil:
		return res, runErr // a Runner's, which says what it is
	}
	res.ExitCode, res.TimedOut = end.ExitCode, end.TimedOut
	return res, nil
}

// stoppedError is the error of a call stopped before its program ended:
// cancelled, or at the verb timeout. It names the proc.output commands
// that read what the program wrote, never a path of the state directory,
// which no chat user can open.
func stoppedError(exe string, err error, res ProcRunResult) error {
	code, msg := executor.CodeCanceled, exe+" was cancelled before it finished"
	if errors.Is(err, context.DeadlineExceeded) {
		code, msg = executor.CodeTimeout, exe+" was stopped at the verb timeout before it finished"
	}
	var reads []string
	for _, s := range []struct {
		stream OutputStream
		bytes  int64
	}{{StreamStdout, res.StdoutBytes}, {StreamStderr, res.StderrBytes}} {
		if s.bytes > 0 && res.OutputID != "" {
			reads = append(reads, "`"+outputCommand(res.OutputID, s.stream, 1)+"`")
		}
	}
	switch {
	case len(reads) > 0:
		msg += "; all of its output so far: " + strings.Join(reads, " and ")
	case res.StdoutBytes+res.StderrBytes == 0:
		msg += "; it wrote no output"
	}
	return &executor.Error{Code: code, Err: err, Message: msg}
}

func startError(err error, exe string) error {
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return executor.Errorf(executor.CodeNotFound, "Executable not found: %s", exe)
	case errors.Is(err, fs.ErrPermission):
		return executor.Errorf(executor.CodeInvalidArguments, "Executable %s cannot be run: permission denied", exe)
	case errors.Is(err, syscall.ENOEXEC):
		return executor.Errorf(executor.CodeInvalidArguments, "Executable %s is not a program this machine can run (a script needs a #! line)", exe)
	}
	return executor.Errorf(executor.CodeIOError, "Cannot start %s: %s", exe, confine.Hostless(err))
}

// runError is startError for a program that did not start, naming the
// user it was to run as when a permission was refused.
func (s *Set) runError(err error, exe string) error {
	if u := s.opts.User; u != nil && errors.Is(err, fs.ErrPermission) {
		return executor.Errorf(executor.CodeInvalidArguments,
			"Executable %s cannot be run as %s: permission denied (that user may not run it or enter its working directory; verbs.proc.user names the user)", exe, u)
	}
	return startError(err, exe)
}

// childEnv copies the allow-listed variables from the hub's environment;
// for a program run as another user, HOME, USER and LOGNAME (when allowed)
// describe that user, not the hub's.
func (s *Set) childEnv() []string {
	env := make([]string, 0, len(s.opts.EnvAllow))
	for _, k := range s.opts.EnvAllow {
		v, ok := os.LookupEnv(k)
		if u := s.opts.User; u != nil {
			if uv, overridden := u.Env(k); overridden {
				v, ok = uv, uv != ""
			}
		}
		if ok {
			env = append(env, k+"="+v)
		}
	}
	return env
}

// findExecutable resolves exe as the child would: a name without a slash is
// looked up in the child's PATH (absolute entries only), an absolute path is
// taken as it is, and any other path is a workspace path relative to the
// working directory wd, which must pass the path guard.
func (s *Set) findExecutable(w *Workspace, exe, wd string, env []string) (string, error) {
	switch {
	case strings.HasPrefix(exe, "/"):
		return exe, checkExecutable(exe, exe)
	case strings.Contains(exe, "/"):
		rel := exe
		for strings.HasPrefix(rel, "./") {
			rel = strings.TrimLeft(rel[2:], "/") // "./run.sh" is the usual spelling
		}
		if wd != "." {
			rel = wd + "/" + rel
		}
		l, err := w.root.Locate(rel, confine.FollowFinal)
		if err != nil {
			return "", err
		}
		defer l.Close()
		fi, err := l.Stat()
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return "", executor.Errorf(executor.CodeNotFound, "Executable not found: %s (looked for %s in the workspace)", exe, l.Show())
			}
			return "", confine.FSError(err, l.Show(), "stat")
		}
		if fi.IsDir() || fi.Mode().Perm()&0o111 == 0 {
			return "", executor.Errorf(executor.CodeInvalidArguments, "Executable %s cannot be run: it is not an executable file", exe)
		}
		return filepath.Join(w.Dir(), filepath.FromSlash(l.Name())), nil
	}
	pathEnv := ""
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, "PATH="); ok {
			pathEnv = v
		}
	}
	for _, d := range filepath.SplitList(pathEnv) {
		if !filepath.IsAbs(d) {
			continue // relative PATH entries would resolve inside the workspace
		}
		p := filepath.Join(d, exe)
		if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() && fi.Mode().Perm()&0o111 != 0 {
			return p, nil
		}
	}
	return "", executor.Errorf(executor.CodeNotFound, "Executable not found: %s (not in the PATH given to programs; use a path with a slash to run a file in the workspace)", exe)
}

func checkExecutable(p, exe string) error {
	fi, err := os.Stat(p)
	switch {
	case errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR):
		return executor.Errorf(executor.CodeNotFound, "Executable not found: %s", exe)
	case err != nil:
		return startError(err, exe)
	case fi.IsDir() || fi.Mode().Perm()&0o111 == 0:
		return executor.Errorf(executor.CodeInvalidArguments, "Executable %s cannot be run: it is not an executable file", exe)
	}
	return nil
}

// turnDir returns the output directory name for the call in ctx: its turn
// id, or for calls without one (the CLI) cli.<UTC time>.<random hex>.
func turnDir(ctx context.Context, now time.Time) (string, error) {
	id := executor.CallFrom(ctx).TurnID
	if id == "" {
		return "cli." + now.UTC().Format("20060102T150405.000000000Z") + "." + randHex(4), nil
	}
	if err := validTurnID(id); err != nil {
		return "", err
	}
	return id, nil
}

func validTurnID(id string) error {
	bad := len(id) > 200 || id == "." || id == ".." || strings.Contains(id, "..")
	for i := 0; i < len(id) && !bad; i++ {
		c := id[i]
		bad = !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte("._-+=@", c) >= 0)
	}
	if bad || id == "" {
		return executor.Errorf(executor.CodeInvalidArguments,
			"Turn id %q cannot name an output directory (accepted: up to 200 letters, digits and . _ - + = @, without '..')", id)
	}
	return nil
}

// stateError reports a failure on the file name of the state directory,
// naming it relative to the state root rather than by its host path.
func (s *Set) stateError(op, name string, err error) error {
	return &executor.Error{Code: executor.CodeIOError, Err: err, Message: fmt.Sprintf("Cannot %s %s: %s", op, filepath.ToSlash(name), confine.Hostless(err))}
}

// capture is a child's stdout or stderr: it streams to a file up to a cap,
// counts everything, and keeps the last bytes for the result.
type capture struct {
	mu      sync.Mutex
	name    string // the file's name in the state directory
	f       *os.File
	limit   int64
	written int64 // bytes in the file
	total   int64 // bytes the child wrote
	tailMax int
	tail    []byte
	err     error
	also    *recentOutput // also hears every write; nil: no one
}

// newCapture creates the output file name of the state directory root.
func (s *Set) newCapture(root *os.Root, name string) (*capture, error) {
	f, err := createOutput(root, name)
	if err != nil {
		return nil, s.stateError("create", name, err)
	}
	return &capture{name: name, f: f, limit: s.opts.MaxOutputBytes, tailMax: s.opts.TailBytes}, nil
}

// Write never fails towards the child: a write error is kept for finish,
// so the child is not killed by a broken pipe over the hub's disk trouble.
func (c *capture) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.also != nil {
		_, _ = c.also.Write(p)
	}
	c.total += int64(len(p))
	if c.tailMax > 0 {
		// One byte more than the tail: whether it ends a line tells
		// whether the tail starts one.
		keep := c.tailMax + 1
		c.tail = append(c.tail, p[max(0, len(p)-keep):]...)
		if len(c.tail) > 2*keep {
			c.tail = append(c.tail[:0], c.tail[len(c.tail)-keep:]...)
		}
	}
	if room := c.limit - c.written; room > 0 && c.err == nil {
		n, err := c.f.Write(p[:min(int64(len(p)), room)])
		c.written += int64(n)
		c.err = err
	}
	return len(p), nil
}

// finish appends the truncation note when bytes were dropped and syncs.
func (c *capture) finish() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.err != nil {
		return c.err
	}
	if dropped := c.total - c.written; dropped > 0 {
		if _, err := fmt.Fprintf(c.f, "\n[output truncated: %d bytes dropped]\n", dropped); err != nil {
			return err
		}
	}
	return c.f.Sync()
}

// tailString is the last TailBytes of the stream as valid UTF-8, starting
// at a line boundary: a tail that cuts a line starts after that line's
// end, unless the cut line is the only one (then at a rune boundary).
func (c *capture) tailString() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	from := max(0, len(c.tail)-c.tailMax)
	t := c.tail[from:]
	if int64(len(t)) < c.total && (from == 0 || c.tail[from-1] != '\n') {
		if i := bytes.IndexByte(t, '\n'); i >= 0 && i < len(t)-1 {
			return strings.ToValidUTF8(string(t[i+1:]), "\uFFFD")
		}
		// Cut: skip continuation bytes of a rune that started earlier.
		for k := 0; k < utf8.UTFMax-1 && len(t) > 0 && !utf8.RuneStart(t[0]); k++ {
			t = t[1:]
		}
	}
	return strings.ToValidUTF8(string(t), "\uFFFD")
}
