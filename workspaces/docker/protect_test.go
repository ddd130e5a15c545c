//go:build linux

package docker_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/a6afc2ce/hermes-hub/internal/dockertest"
	"github.com/a6afc2ce/hermes-hub/internal/testkit"
	"github.com/a6afc2ce/hermes-hub/verbs"
	"github.com/a6afc2ce/hermes-hub/workspaces/docker"
	"github.com/moby/moby/client"
)

// protect makes e's runner again, protecting the state directory by
// identity and checking the workspace at start, as the hub's does.
func (e *env) protect() {
	e.t.Helper()
	e.cfg.Dir, e.cfg.Protect = e.dir, []string{e.state}
	e.r = e.runner()
	e.set = e.verbs(e.r)
}

// refused runs script in e and fails t unless the call is refused with an
// error holding every want; it returns the error's text.
func refused(t *testing.T, s *verbs.Set, script string, want ...string) string {
	t.Helper()
	res, err := s.ProcRun(context.Background(), verbs.ProcRunArgs{Executable: "sh", Arguments: []string{"-c", script}})
	if err == nil {
		t.Fatalf("the call ran: %+v", res)
	}
	for _, w := range want {
		if !strings.Contains(err.Error(), w) {
			t.Fatalf("error %q lacks %q", err, w)
		}
	}
	return err.Error()
}

// TestTopLevelMaskCannotBeMoved: the state directory at the workspace's top
// level is covered by a mount that no program in the container can move:
// renaming it, or /workspace, fails, and the state stays hidden.
func TestTopLevelMaskCannotBeMoved(t *testing.T) {
	t.Parallel() // containers of its own (its own hub label), no global switch
	e := newEnv(t, nil)
	e.protect()
	res := sh(t, e.set, "mv /workspace/.hub /workspace/moved; echo rc=$?; mv /workspace /w; echo rc=$?; ls -A /workspace/.hub /workspace/moved")
	if !strings.HasPrefix(res.StdoutTail, "rc=1\nrc=1\n") || !strings.Contains(res.StderrTail, "busy") || strings.Contains(res.StdoutTail, "hub.db") {
		t.Fatalf("moving the mask: %+v", res)
	}
	if _, err := os.Stat(filepath.Join(e.state, "hub.db")); err != nil {
		t.Fatalf("the state moved on the host: %v", err)
	}
	if r := sh(t, e.set, "cat .hub/hub.db"); strings.Contains(r.StdoutTail, "state") {
		t.Fatalf("the state is visible: %+v", r)
	}
}

// TestStateBelowTopLevel is the attack on a state directory deeper in a
// docker workspace: a program renames a directory above its mask (which
// moves with it), and the container made next covers the old path and
// shows the state under the new one. The runner refuses such a workspace
// at start (New) and on every call.
func TestStateBelowTopLevel(t *testing.T) {
	deep := func(t *testing.T, mut func(*env) func(*docker.Config)) *env {
		e := newEnv(t, nil)
		state := filepath.Join(e.dir, "sub", ".hub")
		if err := os.MkdirAll(filepath.Dir(state), 0o777); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(e.state, state); err != nil {
			t.Fatal(err)
		}
		e.state = state
		if mut != nil {
			e.cfg = docker.Config{Workspace: "sandbox", Image: e.cfg.Image, HubID: e.cfg.HubID, EnvAllow: e.cfg.EnvAllow}
			mut(e)(&e.cfg)
		}
		return e
	}
	t.Run("refused at start", func(t *testing.T) {
		e := deep(t, nil)
		e.cfg.Dir, e.cfg.Protect = e.dir, []string{e.state}
		r, err := docker.New(e.cfg, docker.Options{Logger: testkit.Discard()})
		if err == nil {
			r.Close()
			t.Fatal("New accepted a workspace holding the state directory below its top level")
		}
		for _, w := range []string{"docker destination: ", e.state, "below its top level", "move it out of the workspace or to its top level (" + filepath.Join(e.dir, ".hub") + ")"} {
			if !strings.Contains(err.Error(), w) {
				t.Fatalf("error %q lacks %q", err, w)
			}
		}
	})
	for _, c := range []struct {
		name string
		mut  func(*env) func(*docker.Config)
	}{
		{"the workspace's hidden list", nil},
		{"the protected paths", func(e *env) func(*docker.Config) {
			return func(c *docker.Config) { c.Protect = []string{e.state} }
		}},
	} {
		t.Run("refused at each call with "+c.name, func(t *testing.T) {
			e := deep(t, c.mut)
			e.r = e.runner()
			e.set = e.verbs(e.r)
			// The attack: move the mask away, get a new container, read.
			moved, merr := e.set.ProcRun(context.Background(), verbs.ProcRunArgs{Executable: "mv", Arguments: []string{"sub", "elsewhere"}})
			if err := e.r.Reset(context.Background(), ""); err != nil {
				t.Fatal(err)
			}
			read, rerr := e.set.ProcRun(context.Background(), verbs.ProcRunArgs{Executable: "cat", Arguments: []string{"elsewhere/.hub/hub.db"}})
			if strings.Contains(read.StdoutTail, "state") {
				t.Fatalf("the container read the state: %+v", read)
			}
			for _, c := range []struct {
				res verbs.ProcRunResult
				err error
			}{{moved, merr}, {read, rerr}} {
				if c.err == nil || !strings.Contains(c.err.Error(), "sub/.hub") || !strings.Contains(c.err.Error(), "below its top level") {
					t.Fatalf("the call was not refused: %+v %v", c.res, c.err)
				}
			}
			if _, err := os.Stat(e.state); err != nil {
				t.Fatalf("the state directory moved: %v", err)
			}
		})
	}
}

// TestStateReplacedOnTheHost: each call checks that <workspace>/.hub is
// still the state directory. Once the host renamed it and put another
// directory in its place, a new container would cover the impostor and
// show the state under its new name: the call is refused instead.
func TestStateReplacedOnTheHost(t *testing.T) {
	e := newEnv(t, nil)
	e.protect()
	run(t, e.set, "true")
	if err := os.Rename(e.state, filepath.Join(e.dir, "renamed")); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(e.state, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := e.r.Reset(context.Background(), ""); err != nil {
		t.Fatal(err)
	}
	refused(t, e.set, "cat renamed/hub.db", "is no longer the protected directory", "put it back and restart the hub")
}

// TestMaskCheckedAtEachCall: a container whose mask over the state
// directory is gone (detached on the host: here unmounted from the host
// in the container's mount namespace) is removed, and the call refused;
// the next call gets a new container with the mask. With the host's view
// of the container and with the daemon's only (the mount table then comes
// from an exec of cat).
func TestMaskCheckedAtEachCall(t *testing.T) {
	nsenter, err := exec.LookPath("nsenter")
	if err != nil {
		testkit.Unavailable(t, "no nsenter (util-linux) to take the mask away from outside")
	}
	for _, view := range []bool{true, false} {
		t.Run(map[bool]string{true: "host view", false: "daemon only"}[view], func(t *testing.T) {
			hostViews(t, view)
			e := newEnv(t, nil)
			e.protect()
			run(t, e.set, "true")
			id := e.only().ID
			ins, err := e.cli.ContainerInspect(context.Background(), id, client.ContainerInspectOptions{})
			if err != nil {
				t.Fatal(err)
			}
			pid := strconv.Itoa(ins.Container.State.Pid)
			if out, err := exec.Command(nsenter, "-t", pid, "-m", "umount", "/workspace/.hub").CombinedOutput(); err != nil {
				t.Fatalf("umount in the container: %v %s", err, out)
			}
			refused(t, e.set, "cat .hub/hub.db", "no longer hides /workspace/.hub", "the container was removed")
			if cs, _ := e.r.Containers(context.Background()); len(cs) != 0 {
				t.Fatalf("the container was kept: %+v", cs)
			}
			if r := sh(t, e.set, "ls -A .hub; cat .hub/hub.db"); strings.Contains(r.StdoutTail, "state") || e.only().ID == id {
				t.Fatalf("the next call: %+v", r)
			}
		})
	}
}

// TestProtectedFiles: the configuration and secret files may not lie in a
// docker workspace, at its top level or deeper, under their own name or
// behind a link: New refuses the workspace, and a call refuses one moved
// there later. Outside the workspace they change nothing.
func TestProtectedFiles(t *testing.T) {
	t.Parallel() // containers of its own (its own hub label), no global switch
	cases := []struct {
		name  string
		place func(e *env) string // makes the file, returns the protected path
		in    string              // the path the error names
	}{
		{"at the top level", func(e *env) string { return mkfile(t, filepath.Join(e.dir, "hub.yml")) }, "hub.yml"},
		{"deeper", func(e *env) string { return mkfile(t, filepath.Join(e.dir, "conf", "token.txt")) }, "conf/token.txt"},
		{"behind a link", func(e *env) string {
			target := mkfile(t, filepath.Join(e.dir, "real.key"))
			link := filepath.Join(e.outside, "tls.key")
			if err := os.Symlink(target, link); err != nil {
				t.Fatal(err)
			}
			return link
		}, "real.key"},
		{"not yet made", func(e *env) string { return filepath.Join(e.dir, "seed.nk") }, "seed.nk"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			e := newEnv(t, nil)
			p := c.place(e)
			e.cfg.Dir, e.cfg.Protect = e.dir, []string{e.state, p}
			r, err := docker.New(e.cfg, docker.Options{Logger: testkit.Discard()})
			if c.name == "not yet made" {
				// Nothing to hide at start; a call refuses the place anyway.
				if err != nil {
					t.Fatal(err)
				}
				r.Close()
			} else if err == nil {
				r.Close()
				t.Fatal("New accepted a workspace holding a protected file")
			} else if !strings.Contains(err.Error(), "protected file "+filepath.Join(e.dir, filepath.FromSlash(c.in))) || !strings.Contains(err.Error(), "move the file out of the workspace directory") {
				t.Fatalf("error %q", err)
			}
			e.cfg.Dir = ""
			e.r = e.runner()
			e.set = e.verbs(e.r)
			refused(t, e.set, "cat "+c.in, "protected file", filepath.FromSlash(c.in))
		})
	}
	t.Run("moved in after start", func(t *testing.T) {
		e := newEnv(t, nil)
		cfg := mkfile(t, filepath.Join(e.outside, "hub.yml"))
		e.cfg.Dir, e.cfg.Protect = e.dir, []string{e.state, cfg}
		e.r = e.runner()
		e.set = e.verbs(e.r)
		if r := sh(t, e.set, "ls -A"); r.ExitCode != 0 {
			t.Fatalf("%+v", r)
		}
		// The directory holding the file is moved into the workspace.
		if err := os.Rename(e.outside, filepath.Join(e.dir, "moved")); err != nil {
			t.Fatal(err)
		}
		refused(t, e.set, "cat moved/hub.yml", "now holds the directory the protected file "+cfg+" was in")
	})
}

func mkfile(t *testing.T, p string) string {
	t.Helper()
	write(t, p, "secret: s3cr3t-value\n")
	return p
}

// TestMaskCheckWithoutCat: with the host's view of the container the mask
// is checked without anything from the image, from the first call on;
// without it the check needs cat in the image, and an image without one is
// refused with that fix.
func TestMaskCheckWithoutCat(t *testing.T) {
	image := dockertest.ImportApplets(t, dockertest.Client(t), "hermes-hub-test/nocat:1", "sh", "sleep", "echo", "ls")
	for _, view := range []bool{true, false} {
		t.Run(map[bool]string{true: "host view", false: "daemon only"}[view], func(t *testing.T) {
			hostViews(t, view)
			e := newEnv(t, func(c *docker.Config) { c.Image = image })
			e.protect()
			if !view {
				refused(t, e.set, "echo hi", "cannot read its container's mount table", "give the image cat")
				return
			}
			for range 2 {
				if r := sh(t, e.set, "echo hi; ls -A .hub"); r.ExitCode != 0 || r.StdoutTail != "hi\n" {
					t.Fatalf("%+v", r)
				}
			}
		})
	}
}
