//go:build linux

package main

import (
	"bufio"
	"io"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

// hardenChildEnv makes this test binary a stand-in hub: it holds a secret
// in its environment, calls harden when asked, and waits for stdin to close.
const hardenChildEnv = "HUB_TEST_HARDEN_CHILD"

func init() {
	mode, ok := os.LookupEnv(hardenChildEnv)
	if !ok {
		return
	}
	if mode == "harden" {
		harden()
	}
	os.Stdout.WriteString("ready\n")
	_, _ = io.Copy(io.Discard, os.Stdin)
	os.Exit(0)
}

// testUser is an unprivileged account for the test, created when missing.
const testUser = "hermes-hub-test"

// unprivileged returns the credential to run the stand-in hub and the
// reader with: as root, an unprivileged user (root reads every process's
// environ, so the check needs another user); otherwise nil, the test's own
// user, which is the same-user case proc.run's programs are in.
func unprivileged(t *testing.T) *syscall.Credential {
	t.Helper()
	if os.Geteuid() != 0 {
		return nil
	}
	u, err := user.Lookup(testUser)
	if err != nil {
		out, aerr := exec.Command("useradd", "--system", "--no-create-home", "--shell", "/usr/sbin/nologin", testUser).CombinedOutput()
		if u, err = user.Lookup(testUser); err != nil {
			if os.Getenv("CI") == "true" {
				t.Fatalf("cannot create the unprivileged user %s: %v %s", testUser, aerr, out)
			}
			t.Skipf("running as root and cannot create the unprivileged user %s (useradd: %v %s)", testUser, aerr, out)
		}
	}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid), Groups: []uint32{}}
}

// binaryFor returns this test binary and a directory to run it in, as the
// user of cred: the go build cache is private to root, so for another user
// the binary is copied to a directory that user may enter (removed when t
// ends).
func binaryFor(t *testing.T, cred *syscall.Credential) (bin, dir string) {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	if cred == nil {
		return self, t.TempDir()
	}
	if dir, err = os.MkdirTemp("", "hub-test-"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	bin = filepath.Join(dir, "hub.test")
	b, err := os.ReadFile(self)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bin, b, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return bin, dir
}

// TestHardenHidesEnviron runs a stand-in hub with a token in its
// environment and reads /proc/<pid>/environ as the same user: the
// non-dumpable hub refuses, the control (same process without harden) does
// not.
func TestHardenHidesEnviron(t *testing.T) {
	const secret = "tok-3f9a1c-secret"
	cred := unprivileged(t)
	bin, dir := binaryFor(t, cred)
	for _, tc := range []struct {
		mode     string
		readable bool
	}{
		{"harden", false},
		{"control", true},
	} {
		t.Run(tc.mode, func(t *testing.T) {
			hub := exec.Command(bin, "-test.run=^$")
			hub.Dir = dir
			hub.Env = []string{hardenChildEnv + "=" + tc.mode, "HUB_WEB_TOKEN=" + secret}
			hub.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
			stdin, err := hub.StdinPipe()
			if err != nil {
				t.Fatal(err)
			}
			stdout, err := hub.StdoutPipe()
			if err != nil {
				t.Fatal(err)
			}
			hub.Stderr = os.Stderr
			if err := hub.Start(); err != nil {
				t.Fatal(err)
			}
			defer func() {
				stdin.Close()
				_ = hub.Wait()
			}()
			if line, err := bufio.NewReader(stdout).ReadString('\n'); line != "ready\n" {
				t.Fatalf("stand-in hub: %q %v", line, err)
			}
			reader := exec.Command("cat", "/proc/"+strconv.Itoa(hub.Process.Pid)+"/environ")
			reader.Dir = dir
			reader.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
			out, err := reader.CombinedOutput()
			got := strings.Contains(string(out), secret)
			if got != tc.readable {
				t.Fatalf("secret readable: %v, want %v (cat: %v, %q)", got, tc.readable, err, out)
			}
			if !tc.readable && (err == nil || !strings.Contains(string(out), "Permission denied")) {
				t.Errorf("reading a hardened hub's environ: %v %q, want permission denied", err, out)
			}
		})
	}
}
