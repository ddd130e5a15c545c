//go:build linux

package docker_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/a6afc2ce/hermes-hub/clock"
	"github.com/a6afc2ce/hermes-hub/executor"
	"github.com/a6afc2ce/hermes-hub/internal/dockertest"
	"github.com/a6afc2ce/hermes-hub/internal/testkit"
	"github.com/a6afc2ce/hermes-hub/verbs"
	"github.com/a6afc2ce/hermes-hub/workspaces/docker"
	"github.com/moby/moby/client"
)

// wsOwner owns the test workspaces: an unprivileged uid and gid.
const wsOwner = 4242

// env is a workspace whose proc.run goes through a docker Runner, with a
// local twin (same directory, no runner) to compare with.
type env struct {
	t       testing.TB
	dir     string // the workspace
	state   string // the hub's state, inside the workspace
	outside string // a host directory outside the workspace
	cfg     docker.Config
	cli     *client.Client
	r       *docker.Runner
	set     *verbs.Set // proc.run in the container
	local   *verbs.Set // proc.run on the host
}

// newEnv makes a workspace and a runner for it; mut adjusts the runner's
// configuration. Every container of the test's hub id is removed at the end.
func newEnv(t testing.TB, mut func(*docker.Config)) *env {
	t.Helper()
	cli := dockertest.Client(t)
	image := dockertest.BusyboxImage(t)
	base := t.TempDir()
	e := &env{t: t, cli: cli, dir: filepath.Join(base, "ws"), outside: filepath.Join(base, "outside")}
	e.state = filepath.Join(e.dir, ".hub")
	for _, d := range []string{e.state, e.outside} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	// The workspace belongs to an unprivileged user, whom its container
	// runs as (a root-owned one would run as nobody, and could not write).
	if err := os.Chown(e.dir, wsOwner, wsOwner); err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(e.state, "hub.db"), "state\n")
	write(t, filepath.Join(e.outside, "secret.txt"), "outside secret\n")
	e.cfg = docker.Config{Workspace: "sandbox", Image: image, HubID: testHub(t, cli), EnvAllow: []string{"PATH", "LANG"}, Pids: 64}
	if mut != nil {
		mut(&e.cfg)
	}
	e.r = e.runner()
	e.set = e.verbs(e.r)
	e.local = e.verbs(nil)
	return e
}

// testHub returns a fresh hub id whose containers are removed when t ends.
func testHub(t testing.TB, cli *client.Client) string {
	var b [6]byte
	_, _ = rand.Read(b[:])
	hub := "test-" + hex.EncodeToString(b[:])
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		res, err := cli.ContainerList(ctx, client.ContainerListOptions{All: true, Filters: make(client.Filters).Add("label", docker.LabelHub+"="+hub)})
		if err != nil {
			t.Errorf("list the test's containers: %v", err)
			return
		}
		for _, c := range res.Items {
			if _, err := cli.ContainerRemove(ctx, c.ID, client.ContainerRemoveOptions{Force: true}); err != nil {
				t.Errorf("remove container %s: %v", c.ID, err)
			}
		}
	})
	return hub
}

func (e *env) runner() *docker.Runner {
	e.t.Helper()
	r, err := docker.New(e.cfg, docker.Options{Logger: testkit.Discard()})
	if err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(func() { r.Close() })
	return r
}

func (e *env) verbs(r verbs.Runner) *verbs.Set {
	e.t.Helper()
	o := verbs.DefaultOptions(e.state)
	o.EnvAllow = e.cfg.EnvAllow
	o.Runners = verbs.Runners{"sandbox": r}
	ws, err := verbs.OpenWorkspace(e.dir, verbs.WorkspaceOptions{Protect: []string{e.state}, Deny: []string{".hub"}, Name: "sandbox"})
	if err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(func() { ws.Close() })
	s, err := verbs.NewSet(ws, o)
	if err != nil {
		e.t.Fatal(err)
	}
	return s
}

func write(t testing.TB, p, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// run runs a proc.run and fails t on a verb error.
func run(t testing.TB, s *verbs.Set, exe string, args ...string) verbs.ProcRunResult {
	t.Helper()
	res, err := s.ProcRun(context.Background(), verbs.ProcRunArgs{Executable: exe, Arguments: args})
	if err != nil {
		t.Fatalf("proc.run %s %q: %v", exe, args, err)
	}
	return res
}

func sh(t testing.TB, s *verbs.Set, script string) verbs.ProcRunResult {
	t.Helper()
	return run(t, s, "sh", "-c", script)
}

// containers returns the runner's containers, one expected.
func (e *env) only() docker.Container {
	e.t.Helper()
	cs, err := e.r.Containers(context.Background())
	if err != nil || len(cs) != 1 {
		e.t.Fatalf("containers %+v %v", cs, err)
	}
	return cs[0]
}

// processes counts the processes of container id.
func (e *env) processes(id string) int {
	e.t.Helper()
	top, err := e.cli.ContainerTop(context.Background(), id, client.ContainerTopOptions{})
	if err != nil {
		return 0 // not running: none
	}
	return len(top.Processes)
}

func TestSameFilesAsFsVerbs(t *testing.T) {
	t.Parallel() // containers of its own (its own hub label), no global switch
	e := newEnv(t, nil)
	ctx := context.Background()
	if _, err := e.set.WriteFile(ctx, verbs.FsWriteFileArgs{Path: "sub/in.txt", Content: "from fs\n"}); err != nil {
		t.Fatal(err)
	}
	res, err := e.set.ProcRun(ctx, verbs.ProcRunArgs{Executable: "cat", Arguments: []string{"in.txt"}, WorkingDirectory: "sub"})
	if err != nil || res.ExitCode != 0 || res.StdoutTail != "from fs\n" {
		t.Fatalf("cat in the container: %+v %v", res, err)
	}
	if res := sh(t, e.set, "echo from proc > out.txt; pwd"); res.ExitCode != 0 || res.StdoutTail != "/workspace\n" {
		t.Fatalf("write in the container: %+v", res)
	}
	got, err := e.set.ReadFile(ctx, verbs.FsReadFileArgs{Path: "out.txt"})
	if err != nil || got.Content != "from proc\n" {
		t.Fatalf("fs.readFile of the container's file: %+v %v", got, err)
	}
	// Files stay the operator's: the program runs as the directory's owner.
	fi, _ := os.Stat(filepath.Join(e.dir, "out.txt"))
	di, _ := os.Stat(e.dir)
	if !sameOwner(fi, di) {
		t.Fatalf("out.txt is not owned like the workspace")
	}
	// The same container serves every call.
	id := e.only().ID
	run(t, e.set, "true")
	if e.only().ID != id {
		t.Fatal("a second call made another container")
	}
}

func TestConfinement(t *testing.T) {
	t.Setenv("HERMES_TEST_TOKEN", "tok-3f9a1c-secret")
	e := newEnv(t, nil)
	cases := []struct {
		name, script string
		check        func(verbs.ProcRunResult) bool
	}{
		{"host files outside the workspace", "cat " + filepath.Join(e.outside, "secret.txt") + "; ls " + e.outside,
			func(r verbs.ProcRunResult) bool {
				return r.ExitCode != 0 && !strings.Contains(r.StdoutTail, "outside secret")
			}},
		{"no network but loopback", "cat /proc/net/dev",
			func(r verbs.ProcRunResult) bool {
				return r.ExitCode == 0 && strings.Contains(r.StdoutTail, "lo:") && strings.Count(r.StdoutTail, ":") == 1
			}},
		{"a connection fails", "wget -T 2 -q -O- http://1.1.1.1/ || echo refused",
			func(r verbs.ProcRunResult) bool { return strings.Contains(r.StdoutTail, "refused") }},
		{"the state directory is hidden", "ls -A /workspace/.hub; cat /workspace/.hub/hub.db; echo x > /workspace/.hub/new",
			func(r verbs.ProcRunResult) bool {
				return !strings.Contains(r.StdoutTail, "hub.db") && !strings.Contains(r.StdoutTail, "state")
			}},
		{"PID 1 has none of the hub's environment", "cat /proc/1/environ; echo; env",
			func(r verbs.ProcRunResult) bool {
				return r.ExitCode == 0 && !strings.Contains(r.StdoutTail, "tok-3f9a1c") && strings.Contains(r.StdoutTail, "PATH=")
			}},
		{"the root filesystem is read-only, /tmp is not", "touch /etc/x 2>/dev/null && echo rootrw; touch /tmp/x && echo tmpok",
			func(r verbs.ProcRunResult) bool { return r.StdoutTail == "tmpok\n" }},
		{"no capabilities", "grep CapEff /proc/self/status",
			func(r verbs.ProcRunResult) bool { return strings.Contains(r.StdoutTail, "0000000000000000") }},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if r := sh(t, e.set, c.script); !c.check(r) {
				t.Fatalf("exit %d\nstdout %q\nstderr %q", r.ExitCode, r.StdoutTail, r.StderrTail)
			}
		})
	}
	if _, err := os.Stat(filepath.Join(e.state, "new")); err == nil {
		t.Fatal("the container wrote into the state directory")
	}
}

func TestSameAsLocal(t *testing.T) {
	t.Parallel() // containers of its own (its own hub label), no global switch
	e := newEnv(t, nil)
	write(t, filepath.Join(e.dir, "data.txt"), "not a program\n")
	cases := []struct {
		name string
		exe  string
		args []string
	}{
		{"exit 0", "sh", []string{"-c", "exit 0"}},
		{"exit 3", "sh", []string{"-c", "echo out; echo err >&2; exit 3"}},
		{"exit 42", "sh", []string{"-c", "exit 42"}},
		{"false", "false", nil},
		{"missing program", "no-such-program-x", nil},
		{"missing path", "./no-such-script.sh", nil},
		{"not executable", "./data.txt", nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ctx := context.Background()
			args := verbs.ProcRunArgs{Executable: c.exe, Arguments: c.args}
			lres, lerr := e.local.ProcRun(ctx, args)
			dres, derr := e.set.ProcRun(ctx, args)
			if lerr != nil || derr != nil {
				le, de := executor.ErrorFrom(lerr), executor.ErrorFrom(derr)
				if lerr == nil || derr == nil || le.Code != de.Code || le.Message != de.Message {
					t.Fatalf("local error %v, docker error %v", lerr, derr)
				}
				return
			}
			if lres.ExitCode != dres.ExitCode || lres.StdoutTail != dres.StdoutTail || lres.StderrTail != dres.StderrTail || lres.TimedOut != dres.TimedOut {
				t.Fatalf("local %+v\ndocker %+v", lres, dres)
			}
		})
	}
}

// detach starts processes that leave the call's process group and session
// and are reparented to PID 1, then prints "started".
const detach = `setsid sh -c 'sleep 1000 & sleep 1000' >/dev/null 2>&1 & (sh -c 'sleep 1000 >/dev/null 2>&1 &') ; echo started`

func TestTimeoutKillsTheTree(t *testing.T) {
	e := newEnv(t, nil)
	// Long enough for the detaching to finish on a loaded machine before
	// the timeout (the assertion on "started" checks it did).
	secs := 5
	res, err := e.set.ProcRun(context.Background(), verbs.ProcRunArgs{Executable: "sh", Arguments: []string{"-c", detach + "; sleep 1000"}, TimeoutSeconds: &secs})
	if err != nil || !res.TimedOut || res.ExitCode != -1 || res.StdoutTail != "started\n" {
		t.Fatalf("timeout: %+v %v", res, err)
	}
	c := e.only()
	if n := e.processes(c.ID); n > 2 {
		t.Fatalf("%d processes left in the container after the timeout", n)
	}
	// The container serves the next call (started again, same one).
	if r := run(t, e.set, "true"); r.ExitCode != 0 {
		t.Fatalf("after the timeout: %+v", r)
	}
	if e.only().ID != c.ID {
		t.Fatal("the container was replaced")
	}
}

func TestNothingOutlivesANormalExit(t *testing.T) {
	t.Parallel() // containers of its own (its own hub label), no global switch
	e := newEnv(t, nil)
	if r := sh(t, e.set, detach); r.ExitCode != 0 || r.StdoutTail != "started\n" {
		t.Fatalf("%+v", r)
	}
	if n := e.processes(e.only().ID); n > 2 {
		t.Fatalf("%d processes left in the container after the call", n)
	}
}

func TestConcurrentCallsKeepTheirProcesses(t *testing.T) {
	t.Parallel() // containers of its own (its own hub label), no global switch
	e := newEnv(t, nil)
	run(t, e.set, "true") // the container exists
	var wg sync.WaitGroup
	var long verbs.ProcRunResult
	wg.Add(1)
	go func() {
		defer wg.Done()
		long = sh(t, e.set, "sleep 2; echo survived")
	}()
	for range 5 {
		if r := sh(t, e.set, "echo quick"); r.ExitCode != 0 {
			t.Errorf("quick call %+v", r)
		}
	}
	wg.Wait()
	if long.ExitCode != 0 || long.StdoutTail != "survived\n" {
		t.Fatalf("the long call was disturbed: %+v", long)
	}
}

func TestContainerLifecycle(t *testing.T) {
	t.Parallel() // containers of its own (its own hub label), no global switch
	e := newEnv(t, nil)
	run(t, e.set, "true")
	first := e.only()
	if first.Session != "" || first.State != "running" || first.LastUsed.IsZero() {
		t.Fatalf("container %+v", first)
	}

	// A new runner (the hub restarted) finds it again.
	e.r.Close()
	e.r = e.runner()
	e.set = e.verbs(e.r)
	run(t, e.set, "true")
	if got := e.only(); got.ID != first.ID {
		t.Fatalf("after a restart: container %s, want %s", got.ID, first.ID)
	}

	// Removed from outside: created again.
	if _, err := e.cli.ContainerRemove(context.Background(), first.ID, client.ContainerRemoveOptions{Force: true}); err != nil {
		t.Fatal(err)
	}
	if r := run(t, e.set, "true"); r.ExitCode != 0 {
		t.Fatalf("%+v", r)
	}
	second := e.only()
	if second.ID == first.ID {
		t.Fatal("not recreated")
	}

	// Stopped from outside: started again.
	if _, err := e.cli.ContainerKill(context.Background(), second.ID, client.ContainerKillOptions{Signal: "KILL"}); err != nil {
		t.Fatal(err)
	}
	testkit.WaitFor(t, "the container to stop", func() bool { return e.processes(second.ID) == 0 })
	run(t, e.set, "true")

	// Another setting that shapes the container: a new one.
	e.cfg.Pids = 65
	e.r = e.runner()
	e.set = e.verbs(e.r)
	run(t, e.set, "true")
	if got := e.only(); got.ID == second.ID {
		t.Fatal("a changed limit kept the old container")
	}

	// Reset removes it.
	if err := e.r.Reset(context.Background(), ""); err != nil {
		t.Fatal(err)
	}
	if cs, err := e.r.Containers(context.Background()); err != nil || len(cs) != 0 {
		t.Fatalf("after reset: %+v %v", cs, err)
	}
	run(t, e.set, "true")
	e.only()
}

func TestIdleRemoval(t *testing.T) {
	t.Parallel() // containers of its own (its own hub label), no global switch
	fake := clock.NewFake(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	e := newEnv(t, func(c *docker.Config) { c.IdleTimeout = 10 * time.Minute })
	e.r.Close()
	r, err := docker.New(e.cfg, docker.Options{Logger: testkit.Discard(), Clock: fake})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	e.r = r
	e.set = e.verbs(r)
	run(t, e.set, "true")
	id := e.only().ID
	fake.Advance(5 * time.Minute) // a sweep, not idle long enough
	fake.Advance(3 * time.Minute)
	if got := e.only(); got.ID != id {
		t.Fatal("removed before its idle time")
	}
	fake.Advance(3 * time.Minute) // 11 minutes: idle
	testkit.WaitFor(t, "the idle container to go", func() bool {
		cs, err := r.Containers(context.Background())
		if err == nil && len(cs) == 0 {
			return true
		}
		// The sweeper sets its next timer after a sweep ends: an advance
		// made while a sweep still ran found no timer to fire. Move on so
		// that the next one fires.
		fake.Advance(30 * time.Second)
		return false
	})
}

func TestSessions(t *testing.T) {
	t.Parallel() // containers of its own (its own hub label), no global switch
	cli := dockertest.Client(t)
	image := dockertest.BusyboxImage(t)
	base := t.TempDir()
	host, err := verbs.OpenWorkspace(filepath.Join(base), verbs.WorkspaceOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer host.Close()
	// The hub (root here) makes session directories owner-only: their
	// containers must run as its user, named explicitly.
	r, err := docker.New(docker.Config{Workspace: "sandbox", Image: image, HubID: testHub(t, cli), User: "0"}, docker.Options{Logger: testkit.Discard()})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	src, err := verbs.OpenSessions(host, verbs.SessionOptions{
		Root: filepath.Join(base, "sessions"), Meta: verbs.NewMemoryMeta(), Logger: testkit.Discard(),
		Workspace: verbs.WorkspaceOptions{Name: "sandbox"},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	o := verbs.DefaultOptions(filepath.Join(base, "state"))
	o.Runners = verbs.Runners{"sandbox": r}
	set, err := verbs.NewSet(src, o)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"chat:a", "chat:b"} {
		ctx := executor.WithCall(context.Background(), executor.Call{TurnID: "t." + s[5:], Session: s})
		if _, err := set.WriteFile(ctx, verbs.FsWriteFileArgs{Path: "me.txt", Content: s}); err != nil {
			t.Fatal(err)
		}
		res, err := set.ProcRun(ctx, verbs.ProcRunArgs{Executable: "sh", Arguments: []string{"-c", "cat me.txt; ls"}})
		if err != nil || res.StdoutTail != s+"me.txt\n" {
			t.Fatalf("session %s: %+v %v", s, res, err)
		}
	}
	cs, err := r.Containers(context.Background())
	if err != nil || len(cs) != 2 || cs[0].Session == cs[1].Session || cs[0].ID == cs[1].ID {
		t.Fatalf("containers %+v %v", cs, err)
	}
	if err := r.Reset(context.Background(), "chat:a"); err != nil {
		t.Fatal(err)
	}
	if cs, _ := r.Containers(context.Background()); len(cs) != 1 || cs[0].Session != "chat:b" {
		t.Fatalf("after resetting chat:a: %+v", cs)
	}
}

func TestFailures(t *testing.T) {
	ctx := context.Background()
	spec := func(e *env) verbs.RunSpec {
		return verbs.RunSpec{Workspace: "sandbox", Dir: e.dir, WorkDir: ".", Executable: "true", Timeout: time.Minute, Stdout: &strings.Builder{}, Stderr: &strings.Builder{}}
	}
	cases := []struct {
		name string
		mut  func(*docker.Config)
		prep func(*env)
		want []string
	}{
		{"image missing", func(c *docker.Config) { c.Image = "hermes-hub-test/absent:0" }, nil,
			[]string{"workspace sandbox:", "hermes-hub-test/absent:0", "docker pull", "docker import"}},
		{"daemon unreachable", func(c *docker.Config) { c.Host = "unix://" + filepath.Join(t.TempDir(), "nothing.sock") }, nil,
			[]string{"workspace sandbox:", "is not reachable", "start it or change the workspace's destination"}},
		{"workspace directory removed", nil, func(e *env) { os.RemoveAll(e.dir) },
			[]string{"workspace sandbox:", "directory", "is missing"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			e := newEnv(t, c.mut)
			if c.prep != nil {
				c.prep(e)
			}
			_, err := e.r.Run(ctx, spec(e))
			var xe *executor.Error
			if !errors.As(err, &xe) || strings.Contains(xe.Message, "\n") {
				t.Fatalf("error %v", err)
			}
			for _, w := range c.want {
				if !strings.Contains(xe.Message, w) {
					t.Fatalf("error %q lacks %q", xe.Message, w)
				}
			}
			if c.prep == nil {
				if err := e.r.Check(ctx); err == nil || !strings.Contains(err.Error(), c.want[2]) {
					t.Fatalf("check: %v", err)
				}
			}
		})
	}
}

// TestOutOfMemory: a program killed by the container's memory limit is
// told so, with the limit, whichever process the kernel picks: the program
// itself, or the container's PID 1 (every other process's oom_score_adj is
// raised), which takes the whole container with it and must not read as a
// container stopped from outside.
func TestOutOfMemory(t *testing.T) {
	const hog = `a=$(head -c 100000000 /dev/zero | tr '\0' x); echo ${#a}`
	programs := []struct{ name, script string }{
		{"program killed", hog},
		{"PID 1 killed", `for p in /proc/[0-9]*; do [ "${p#/proc/}" = $$ ] || echo 1000 > $p/oom_score_adj; done 2>/dev/null; ` + hog},
	}
	for _, p := range programs {
		for _, view := range []bool{true, false} {
			t.Run(p.name+"/"+map[bool]string{true: "host view", false: "daemon only"}[view], func(t *testing.T) {
				hostViews(t, view)
				e := newEnv(t, func(c *docker.Config) { c.Memory = 16 << 20 })
				run(t, e.set, "true") // the container is known
				_, err := e.set.ProcRun(context.Background(), verbs.ProcRunArgs{Executable: "sh", Arguments: []string{"-c", p.script}})
				if err == nil || !strings.Contains(err.Error(), "out of memory") || !strings.Contains(err.Error(), "16MiB") {
					t.Fatalf("error %v", err)
				}
				// The next call gets a fresh container and works.
				if r := run(t, e.set, "true"); r.ExitCode != 0 {
					t.Fatalf("%+v", r)
				}
			})
		}
	}
}

func TestCheckAndDescribe(t *testing.T) {
	t.Parallel() // containers of its own (its own hub label), no global switch
	e := newEnv(t, func(c *docker.Config) { c.Memory = 512 << 20; c.CPUs = 1; c.Pids = 256 })
	if err := e.r.Check(context.Background()); err != nil {
		t.Fatal(err)
	}
	want := "docker image=" + e.cfg.Image + " network=none memory=512MiB cpus=1 pids=256"
	if got := e.r.Describe(); got != want {
		t.Fatalf("describe %q, want %q", got, want)
	}
	if cs, err := e.r.Containers(context.Background()); err != nil || len(cs) != 0 {
		t.Fatalf("check left containers: %+v %v", cs, err)
	}
}

func TestNewRejects(t *testing.T) {
	ok := docker.Config{Workspace: "w", Image: "img:1", HubID: "h"}
	cases := map[string]func(*docker.Config){
		"no image":                func(c *docker.Config) { c.Image = "" },
		"bad network":             func(c *docker.Config) { c.Network = "a b" },
		"tiny memory":             func(c *docker.Config) { c.Memory = 1024 },
		"negative cpus":           func(c *docker.Config) { c.CPUs = -1 },
		"negative pids":           func(c *docker.Config) { c.Pids = -1 },
		"bad user":                func(c *docker.Config) { c.User = "a b" },
		"user by name":            func(c *docker.Config) { c.User = "toor" }, // its uid is the image's to say
		"relative protected path": func(c *docker.Config) { c.Protect = []string{".hub"} },
		"bad env name":            func(c *docker.Config) { c.EnvAllow = []string{"A=B"} },
		"no hub id":               func(c *docker.Config) { c.HubID = "" },
		"no workspace":            func(c *docker.Config) { c.Workspace = "" },
		"negative idle":           func(c *docker.Config) { c.IdleTimeout = -time.Second },
	}
	for name, mut := range cases {
		t.Run(name, func(t *testing.T) {
			c := ok
			mut(&c)
			if r, err := docker.New(c, docker.Options{}); err == nil {
				r.Close()
				t.Fatal("accepted")
			}
		})
	}
	r, err := docker.New(ok, docker.Options{})
	if err != nil {
		t.Fatal(err)
	}
	r.Close()
}

func TestCloseLeavesNoGoroutine(t *testing.T) {
	e := newEnv(t, nil)
	run(t, e.set, "true")
	e.r.Close()
	before := runtime.NumGoroutine()
	for range 5 {
		r := e.runner()
		s := e.verbs(r)
		run(t, s, "true")
		r.Close()
	}
	testkit.WaitFor(t, "the runners' goroutines to end", func() bool { return runtime.NumGoroutine() <= before })
}
