package telegram

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/a6afc2ce/hermes-hub/adapters/telegram/telegramtest"
	"github.com/a6afc2ce/hermes-hub/config"
	"github.com/a6afc2ce/hermes-hub/internal/testkit"
)

func countLines(desc string) config.Command {
	return config.Command{
		Description: desc,
		Params:      config.CommandParams{Names: []string{"file"}, ByName: map[string]config.CommandParam{"file": {Type: config.ParamPath}}},
		Run:         config.CommandRun{Verb: "fs.lineCount", Arguments: config.Arguments{"path": "{file}"}},
	}
}

// menuOf is the menu of the nth setMyCommands call.
func menuOf(t *testing.T, f *telegramtest.Server, n int) map[string]string {
	t.Helper()
	var menu []BotCommand
	if err := json.Unmarshal([]byte(f.CallsOf("setMyCommands")[n].Params.Get("commands")), &menu); err != nil {
		t.Fatal(err)
	}
	m := map[string]string{}
	for _, c := range menu {
		m[c.Command] = c.Description
	}
	return m
}

// TestNamedCommandMenuAndRun: a named command a default role may run is
// in the menu (cmd_count, with its description), runs as /count FILE and
// /cmd_count FILE, and a reload that changes the commands sets the menu
// again.
func TestNamedCommandMenuAndRun(t *testing.T) {
	f := newFakeBot(t)
	h := startHarness(t, f, hopts{defaults: []string{"counter"}, configure: func(c *config.Config) {
		c.Commands = config.Commands{"count": countLines("Count a file's lines")}
		c.Access.Roles["counter"] = config.Role{Verbs: []string{"cmd.count"}}
	}})
	h.waitRunning()
	if m := menuOf(t, f, 0); m["cmd_count"] != "Count a file's lines" || m["fs_linecount"] != "" {
		t.Fatalf("menu %v", m)
	}
	f.Push(telegramtest.TextUpdate(telegramtest.NextUpdateID(), 500, 9, 1, "/count README.md"))
	f.Push(telegramtest.TextUpdate(telegramtest.NextUpdateID(), 500, 9, 2, "/cmd_count ../x"))
	testkit.WaitFor(t, "two replies", func() bool { return len(f.MessagesTo("500")) == 2 })
	msgs := f.MessagesTo("500")
	if !strings.Contains(msgs[0].Text, "1") || !strings.Contains(msgs[1].Text, "leaves the workspace") {
		t.Fatalf("replies %q / %q", msgs[0].Text, msgs[1].Text)
	}

	next := *h.cfg
	next.Commands = config.Commands{"count": countLines("How many lines")}
	rl := h.rt.EnableReload(func() (*config.Config, error) { c := next; return &c, nil })
	if _, err := rl.Reload(); err != nil {
		t.Fatal(err)
	}
	testkit.WaitFor(t, "the menu set again", func() bool { return len(f.CallsOf("setMyCommands")) == 2 })
	if m := menuOf(t, f, 1); m["cmd_count"] != "How many lines" {
		t.Fatalf("menu after the reload %v", m)
	}
}

// TestChatGrantOverTelegram: a role granted in one group
// (access.chats["telegram:chat:-100123"]) holds there and not in the
// person's private chat; /whoami in the group names the grant.
func TestChatGrantOverTelegram(t *testing.T) {
	f := newFakeBot(t)
	h := startHarness(t, f, hopts{configure: func(c *config.Config) {
		c.Access.Chats = map[string]config.ChatRule{"telegram:chat:-100123": {Grants: map[string][]string{"telegram:9": {"admin"}}}}
	}})
	h.waitRunning()
	f.Push(telegramtest.TextUpdate(telegramtest.NextUpdateID(), -100123, 9, 1, "/fs.writeFile here.txt hi"))
	f.Push(telegramtest.TextUpdate(telegramtest.NextUpdateID(), -100123, 9, 2, "/whoami"))
	f.Push(telegramtest.TextUpdate(telegramtest.NextUpdateID(), 9, 9, 3, "/fs.writeFile there.txt hi"))
	testkit.WaitFor(t, "the group's two replies", func() bool { return len(f.MessagesTo("-100123")) == 2 })
	testkit.WaitFor(t, "the private reply", func() bool { return len(f.MessagesTo("9")) == 1 })
	if got := f.MessagesTo("-100123")[1].Text; !strings.Contains(got, `admin, from access.chats["telegram:chat:-100123"].grants["telegram:9"]`) {
		t.Fatalf("/whoami in the group: %q", got)
	}
	if got := f.MessagesTo("9")[0].Text; !strings.Contains(got, "telegram:9") || strings.Contains(got, "Wrote") {
		t.Fatalf("private chat: %q", got)
	}
	if _, err := os.Stat(filepath.Join(h.ws, "there.txt")); err == nil {
		t.Fatal("the grant of the group held in the private chat")
	}
	if _, err := os.Stat(filepath.Join(h.ws, "here.txt")); err != nil {
		t.Fatalf("the grant of the group did not hold there: %v", err)
	}
}
