//go:build linux

package main

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/a6afc2ce/hermes-hub/internal/testkit"
	"github.com/a6afc2ce/hermes-hub/store"
)

// peerChildEnv makes this test binary a client of the admin socket it
// names: it dials, prints what the hub sent ("got:…"), and waits for
// stdin to close. With peerDumpableEnv=0 it makes itself non-dumpable
// first, as the hub CLI does.
const (
	peerChildEnv    = "HUB_TEST_PEER_SOCKET"
	peerDumpableEnv = "HUB_TEST_PEER_DUMPABLE"
)

// peerListenEnv makes this test binary a stand-in hub (hardened as the
// hub is) serving the admin socket it names, "served" to every client it
// accepts, until stdin closes.
const peerListenEnv = "HUB_TEST_PEER_LISTEN"

// listenAdminAt serves the admin socket sock, whose directory is taken as
// the state directory; the state directory is closed with the listener's
// process.
func listenAdminAt(sock string) (net.Listener, error) {
	state, err := store.OpenStateDir(filepath.Dir(sock))
	if err != nil {
		return nil, err
	}
	return listenAdmin(state)
}

func standInAdmin(sock string) {
	harden()
	ln, err := listenAdminAt(sock)
	if err != nil {
		os.Stdout.WriteString("error: " + err.Error() + "\n")
		os.Exit(1)
	}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Write([]byte("served"))
			c.Close()
		}
	}()
	os.Stdout.WriteString("listening\n")
	_, _ = io.Copy(io.Discard, os.Stdin)
	os.Exit(0)
}

func init() {
	if sock, ok := os.LookupEnv(peerListenEnv); ok {
		standInAdmin(sock)
	}
	sock, ok := os.LookupEnv(peerChildEnv)
	if !ok {
		return
	}
	if os.Getenv(peerDumpableEnv) == "0" {
		_ = unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0)
	}
	got := ""
	if c, err := net.Dial("unix", sock); err == nil {
		_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
		b, _ := io.ReadAll(c)
		got = string(b)
		c.Close()
	}
	os.Stdout.WriteString("got:" + got + "\n")
	_, _ = io.Copy(io.Discard, os.Stdin)
	os.Exit(0)
}

// peer is a child process that dialled the admin socket.
type peer struct {
	cmd *exec.Cmd
	got string
}

// child starts this test binary (bin) with env, as cred (nil: the test's
// user) in the namespaces flags makes, and returns its first line; it
// stays until t ends.
func child(t *testing.T, bin string, env []string, cred *syscall.Credential, flags uintptr) (*exec.Cmd, string) {
	t.Helper()
	cmd := exec.Command(bin, "-test.run=^$")
	cmd.Env = append(os.Environ(), env...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Cloneflags: flags, Credential: cred}
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		testkit.Unavailable(t, fmt.Sprintf("this kernel or container lets no process start in new namespaces (flags %#x; it needs CAP_SYS_ADMIN): %v", flags, err))
	}
	t.Cleanup(func() { in.Close(); cmd.Wait() })
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		t.Fatalf("the child said nothing: %v", err)
	}
	return cmd, strings.TrimSuffix(line, "\n")
}

// dialFrom starts a client of sock (see child) and waits for its answer.
func dialFrom(t *testing.T, bin, sock string, cred *syscall.Credential, flags uintptr, dumpable bool) *peer {
	t.Helper()
	env := []string{peerChildEnv + "=" + sock, peerDumpableEnv + "=" + map[bool]string{true: "1", false: "0"}[dumpable]}
	cmd, line := child(t, bin, env, cred, flags)
	return &peer{cmd: cmd, got: strings.TrimPrefix(line, "got:")}
}

// TestAdminSocketRefusesOtherNamespaces: a process of the hub's own user
// in another mount or PID namespace (a container that sees the socket) is
// refused by the admin socket; one in the hub's namespaces is served,
// dumpable or not. Both ways of comparing namespaces (their links, and
// the mount table and NSpid line that a hub without the right to trace
// the peer reads) tell them apart.
func TestAdminSocketRefusesOtherNamespaces(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("new mount and PID namespaces need root")
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	sock := filepath.Join(t.TempDir(), "hub.sock")
	ln, err := listenAdminAt(sock)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Write([]byte("served"))
			c.Close()
		}
	}()
	cases := []struct {
		name     string
		flags    uintptr
		dumpable bool
		served   bool
	}{
		{"same namespaces", 0, true, true},
		{"same namespaces, not dumpable", 0, false, true},
		{"another mount namespace", syscall.CLONE_NEWNS, true, false},
		{"another PID namespace", syscall.CLONE_NEWPID, true, false},
		{"both, not dumpable", syscall.CLONE_NEWNS | syscall.CLONE_NEWPID, false, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := dialFrom(t, self, sock, nil, c.flags, c.dumpable)
			if served := p.got == "served"; served != c.served {
				t.Fatalf("the client got %q; want served %v", p.got, c.served)
			}
			pid := p.cmd.Process.Pid
			if links, err := sameNSLinks(pid); err != nil || links != c.served {
				t.Errorf("by the namespace links: %v %v", links, err)
			}
			if tables := sameByTables(pid); tables != c.served {
				t.Errorf("by the mount table and NSpid: %v", tables)
			}
		})
	}
}

// TestAdminSocketServesAnUnprivilegedOperator: a hub running as an
// unprivileged user may not read the namespace links of the hub CLI (which
// makes itself non-dumpable); it still serves it, judging by the mount
// table and NSpid line.
func TestAdminSocketServesAnUnprivilegedOperator(t *testing.T) {
	cred := unprivileged(t)
	bin, dir := binaryFor(t, cred)
	state := filepath.Join(dir, "state")
	if err := os.Mkdir(state, 0o700); err != nil {
		t.Fatal(err)
	}
	if cred != nil {
		if err := os.Chown(state, int(cred.Uid), int(cred.Gid)); err != nil {
			t.Fatal(err)
		}
	}
	sock := filepath.Join(state, "hub.sock")
	if _, line := child(t, bin, []string{peerListenEnv + "=" + sock}, cred, 0); line != "listening" {
		t.Fatalf("the stand-in hub: %q", line)
	}
	for _, dumpable := range []bool{false, true} {
		if p := dialFrom(t, bin, sock, cred, 0, dumpable); p.got != "served" {
			t.Fatalf("a client of the hub's user (dumpable %v) got %q", dumpable, p.got)
		}
	}
}
