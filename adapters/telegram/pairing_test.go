package telegram

import (
	"regexp"
	"strings"
	"testing"

	"github.com/a6afc2ce/hermes-hub/adapters/telegram/telegramtest"
	"github.com/a6afc2ce/hermes-hub/internal/testkit"
)

// pairingCodeRE matches a pairing code anywhere in a message.
var pairingCodeRE = regexp.MustCompile(`\b[A-Z2-9]{4}-[A-Z2-9]{4}\b`)

// A stranger who writes in a group is told there to open a private chat
// with the bot, and gets no code in the group; in the private chat the bot
// gives it one.
func TestPairingCodeOnlyInPrivateChats(t *testing.T) {
	f := newFakeBot(t)
	startHarness(t, f, hopts{})
	f.Push(telegramtest.TextUpdate(telegramtest.NextUpdateID(), -100400, 77, 1, "/fs_listdir ."))
	testkit.WaitFor(t, "the answer in the group", func() bool { return len(f.MessagesTo("-100400")) == 1 })
	if m := f.MessagesTo("-100400")[0].Text; !strings.Contains(m, "telegram:77") || !strings.Contains(m, "open a private chat with the bot") {
		t.Fatalf("answer in the group: %q", m)
	}
	f.Push(telegramtest.TextUpdate(telegramtest.NextUpdateID(), 77, 77, 2, "/fs_listdir ."))
	testkit.WaitFor(t, "the answer in the private chat", func() bool { return len(f.MessagesTo("77")) == 1 })
	if m := f.MessagesTo("77")[0].Text; !strings.Contains(m, "Your pairing code is") || !pairingCodeRE.MatchString(m) {
		t.Fatalf("answer in the private chat: %q", m)
	}
	for _, m := range f.Messages() {
		if m.ChatID != "77" && pairingCodeRE.MatchString(m.Text) {
			t.Errorf("a pairing code was sent to chat %s: %q", m.ChatID, m.Text)
		}
	}
}
