package telegram

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/a6afc2ce/hermes-hub/internal/testkit"
)

// emulator is the telegram-test-api Bot API emulator (an independent
// implementation of the Bot API) run by e2e/emulator.js, which also plays
// the users.
type emulator struct {
	t      testing.TB
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	lines  *bufio.Scanner
	stderr *syncBuffer
	url    string
}

type emulatorReply struct {
	Op      string `json:"op"`
	URL     string `json:"url"`
	Error   string `json:"error"`
	Replies []struct {
		Text      string `json:"text"`
		ChatID    string `json:"chat_id"`
		ReplyTo   string `json:"reply_to"`
		ParseMode string `json:"parse_mode"`
	} `json:"replies"`
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
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

func freePort(t testing.TB) int {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// startEmulator starts the emulator, or skips the test when node or the
// npm package is missing.
func startEmulator(t *testing.T, token string) *emulator {
	t.Helper()
	node, err := exec.LookPath("node")
	if err != nil {
		testkit.Unavailable(t, "node not installed")
	}
	script := testkit.NodeScript(t, "e2e", "emulator.js")
	ctx, cancel := context.WithCancel(context.Background())
	e := &emulator{t: t, stderr: &syncBuffer{}}
	e.cmd = exec.CommandContext(ctx, node, script, fmt.Sprint(freePort(t)), token)
	e.cmd.Dir = filepath.Dir(script)
	e.cmd.Stderr = e.stderr
	e.cmd.WaitDelay = 5 * time.Second
	e.stdin, err = e.cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := e.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := e.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		fmt.Fprintln(e.stdin, `{"op":"stop"}`)
		e.stdin.Close()
		done := make(chan struct{})
		go func() {
			e.cmd.Wait()
			close(done)
		}()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			cancel()
			<-done
		}
		cancel()
	})
	e.lines = bufio.NewScanner(stdout)
	e.lines.Buffer(make([]byte, 1<<20), 1<<20)
	r := e.read()
	if r.Op != "ready" {
		t.Fatalf("emulator did not start: %+v\n%s", r, e.stderr)
	}
	e.url = r.URL
	return e
}

func (e *emulator) read() emulatorReply {
	e.t.Helper()
	if !e.lines.Scan() {
		e.t.Fatalf("emulator exited: %v\n%s", e.lines.Err(), e.stderr)
	}
	var r emulatorReply
	if err := json.Unmarshal(e.lines.Bytes(), &r); err != nil {
		e.t.Fatalf("emulator said %q: %v", e.lines.Text(), err)
	}
	return r
}

// send has user send text in chat and returns the bot's replies there.
func (e *emulator) send(user, chatID int, text string) emulatorReply {
	e.t.Helper()
	cmd, _ := json.Marshal(map[string]any{"op": "send", "user": user, "chat": chatID, "text": text})
	if _, err := fmt.Fprintf(e.stdin, "%s\n", cmd); err != nil {
		e.t.Fatal(err)
	}
	r := e.read()
	if r.Op != "replies" || len(r.Replies) == 0 {
		e.t.Fatalf("%q: no reply: %+v\n%s", text, r, e.stderr)
	}
	for _, m := range r.Replies {
		e.t.Logf("user %d sent %q; the bot answered %q", user, text, m.Text)
	}
	return r
}

// TestEmulatorE2E runs the hub against telegram-test-api: a granted user
// lists the workspace, is refused a path outside it, and a stranger is
// denied. The emulator knows neither setMyCommands nor sendChatAction; the
// adapter carries on without them.
func TestEmulatorE2E(t *testing.T) {
	const token = "424242:e2e-emulator-token"
	em := startEmulator(t, token)
	ws := t.TempDir()
	os.WriteFile(filepath.Join(ws, "README.md"), []byte("# hello\n"), 0o644)
	os.MkdirAll(filepath.Join(ws, "docs"), 0o755)
	h := startHarness(t, nil, hopts{ws: ws, endpoint: em.url, token: token})
	h.waitRunning()

	r := em.send(1, 1, "/fs_listdir .")
	listing := r.Replies[0]
	if !strings.Contains(listing.Text, "README.md") || !strings.Contains(listing.Text, "docs") || listing.ChatID != "1" || listing.ParseMode != "HTML" || listing.ReplyTo == "" {
		t.Fatalf("listing %+v", listing)
	}

	r = em.send(1, 1, "/fs_readfile ../etc/passwd")
	if refusal := r.Replies[0].Text; !strings.Contains(refusal, "forbidden_path") || strings.Contains(refusal, "root:") {
		t.Fatalf("traversal answered %q", refusal)
	}

	// fs.edit with a YAML body renders its diff as a code block; the tail,
	// fs.stat and fs.readMany answer as chat renders them.
	r = em.send(1, 1, "/fs_edit README.md\noldText: '# hello'\nnewText: |-\n  # hello\n  second line")
	if edit := r.Replies[0].Text; !strings.Contains(edit, "Edited") || !strings.Contains(edit, `<code class="language-diff">`) || !strings.Contains(edit, "\n # hello\n+second line") {
		t.Fatalf("fs.edit answered %q", edit)
	}
	if b, _ := os.ReadFile(filepath.Join(ws, "README.md")); string(b) != "# hello\nsecond line\n" {
		t.Fatalf("README.md holds %q", b)
	}
	if tail := em.send(1, 1, "/fs_readrange README.md lastLines=1").Replies[0].Text; !strings.Contains(tail, "second line") || strings.Contains(tail, "# hello") {
		t.Fatalf("the tail answered %q", tail)
	}
	if st := em.send(1, 1, "/fs_stat README.md sha256=yes").Replies[0].Text; !strings.Contains(st, "type") || !strings.Contains(st, "sha256") {
		t.Fatalf("fs.stat answered %q", st)
	}
	if many := em.send(1, 1, "/fs_readmany README.md docs").Replies[0].Text; !strings.Contains(many, "second line") || !strings.Contains(many, "is a directory") {
		t.Fatalf("fs.readMany answered %q", many)
	}

	r = em.send(3, 3, "/fs_listdir .")
	if denial := r.Replies[0].Text; !strings.Contains(denial, "telegram:3") || strings.Contains(denial, "README.md") || r.Replies[0].ChatID != "3" {
		t.Fatalf("stranger answered %q", denial)
	}
	if s := h.boardState(); s != "running" {
		t.Fatalf("adapter %q after the exchange", s)
	}
}
