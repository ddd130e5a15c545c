package telegram

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/a6afc2ce/hermes-hub/adapters/telegram/telegramtest"
	"github.com/a6afc2ce/hermes-hub/config"
	"github.com/a6afc2ce/hermes-hub/internal/testkit"
)

// toast is the text of the last answerCallbackQuery.
func toasts(f *telegramtest.Server) []string {
	var out []string
	for _, c := range f.CallsOf("answerCallbackQuery") {
		out = append(out, c.Params.Get("text"))
	}
	return out
}

func waitToast(t *testing.T, f *telegramtest.Server, n int) string {
	t.Helper()
	testkit.WaitFor(t, "the press's answer", func() bool { return len(toasts(f)) >= n })
	return toasts(f)[n-1]
}

// TestConfirmButtons: a verb held for confirmation is answered with the
// exact call and an inline keyboard (Run, Cancel); a press by someone else
// is answered, as a toast, that only the asker may; the asker's Run runs
// it (the reply follows in the group); Run pressed again says it was
// decided. A second held call's Cancel runs nothing.
func TestConfirmButtons(t *testing.T) {
	f := newFakeBot(t)
	h := startHarness(t, f, hopts{configure: func(c *config.Config) {
		c.Access.Roles["deleter"] = config.Role{Verbs: []string{"fs.*"}, Confirm: []string{"fs.delete*"}}
		c.Access.Grants["telegram:9"] = []string{"deleter"}
	}})
	h.waitRunning()
	for _, n := range []string{"a.log", "b.log"} {
		os.WriteFile(filepath.Join(h.ws, n), []byte("x"), 0o644)
	}
	const group = -100500
	f.Push(telegramtest.TextUpdate(telegramtest.NextUpdateID(), group, 9, 1, "/fs.deleteFile a.log"))
	testkit.WaitFor(t, "the prompt", func() bool { return len(f.MessagesTo("-100500")) == 1 })
	prompt := f.MessagesTo("-100500")[0]
	if !strings.Contains(prompt.Text, `"verb":"fs.deleteFile"`) || !strings.Contains(prompt.ReplyMarkup, `"text":"Run"`) || !strings.Contains(prompt.ReplyMarkup, `"text":"Cancel"`) {
		t.Fatalf("prompt %+v", prompt)
	}
	if !f.Press(prompt, "Run", 8) {
		t.Fatal("no Run button")
	}
	if got := waitToast(t, f, 1); !strings.Contains(got, "Only telegram:9") {
		t.Fatalf("a press by someone else: %q", got)
	}
	if _, err := os.Stat(filepath.Join(h.ws, "a.log")); err != nil {
		t.Fatal("someone else's press ran the call")
	}
	f.Press(prompt, "Run", 9)
	if got := waitToast(t, f, 2); got != "Running it." {
		t.Fatalf("the asker's Run: %q", got)
	}
	testkit.WaitFor(t, "the call's reply", func() bool { return len(f.MessagesTo("-100500")) == 2 })
	if _, err := os.Stat(filepath.Join(h.ws, "a.log")); err == nil {
		t.Fatal("Run did not run the call")
	}
	f.Press(prompt, "Run", 9)
	if got := waitToast(t, f, 3); !strings.Contains(got, "already decided") {
		t.Fatalf("Run pressed twice: %q", got)
	}

	f.Push(telegramtest.TextUpdate(telegramtest.NextUpdateID(), group, 9, 2, "/fs.deleteFile b.log"))
	testkit.WaitFor(t, "the second prompt", func() bool { return len(f.MessagesTo("-100500")) == 3 })
	f.Press(f.MessagesTo("-100500")[2], "Cancel", 9)
	if got := waitToast(t, f, 4); !strings.Contains(got, "Cancelled") {
		t.Fatalf("Cancel: %q", got)
	}
	if _, err := os.Stat(filepath.Join(h.ws, "b.log")); err != nil {
		t.Fatal("Cancel ran the call")
	}
}
