//go:build linux

package docker_test

import (
	"context"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/a6afc2ce/hermes-hub/verbs"
	"github.com/a6afc2ce/hermes-hub/workspaces/docker"
)

// buildSetid builds testdata/setid, statically linked, into dir.
func buildSetid(t *testing.T, dir string) string {
	t.Helper()
	bin := filepath.Join(dir, "setid")
	cmd := exec.Command("go", "build", "-o", bin, "./testdata/setid")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("build testdata/setid: %v\n%s", err, out)
	}
	return bin
}

// asNobody runs bin on the host as uid and gid 65534 and returns its
// output.
func asNobody(t *testing.T, bin string, args ...string) string {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s %q as 65534: %v\n%s", bin, args, err, out)
	}
	return string(out)
}

// TestNoSetIDFilesFromAContainer is the attack of a program that makes a
// set-user-ID file in the workspace for a host user to run: as root named
// explicitly (user "0") and as the workspace's unprivileged owner, every
// call that gives a file the set-user-ID or set-group-ID bit is refused
// in the container, the same calls without them work, and no file of the
// workspace lets uid 65534 run as anyone else on the host.
func TestNoSetIDFilesFromAContainer(t *testing.T) {
	t.Parallel() // containers of its own (its own hub label), no global switch
	for _, user := range []string{"0", ""} {
		name := map[string]string{"0": "root named", "": "the owner"}[user]
		t.Run(name, func(t *testing.T) {
			e := newEnv(t, func(c *docker.Config) { c.User = user })
			// 65534 runs files from it on the host; the container writes in made.
			for _, d := range []string{e.dir, filepath.Dir(e.dir), filepath.Dir(filepath.Dir(e.dir))} {
				if err := os.Chmod(d, 0o755); err != nil {
					t.Fatal(err)
				}
			}
			bin := buildSetid(t, e.dir)
			made := filepath.Join(e.dir, "made")
			if err := os.Mkdir(made, 0o700); err != nil {
				t.Fatal(err)
			}
			if err := os.Chmod(made, 0o777); err != nil {
				t.Fatal(err)
			}
			res := run(t, e.set, "./setid", "make", "made")
			lines := strings.Split(strings.TrimSpace(res.StdoutTail), "\n")
			if res.ExitCode != 0 || len(lines) != 24 {
				t.Fatalf("setid make: %+v", res)
			}
			for _, line := range lines {
				what, how, _ := strings.Cut(line, " ")
				plain := strings.HasSuffix(what, "-755")
				if plain && how != "ok" {
					t.Errorf("%s was refused (%s); only the set-ID bits are", what, how)
				}
				if !plain && how == "ok" {
					t.Errorf("%s made a set-ID file", what)
				}
			}
			// Whatever got through, the host must not run it as another user.
			err := filepath.WalkDir(e.dir, func(p string, d fs.DirEntry, err error) error {
				if err != nil || d.IsDir() {
					return err
				}
				fi, err := d.Info()
				if err != nil {
					return err
				}
				if fi.Mode()&(fs.ModeSetuid|fs.ModeSetgid) == 0 {
					return nil
				}
				st := fi.Sys().(*syscall.Stat_t)
				t.Errorf("%s has mode %v (owner %d:%d)", p, fi.Mode(), st.Uid, st.Gid)
				if fi.Size() > 0 && fi.Mode()&0o001 != 0 {
					if out := asNobody(t, p, "whoami"); !strings.Contains(out, "euid=65534 gid=65534 egid=65534") {
						t.Errorf("run by uid 65534 on the host, %s is: %s", p, out)
					}
				}
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			if out := asNobody(t, bin, "whoami"); !strings.Contains(out, "euid=65534") {
				t.Fatalf("the helper itself: %s", out)
			}
		})
	}
}

// TestContainerUser: a workspace owned by root runs its container as 65534
// (files it writes are 65534's), unless the destination's user names root
// ("0"); one owned by an unprivileged user runs as that user; a directory
// the container's user cannot enter is refused with the fix.
func TestContainerUser(t *testing.T) {
	t.Parallel() // containers of its own (its own hub label), no global switch
	cases := []struct {
		name, user string
		owner      int
		want       string
	}{
		{"owned by root", "", 0, "65534 65534"},
		{"root named", "0", 0, "0 0"},
		{"root named with a group", "0:100", 0, "0 100"},
		{"owned by a user", "", wsOwner, "4242 4242"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			e := newEnv(t, func(cfg *docker.Config) { cfg.User = c.user })
			if err := os.Chown(e.dir, c.owner, c.owner); err != nil {
				t.Fatal(err)
			}
			if err := os.Chmod(e.dir, 0o777); err != nil {
				t.Fatal(err)
			}
			res := sh(t, e.set, "echo $(id -u) $(id -g); touch made")
			if res.ExitCode != 0 || strings.TrimSpace(res.StdoutTail) != c.want {
				t.Fatalf("in the container: %+v, want %q", res, c.want)
			}
			fi, err := os.Stat(filepath.Join(e.dir, "made"))
			if err != nil {
				t.Fatal(err)
			}
			st := fi.Sys().(*syscall.Stat_t)
			if got := strconv.Itoa(int(st.Uid)) + " " + strconv.Itoa(int(st.Gid)); got != c.want {
				t.Fatalf("the file it made is owned by %s, want %s", got, c.want)
			}
		})
	}
	t.Run("cannot enter", func(t *testing.T) {
		e := newEnv(t, nil)
		if err := os.Chown(e.dir, 0, 0); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(e.dir, 0o700); err != nil {
			t.Fatal(err)
		}
		_, err := e.set.ProcRun(context.Background(), verbs.ProcRunArgs{Executable: "true"})
		if err == nil || !strings.Contains(err.Error(), "runs as 65534:65534, which cannot enter") || !strings.Contains(err.Error(), "set the destination's user") {
			t.Fatalf("error %v", err)
		}
	})
}

// TestSetIDAndDevicesInsideTheContainer: what nosuid and nodev would
// stop on the container's side of the bind mount is stopped without them
// (the Engine API cannot ask them of a bind mount): a set-user-ID root
// program the host put in the workspace runs as the container's user
// (no-new-privileges), and a device node the host put there cannot be
// opened, even by root named explicitly (the container's device rules).
func TestSetIDAndDevicesInsideTheContainer(t *testing.T) {
	t.Parallel() // containers of its own (its own hub label), no global switch
	e := newEnv(t, func(c *docker.Config) { c.User = "" })
	bin := buildSetid(t, e.dir)
	if err := os.Chmod(bin, 0o4755); err != nil {
		t.Fatal(err)
	}
	if res := run(t, e.set, "./setid", "whoami"); !strings.Contains(res.StdoutTail, "uid=4242 euid=4242") {
		t.Fatalf("a set-user-ID root program in the container: %+v", res)
	}
	var root syscall.Stat_t
	if err := syscall.Stat("/", &root); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mknod(filepath.Join(e.dir, "disk"), syscall.S_IFBLK|0o666, int(root.Dev)); err != nil {
		t.Fatal(err)
	}
	e.r.Close()
	e.cfg.User = "0"
	e.r = e.runner()
	e.set = e.verbs(e.r)
	res := sh(t, e.set, "id -u; head -c 512 disk | wc -c")
	if res.ExitCode != 0 || !strings.HasPrefix(res.StdoutTail, "0\n") || strings.Contains(res.StdoutTail, "512") || !strings.Contains(res.StderrTail, "not permitted") {
		t.Fatalf("reading the host's disk through a device node in the workspace: %+v", res)
	}
}
