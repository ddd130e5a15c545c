package hub_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/a6afc2ce/hermes-hub/chat"
	"github.com/a6afc2ce/hermes-hub/config"
	"github.com/a6afc2ce/hermes-hub/hub"
	"github.com/a6afc2ce/hermes-hub/hub/hubtest"
	"github.com/a6afc2ce/hermes-hub/internal/testkit"
)

// Chats and people of the per-chat tests.
const (
	opsChat     = "-100123"            // telegram:42 holds ops here only
	topicChat   = "-100200"            // telegram:43 holds ops in topic 7 only
	publicChat  = "-100999"            // capped at reader
	discordOps  = "800000000000000001" // discord:440000000000000001 holds ops here
	discordPub  = "900000000000000001" // a server capped at reader
	discordUser = "440000000000000001"
)

// chatScopeEnv is a hub whose access has chat grants and ceilings.
func chatScopeEnv(t *testing.T) *env {
	t.Helper()
	ws := t.TempDir()
	state := filepath.Join(ws, ".hub")
	if err := os.WriteFile(filepath.Join(ws, "README.md"), []byte("# hello\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg := testConfig(t, ws, state)
	cfg.Access.Roles["ops"] = config.Role{Verbs: []string{"fs.*", "admin.read"}}
	cfg.Access.Chats = map[string]config.ChatRule{
		"telegram:chat:" + opsChat:          {Grants: map[string][]string{"telegram:42": {"ops"}}},
		"telegram:chat:" + topicChat + ":7": {Grants: map[string][]string{"telegram:43": {"ops"}}},
		"telegram:chat:" + publicChat:       {MaxRoles: []string{"reader"}},
		"discord:channel:" + discordOps:     {Grants: map[string][]string{"discord:" + discordUser: {"ops"}}},
		"discord:guild:" + discordPub:       {MaxRoles: []string{"reader"}},
	}
	cfg.ApplyDefaults()
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	he := hubtest.Open(t, cfg, hubtest.Options{})
	e := &env{he: he, rt: he.Runtime, rec: hubtest.NewRecorder(), ws: ws, state: state}
	e.rec.HandleAll(t, e.rt)
	he.Start(t)
	return e
}

var msgSeq int

// groupMsg is a message of user in a Telegram group (topic "" for none),
// or in a Discord channel of a guild when platform is discord.
func groupMsg(platform chat.Platform, chatID, topic, guild, user, text string) *chat.Inbound {
	msgSeq++
	return &chat.Inbound{
		TurnID: fmt.Sprintf("%s.%s.%d", platform, strings.TrimPrefix(chatID, "-"), msgSeq), Platform: platform, ChatID: chatID, ThreadID: topic, GuildID: guild,
		MessageID: fmt.Sprint(msgSeq), UserID: user, UserName: "u", ChatType: "supergroup", Text: text, Time: time.Now(),
	}
}

// TestChatGrantsAndCeilings: a role granted in a chat holds there (and in
// its topics) only; a grant of one topic holds in that topic only; a
// ceiling caps an admin at what reader may do, verbs and admin
// permissions alike; a Discord channel's grant is capped by its server's
// ceiling.
func TestChatGrantsAndCeilings(t *testing.T) {
	e := chatScopeEnv(t)
	tg := chat.Telegram
	for i, c := range []struct {
		in   *chat.Inbound
		want hub.Status
	}{
		{groupMsg(tg, opsChat, "", "", "42", "/fs.writeFile a.txt hi"), hub.StatusExecuted},
		{groupMsg(tg, opsChat, "3", "", "42", "/fs.writeFile b.txt hi"), hub.StatusExecuted}, // a topic of the chat
		{groupMsg(tg, "42", "", "", "42", "/fs.writeFile c.txt hi"), hub.StatusDenied},       // a private chat: no role
		{groupMsg(tg, publicChat, "", "", "42", "/fs.listDir ."), hub.StatusDenied},
		{groupMsg(tg, topicChat, "7", "", "43", "/fs.writeFile d.txt hi"), hub.StatusExecuted},
		{groupMsg(tg, topicChat, "8", "", "43", "/fs.listDir ."), hub.StatusDenied},
		{groupMsg(tg, topicChat, "", "", "43", "/fs.listDir ."), hub.StatusDenied},
		{groupMsg(tg, publicChat, "", "", "1", "/fs.listDir ."), hub.StatusExecuted},           // admin, capped at reader: reads
		{groupMsg(tg, publicChat, "", "", "1", "/fs.writeFile e.txt hi"), hub.StatusForbidden}, // but does not write
		{groupMsg(tg, publicChat, "4", "", "1", "/proc.run true"), hub.StatusForbidden},        // in a topic too
		{groupMsg(tg, opsChat, "", "", "1", "/fs.writeFile f.txt hi"), hub.StatusExecuted},     // elsewhere the admin is an admin
		{groupMsg(chat.Discord, discordOps, "", "", discordUser, "/fs.writeFile g.txt hi"), hub.StatusExecuted},
		{groupMsg(chat.Discord, discordOps, "", discordPub, discordUser, "/fs.writeFile h.txt hi"), hub.StatusForbidden},
		{groupMsg(chat.Discord, discordOps, "", discordPub, discordUser, "/fs.listDir ."), hub.StatusExecuted},
	} {
		res, err := e.rt.Hub.Handle(context.Background(), c.in)
		if err != nil || res.Status != c.want {
			t.Errorf("%d: %s %s/%s by %s %q: %+v %v, want %s", i, c.in.Platform, c.in.ChatID, c.in.ThreadID, c.in.UserID, c.in.Text, res, err, c.want)
		}
	}
	for _, name := range []string{"c.txt", "e.txt", "h.txt"} {
		if _, err := os.Stat(filepath.Join(e.ws, name)); err == nil {
			t.Errorf("%s was written though refused", name)
		}
	}
	// The refusal says the chat's ceiling is why; /nodes (admin.read) is
	// capped as well.
	in := groupMsg(tg, publicChat, "", "", "1", "/fs.writeFile z.txt hi")
	if _, err := e.rt.Hub.Handle(context.Background(), in); err != nil {
		t.Fatal(err)
	}
	key := "chat:telegram:" + publicChat
	waitText(t, e, key, `access.chats["telegram:chat:-100999"].max_roles caps what any role may do at what reader may do`)
	if _, err := e.rt.Hub.Handle(context.Background(), groupMsg(tg, publicChat, "", "", "1", "/nodes")); err != nil {
		t.Fatal(err)
	}
	waitText(t, e, key, "You may not run /nodes (forbidden)")
}

// waitText waits for a chunk to target that holds want.
func waitText(t *testing.T, e *env, target, want string) string {
	t.Helper()
	var got string
	testkit.WaitFor(t, fmt.Sprintf("a reply to %s saying %q", target, want), func() bool {
		for _, txt := range e.rec.Texts(target) {
			if strings.Contains(txt, want) {
				got = txt
				return true
			}
		}
		return false
	})
	return got
}

// TestWhoamiExplainsTheChat: /whoami names each role with the
// configuration that grants it, and the chat's ceiling.
func TestWhoamiExplainsTheChat(t *testing.T) {
	e := chatScopeEnv(t)
	for _, c := range []struct {
		in   *chat.Inbound
		want []string
	}{
		{groupMsg(chat.Telegram, opsChat, "5", "", "42", "/whoami"), []string{
			"In this chat (telegram:chat:-100123, telegram:chat:-100123:5):",
			`- ops, from access.chats["telegram:chat:-100123"].grants["telegram:42"]`}},
		{groupMsg(chat.Telegram, publicChat, "", "", "1", "/whoami"), []string{
			`- admin, from access.grants["telegram:1"]`,
			`- capped here at what reader may do (access.chats["telegram:chat:-100999"].max_roles)`}},
	} {
		if res, err := e.rt.Hub.Handle(context.Background(), c.in); err != nil || res.Status != hub.StatusBuiltin {
			t.Fatalf("%+v %v", res, err)
		}
		key := c.in.ReplyKey().String()
		got := waitText(t, e, key, "You are")
		for _, w := range c.want {
			if !strings.Contains(got, w) {
				t.Errorf("/whoami in %s: %q lacks %q", key, got, w)
			}
		}
	}
}
