package discord

import (
	"regexp"
	"strings"
	"testing"
)

// pairingCodeRE matches a pairing code anywhere in a message.
var pairingCodeRE = regexp.MustCompile(`\b[A-Z2-9]{4}-[A-Z2-9]{4}\b`)

// A stranger in a server's channel, by a message or a slash command, is
// told to send the bot a direct message and gets no code there; in a
// direct message the bot gives it one.
func TestPairingCodeOnlyInDirectMessages(t *testing.T) {
	e := newEnv(t, envOptions{})
	if r := e.waitReply(e.say(strangerUser, "!fs.exists README.md")); !strings.Contains(r.Content, "send the bot a direct message") {
		t.Fatalf("answer to a message in the channel: %q", r.Content)
	}
	const otherStranger = "700000000000000004"
	if r := e.waitOriginal(e.interact(otherStranger, "fs", sub("exists", str("path", "README.md")))); !strings.Contains(r.Content, "send the bot a direct message") {
		t.Fatalf("answer to a slash command in the channel: %q", r.Content)
	}
	dm := channelMsg{ID: e.nextID(), Channel: "930000000000000001", User: strangerUser, Content: "fs.exists README.md"}
	e.fake.Dispatch("MESSAGE_CREATE", e.fake.MessagePayload(dm))
	if r := e.waitReply(dm); !strings.Contains(r.Content, "Your pairing code is") || !pairingCodeRE.MatchString(r.Content) {
		t.Fatalf("answer to a direct message: %q", r.Content)
	}
	for _, r := range e.fake.Receipts() {
		if r.ChannelID != dm.Channel && pairingCodeRE.MatchString(r.Content) {
			t.Errorf("a pairing code was sent outside the direct message: %+v", r)
		}
	}
}
