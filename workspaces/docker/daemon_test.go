//go:build linux

package docker_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/a6afc2ce/hermes-hub/executor"
	"github.com/a6afc2ce/hermes-hub/internal/dockertest"
	"github.com/a6afc2ce/hermes-hub/internal/testkit"
	"github.com/a6afc2ce/hermes-hub/verbs"
	"github.com/a6afc2ce/hermes-hub/workspaces/docker"
	"github.com/moby/moby/client"
)

// syncBuffer is a writer a test reads while a call writes to it.
type syncBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestDaemonStoppedMidCall stops a private daemon while a call runs in its
// container: the call ends with the one-line error naming the workspace
// and the fix, and once the daemon is back the next call works. Twice:
// with the host's view of the container and with the daemon's only.
func TestDaemonStoppedMidCall(t *testing.T) {
	d := dockertest.StartDaemon(t)
	image := dockertest.ImportBusybox(t, d.Client())
	dir := filepath.Join(t.TempDir(), "ws")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, view := range []bool{true, false} {
		name := "host view"
		if !view {
			name = "daemon only"
		}
		t.Run(name, func(t *testing.T) {
			hostViews(t, view)
			stopMidCall(t, d, image, dir)
		})
	}
}

func stopMidCall(t *testing.T, d *dockertest.Daemon, image, dir string) {
	r, err := docker.New(docker.Config{Workspace: "sandbox", Image: image, HubID: "test-daemon", Host: d.Host(), EnvAllow: []string{"PATH"}},
		docker.Options{Logger: testkit.Discard()})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	spec := func(out *syncBuffer, script string) verbs.RunSpec {
		return verbs.RunSpec{Workspace: "sandbox", Dir: dir, WorkDir: ".", Executable: "sh", Args: []string{"-c", script},
			Timeout: time.Hour, Stdout: out, Stderr: &syncBuffer{}}
	}
	ctx := context.Background()
	for _, word := range []string{"warm", "known"} { // made (or found), then known
		out := &syncBuffer{}
		if res, err := r.Run(ctx, spec(out, "echo "+word)); err != nil || res.ExitCode != 0 || out.String() != word+"\n" {
			t.Fatalf("call %s: %+v %v %q", word, res, err, out.String())
		}
	}
	before, err := r.Containers(ctx)
	if err != nil || len(before) != 1 {
		t.Fatalf("containers %+v %v", before, err)
	}

	out := &syncBuffer{}
	type result struct {
		res verbs.RunResult
		err error
	}
	done := make(chan result, 1)
	go func() {
		res, err := r.Run(ctx, spec(out, "echo started; sleep 1000; echo finished"))
		done <- result{res, err}
	}()
	testkit.WaitFor(t, "the long call to start", func() bool { return out.String() == "started\n" })
	d.Stop()
	var got result
	select {
	case got = <-done:
	case <-time.After(testkit.Wait):
		t.Fatal("the call did not end when its daemon stopped")
	}
	var xe *executor.Error
	if !errors.As(got.err, &xe) || strings.Contains(xe.Message, "\n") || !strings.HasPrefix(xe.Message, "workspace sandbox: ") {
		t.Fatalf("the call ended with %+v %v, want a one-line workspace error", got.res, got.err)
	}
	// However the stop interleaves with the call (the daemon answers on
	// open connections while it stops its containers), the message names
	// the daemon as the cause and gives the fix.
	unreachable := strings.Contains(xe.Message, "is not reachable") && strings.Contains(xe.Message, "start it or change the workspace's destination")
	stopped := strings.Contains(xe.Message, "stopped during the call because its Docker daemon at "+d.Host()) && strings.Contains(xe.Message, "run the call again once the daemon is up")
	if !unreachable && !stopped {
		t.Fatalf("error %q says neither that the daemon is unreachable nor that the container stopped with its daemon, with the fix", xe.Message)
	}
	t.Logf("the call ended with: %s", xe.Message)

	// While the daemon is down a call says so.
	if _, err := r.Run(ctx, spec(&syncBuffer{}, "true")); err == nil || !strings.Contains(err.Error(), "is not reachable") {
		t.Fatalf("a call with the daemon down: %v", err)
	}

	d.Start()
	out = &syncBuffer{}
	if res, err := r.Run(ctx, spec(out, "echo back")); err != nil || res.ExitCode != 0 || out.String() != "back\n" {
		t.Fatalf("the call after the daemon came back: %+v %v %q", res, err, out.String())
	}
	after, err := r.Containers(ctx)
	if err != nil || len(after) != 1 || after[0].State != "running" {
		t.Fatalf("containers after the restart %+v %v", after, err)
	}
	t.Logf("container before the restart %.12s, after %.12s", before[0].ID, after[0].ID)
}

// inContainer reports whether a process whose command line contains what
// runs in container id.
func (e *env) inContainer(id, what string) bool {
	e.t.Helper()
	top, err := e.cli.ContainerTop(context.Background(), id, client.ContainerTopOptions{})
	if err != nil {
		return false
	}
	for _, p := range top.Processes {
		if strings.Contains(strings.Join(p, " "), what) {
			return true
		}
	}
	return false
}

func TestTimeoutBesideAnotherCall(t *testing.T) {
	e := newEnv(t, nil)
	run(t, e.set, "true") // the container exists
	id := e.only().ID
	type result struct {
		res verbs.ProcRunResult
		err error
	}
	other := make(chan result, 1)
	go func() {
		// Runs until the test creates the file "go".
		res, err := e.set.ProcRun(context.Background(), verbs.ProcRunArgs{Executable: "sh",
			Arguments: []string{"-c", "echo waiting; until [ -e go ]; do sleep 0.05; done; echo survived"}})
		other <- result{res, err}
	}()
	testkit.WaitFor(t, "the other call to run", func() bool { return e.inContainer(id, "until [ -e go ]") })

	secs := 5 // time for the tree to start on a loaded machine ("tree" says it did)
	res, err := e.set.ProcRun(context.Background(), verbs.ProcRunArgs{Executable: "sh",
		Arguments: []string{"-c", "sleep 1001 & sleep 1002 & echo tree; wait"}, TimeoutSeconds: &secs})
	if err != nil || !res.TimedOut || res.ExitCode != -1 || res.StdoutTail != "tree\n" {
		t.Fatalf("the timed-out call: %+v %v", res, err)
	}
	testkit.WaitFor(t, "the timed-out call's tree to go", func() bool {
		return !e.inContainer(id, "sleep 1001") && !e.inContainer(id, "sleep 1002")
	})
	select {
	case r := <-other:
		t.Fatalf("the other call ended with the timeout: %+v %v", r.res, r.err)
	default:
	}
	if !e.inContainer(id, "until [ -e go ]") {
		t.Fatal("the other call's process was killed")
	}
	write(t, filepath.Join(e.dir, "go"), "")
	r := <-other
	if r.err != nil || r.res.ExitCode != 0 || r.res.StdoutTail != "waiting\nsurvived\n" {
		t.Fatalf("the other call: %+v %v", r.res, r.err)
	}
	if e.only().ID != id {
		t.Fatal("the container was replaced")
	}
}

func TestContainerGoneDuringACall(t *testing.T) {
	cases := []struct {
		name string
		act  func(cli *client.Client, id string) error
	}{
		{"killed", func(cli *client.Client, id string) error {
			_, err := cli.ContainerKill(context.Background(), id, client.ContainerKillOptions{Signal: "KILL"})
			return err
		}},
		{"removed", func(cli *client.Client, id string) error {
			_, err := cli.ContainerRemove(context.Background(), id, client.ContainerRemoveOptions{Force: true})
			return err
		}},
	}
	for _, c := range cases {
		for _, view := range []bool{true, false} {
			name := c.name
			if !view {
				name += " (daemon only)"
			}
			t.Run(name, func(t *testing.T) {
				hostViews(t, view)
				goneDuringACall(t, c.act)
			})
		}
	}
}

// hostViews turns the runner's host view on or off for t.
func hostViews(t *testing.T, on bool) {
	docker.SetHostViews(on)
	t.Cleanup(func() { docker.SetHostViews(true) })
}

func goneDuringACall(t *testing.T, act func(cli *client.Client, id string) error) {
	e := newEnv(t, nil)
	run(t, e.set, "true")
	id := e.only().ID
	done := make(chan error, 1)
	go func() {
		_, err := e.set.ProcRun(context.Background(), verbs.ProcRunArgs{Executable: "sh", Arguments: []string{"-c", "sleep 1003"}})
		done <- err
	}()
	testkit.WaitFor(t, "the call to run", func() bool { return e.inContainer(id, "sleep 1003") })
	if err := act(e.cli, id); err != nil {
		t.Fatal(err)
	}
	var err error
	select {
	case err = <-done:
	case <-time.After(testkit.Wait):
		t.Fatal("the call did not end")
	}
	var xe *executor.Error
	if !errors.As(err, &xe) || strings.Contains(xe.Message, "\n") || !strings.HasPrefix(xe.Message, "workspace sandbox: ") ||
		!strings.Contains(xe.Message, "during the call") || !strings.Contains(xe.Message, "run the call again") {
		t.Fatalf("the call ended with %v, want the one-line error naming the workspace and the fix", err)
	}
	if r := sh(t, e.set, "echo again"); r.ExitCode != 0 || r.StdoutTail != "again\n" {
		t.Fatalf("the next call: %+v", r)
	}
}

func TestWorkspaceDirectoryReplaced(t *testing.T) {
	t.Parallel() // containers of its own (its own hub label), no global switch
	e := newEnv(t, nil)
	ctx := context.Background()
	spec := func(out *syncBuffer) verbs.RunSpec {
		return verbs.RunSpec{Workspace: "sandbox", Dir: e.dir, WorkDir: ".", Executable: "cat", Args: []string{"f.txt"},
			Timeout: time.Minute, Stdout: out, Stderr: &syncBuffer{}}
	}
	write(t, filepath.Join(e.dir, "f.txt"), "old\n")
	out := &syncBuffer{}
	if res, err := e.r.Run(ctx, spec(out)); err != nil || res.ExitCode != 0 || out.String() != "old\n" {
		t.Fatalf("%+v %v %q", res, err, out.String())
	}
	old := e.only().ID
	if err := os.RemoveAll(e.dir); err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(e.dir, "f.txt"), "new\n")
	out = &syncBuffer{}
	if res, err := e.r.Run(ctx, spec(out)); err != nil || res.ExitCode != 0 || out.String() != "new\n" {
		t.Fatalf("after the directory was made again: %+v %v %q", res, err, out.String())
	}
	if e.only().ID == old {
		t.Fatal("the container of the removed directory was kept")
	}
}

// TestSignalDeath pins the one exit code that differs from a host
// process: a program killed by a signal reports 128+n in a container (as a
// shell would say), -1 on the host. Docker's exec status does not tell a
// signal death from an exit with that status.
func TestSignalDeath(t *testing.T) {
	for _, view := range []bool{true, false} {
		t.Run(map[bool]string{true: "host view", false: "daemon only"}[view], func(t *testing.T) {
			hostViews(t, view)
			e := newEnv(t, nil)
			args := verbs.ProcRunArgs{Executable: "sh", Arguments: []string{"-c", "kill -KILL $$"}}
			lres, lerr := e.local.ProcRun(context.Background(), args)
			run(t, e.set, "true") // the container is known
			dres, derr := e.set.ProcRun(context.Background(), args)
			if lerr != nil || derr != nil || lres.ExitCode != -1 || dres.ExitCode != 128+9 || dres.TimedOut {
				t.Fatalf("local %+v %v, docker %+v %v; want -1 locally and 137 in the container", lres, lerr, dres, derr)
			}
			// The container was not mistaken for stopped: the next call works in it.
			id := e.only().ID
			run(t, e.set, "true")
			if e.only().ID != id {
				t.Fatal("the container was replaced")
			}
		})
	}
}

// TestWarmCallsAskTheHost checks that when the daemon runs on this
// machine a warm call makes only the exec's requests (create, start,
// inspect): the container is neither inspected nor listed (ContainerTop)
// once it is known, and its mount table (the state directory's mask) is
// read from the host. Without the host view each call inspects and lists
// it, and reads its mount table with an exec of cat.
func TestWarmCallsAskTheHost(t *testing.T) {
	cases := []struct {
		name                string
		view                bool
		total, inspect, top int // per call
	}{
		{"host view", true, 3, 0, 0},
		{"daemon only", false, 8, 1, 1},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			hostViews(t, c.view)
			e := newEnv(t, nil)
			run(t, e.set, "true")
			ins, err := e.cli.ContainerInspect(context.Background(), e.only().ID, client.ContainerInspectOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := os.Stat("/proc/" + strconv.Itoa(ins.Container.State.Pid)); c.view && (err != nil || ins.Container.State.Pid == 0) {
				t.Skipf("the daemon's containers are not processes of this machine's PID namespace (pid %d: %v): every call asks the daemon", ins.Container.State.Pid, err)
			}
			p := countingProxy(t, e.cli.DaemonHost())
			e.cfg.Host = p.host
			e.r = e.runner()
			e.set = e.verbs(e.r)
			run(t, e.set, "true")
			run(t, e.set, "true")
			p.reset()
			const calls = 3
			for range calls {
				if r := sh(t, e.set, "echo $$"); r.ExitCode != 0 {
					t.Fatalf("%+v", r)
				}
			}
			total, by := p.counts()
			if by["inspect"] != c.inspect*calls || by["top"] != c.top*calls || total != c.total*calls {
				p.mu.Lock()
				t.Fatalf("%d calls made these requests: %q", calls, p.seen)
			}
		})
	}
}
