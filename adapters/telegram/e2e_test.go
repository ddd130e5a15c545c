package telegram

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/a6afc2ce/hermes-hub/config"
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
		Text        string `json:"text"`
		ChatID      string `json:"chat_id"`
		ReplyTo     string `json:"reply_to"`
		ParseMode   string `json:"parse_mode"`
		ReplyMarkup string `json:"reply_markup"`
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
	e.cmd = exec.CommandContext(ctx, node, script, fmt.Sprint(testkit.Port(t)), token)
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

// callback has user press the inline keyboard button whose callback data
// is data, in chat, and returns the bot's messages there; quiet, it waits
// wait and reads none (the answer to a press is a toast: a message it
// caused would be the first of the chat's next read).
func (e *emulator) callback(user, chatID int, data string, quiet bool, wait time.Duration) emulatorReply {
	e.t.Helper()
	cmd, _ := json.Marshal(map[string]any{"op": "callback", "user": user, "chat": chatID, "data": data, "quiet": quiet, "timeout": wait.Milliseconds()})
	if _, err := fmt.Fprintf(e.stdin, "%s\n", cmd); err != nil {
		e.t.Fatal(err)
	}
	r := e.read()
	if r.Op != "replies" {
		e.t.Fatalf("press %q: %+v\n%s", data, r, e.stderr)
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

// TestEmulatorConfirm: against telegram-test-api, a verb held for
// confirmation is answered with the exact call and an inline keyboard; a
// press on Cancel by another user changes nothing; the asker's Run runs
// it and its reply follows.
func TestEmulatorConfirm(t *testing.T) {
	const token = "424243:e2e-emulator-token"
	em := startEmulator(t, token)
	ws := t.TempDir()
	os.WriteFile(filepath.Join(ws, "gone.txt"), []byte("x\n"), 0o644)
	h := startHarness(t, nil, hopts{ws: ws, endpoint: em.url, token: token, configure: func(c *config.Config) {
		c.Access.Roles["admin"] = config.Role{Verbs: []string{"*"}, Confirm: []string{"fs.deleteFile"}}
	}})
	h.waitRunning()
	prompt := em.send(1, 1, "/fs_deletefile gone.txt").Replies[0]
	var kb struct {
		InlineKeyboard [][]struct {
			Text         string `json:"text"`
			CallbackData string `json:"callback_data"`
		} `json:"inline_keyboard"`
	}
	if err := json.Unmarshal([]byte(prompt.ReplyMarkup), &kb); err != nil || len(kb.InlineKeyboard) != 1 || len(kb.InlineKeyboard[0]) != 2 {
		t.Fatalf("prompt %+v: %v", prompt, err)
	}
	run, cancel := kb.InlineKeyboard[0][0].CallbackData, kb.InlineKeyboard[0][1].CallbackData
	if !strings.HasPrefix(run, "cf:run:") || !strings.HasPrefix(cancel, "cf:cancel:") || !strings.Contains(prompt.Text, "fs.deleteFile") {
		t.Fatalf("prompt %+v", prompt)
	}
	em.callback(2, 1, cancel, true, time.Second)
	if _, err := os.Stat(filepath.Join(ws, "gone.txt")); err != nil {
		t.Fatal("another user's press changed the file")
	}
	// The first message after both presses is the call's reply: the other
	// user's press sent nothing to the chat.
	r := em.callback(1, 1, run, false, 0)
	if len(r.Replies) == 0 || !strings.Contains(r.Replies[0].Text, "Deleted") {
		t.Fatalf("Run: %+v", r)
	}
	if _, err := os.Stat(filepath.Join(ws, "gone.txt")); err == nil {
		t.Fatal("Run did not run the call")
	}
}

// TestEmulatorCommandsPerChat: against telegram-test-api, a named command
// granted in one group only (access.chats) runs there as /count FILE with
// its parameter checked, and its asker is a stranger in a private chat.
func TestEmulatorCommandsPerChat(t *testing.T) {
	const token = "424244:e2e-emulator-token"
	em := startEmulator(t, token)
	ws := t.TempDir()
	os.WriteFile(filepath.Join(ws, "README.md"), []byte("# hello\nsecond\n"), 0o644)
	h := startHarness(t, nil, hopts{ws: ws, endpoint: em.url, token: token, configure: func(c *config.Config) {
		c.Commands = config.Commands{"count": countLines("Count a file's lines")}
		c.Access.Roles["counter"] = config.Role{Verbs: []string{"cmd.count"}}
		c.Access.Chats = map[string]config.ChatRule{"telegram:chat:-100123": {Grants: map[string][]string{"telegram:9": {"counter"}}}}
	}})
	h.waitRunning()
	if got := em.send(9, -100123, "/count README.md").Replies[0].Text; !strings.Contains(got, "2") {
		t.Fatalf("/count in the group: %q", got)
	}
	if got := em.send(9, -100123, "/count ../etc/passwd").Replies[0].Text; !strings.Contains(got, "leaves the workspace") {
		t.Fatalf("/count with .. in the group: %q", got)
	}
	if got := em.send(9, 9, "/count README.md").Replies[0].Text; !strings.Contains(got, "telegram:9") || strings.Contains(got, "lines") {
		t.Fatalf("/count in a private chat: %q", got)
	}
}
