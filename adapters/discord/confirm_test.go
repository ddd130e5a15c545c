package discord

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/a6afc2ce/hermes-hub/config"
)

// TestConfirmButtons: a verb held for confirmation is answered with the
// exact call and the Run and Cancel buttons, from a channel message and
// from a slash command; a press by someone else is answered that only
// the asker may; the asker's Run runs it (its reply follows); Run pressed
// again says it was decided; Cancel runs nothing.
func TestConfirmButtons(t *testing.T) {
	e := newEnv(t, envOptions{configure: func(c *config.Config) {
		c.Access.Roles["deleter"] = config.Role{Verbs: []string{"fs.*"}, Confirm: []string{"fs.delete*"}}
		c.Access.Grants["discord:"+readerUser] = []string{"deleter"}
	}})
	for _, n := range []string{"a.log", "b.log"} {
		os.WriteFile(filepath.Join(e.ws, n), []byte("x"), 0o644)
	}
	ask := e.say(readerUser, "!fs.deleteFile a.log")
	prompt := e.waitReply(ask)
	if !strings.Contains(prompt.Content, `"verb":"fs.deleteFile"`) || len(prompt.Buttons) != 2 || !strings.HasPrefix(prompt.Buttons[0], "cf:run:") || !strings.HasPrefix(prompt.Buttons[1], "cf:cancel:") {
		t.Fatalf("prompt %+v", prompt)
	}
	if got := e.answer(e.press(adminUser, prompt.ID, prompt.Buttons[0]).ID); !strings.Contains(got.Original.Content, "Only discord:"+readerUser) {
		t.Fatalf("a press by someone else: %q", got.Original.Content)
	}
	if _, err := os.Stat(filepath.Join(e.ws, "a.log")); err != nil {
		t.Fatal("someone else's press ran the call")
	}
	if got := e.answer(e.press(readerUser, prompt.ID, prompt.Buttons[0]).ID); got.Original.Content != "Running it." {
		t.Fatalf("the asker's Run: %q", got.Original.Content)
	}
	e.fake.WaitFor(t, "the call's reply", func() bool {
		for _, m := range e.fake.ChannelMessages(e.fake.ChannelID) {
			if m.Reference == ask.ID && strings.Contains(m.Content, "Deleted") {
				return true
			}
		}
		return false
	})
	if _, err := os.Stat(filepath.Join(e.ws, "a.log")); err == nil {
		t.Fatal("Run did not run the call")
	}
	if got := e.answer(e.press(readerUser, prompt.ID, prompt.Buttons[0]).ID); !strings.Contains(got.Original.Content, "already decided") {
		t.Fatalf("Run pressed twice: %q", got.Original.Content)
	}

	i := e.interact(readerUser, "fs", sub("delete-file", str("path", "b.log")))
	orig := e.waitOriginal(i)
	if len(orig.Buttons) != 2 {
		t.Fatalf("the slash command's prompt %+v", orig)
	}
	if got := e.answer(e.press(readerUser, orig.ID, orig.Buttons[1]).ID); !strings.Contains(got.Original.Content, "Cancelled") {
		t.Fatalf("Cancel: %q", got.Original.Content)
	}
	if _, err := os.Stat(filepath.Join(e.ws, "b.log")); err != nil {
		t.Fatal("Cancel ran the call")
	}
}

// TestConfirmSecondApprover: after the asker's Run, a call whose role
// names approvers is posted in the channel with Approve and Reject; the
// asker's own Approve is refused, an approver's runs it.
func TestConfirmSecondApprover(t *testing.T) {
	e := newEnv(t, envOptions{configure: func(c *config.Config) {
		c.Access.Roles["writer"] = config.Role{Verbs: []string{"fs.*"}, Confirm: []string{"fs.writeFile"}, Approvers: []string{"admin"}}
		c.Access.Grants["discord:"+readerUser] = []string{"writer"}
	}})
	ask := e.say(readerUser, "!fs.writeFile approved.txt hi")
	prompt := e.waitReply(ask)
	if got := e.answer(e.press(readerUser, prompt.ID, prompt.Buttons[0]).ID); !strings.Contains(got.Original.Content, "Waiting for someone holding admin") {
		t.Fatalf("the asker's Run: %q", got.Original.Content)
	}
	var req fakeMessage
	e.fake.WaitFor(t, "the approval request", func() bool {
		for _, m := range e.fake.ChannelMessages(e.fake.ChannelID) {
			if strings.Contains(m.Content, "asks to run fs.writeFile") && len(m.Buttons) == 2 && strings.HasPrefix(m.Buttons[0], "cf:approve:") {
				req = m
				return true
			}
		}
		return false
	})
	if got := e.answer(e.press(readerUser, req.ID, req.Buttons[0]).ID); !strings.Contains(got.Original.Content, "someone else must approve") {
		t.Fatalf("the asker's Approve: %q", got.Original.Content)
	}
	if _, err := os.Stat(filepath.Join(e.ws, "approved.txt")); err == nil {
		t.Fatal("written before an approver approved")
	}
	if got := e.answer(e.press(adminUser, req.ID, req.Buttons[0]).ID); got.Original.Content != "Approved: running it." {
		t.Fatalf("the approver's Approve: %q", got.Original.Content)
	}
	// The press is answered once decided; the call runs on.
	e.fake.WaitFor(t, "the approved call's run", func() bool {
		_, err := os.Stat(filepath.Join(e.ws, "approved.txt"))
		return err == nil
	})
}
