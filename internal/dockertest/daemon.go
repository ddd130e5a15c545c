//go:build linux

package dockertest

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/moby/moby/client"
)

// startWait bounds a private daemon's start and stop. It guards against a
// hang on a loaded machine; it is not a threshold on speed.
const startWait = 2 * time.Minute

// Daemon is a private dockerd a test owns: its own data root, exec root,
// pid file, socket and containerd, so stopping it never touches the shared
// daemon. It keeps its data root across Stop and Start, like a daemon
// restarted on the same machine.
type Daemon struct {
	t    testing.TB
	dir  string // everything of the daemon: data, exec, pid file, socket, log
	host string

	mu   sync.Mutex
	cmd  *exec.Cmd
	done chan struct{} // closed when cmd has been waited for
	cli  *client.Client
}

// StartDaemon starts a private dockerd for t and stops it, removes its
// containers and deletes its files when t ends. It needs root (a daemon
// mounts filesystems and makes cgroups): without root t is skipped, even
// under CI=true, since that is a capability the machine lacks rather than
// a missing package. Without a dockerd binary, or when the daemon does not
// come up, t is skipped (failed under CI=true) with the reason and the tail
// of the daemon's log.
func StartDaemon(t testing.TB) *Daemon {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("a private Docker daemon needs root (it mounts filesystems and makes cgroups); this test runs as uid " + strconv.Itoa(os.Geteuid()))
	}
	if _, err := exec.LookPath("dockerd"); err != nil {
		Unavailable(t, "no dockerd to start a private Docker daemon with (install docker.io): "+err.Error())
	}
	// A short directory: the sockets inside must fit a unix socket's path.
	dir, err := os.MkdirTemp("", "hhd-")
	if err != nil {
		t.Fatal(err)
	}
	d := &Daemon{t: t, dir: dir, host: "unix://" + filepath.Join(dir, "docker.sock")}
	t.Cleanup(d.cleanup)
	cli, err := client.New(client.WithHost(d.host))
	if err != nil {
		t.Fatalf("a client of the private daemon: %v", err)
	}
	d.cli = cli
	if err := d.start(); err != nil {
		Unavailable(t, err.Error())
	}
	return d
}

// Host is the daemon's address (unix:///tmp/hhd-…/docker.sock), for
// DOCKER_HOST or a destination's host.
func (d *Daemon) Host() string { return d.host }

// Client is a client of the daemon, closed when the test ends.
func (d *Daemon) Client() *client.Client { return d.cli }

// Running reports whether the daemon process runs.
func (d *Daemon) Running() bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.cmd != nil
}

// Start starts the daemon again on the same data root and waits until it
// answers. The test fails if it does not.
func (d *Daemon) Start() {
	d.t.Helper()
	if err := d.start(); err != nil {
		d.t.Fatal(err)
	}
}

// Stop sends the daemon SIGTERM, as a service manager stopping it would,
// and waits until it has exited (it stops its containers and its
// containerd first). The test fails if it does not exit.
func (d *Daemon) Stop() {
	d.t.Helper()
	if err := d.stop(syscall.SIGTERM); err != nil {
		d.t.Fatal(err)
	}
}

func (d *Daemon) start() error {
	d.mu.Lock()
	if d.cmd != nil {
		d.mu.Unlock()
		return fmt.Errorf("the private Docker daemon already runs")
	}
	cmd, done, err := d.launch()
	d.cmd, d.done = cmd, done
	d.mu.Unlock()
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), startWait)
	defer cancel()
	for {
		pctx, pcancel := context.WithTimeout(ctx, 5*time.Second)
		_, err := d.cli.Ping(pctx, client.PingOptions{NegotiateAPIVersion: true})
		pcancel()
		if err == nil {
			return nil
		}
		select {
		case <-done:
			d.mu.Lock()
			d.cmd, d.done = nil, nil
			d.mu.Unlock()
			return fmt.Errorf("the private dockerd exited while starting: %s", d.logTail())
		case <-ctx.Done():
			_ = d.stop(syscall.SIGKILL)
			return fmt.Errorf("the private dockerd did not answer within %v: %s", startWait, d.logTail())
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// launch starts the dockerd process. d.mu is held.
func (d *Daemon) launch() (*exec.Cmd, chan struct{}, error) {
	logf, err := os.OpenFile(d.logPath(), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return nil, nil, err
	}
	defer logf.Close()
	ns := "hhd-" + strings.TrimPrefix(filepath.Base(d.dir), "hhd-")
	cmd := exec.Command("dockerd",
		"--data-root", filepath.Join(d.dir, "data"),
		"--exec-root", filepath.Join(d.dir, "exec"),
		"--pidfile", filepath.Join(d.dir, "dockerd.pid"),
		"--host", d.host,
		"--iptables=false", "--bridge=none", "--ip-masq=false",
		// If a system containerd were running it would be shared: keep
		// this daemon's objects apart from the shared daemon's.
		"--containerd-namespace", ns, "--containerd-plugins-namespace", ns+"-plugins",
		"--shutdown-timeout", "5",
	)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		return nil, nil, fmt.Errorf("start a private dockerd: %v", err)
	}
	done := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		close(done)
	}()
	return cmd, done, nil
}

func (d *Daemon) stop(sig syscall.Signal) error {
	d.mu.Lock()
	cmd, done := d.cmd, d.done
	d.mu.Unlock()
	if cmd == nil {
		return nil
	}
	_ = cmd.Process.Signal(sig)
	select {
	case <-done:
	case <-time.After(startWait):
		_ = cmd.Process.Kill()
		<-done
		return fmt.Errorf("the private dockerd did not stop within %v after %v: %s", startWait, sig, d.logTail())
	}
	d.mu.Lock()
	d.cmd, d.done = nil, nil
	d.mu.Unlock()
	// Its containerd normally stops with it; one left (the daemon killed)
	// is ours: the pid file in our exec root names it.
	if data, err := os.ReadFile(filepath.Join(d.dir, "exec", "containerd", "containerd.pid")); err == nil {
		if pid, err := strconv.Atoi(strings.TrimSpace(string(data))); err == nil && pid > 0 && ownContainerd(pid, d.dir) {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	}
	return nil
}

// ownContainerd tells whether process pid is a containerd of dir.
func ownContainerd(pid int, dir string) bool {
	cmdline, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline")
	return err == nil && bytes.Contains(cmdline, []byte("containerd")) && bytes.Contains(cmdline, []byte(dir))
}

// cleanup removes the daemon's containers, stops it, and deletes its
// files (unmounting what it left mounted under them).
func (d *Daemon) cleanup() {
	if d.Running() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		res, err := d.cli.ContainerList(ctx, client.ContainerListOptions{All: true})
		if err == nil {
			for _, c := range res.Items {
				if _, err := d.cli.ContainerRemove(ctx, c.ID, client.ContainerRemoveOptions{Force: true}); err != nil {
					d.t.Errorf("remove container %s of the private daemon: %v", c.ID, err)
				}
			}
		}
		cancel()
		if err := d.stop(syscall.SIGTERM); err != nil {
			d.t.Error(err)
		}
	}
	if d.cli != nil {
		d.cli.Close()
	}
	unmountUnder(d.dir)
	if err := os.RemoveAll(d.dir); err != nil {
		d.t.Errorf("remove the private daemon's files: %v", err)
	}
}

// unmountUnder lazily unmounts every mount point under dir, deepest first.
func unmountUnder(dir string) {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return
	}
	defer f.Close()
	var points []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 5 {
			continue
		}
		p := unescapeMount(fields[4])
		if p == dir || strings.HasPrefix(p, dir+"/") {
			points = append(points, p)
		}
	}
	sort.Slice(points, func(i, j int) bool { return len(points[i]) > len(points[j]) })
	for _, p := range points {
		_ = syscall.Unmount(p, syscall.MNT_DETACH)
	}
}

// unescapeMount undoes mountinfo's octal escapes (\040 for a space).
func unescapeMount(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			if n, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(n))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

func (d *Daemon) logPath() string { return filepath.Join(d.dir, "dockerd.log") }

// logTail is the end of the daemon's log, for a failure's message.
func (d *Daemon) logTail() string {
	data, err := os.ReadFile(d.logPath())
	if err != nil {
		return "no log: " + err.Error()
	}
	lines := strings.Split(strings.TrimSpace(string(data)), "\n")
	if len(lines) > 15 {
		lines = lines[len(lines)-15:]
	}
	return "the end of its log:\n" + strings.Join(lines, "\n")
}
