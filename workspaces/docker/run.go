package docker

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path"
	"strings"
	"time"

	"github.com/a6afc2ce/hermes-hub/verbs"
	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/api/pkg/stdcopy"
	"github.com/moby/moby/client"
)

// Run runs spec's program in the container of its workspace and session
// and waits for it (verbs.Runner). When ctx ends it kills what the call
// started and returns ExitCode -1.
func (r *Runner) Run(ctx context.Context, spec verbs.RunSpec) (verbs.RunResult, error) {
	killed := verbs.RunResult{ExitCode: -1}
	if ctx.Err() != nil {
		return killed, nil
	}
	cli, err := r.client()
	if err != nil {
		return killed, err
	}
	b, w, err := r.acquire(ctx, cli, spec)
	if err != nil {
		if ctx.Err() != nil {
			return killed, nil
		}
		return killed, err
	}
	defer r.release(cli, b)

	ex, err := cli.ExecCreate(ctx, b.id, client.ExecCreateOptions{
		User: w.user, Env: r.env(), WorkingDir: path.Join("/workspace", spec.WorkDir),
		Cmd: append([]string{spec.Executable}, spec.Args...), AttachStdout: true, AttachStderr: true,
	})
	if err != nil {
		if ctx.Err() != nil {
			return killed, nil
		}
		return killed, r.lostError(cli, b, err)
	}
	at, err := cli.ExecAttach(ctx, ex.ID, client.ExecAttachOptions{})
	if err != nil {
		if ctx.Err() != nil {
			return killed, nil
		}
		return killed, r.lostError(cli, b, err)
	}
	defer at.Close()
	gate := &startGate{w: spec.Stdout}
	copied := make(chan error, 1)
	go func() {
		_, err := stdcopy.StdCopy(gate, spec.Stderr, at.Reader)
		copied <- err
	}()
	var copyErr error
	select {
	case copyErr = <-copied:
	case <-ctx.Done():
		r.killCall(cli, b, ex.ID, w.user)
		// What the program wrote before it died is still on its way; a
		// process that escaped the kill may hold the stream open: wait for
		// it as long as a host process's pipes are waited for.
		wctx, cancel := context.WithTimeout(context.Background(), apiTimeout)
		if !r.arrives(wctx, waitDelay, copied) {
			at.Close()
			<-copied
		}
		cancel()
		gate.flush()
		return killed, nil
	}

	ictx, cancel := context.WithTimeout(context.WithoutCancel(ctx), apiTimeout)
	defer cancel()
	ins, err := r.execDone(ictx, cli, ex.ID)
	if err != nil {
		if ctx.Err() != nil {
			return killed, nil
		}
		return killed, r.lostError(cli, b, err)
	}
	if ins.PID == 0 && (ins.ExitCode == 126 || ins.ExitCode == 127) && gate.held() {
		return killed, startError(gate.message(), spec.Executable, spec.WorkDir)
	}
	gate.flush()
	if copyErr != nil || ins.Running || ins.ExitCode == 137 || ins.ExitCode == 126 {
		if err := r.containerTrouble(ictx, cli, b, ins.ExitCode == 137, w.user); err != nil {
			return killed, err
		}
		if ins.ExitCode == 137 && r.oomKilled(ictx, cli, b, w.user) {
			return killed, r.oomError(b)
		}
	}
	if ins.Running {
		return killed, r.lostError(cli, b, copyErr)
	}
	return verbs.RunResult{ExitCode: ins.ExitCode}, nil
}

// execDone inspects an exec whose output ended until it reports its exit
// (the daemon may record it a moment after closing the stream).
func (r *Runner) execDone(ctx context.Context, cli *client.Client, id string) (client.ExecInspectResult, error) {
	for i := 0; ; i++ {
		ins, err := cli.ExecInspect(ctx, id, client.ExecInspectOptions{})
		if err != nil || !ins.Running || i == 50 {
			return ins, err
		}
		if err := r.sleep(ctx, 20*time.Millisecond); err != nil {
			return ins, err
		}
	}
}

// waitDelay bounds the wait for a killed program's output (as verbs does
// for a host process's pipes).
const waitDelay = 2 * time.Second

// arrives waits up to d on the runner's clock for done to deliver (the
// value is dropped) and reports whether it did.
func (r *Runner) arrives(ctx context.Context, d time.Duration, done <-chan error) bool {
	ch := make(chan struct{})
	t := r.clock.AfterFunc(d, func() { close(ch) })
	defer t.Stop()
	select {
	case <-done:
		return true
	case <-ch:
	case <-ctx.Done():
	}
	return false
}

// sleep waits d on the runner's clock.
func (r *Runner) sleep(ctx context.Context, d time.Duration) error {
	ch := make(chan struct{})
	t := r.clock.AfterFunc(d, func() { close(ch) })
	defer t.Stop()
	select {
	case <-ch:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// containerTrouble tells why a call's program ended badly when the
// container is the cause: it ran out of memory, or it was stopped or
// removed from outside. killed says the program died of SIGKILL, as every
// process of a container does when its PID 1 dies.
func (r *Runner) containerTrouble(ctx context.Context, cli *client.Client, b *box, killed bool, user string) error {
	ins, err := cli.ContainerInspect(ctx, b.id, client.ContainerInspectOptions{})
	if cerrdefs.IsNotFound(err) {
		return r.errorf(codeIO, "its container was removed during the call; run the call again (a new container is created)")
	}
	if err != nil {
		return r.apiError("inspect the workspace's container", err)
	}
	st := ins.Container.State
	if st == nil {
		return nil
	}
	if st.OOMKilled {
		return r.oomError(b)
	}
	if !st.Running {
		if !r.accepting(ctx, cli) {
			return r.daemonStoppedError()
		}
		return r.errorf(codeIO, "its container was stopped during the call (%s); run the call again (the container is started again)", st.Status)
	}
	// The daemon records a container's end a moment after its processes
	// died (and a daemon shutting down still answers on open connections
	// while it stops containers): the host sees the truth at once; without
	// the host, a program killed as a dying container's processes are is
	// told apart by running another.
	gone := false
	if v := b.hostView(); v != nil && ins.Container.ID == b.currentID() {
		gone = !v.alive()
	} else if killed {
		gone = !r.probe(ctx, cli, ins.Container.ID, user)
	}
	if gone {
		if !r.accepting(ctx, cli) {
			return r.daemonStoppedError()
		}
		if r.endedOutOfMemory(ctx, cli, b, ins.Container.ID) {
			return r.oomError(b)
		}
		return r.errorf(codeIO, "its container stopped during the call (stopped or killed from outside, or its Docker daemon is stopping); run the call again once the daemon is up (the container is started again)")
	}
	return nil
}

// endedOutOfMemory tells whether container id, whose PID 1 was found dead
// during a call, died of the memory limit: the kernel may have chosen its
// PID 1, which takes every process of the container with it. The host's
// count answers at once when it can be read; otherwise the daemon's flag
// does once the daemon has recorded the container's end, which is waited
// for (a few seconds at most).
func (r *Runner) endedOutOfMemory(ctx context.Context, cli *client.Client, b *box, id string) bool {
	if v := b.hostView(); v != nil {
		if n, ok := v.oomKills(); ok && n > 0 {
			return true
		}
	}
	for i := 0; i < settleTries; i++ {
		ins, err := cli.ContainerInspect(ctx, id, client.ContainerInspectOptions{})
		if err != nil || ins.Container.State == nil {
			return false
		}
		if st := ins.Container.State; !st.Running {
			return st.OOMKilled
		}
		if r.sleep(ctx, 50*time.Millisecond) != nil {
			return false
		}
	}
	return false
}

// settleTries bounds endedOutOfMemory's wait for the daemon (× 50ms).
const settleTries = 100

// daemonStoppedError says a call's container went down with its daemon.
func (r *Runner) daemonStoppedError() error {
	return r.errorf(codeIO, "its container stopped during the call because its Docker daemon at %s stopped (or is stopping); run the call again once the daemon is up (the container is started again)", r.daemonAddr())
}

// accepting tells whether the daemon takes new connections. A daemon that
// is stopping closes its listener first and then stops its containers
// while its open connections (the client's kept-alive ones) still get
// answers, so those answers cannot tell a container stopped from outside
// from one its daemon is taking down; a fresh connection can.
func (r *Runner) accepting(ctx context.Context, cli *client.Client) bool {
	dctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	conn, err := cli.Dialer()(dctx)
	if err != nil {
		return false
	}
	_ = conn.Close()
	return true
}

// probe runs the keeper's program for no time in container id and tells
// whether it ran: the container's PID 1 lives.
func (r *Runner) probe(ctx context.Context, cli *client.Client, id, user string) bool {
	code, err := r.execOutput(ctx, cli, id, user, io.Discard, keeper[0], "0")
	return err == nil && code == 0
}

// execOutput runs cmd in container id as user, copies at most 1 MiB of
// its stdout to w and returns its exit code.
func (r *Runner) execOutput(ctx context.Context, cli *client.Client, id, user string, w io.Writer, cmd ...string) (int, error) {
	ex, err := cli.ExecCreate(ctx, id, client.ExecCreateOptions{User: user, AttachStdout: true, AttachStderr: true, Cmd: cmd})
	if err != nil {
		return -1, err
	}
	at, err := cli.ExecAttach(ctx, ex.ID, client.ExecAttachOptions{})
	if err != nil {
		return -1, err
	}
	_, _ = stdcopy.StdCopy(w, io.Discard, io.LimitReader(at.Reader, 1<<20))
	at.Close()
	ins, err := r.execDone(ctx, cli, ex.ID)
	if err != nil {
		return -1, err
	}
	if ins.Running {
		return -1, fmt.Errorf("%s did not end", cmd[0])
	}
	return ins.ExitCode, nil
}

// oomError says the program ran out of memory and marks the container for
// replacement: its out-of-memory count (and Docker's flag) stays, and a
// fresh container tells the next kill apart.
func (r *Runner) oomError(b *box) error {
	b.mu.Lock()
	b.replace = true
	b.mu.Unlock()
	limit := "no memory limit is set; the machine itself is short of memory"
	if r.cfg.Memory > 0 {
		limit = "its limit is " + sizeString(r.cfg.Memory) + "; raise destination.memory in the workspace's configuration"
	}
	return r.errorf(codeIO, "the program ran out of memory in its container and was killed (%s)", limit)
}

// oomKilled tells whether the kernel's out-of-memory killer has killed a
// process in b's container. Docker (before API 1.42's per-exec events)
// flags only a PID 1 killed that way, so the container's memory cgroup is
// read (cgroup v2 memory.events, v1 memory.oom_control): from the host when
// it sees the container, else from inside.
func (r *Runner) oomKilled(ctx context.Context, cli *client.Client, b *box, user string) bool {
	if v := b.hostView(); v != nil {
		if n, ok := v.oomKills(); ok {
			return n > 0
		}
	}
	var out bytes.Buffer
	_, _ = r.execOutput(ctx, cli, b.id, user, &out, "cat", "/sys/fs/cgroup/memory.events", "/sys/fs/cgroup/memory/memory.oom_control")
	for _, line := range strings.Split(out.String(), "\n") {
		if f := strings.Fields(line); len(f) == 2 && f[0] == "oom_kill" && f[1] != "0" {
			return true
		}
	}
	return false
}

// lostError explains an exec that could not be made or followed.
func (r *Runner) lostError(cli *client.Client, b *box, err error) error {
	ctx, cancel := context.WithTimeout(context.Background(), apiTimeout)
	defer cancel()
	if _, perr := cli.Ping(ctx, client.PingOptions{}); perr != nil {
		return r.apiError("reach the daemon", perr)
	}
	if terr := r.containerTrouble(ctx, cli, b, false, ""); terr != nil {
		return terr
	}
	if err == nil {
		err = io.ErrUnexpectedEOF
	}
	return r.apiError("run the program in the workspace's container", err)
}

// env is each exec's environment: the allow-listed variables of the hub's.
func (r *Runner) env() []string {
	env := make([]string, 0, len(r.cfg.EnvAllow))
	for _, k := range r.cfg.EnvAllow {
		if v, ok := os.LookupEnv(k); ok {
			env = append(env, k+"="+v)
		}
	}
	return env
}

// runtimeFailed is how the daemon starts the output of an exec its runtime
// could not start.
const runtimeFailed = "OCI runtime exec failed"

// startGate holds back the start of a program's stdout while it could be
// the runtime's message that the program did not start, so that message
// becomes an error rather than output.
type startGate struct {
	w      io.Writer
	buf    bytes.Buffer
	passed bool
}

func (g *startGate) Write(p []byte) (int, error) {
	if g.passed {
		return g.w.Write(p)
	}
	g.buf.Write(p)
	have := g.buf.Bytes()
	n := min(len(have), len(runtimeFailed))
	if string(have[:n]) == runtimeFailed[:n] && g.buf.Len() < 64<<10 {
		return len(p), nil
	}
	return len(p), g.flush()
}

// held reports whether the gate holds the runtime's message.
func (g *startGate) held() bool { return !g.passed && strings.HasPrefix(g.buf.String(), runtimeFailed) }

func (g *startGate) message() string {
	s := strings.TrimSpace(g.buf.String())
	// "OCI runtime exec failed: exec failed: unable to start container process: exec: "x": why: unknown"
	if i := strings.Index(s, "exec: "); i >= 0 {
		s = s[i+len("exec: "):]
	}
	return strings.TrimSuffix(s, ": unknown")
}

// flush lets the held bytes through and opens the gate.
func (g *startGate) flush() error {
	if g.passed {
		return nil
	}
	g.passed = true
	_, err := g.w.Write(g.buf.Bytes())
	g.buf.Reset()
	return err
}
