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
	e := newEnv(t, envOptions{config: func(c *config.Config) {
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
