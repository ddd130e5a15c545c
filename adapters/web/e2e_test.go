package web

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/a6afc2ce/hermes-hub/admin"
	"github.com/a6afc2ce/hermes-hub/chat"
	"github.com/a6afc2ce/hermes-hub/config"
	"github.com/a6afc2ce/hermes-hub/hub"
	"github.com/a6afc2ce/hermes-hub/hub/hubtest"
	"github.com/a6afc2ce/hermes-hub/internal/testkit"
	"github.com/a6afc2ce/hermes-hub/outbox"
)

// pairingCode finds a pairing code (XXXX-XXXX) in a reply.
var pairingCode = regexp.MustCompile(`\b[A-Z0-9]{4}-[A-Z0-9]{4}\b`)

// fakeNodes stands in for the remote nodes of a hub with NATS.
type fakeNodes []admin.NodeStatus

func (f fakeNodes) List(context.Context) ([]admin.NodeStatus, error) { return f, nil }

// chromiumPath is Debian's chromium package.
const chromiumPath = "/usr/bin/chromium"

// repoRoot finds the directory holding go.mod.
func repoRoot(t *testing.T) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("go.mod not found above the test's directory")
		}
		dir = parent
	}
}

// TestPanelE2E drives the panel in headless Chromium (e2e/e2e.mjs) against
// a real Server on 127.0.0.1 and leaves screenshots in test-output/web/.
func TestPanelE2E(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end browser test skipped in -short mode")
	}
	if _, err := os.Stat(chromiumPath); err != nil {
		testkit.Unavailable(t, "chromium not installed")
	}
	node, err := exec.LookPath("node")
	if err != nil {
		testkit.Unavailable(t, "node not installed")
	}
	script := testkit.NodeScript(t, "e2e", "e2e.mjs")

	// A fake Discord that refuses the first delivery and accepts the retry,
	// so the outbox view has a dead letter to retry.
	var discordCalls atomic.Int32
	// A second workspace to switch to, progress shown after a second, and
	// two remote nodes for the Nodes view.
	sandbox := t.TempDir()
	e := newEnv(t, envConfig{noServer: true, hub: hubtest.Options{Workspaces: true}, mod: func(c *config.Config) {
		c.Workspaces.Named = map[string]config.WorkspaceConfig{"sandbox": {Path: sandbox, Destination: config.Destination{Kind: config.DestinationLocal}}}
		// fs.deleteFile is held for confirmation (the panel's dialog), and
		// a named command with an enum parameter has its form.
		c.Access.Roles = map[string]config.Role{"admin": {Verbs: []string{"*", "admin.*"}, Workspaces: []string{"*"}, Confirm: []string{"fs.deleteFile"}}}
		c.Commands = config.Commands{"tally": {Description: "Count the lines of a listed file",
			Params: config.CommandParams{Names: []string{"which"}, ByName: map[string]config.CommandParam{"which": {Type: config.ParamEnum, Values: []string{"notes.txt", "long.txt"}}}},
			Run:    config.CommandRun{Verb: "fs.lineCount", Arguments: config.Arguments{"path": "{which}"}}}}
		c.Verbs.ProgressAfter = config.Duration(time.Second)
		c.Verbs.ProgressEvery = config.Duration(time.Second)
		// A schedule for the Schedules view to run, and the History view to
		// find.
		c.Access.Grants["schedule:nightly"] = []string{"reader"}
		c.Schedules = config.Schedules{"nightly": {Cron: "0 6 * * *", TimeZone: "Europe/Berlin", Identity: "schedule:nightly", Missed: config.MissedSkip,
			Run: config.ScheduleRun{Verb: "fs.lineCount", Arguments: config.Arguments{"path": "notes.txt"}}, Deliver: []string{"local:pma/nightly.jsonl"}}}
	}, opts: func(o *Options) {
		o.Admin.Nodes = fakeNodes{
			{Name: "db-1", Online: true, Version: "0.9.0", LastSeen: time.Now().Add(-4 * time.Second), Workspaces: []string{"logs"}, Load: [3]float64{0.42, 0.3, 0.2}, Running: 1},
			{Name: "build-2", Version: "0.9.0", LastSeen: time.Now().Add(-20 * time.Minute), Workspaces: []string{"src", "cache"}},
		}
	}, beforeStart: func(rt *hub.Runtime) {
		err := rt.Mux.Handle("chat:discord", outbox.SenderFunc(func(ctx context.Context, en *outbox.Entry) (outbox.Receipt, error) {
			if discordCalls.Add(1) == 1 {
				return outbox.Receipt{}, outbox.Permanent(errors.New("discord: 403 Forbidden: Missing Access"))
			}
			return outbox.Receipt{MessageID: "1300000000000000001"}, nil
		}))
		if err != nil {
			t.Fatal(err)
		}
	}})
	e.writeFile("notes.txt", "alpha\nbeta\ngamma\ndelta\n")
	var long strings.Builder
	for i := 1; i <= 3000; i++ {
		fmt.Fprintf(&long, "line %04d\n", i)
	}
	e.writeFile("long.txt", long.String())
	e.writeFile("README.md", "# Demo workspace\n")
	e.writeFile("src/main.go", "package main\n\nfunc main() {}\n")
	e.writeFile("edit-me.txt", "one\ntwo\nthree\nfour\n")
	e.writeFile("delete-me.txt", "x\n")
	if e.rt.Directory() != nil {
		e.rt.Directory().Observe(&chat.Inbound{Platform: chat.Telegram, ChatID: "-1001234567890", ThreadID: "7", ChatType: "supergroup", ChatTitle: "Ops", TopicTitle: "Deploys", Time: time.Now()})
		e.rt.Directory().Observe(&chat.Inbound{Platform: chat.Discord, ChatID: "1200000000000000001", GuildID: "1100000000000000001", ChatType: "guild_text", ChatTitle: "#builds", Time: time.Now()})
	}

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- e.srv.Run(ctx) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	}()
	waitUntil(t, "the listener", func() bool { return e.srv.Addr() != "" })

	// One dead letter: hub-level output to a Discord target the fake refuses.
	if r := e.authed("POST", "/api/targets", `{"target":"chat:discord:1200000000000000001"}`); r.status != 200 {
		t.Fatalf("add target: %d %s", r.status, r.body)
	}
	if r := e.authed("POST", "/api/deliver", `{"text":"Nightly build finished: 214 tests passed.","turn_id":"send-e2e"}`); r.status != 200 {
		t.Fatalf("deliver: %d %s", r.status, r.body)
	}
	waitUntil(t, "the dead letter", func() bool { return discordCalls.Load() >= 1 })

	// A stranger writes from Telegram and is given a pairing code (its
	// reply waits in the outbox: Telegram is off here); the panel approves it.
	res, err := e.rt.Hub.Handle(context.Background(), &chat.Inbound{
		TurnID: "telegram.4242.1", Platform: chat.Telegram, ChatID: "4242", MessageID: "1", UserID: "4242", UserName: "stranger",
		ChatType: "private", Text: "/fs.listDir .", Time: time.Now(),
	})
	if err != nil || len(res.Outbox) == 0 {
		t.Fatalf("stranger's message: %+v %v", res, err)
	}
	var entry struct {
		Text string `json:"text"`
	}
	if r := e.authed("GET", "/api/outbox/entry?id="+res.Outbox[0], ""); r.status != 200 {
		t.Fatalf("the stranger's reply: %d %s", r.status, r.body)
	} else {
		r.json(t, &entry)
	}
	code := pairingCode.FindString(entry.Text)
	if code == "" {
		t.Fatalf("no pairing code in the stranger's reply: %q", entry.Text)
	}

	// A second hub with no access configuration and a configured token:
	// the token is a reader, with no admin permission; the panel hides the
	// admin views.
	reader := newEnv(t, envConfig{noServer: true, mod: func(c *config.Config) { c.Access = defaultAccessWithToken() }})
	reader.writeFile("notes.txt", "alpha\n")
	rctx, rcancel := context.WithCancel(context.Background())
	rdone := make(chan error, 1)
	go func() { rdone <- reader.srv.Run(rctx) }()
	defer func() {
		rcancel()
		if err := <-rdone; err != nil {
			t.Errorf("Run (reader): %v", err)
		}
	}()
	waitUntil(t, "the reader's listener", func() bool { return reader.srv.Addr() != "" })

	out := filepath.Join(repoRoot(t), "test-output", "web")
	if err := os.MkdirAll(out, 0o755); err != nil {
		t.Fatal(err)
	}
	base := "http://" + e.srv.Addr() + "/"
	cctx, ccancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer ccancel()
	cmd := exec.CommandContext(cctx, node, script, base, e.token, out, "http://"+reader.srv.Addr()+"/", reader.token)
	cmd.Dir = filepath.Dir(script)
	cmd.Env = append(os.Environ(), "CHROMIUM="+chromiumPath, "PAIRING_CODE="+code, "PAIRING_IDENTITY=telegram:4242")
	output, err := cmd.CombinedOutput()
	t.Logf("e2e.mjs output:\n%s", output)
	if err != nil {
		t.Fatalf("e2e.mjs failed: %v (screenshots in %s)", err, out)
	}
	for _, f := range []string{"01-login.png", "02-chat.png", "04-form.png", "08-phone-chat-dark.png", "11-progress.png", "13-access.png", "14-nodes.png", "15-schedules.png", "16-history.png", "17-command-form.png", "18-confirm.png"} {
		if fi, err := os.Stat(filepath.Join(out, f)); err != nil || fi.Size() == 0 {
			t.Errorf("screenshot %s missing", f)
		}
	}
	for name, want := range map[string]string{"inbox/hello.txt": "hello from the panel\n", "uploads/dropped.bin": "\x00\x01\x02\xff"} {
		if got, err := os.ReadFile(filepath.Join(e.cfg.Workspace, filepath.FromSlash(name))); err != nil || string(got) != want {
			t.Errorf("the panel's upload %s holds %q (%v), want %q", name, got, err, want)
		}
	}
	if n := discordCalls.Load(); n != 2 {
		t.Errorf("the fake Discord was called %d times, want 2 (refused, then the retry)", n)
	}
}
