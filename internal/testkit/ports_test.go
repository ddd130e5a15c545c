//go:build unix

package testkit

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"sync/atomic"
	"testing"
)

// TestPortHeldByAnotherProcess: a port one test process chose is not
// chosen by another while the first runs, even when nothing listens on it
// (its server down for a restart), and is free again once it ends.
func TestPortHeldByAnotherProcess(t *testing.T) {
	if p := os.Getenv("TESTKIT_HOLD_PORT"); p != "" {
		holdPortForParent(t, p)
		return
	}
	p, err := FreePort()
	if err != nil {
		t.Fatal(err)
	}
	// This process holds p: a second process may not claim it.
	if child := startPortHolder(t, p); child.claimed {
		t.Fatalf("another process claimed port %d while this one holds it", p)
	}
	// A number no port has, so that no other test process holds it (they
	// run beside this one), nor an earlier run of this test in this
	// process (which ends holding its own): claimed by a child that stays.
	q := 1<<16 + os.Getpid()<<8 + int(portTestRuns.Add(1))
	child := startPortHolder(t, q)
	if !child.claimed {
		t.Fatalf("a child could not claim port %d, which no one holds", q)
	}
	if claimPort(q) {
		t.Fatalf("claimed port %d while a child process holds it", q)
	}
	child.end(t)
	if !claimPort(q) {
		t.Fatalf("port %d still held after the child that held it ended", q)
	}
}

// portTestRuns counts the runs of TestPortHeldByAnotherProcess in this
// process (go test -count).
var portTestRuns atomic.Int32

// portHolder is a child test process that tried to claim a port and,
// when it did, holds it until its input ends.
type portHolder struct {
	claimed bool
	cmd     *exec.Cmd
	stdin   io.WriteCloser
}

func startPortHolder(t *testing.T, p int) *portHolder {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestPortHeldByAnotherProcess$")
	cmd.Env = append(os.Environ(), "TESTKIT_HOLD_PORT="+strconv.Itoa(p))
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	h := &portHolder{cmd: cmd, stdin: in}
	t.Cleanup(func() { h.end(t) })
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		t.Fatalf("the child's answer: %v", err)
	}
	switch line {
	case "claimed\n":
		h.claimed = true
	case "refused\n":
	default:
		t.Fatalf("the child said %q", line)
	}
	return h
}

// end closes the child's input and waits for it to exit.
func (h *portHolder) end(t *testing.T) {
	if h.cmd.ProcessState != nil {
		return
	}
	h.stdin.Close()
	if err := h.cmd.Wait(); err != nil {
		t.Errorf("the child: %v", err)
	}
}

// holdPortForParent is the child's side: it claims the port, says whether
// it did, and holds it until its input ends.
func holdPortForParent(t *testing.T, port string) {
	p, err := strconv.Atoi(port)
	if err != nil {
		t.Fatal(err)
	}
	if claimPort(p) {
		fmt.Println("claimed")
	} else {
		fmt.Println("refused")
	}
	_, _ = bufio.NewReader(os.Stdin).ReadString('\n')
}
