//go:build linux

package proc_test

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/a6afc2ce/hermes-hub/internal/testkit"
	"github.com/a6afc2ce/hermes-hub/verbs"
	"github.com/a6afc2ce/hermes-hub/verbs/internal/verbtest"
	"github.com/a6afc2ce/hermes-hub/verbs/proc"
)

// pdeathsigArg makes this test binary, run as a program, print its
// parent-death signal and exit.
const pdeathsigArg = "-hub-test-report-pdeathsig"

func init() {
	if len(os.Args) != 2 || os.Args[1] != pdeathsigArg {
		return
	}
	var sig int32
	if err := unix.Prctl(unix.PR_GET_PDEATHSIG, uintptr(unsafe.Pointer(&sig)), 0, 0, 0); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	fmt.Println(sig)
	os.Exit(0)
}

// giveTo makes dir owned by u, as an operator gives the workspace to the
// user programs run as.
func giveTo(t *testing.T, dir string, u *verbs.ProcUser) {
	t.Helper()
	if err := os.Chown(dir, int(u.UID), int(u.GID)); err != nil {
		t.Fatal(err)
	}
}

// whoAmI is a program that prints its ids, groups, environment and what
// it may read of the hub (this test process) and of its own output.
func whoAmI(outputID string) []string {
	return []string{"-c", `echo "uid=$(id -u) gid=$(id -g)"
grep '^Groups:' /proc/self/status
echo "HOME=$HOME USER=$USER LOGNAME=$LOGNAME"
cat /proc/` + strconv.Itoa(os.Getpid()) + `/environ && echo "read the hub's environ"
cat .hub/proc/` + outputID + `/stdout.txt > /dev/null && echo "read its own output file"
echo > mine.txt && echo "wrote the workspace"
exit 0`}
}

// A hub running as root runs programs as the unprivileged user, with or
// without the supervisor: its uid and primary gid, no supplementary
// group, its HOME and name; the hub's environment and the output files in
// the state directory are out of its reach; the workspace, given to the
// user, is its to write.
func TestProcRunAsUnprivilegedUser(t *testing.T) {
	verbtest.AsRoot(t)
	u := verbtest.DefaultProcUser(t)
	t.Setenv("HUB_TEST_SECRET", "s3cr3t-token-value")
	t.Setenv("HOME", "/root")
	t.Setenv("USER", "root")
	testkit.WithGroups(t, 4242, 4343) // the hub's, which the program must not keep
	for _, supervised := range []bool{true, false} {
		t.Run("supervised="+strconv.FormatBool(supervised), func(t *testing.T) {
			if !supervised {
				proc.WithoutSupervisor(t)
			}
			e := verbtest.New(t, func(o *verbs.Options, _ *verbs.WorkspaceOptions) { o.User = u })
			giveTo(t, e.Dir, u)
			if !supervised {
				// The program enters its directory as the user (the
				// supervisor enters it first, as the hub).
				for _, d := range []string{e.Base, filepath.Dir(e.Base)} {
					if err := os.Chmod(d, 0o755); err != nil {
						t.Fatal(err)
					}
				}
			}
			r := verbtest.RunProc(t, e, "t.user", verbs.ProcRunArgs{Executable: "/bin/busybox", Arguments: append([]string{"sh"}, whoAmI("t.user")...)})
			out := r.StdoutTail
			if !regexp.MustCompile(`(?m)^Groups:\s*$`).MatchString(out) {
				t.Errorf("the program has supplementary groups:\n%s", out)
			}
			for _, want := range []string{"uid=65534 gid=65534\n", "HOME=" + u.Home + " USER=nobody LOGNAME=nobody\n", "wrote the workspace"} {
				if !strings.Contains(out, want) {
					t.Errorf("output lacks %q:\n%s\nstderr:\n%s", want, out, r.StderrTail)
				}
			}
			if strings.Contains(out, "s3cr3t") || strings.Contains(out, "read the hub's environ") || strings.Contains(out, "read its own output") {
				t.Errorf("the program read what it must not:\n%s", out)
			}
			if strings.Count(r.StderrTail, "Permission denied") != 2 {
				t.Errorf("stderr should show two refusals (environ, output file):\n%s", r.StderrTail)
			}
			if fi, err := os.Stat(filepath.Join(e.Dir, "mine.txt")); err != nil || fi.Sys().(*syscall.Stat_t).Uid != 65534 {
				t.Fatalf("the program's file is not the user's: %v", err)
			}
		})
	}
}

// The supervisor keeps root while the program runs as another user: the
// program cannot signal it, and at timeout it still kills a setsid'd
// grandchild and a double-forked one.
func TestProcRunAsUserKillsEscapedDescendants(t *testing.T) {
	verbtest.AsRoot(t)
	u := verbtest.DefaultProcUser(t)
	e := verbtest.New(t, func(o *verbs.Options, _ *verbs.WorkspaceOptions) { o.User = u })
	giveTo(t, e.Dir, u)
	r := verbtest.RunProc(t, e, "t.escape", verbs.ProcRunArgs{
		Executable:     "sh",
		Arguments:      escapeScript(`kill -KILL $PPID 2>/dev/null || echo "cannot signal the supervisor"; sleep 300`),
		TimeoutSeconds: verbtest.Ptr(1),
	})
	if r.StdoutTail != "recorded\ncannot signal the supervisor\n" || !r.TimedOut || r.ExitCode != -1 {
		t.Fatalf("result %+v", r)
	}
	pids := recordedPids(t, e)
	if len(pids) != 2 {
		t.Fatalf("recorded pids %v", pids)
	}
	for _, p := range pids {
		if b, err := os.ReadFile("/proc/" + strconv.Itoa(p) + "/status"); err == nil && !strings.Contains(string(b), "Uid:\t65534\t65534\t65534\t65534") {
			t.Errorf("descendant %d does not run as 65534:\n%s", p, b)
		}
	}
	if left := survivors(t, pids); len(left) > 0 {
		t.Fatalf("descendants %v outlived the call", left)
	}
}

// MayWriteDir reads a directory's owner, group and mode as the kernel
// would for the user (who has no supplementary group).
func TestProcUserMayWriteDir(t *testing.T) {
	verbtest.AsRoot(t)
	u := &verbs.ProcUser{Name: "nobody", UID: 65534, GID: 65534}
	dir := t.TempDir()
	for _, tc := range []struct {
		uid, gid int
		mode     os.FileMode
		may      bool
	}{
		{0, 0, 0o755, false},
		{0, 0, 0o777, true},
		{0, 0, 0o773, true},
		{0, 0, 0o775, false},
		{65534, 0, 0o700, true},
		{65534, 0, 0o500, false},
		{65534, 0, 0o077, false}, // the owner's bits count, not the others'
		{0, 65534, 0o770, true},
		{0, 65534, 0o707, false},
		{0, 65534, 0o750, false},
	} {
		if err := os.Chown(dir, tc.uid, tc.gid); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(dir, tc.mode); err != nil {
			t.Fatal(err)
		}
		fi, err := os.Stat(dir)
		if err != nil {
			t.Fatal(err)
		}
		if may, known := u.MayWriteDir(fi); !known || may != tc.may {
			t.Errorf("owner %d group %d mode %o: may %v (known %v), want %v", tc.uid, tc.gid, tc.mode, may, known, tc.may)
		}
	}
	if err := os.Chmod(dir, 0o700); err != nil {
		t.Fatal(err)
	}
}

// The kernel clears the parent-death signal when the credentials change:
// the program, run as another user, still has SIGKILL as its own, so it
// dies with its supervisor.
func TestProcRunAsUserKeepsParentDeathSignal(t *testing.T) {
	verbtest.AsRoot(t)
	u := verbtest.DefaultProcUser(t)
	// This test binary is the program; the user must be able to run it.
	dir, err := os.MkdirTemp("", "hub-pdeathsig-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "verbs.test")
	copyExecutable(t, bin)
	for _, tc := range []struct {
		name string
		user *verbs.ProcUser
	}{{"as the hub's user", nil}, {"as another user", u}} {
		t.Run(tc.name, func(t *testing.T) {
			e := verbtest.New(t, func(o *verbs.Options, _ *verbs.WorkspaceOptions) { o.User = tc.user })
			r := verbtest.RunProc(t, e, "t.pdeathsig", verbs.ProcRunArgs{Executable: bin, Arguments: []string{pdeathsigArg}})
			if r.StdoutTail != strconv.Itoa(int(unix.SIGKILL))+"\n" {
				t.Fatalf("the program's parent-death signal: %+v", r)
			}
		})
	}
}

// copyExecutable copies this test binary to dst, mode 0755.
func copyExecutable(t *testing.T, dst string) {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	in, err := os.Open(self)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o755)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		t.Fatal(err)
	}
	if err := out.Close(); err != nil {
		t.Fatal(err)
	}
}
