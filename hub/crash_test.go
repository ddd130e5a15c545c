//go:build unix

package hub_test

import (
	"bufio"
	"context"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/a6afc2ce/hermes-hub/hub"
	"github.com/a6afc2ce/hermes-hub/hub/hubtest"
)

const crashChildEnv = "HUB_TEST_CRASH_CHILD"

// crashMsg makes the child run a long proc.run that appends its pid to
// ran.txt (so a second run would show) and then sleeps.
func crashMsg() string {
	return `/proc.run sh -c "echo $$ >> ran.txt; sleep 60"`
}

// TestMain runs the child half of TestCrashDuringLongVerb when asked to.
func TestMain(m *testing.M) {
	if os.Getenv(crashChildEnv) != "" {
		crashChild()
		os.Exit(3)
	}
	os.Exit(m.Run())
}

// crashChild is a real hub runtime that receives one long turn and is killed
// by the parent test while the verb runs.
func crashChild() {
	fail := func(err error) {
		os.Stderr.WriteString("crash child: " + err.Error() + "\n")
		os.Exit(2)
	}
	cfg, err := makeConfig(os.Getenv("HUB_TEST_WS"), os.Getenv("HUB_TEST_STATE"))
	if err != nil {
		fail(err)
	}
	he, err := hubtest.New(cfg, hubtest.Options{})
	if err != nil {
		fail(err)
	}
	rt := he.Runtime
	rt.Mux.Handle("chat:telegram", hubtest.NewRecorder())
	if err := rt.Start(context.Background()); err != nil {
		fail(err)
	}
	os.Stdout.WriteString("ready\n")
	rt.Hub.Handle(context.Background(), tgMsg(1, 42, crashMsg()))
	fail(errors.New("the turn finished; the parent should have killed this process"))
}

func TestCrashDuringLongVerb(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a child hub process; skipped in -short mode")
	}
	ws := t.TempDir()
	state := filepath.Join(ws, ".hub")
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), crashChildEnv+"=1", "HUB_TEST_WS="+ws, "HUB_TEST_STATE="+state)
	out, _ := cmd.StdoutPipe()
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	r := bufio.NewReader(out)
	for {
		line, err := r.ReadString('\n')
		if err != nil {
			t.Fatalf("child ended before it was ready: %v", err)
		}
		if strings.HasPrefix(line, "ready") {
			break
		}
	}
	go io.Copy(io.Discard, r)
	// Wait until the verb is really running, then kill the hub hard.
	ran := filepath.Join(ws, "ran.txt")
	deadline := time.Now().Add(30 * time.Second)
	for {
		if b, _ := os.ReadFile(ran); len(b) > 0 {
			break
		}
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			t.Fatal("the verb never started")
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	cmd.Wait()
	b, _ := os.ReadFile(ran)
	if pid, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil {
		syscall.Kill(-pid, syscall.SIGKILL) // the orphaned sh and its sleep
		syscall.Kill(pid, syscall.SIGKILL)
	}

	// Restart on the same state: the interrupted turn gets a notice.
	e := openEnv(t, ws, state, nil)
	got := e.rec.Wait(t, "chat:telegram:100", 1)
	if got[0].Kind != "notice" || !strings.Contains(got[0].Text, "may or may not have completed") || got[0].Meta["reply_to_message_id"] != "42" {
		t.Fatalf("after restart: %+v", got[0])
	}
	// The platform delivers the message again (its offset never advanced):
	// nothing runs and nothing more is sent.
	res, err := e.rt.Hub.Handle(context.Background(), tgMsg(1, 42, crashMsg()))
	if err != nil || res.Status != hub.StatusDuplicate {
		t.Fatalf("redelivery: %+v %v", res, err)
	}
	time.Sleep(300 * time.Millisecond)
	if n := len(e.rec.Texts("chat:telegram:100")); n != 1 {
		t.Fatalf("want only the notice, got %d chunks", n)
	}
	if b, _ := os.ReadFile(ran); strings.Count(string(b), "\n") != 1 {
		t.Fatalf("the verb ran again: %q", b)
	}
}
