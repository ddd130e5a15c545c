package telegram

import (
	"fmt"
	"strings"
	"testing"

	"github.com/a6afc2ce/hermes-hub/internal/testkit"

	"github.com/a6afc2ce/hermes-hub/adapters/telegram/telegramtest"
	"github.com/a6afc2ce/hermes-hub/chat"
	"github.com/a6afc2ce/hermes-hub/config"
)

func cfgSecret(s string) config.Secret { return config.NewSecret(s) }

// TestRestartMidBacklog: a backlog of updates in several chats; the adapter
// is stopped in the middle and a new Runtime and Adapter start on the same
// state. Every update runs exactly once and every reply is delivered once.
func TestRestartMidBacklog(t *testing.T) {
	f := newFakeBot(t)
	const chats, perChat = 4, 15
	var ids []string
	var ups []map[string]any
	for i := range perChat {
		for c := range chats {
			id := fmt.Sprintf("c%dm%d", c, i)
			ids = append(ids, id)
			chatID := int64(1)
			if c > 0 {
				chatID = int64(-1000 - c) // groups, the same user
			}
			ups = append(ups, telegramtest.TextUpdate(telegramtest.NextUpdateID(), chatID, 1, 100+i, "/test_count "+id))
		}
	}
	f.Push(ups...)
	tv := newTestVerbs()
	h := startHarness(t, f, hopts{tv: tv})
	// Stop once part of the backlog is done.
	testkit.WaitFor(t, "part of the backlog", func() bool {
		tv.mu.Lock()
		defer tv.mu.Unlock()
		return len(tv.counts) >= len(ids)/3
	})
	h.stop()
	tv.mu.Lock()
	doneFirst := len(tv.counts)
	tv.mu.Unlock()
	if doneFirst == len(ids) {
		t.Log("the whole backlog ran before the stop; the restart still must not repeat anything")
	}

	h2 := startHarness(t, f, hopts{ws: h.ws, tv: tv})
	testkit.WaitFor(t, "the whole backlog", func() bool {
		tv.mu.Lock()
		defer tv.mu.Unlock()
		return len(tv.counts) == len(ids)
	})
	testkit.WaitFor(t, "every reply", func() bool { return len(f.Messages()) >= len(ids) })
	h2.stop()
	for _, id := range ids {
		if n := tv.count(id); n != 1 {
			t.Errorf("%s ran %d times", id, n)
		}
	}
	replies := map[string]int{}
	for _, m := range f.Messages() {
		replies[m.ChatID+"/"+m.ReplyTo]++
		if !strings.Contains(m.Text, "calls") {
			t.Errorf("unexpected message %q", m.Text)
		}
	}
	if len(replies) != len(ids) {
		t.Errorf("%d distinct replies for %d updates", len(replies), len(ids))
	}
	for k, n := range replies {
		if n != 1 {
			t.Errorf("reply %s delivered %d times", k, n)
		}
	}
	t.Logf("%d of %d updates ran before the restart", doneFirst, len(ids))
}

// TestMigratedGroup: a chunk for a group that became a supergroup goes to
// the new chat; the migration is remembered in hub.db (a new adapter on the
// same state sends there at once) and the channel directory follows.
func TestMigratedGroup(t *testing.T) {
	f := newFakeBot(t)
	h := startHarness(t, f, hopts{})
	f.Push(telegramtest.TextUpdate(telegramtest.NextUpdateID(), -555, 1, 80, "/whoami"))
	testkit.WaitFor(t, "the first reply", func() bool { return len(f.MessagesTo("-555")) == 1 })

	f.Migrate("-555", -1009990)
	f.Push(telegramtest.TextUpdate(telegramtest.NextUpdateID(), -555, 1, 81, "/whoami"))
	testkit.WaitFor(t, "the reply in the supergroup", func() bool { return len(f.MessagesTo("-1009990")) == 1 })
	if m := f.MessagesTo("-1009990")[0]; m.ReplyTo != "" || !strings.Contains(m.Text, "telegram:1") {
		t.Fatalf("re-sent chunk %+v (message ids do not carry over: no reply_to)", m)
	}
	if h.rt.Directory() == nil {
		t.Fatal("no directory")
	}
	if _, ok := h.rt.Directory().Get(chat.ChannelKey{Platform: chat.Telegram, ChatID: "-1009990"}); !ok {
		t.Fatal("the directory entry did not move to the new chat id")
	}
	if _, ok := h.rt.Directory().Get(chat.ChannelKey{Platform: chat.Telegram, ChatID: "-555"}); ok {
		t.Fatal("the old chat id is still in the directory")
	}
	h.stop()

	h2 := startHarness(t, f, hopts{ws: h.ws})
	if _, err := h2.ad.Sender().Send(withTimeout(t), entryFor("chat:telegram:-555", "later", 0, 1, nil)); err != nil {
		t.Fatal(err)
	}
	if got := f.MessagesTo("-1009990"); len(got) != 2 || got[1].Text != "later" {
		t.Fatalf("after restart the old key goes to the new chat: %+v", got)
	}
	if n := len(f.CallsOf("sendMessage")); n != 4 {
		t.Fatalf("%d sendMessage calls, want 4 (one refused by the old group)", n)
	}

}

// TestMigrationServiceMessage: the service message of a migration moves the
// directory and the sender before any send fails.
func TestMigrationServiceMessage(t *testing.T) {
	f := newFakeBot(t)
	h := startHarness(t, f, hopts{})
	f.Push(telegramtest.TextUpdate(telegramtest.NextUpdateID(), -777, 1, 90, "/whoami"))
	testkit.WaitFor(t, "the first reply", func() bool { return len(f.MessagesTo("-777")) == 1 })
	f.Push(map[string]any{"update_id": telegramtest.NextUpdateID(), "message": map[string]any{
		"message_id": 91, "date": 1, "chat": map[string]any{"id": -777, "type": "group"}, "migrate_to_chat_id": -1007770,
	}})
	testkit.WaitFor(t, "the migration", func() bool { return h.ad.mig.resolve("-777") == "-1007770" })
	if _, err := h.ad.Sender().Send(withTimeout(t), entryFor("chat:telegram:-777", "moved", 0, 1, nil)); err != nil {
		t.Fatal(err)
	}
	if got := f.MessagesTo("-1007770"); len(got) != 1 {
		t.Fatalf("messages to the supergroup: %+v", got)
	}
}
