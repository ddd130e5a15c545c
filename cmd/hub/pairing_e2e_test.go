//go:build unix

package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/a6afc2ce/hermes-hub/adapters/discord/discordtest"
	"github.com/a6afc2ce/hermes-hub/clock"
	"github.com/a6afc2ce/hermes-hub/hub"
	"github.com/a6afc2ce/hermes-hub/internal/testkit"
	"github.com/a6afc2ce/hermes-hub/store"
	bolt "go.etcd.io/bbolt"
)

// tgEmulator is the telegram-test-api Bot API emulator (an implementation
// of the Bot API independent of this project), started by the Telegram
// adapter's adapters/telegram/e2e/emulator.js. The hub polls it as it
// would api.telegram.org; the test plays the users through the emulator's
// client routes (POST /sendCommand, /getUpdatesHistory).
type tgEmulator struct {
	t     *testing.T
	url   string
	token string
}

// startTelegramEmulator runs the emulator for the life of the test. Without
// node or the npm package it skips, except under CI, where it fails.
func startTelegramEmulator(t *testing.T, token string) *tgEmulator {
	t.Helper()
	unavailable := func(why string) {
		t.Helper()
		testkit.Unavailable(t, why)
	}
	node, err := exec.LookPath("node")
	if err != nil {
		unavailable("node not installed")
	}
	script := testkit.NodeScript(t, filepath.Join("..", "..", "adapters", "telegram", "e2e"), "emulator.js")
	port := testkit.Port(t)

	cmd := exec.Command(node, script, strconv.Itoa(port), token)
	cmd.Dir = filepath.Dir(script)
	stderr := &syncWriter{}
	cmd.Stderr = stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		fmt.Fprintln(stdin, `{"op":"stop"}`)
		stdin.Close()
		done := make(chan struct{})
		go func() { cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			cmd.Process.Kill()
			<-done
		}
	})
	ready := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			var r struct{ Op, URL string }
			if json.Unmarshal(sc.Bytes(), &r) == nil && r.Op == "ready" {
				ready <- r.URL
			}
		}
		close(ready)
	}()
	select {
	case u, ok := <-ready:
		if !ok {
			t.Fatalf("the emulator exited before it was ready:\n%s", stderr)
		}
		return &tgEmulator{t: t, url: u, token: token}
	case <-time.After(30 * time.Second):
		t.Fatalf("the emulator did not start:\n%s", stderr)
	}
	return nil
}

func (e *tgEmulator) post(route string, body, out any) {
	e.t.Helper()
	b, err := json.Marshal(body)
	if err != nil {
		e.t.Fatal(err)
	}
	resp, err := http.Post(e.url+route, "application/json", bytes.NewReader(b))
	if err != nil {
		e.t.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		e.t.Fatalf("emulator %s: %s %s", route, resp.Status, data)
	}
	if out != nil {
		if err := json.Unmarshal(data, out); err != nil {
			e.t.Fatalf("emulator %s answered %s: %v", route, data, err)
		}
	}
}

// command has user send a bot command in its private chat with the bot.
func (e *tgEmulator) command(user int64, text string) {
	e.t.Helper()
	name, _, _ := strings.Cut(text, " ")
	username := "user" + itoa64(user)
	e.post("/sendCommand", map[string]any{
		"botToken": e.token,
		"date":     clock.Real{}.Now().Unix(),
		"from":     map[string]any{"id": user, "first_name": "User", "username": username, "is_bot": false},
		"chat":     map[string]any{"id": user, "first_name": "User", "username": username, "type": "private"},
		"text":     text,
		"entities": []map[string]any{{"offset": 0, "length": len(name), "type": "bot_command"}},
	}, nil)
}

// botMessages returns the texts the bot sent to chat, in order.
func (e *tgEmulator) botMessages(chat int64) []string {
	e.t.Helper()
	var h struct {
		Result []struct {
			Message struct {
				ChatID json.RawMessage `json:"chat_id"`
				Text   string          `json:"text"`
			} `json:"message"`
		} `json:"result"`
	}
	e.post("/getUpdatesHistory", map[string]any{"token": e.token}, &h)
	var out []string
	for _, u := range h.Result {
		if id := strings.Trim(string(u.Message.ChatID), `"`); id == itoa64(chat) {
			out = append(out, u.Message.Text)
		}
	}
	return out
}

// waitMessages waits until the bot has sent n messages to chat and returns
// them all.
func (e *tgEmulator) waitMessages(chat int64, n int) []string {
	e.t.Helper()
	var got []string
	testkit.WaitFor(e.t, fmt.Sprintf("%d bot messages to chat %d", n, chat), func() bool {
		got = e.botMessages(chat)
		return len(got) >= n
	})
	return got
}

// mirrored counts the inbound records of identity of kind in the mirror
// files under the state directory.
func mirrored(t *testing.T, stateDir, identity, kind string) int {
	t.Helper()
	n := 0
	err := store.ReadMirror(flowsRoot(t, filepath.Join(stateDir, store.FlowsDir)), store.MirrorFilter{}, func(r store.MirrorRecord) error {
		if r.Direction == store.DirectionInbound && r.Actor == identity && r.Kind == kind {
			n++
		}
		return nil
	})
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		t.Fatal(err)
	}
	return n
}

// editCodes rewrites, with the hub stopped, every pairing code record of
// the state for which edit returns true (records of the state's
// pairing_codes bucket, as docs/access.md names it), and adds the records
// of add under keys of their own. It is how a test ages a code by an hour
// without waiting an hour: the hub's clock and TTL stay real.
func editCodes(t *testing.T, stateDir string, edit func(*store.PairingCode) bool, add []store.PairingCode) {
	t.Helper()
	st, err := store.Open(stateDir, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	err = st.DB().Update(func(tx *bolt.Tx) error {
		b := tx.Bucket([]byte("pairing_codes"))
		if b == nil {
			return errors.New("no pairing_codes bucket")
		}
		changed := map[string][]byte{}
		err := b.ForEach(func(k, v []byte) error {
			var c store.PairingCode
			if err := json.Unmarshal(v, &c); err != nil {
				return err
			}
			if edit(&c) {
				nv, err := json.Marshal(c)
				if err != nil {
					return err
				}
				changed[string(k)] = nv
			}
			return nil
		})
		if err != nil {
			return err
		}
		for k, v := range changed {
			if err := b.Put([]byte(k), v); err != nil {
				return err
			}
		}
		for i, c := range add {
			v, err := json.Marshal(c)
			if err != nil {
				return err
			}
			if err := b.Put(fmt.Appendf(nil, "test-filler-%06d", i), v); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestPairingThroughTelegramEmulator runs `hub serve` against the
// telegram-test-api emulator. A stranger gets a code, and a second message
// within the hour gets nothing (no new code); the operator approves the
// code with `hub access approve` through the admin socket and the
// stranger's next command runs; the code cannot be used again. Then, with
// the hub stopped, another stranger's code is aged past its hour and the
// state filled with outstanding codes up to the cap: after a restart the
// aged code is refused as expired, a new stranger is told their identity
// without a code, and the approved grant still holds.
func TestPairingThroughTelegramEmulator(t *testing.T) {
	t.Parallel() // its own directories and processes: it runs beside the package's other long tests
	const token = "424242:pairing-emulator-token"
	em := startTelegramEmulator(t, token)
	dir := workspace(t)
	stateDir := filepath.Join(dir, ".hub")
	cfgFile := filepath.Join(dir, "hub.yml")
	cfg := `web:
  listen: 127.0.0.1:0
telegram:
  enabled: true
  token: ` + token + `
  api_endpoint: ` + em.url + `
  poll_timeout: 1s
access:
  roles:
    admin: {verbs: ['*']}
`
	if err := os.WriteFile(cfgFile, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	hubCLI := func(args ...string) (string, string, int) {
		t.Helper()
		return runHub(t, dir, "", append(args, "--config", cfgFile)...)
	}
	stop := func(cmd *exec.Cmd) {
		t.Helper()
		cmd.Process.Signal(syscall.SIGTERM)
		if err := cmd.Wait(); err != nil {
			t.Fatalf("hub serve: %v", err)
		}
	}
	cmd, _, logs := startServe(t, dir, "--config", cfgFile)

	// A stranger gets a code with their identity and the operator's command.
	em.command(42, "/fs_listdir .")
	denial := em.waitMessages(42, 1)[0]
	m := pairingRE.FindStringSubmatch(denial)
	if m == nil || !strings.Contains(denial, "telegram:42") || !strings.Contains(denial, "hub access approve "+m[1]+" --role reader") {
		t.Fatalf("the stranger was told %q", denial)
	}
	code42 := m[1]
	// Within the hour the stranger is not answered, and no code is issued.
	em.command(42, "/fs_readfile README.md")
	testkit.WaitFor(t, "the second message mirrored as denied", func() bool { return mirrored(t, stateDir, "telegram:42", store.KindDenied) == 2 })
	var list hub.AccessList
	out, errOut, code := hubCLI("access", "list", "--json")
	if code != 0 || json.Unmarshal([]byte(out), &list) != nil {
		t.Fatalf("access list: %d %s %s", code, out, errOut)
	}
	if len(list.Codes) != 1 || list.Codes[0].Identity != "telegram:42" || strings.Contains(out, code42) {
		t.Fatalf("outstanding codes after two messages: %s", out)
	}

	// The operator approves through the running hub; the next command runs.
	out, errOut, code = hubCLI("access", "approve", strings.ToLower(code42), "--role", "reader")
	if code != 0 || !strings.Contains(out, "Approved: telegram:42 now holds the role reader") {
		t.Fatalf("approve: %d %s %s", code, out, errOut)
	}
	em.command(42, "/fs_listdir .")
	got := em.waitMessages(42, 2)
	if !strings.Contains(got[1], "README.md") {
		t.Fatalf("after the approval the stranger got %q", got[1])
	}
	// Delivery to a chat keeps its order: had the second message been
	// answered, that answer would be here, before the listing.
	if len(got) != 2 {
		t.Fatalf("the bot sent %d messages to the stranger, want the code and the listing: %q", len(got), got)
	}
	for _, role := range []string{"reader", "admin"} {
		if _, errOut, code := hubCLI("access", "approve", code42, "--role", role); code != 1 || !strings.Contains(errOut, "used already") {
			t.Fatalf("reused code (%s): %d %s", role, code, errOut)
		}
	}

	// Another stranger's code, to be aged.
	em.command(44, "/fs_listdir .")
	m = pairingRE.FindStringSubmatch(em.waitMessages(44, 1)[0])
	if m == nil {
		t.Fatalf("no code for telegram:44")
	}
	code44 := m[1]
	stop(cmd)

	// Offline: telegram:44's code was issued two hours ago, and as many
	// codes as the hub allows are outstanding.
	now := clock.Real{}.Now().UTC()
	aged := 0
	var filler []store.PairingCode
	for i := range hub.MaxPairingCodes {
		filler = append(filler, store.PairingCode{Identity: fmt.Sprintf("telegram:%d", 9000000+i), Created: now, Expires: now.Add(hub.PairingTTL)})
	}
	editCodes(t, stateDir, func(c *store.PairingCode) bool {
		if c.Identity != "telegram:44" {
			return false
		}
		c.Created, c.Expires = c.Created.Add(-2*time.Hour), c.Expires.Add(-2*time.Hour)
		aged++
		return true
	}, filler)
	if aged != 1 {
		t.Fatalf("%d codes of telegram:44 aged, want 1", aged)
	}

	cmd, _, logs2 := startServe(t, dir, "--config", cfgFile)
	if _, errOut, code := hubCLI("access", "approve", code44, "--role", "reader"); code != 1 || !strings.Contains(errOut, "expired") {
		t.Fatalf("expired code: %d %s", code, errOut)
	}
	em.command(46, "/fs_listdir .")
	capped := em.waitMessages(46, 1)[0]
	if !strings.Contains(capped, "telegram:46") || !strings.Contains(capped, "too many pending access requests") || pairingRE.MatchString(capped) || !strings.Contains(capped, "access.grants") {
		t.Fatalf("a stranger past the cap was told %q", capped)
	}
	em.command(42, "/fs_readfile README.md")
	if got := em.waitMessages(42, 3); !strings.Contains(got[2], "line two") {
		t.Fatalf("the approved grant after a restart: %q", got[2])
	}
	out, _, code = hubCLI("access", "list")
	if code != 0 || !regexp.MustCompile(`telegram:42\s+reader\s+state\s+operator`).MatchString(out) || strings.Contains(out, "telegram:44") || strings.Contains(out, "telegram:46") {
		t.Fatalf("access list: %d %s", code, out)
	}
	stop(cmd)
	for _, l := range []string{logs.String(), logs2.String()} {
		for _, secret := range []string{token, code42, code44} {
			if strings.Contains(l, secret) {
				t.Fatalf("%q reached the logs", secret)
			}
		}
	}
}

// TestPairingDiscordSlashCommands runs `hub serve` against the fake
// Discord: a stranger's slash command is deferred ephemeral and answered
// with their pairing code; a second one within the hour is closed briefly,
// without a new code; after `hub access approve` the next slash command
// runs, and the code cannot be used again.
func TestPairingDiscordSlashCommands(t *testing.T) {
	dc := discordtest.NewServer()
	t.Cleanup(dc.Close)
	dir := workspace(t)
	cfgFile := filepath.Join(dir, "hub.yml")
	cfg := `web:
  listen: 127.0.0.1:0
discord:
  enabled: true
  token: ` + dc.Token() + `
  application_id: "` + dc.AppID + `"
  api_base: ` + dc.APIBase() + `
access:
  roles:
    admin: {verbs: ['*']}
`
	if err := os.WriteFile(cfgFile, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	hubCLI := func(args ...string) (string, string, int) {
		t.Helper()
		return runHub(t, dir, "", append(args, "--config", cfgFile)...)
	}
	cmd, _, logs := startServe(t, dir, "--config", cfgFile)
	dc.WaitFor(t, "the gateway connection", dc.Connected)

	const stranger, dm = "555000000000000002", "910000000000000778"
	const ephemeral = 1 << 6
	next := 930000000000000000
	// slash sends /fs list-dir path:. as user in a direct message (guild
	// "") or in the guild's channel, and returns the interaction's
	// acknowledgement once its response is written.
	slash := func(user, guild string) discordtest.Callback {
		t.Helper()
		next++
		ch := dm
		if guild != "" {
			ch = dc.ChannelID
		}
		i := discordtest.Interaction{ID: strconv.Itoa(next), Channel: ch, Guild: guild, User: user, Command: "fs",
			Options: []discordtest.Option{discordtest.Sub("list-dir", discordtest.Str("path", "."))}}
		i.Token = "itok-" + i.ID
		dc.Dispatch("INTERACTION_CREATE", dc.InteractionPayload(i))
		var c discordtest.Callback
		dc.WaitFor(t, "the response to interaction "+i.ID, func() bool {
			var ok bool
			c, ok = dc.Callback(i.ID)
			return ok && c.Original != nil
		})
		return c
	}

	first := slash(stranger, "")
	m := pairingRE.FindStringSubmatch(first.Original.Content)
	if first.Flags != ephemeral || m == nil || !strings.Contains(first.Original.Content, "discord:"+stranger) || !strings.Contains(first.Original.Content, "hub access approve "+m[1]+" --role reader") {
		t.Fatalf("the stranger's first slash command: flags %d, response %q", first.Flags, first.Original.Content)
	}
	code := m[1]
	again := slash(stranger, "")
	if again.Flags != ephemeral || again.Original.Content != "This hub does not know you (discord:"+stranger+")." {
		t.Fatalf("the stranger's second slash command within the hour: flags %d, response %q", again.Flags, again.Original.Content)
	}
	// In a guild's channel no code is given, not even ephemeral: the
	// stranger is told to send the bot a direct message.
	const stranger2 = "555000000000000003"
	inGuild := slash(stranger2, dc.GuildID)
	if inGuild.Flags != ephemeral || pairingRE.MatchString(inGuild.Original.Content) || !strings.Contains(inGuild.Original.Content, "discord:"+stranger2) ||
		!strings.Contains(inGuild.Original.Content, "send the bot a direct message") {
		t.Fatalf("a stranger's slash command in a guild: flags %d, response %q", inGuild.Flags, inGuild.Original.Content)
	}
	var list hub.AccessList
	if out, errOut, rc := hubCLI("access", "list", "--json"); rc != 0 || json.Unmarshal([]byte(out), &list) != nil || len(list.Codes) != 1 {
		t.Fatalf("access list: %d %s %s", rc, out, errOut)
	}

	if out, errOut, rc := hubCLI("access", "approve", code, "--role", "reader"); rc != 0 || !strings.Contains(out, "Approved: discord:"+stranger+" now holds the role reader") {
		t.Fatalf("approve: %d %s %s", rc, out, errOut)
	}
	ran := slash(stranger, "")
	if ran.Flags == ephemeral || !strings.Contains(ran.Original.Content, "README.md") {
		t.Fatalf("after the approval: flags %d, response %q", ran.Flags, ran.Original.Content)
	}
	if _, errOut, rc := hubCLI("access", "approve", code, "--role", "admin"); rc != 1 || !strings.Contains(errOut, "used already") {
		t.Fatalf("reused code: %d %s", rc, errOut)
	}
	if n := len(dc.ChannelMessages(dm)) + len(dc.ChannelMessages(dc.ChannelID)); n != 0 {
		t.Fatalf("%d messages posted in the channel; every answer belongs to its interaction", n)
	}
	cmd.Process.Signal(syscall.SIGTERM)
	if err := cmd.Wait(); err != nil {
		t.Fatalf("hub serve: %v", err)
	}
	for _, secret := range []string{dc.Token(), code} {
		if strings.Contains(logs.String(), secret) {
			t.Fatalf("%q reached the logs", secret)
		}
	}
}
