//go:build unix

package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/a6afc2ce/hermes-hub/adapters/discord/discordtest"
	"github.com/a6afc2ce/hermes-hub/adapters/telegram/telegramtest"
	"github.com/a6afc2ce/hermes-hub/internal/testkit"
	"github.com/a6afc2ce/hermes-hub/store"
)

var pairingRE = regexp.MustCompile(`pairing code is ([A-Z2-9]{4}-[A-Z2-9]{4})`)

// TestPairingAndReloadEndToEnd runs `hub serve` against fake Telegram and
// Discord servers: strangers on both get pairing codes, the operator
// approves them with `hub access approve` through the admin socket, and
// their next commands run; a reused code is refused; a revocation applies
// to the next turn. Then the configuration is reloaded without a restart:
// by SIGHUP a forbidden command becomes allowed; `hub reload` refuses a
// broken file (with its line) while the hub keeps serving, and reports a
// change that needs a restart.
func TestPairingAndReloadEndToEnd(t *testing.T) {
	t.Parallel() // its own directories and processes: it runs beside the package's other long tests
	tg := telegramtest.NewServer()
	t.Cleanup(tg.Close)
	dc := discordtest.NewServer()
	t.Cleanup(dc.Close)
	dir := workspace(t)
	cfgFile := filepath.Join(dir, "hub.yml")
	base := `web:
  listen: 127.0.0.1:0
telegram:
  enabled: true
  token: ` + tg.Token() + `
  api_endpoint: ` + tg.URL() + `
  poll_timeout: 1s
discord:
  enabled: true
  token: ` + dc.Token() + `
  application_id: "` + dc.AppID + `"
  api_base: ` + dc.APIBase() + `
access:
  roles:
    admin: {verbs: ['*']}
  grants:
    "telegram:43": [reader]
`
	writeCfg := func(s string) {
		t.Helper()
		if err := os.WriteFile(cfgFile, []byte(s), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	writeCfg(base)
	cmd, _, logs := startServe(t, dir, "--config", cfgFile)
	hub := func(args ...string) (string, string, int) {
		t.Helper()
		return runHub(t, dir, "", args...)
	}
	msgID := 0
	tgSend := func(user int64, text string) {
		msgID++
		tg.Push(telegramtest.TextUpdate(telegramtest.NextUpdateID(), user, user, msgID, text))
	}
	tgReply := func(user int64, n int) string {
		t.Helper()
		var got []telegramtest.Message
		testkit.WaitFor(t, "a reply to the Telegram user", func() bool {
			got = tg.MessagesTo(itoa64(user))
			return len(got) >= n
		})
		return got[n-1].Text
	}

	// Telegram: a stranger gets a code, the operator approves it through
	// the running hub's socket, and the stranger's next command runs.
	tgSend(42, "/fs_listdir .")
	denial := tgReply(42, 1)
	m := pairingRE.FindStringSubmatch(denial)
	if m == nil || !strings.Contains(denial, "telegram:42") || !strings.Contains(denial, "hub access approve "+m[1]+" --role reader") {
		t.Fatalf("stranger's reply: %q", denial)
	}
	out, errOut, code := hub("access", "approve", m[1], "--role", "reader", "--config", cfgFile)
	if code != 0 || !strings.Contains(out, "Approved: telegram:42 now holds the role reader") || strings.Contains(out, "when `hub serve` runs") {
		t.Fatalf("approve: %d %s %s", code, out, errOut)
	}
	tgSend(42, "/fs_listdir .")
	if got := tgReply(42, 2); !strings.Contains(got, "README.md") {
		t.Fatalf("after approval: %q", got)
	}
	if _, errOut, code := hub("access", "approve", m[1], "--role", "admin", "--config", cfgFile); code != 1 || !strings.Contains(errOut, "used already") {
		t.Fatalf("reused code: %d %s", code, errOut)
	}

	// Discord: a stranger's direct message gets a code too.
	const dm, stranger = "910000000000000777", "555000000000000001"
	dc.WaitFor(t, "the gateway connection", dc.Connected)
	dc.Dispatch("MESSAGE_CREATE", dc.MessagePayload(discordtest.ChannelMessage{ID: "920000000000000001", Channel: dm, User: stranger, Content: "/fs.listDir ."}))
	var dcCode string
	testkit.WaitFor(t, "a pairing code on Discord", func() bool {
		for _, msg := range dc.ChannelMessages(dm) {
			if m := pairingRE.FindStringSubmatch(msg.Content); m != nil && strings.Contains(msg.Content, "discord:"+stranger) {
				dcCode = m[1]
			}
		}
		return dcCode != ""
	})
	if out, errOut, code := hub("access", "approve", dcCode, "--role", "reader", "--config", cfgFile); code != 0 || !strings.Contains(out, "discord:"+stranger) {
		t.Fatalf("approve on Discord: %d %s %s", code, out, errOut)
	}
	dc.Dispatch("MESSAGE_CREATE", dc.MessagePayload(discordtest.ChannelMessage{ID: "920000000000000002", Channel: dm, User: stranger, Content: "/fs.listDir ."}))
	testkit.WaitFor(t, "the Discord stranger's listing", func() bool {
		for _, msg := range dc.ChannelMessages(dm) {
			if strings.Contains(msg.Content, "README.md") {
				return true
			}
		}
		return false
	})

	out, _, code = hub("access", "list", "--config", cfgFile)
	if code != 0 || !regexp.MustCompile(`telegram:42\s+reader\s+state\s+operator`).MatchString(out) || !regexp.MustCompile(`telegram:43\s+reader\s+config`).MatchString(out) || !strings.Contains(out, "discord:"+stranger) {
		t.Fatalf("access list: %d %s", code, out)
	}
	if _, errOut, code := hub("access", "revoke", "telegram:43", "--config", cfgFile); code != 1 || !strings.Contains(errOut, "access.grants in the configuration") {
		t.Fatalf("revoke a config grant: %d %s", code, errOut)
	}
	if out, errOut, code := hub("access", "revoke", "telegram:42", "--config", cfgFile); code != 0 || !strings.Contains(out, "Revoked: telegram:42") {
		t.Fatalf("revoke: %d %s %s", code, out, errOut)
	}
	tgSend(42, "/fs_listdir .")
	testkit.WaitFor(t, "the revoked identity's message mirrored as denied", func() bool {
		n := 0
		store.ReadMirror(flowsRoot(t, filepath.Join(dir, ".hub", store.FlowsDir)), store.MirrorFilter{}, func(r store.MirrorRecord) error {
			if r.Actor == "telegram:42" && r.Kind == store.KindDenied {
				n++
			}
			return nil
		})
		return n == 2
	})

	// Reload by SIGHUP: telegram:43 may read, not write; then it may.
	tgSend(43, "/fs_writefile made.txt hello")
	if got := tgReply(43, 1); !strings.Contains(got, "forbidden") {
		t.Fatalf("before the reload: %q", got)
	}
	writeCfg(strings.Replace(base, `"telegram:43": [reader]`, `"telegram:43": [admin]`, 1))
	cmd.Process.Signal(syscall.SIGHUP)
	testkit.WaitFor(t, "the reload logged", func() bool { return strings.Contains(logs.String(), "configuration reloaded") })
	tgSend(43, "/fs_writefile made.txt hello")
	testkit.WaitFor(t, "the file written after the reload", func() bool {
		b, err := os.ReadFile(filepath.Join(dir, "made.txt"))
		return err == nil && string(b) == "hello"
	})

	// `hub reload`: a broken file is refused with its line; the hub serves on.
	writeCfg(base + "  bogus: 1\n")
	if _, errOut, code := hub("reload", "--config", cfgFile); code != 1 || !strings.Contains(errOut, "line 18") || !strings.Contains(errOut, `unknown key "bogus"`) {
		t.Fatalf("broken file: %d %s", code, errOut)
	}
	tgSend(43, "/fs_readfile made.txt")
	if got := tgReply(43, 3); !strings.Contains(got, "hello") {
		t.Fatalf("after a refused reload: %q", got)
	}
	writeCfg(strings.Replace(base, "127.0.0.1:0", "127.0.0.1:1", 1))
	if out, errOut, code := hub("reload", "--config", cfgFile); code != 0 || !strings.Contains(out, "needs a restart: web.listen") || !strings.Contains(out, "applied: access") {
		t.Fatalf("restart-only change: %d %s %s", code, out, errOut)
	}
	for _, secret := range []string{tg.Token(), dc.Token()} {
		if strings.Contains(logs.String(), secret) {
			t.Fatal("a token reached the logs")
		}
	}
	cmd.Process.Signal(syscall.SIGTERM)
	cmd.Wait()
}

func itoa64(n int64) string { return strconv.FormatInt(n, 10) }
