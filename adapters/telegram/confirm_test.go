package telegram

import (
	"os"
	"path/filepath"
	"strconv"
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

// TestPressesInUpdateOrder: presses on one held call are decided in the
// order Telegram gives them, whatever arrives in one batch: a Cancel
// pressed before a Run cancels, and the Run says it was decided.
func TestPressesInUpdateOrder(t *testing.T) {
	f := newFakeBot(t)
	h := startHarness(t, f, hopts{configure: func(c *config.Config) {
		c.Access.Roles["deleter"] = config.Role{Verbs: []string{"fs.*"}, Confirm: []string{"fs.delete*"}}
		c.Access.Grants["telegram:9"] = []string{"deleter"}
	}})
	h.waitRunning()
	const calls = 12
	for i := range calls {
		name := "f" + strconv.Itoa(i) + ".log"
		os.WriteFile(filepath.Join(h.ws, name), []byte("x"), 0o644)
		f.Push(telegramtest.TextUpdate(telegramtest.NextUpdateID(), int64(-100600-i), 9, 1, "/fs.deleteFile "+name))
	}
	var prompts []telegramtest.Message
	testkit.WaitFor(t, "the prompts", func() bool {
		prompts = prompts[:0]
		for i := range calls {
			if m := f.MessagesTo(strconv.Itoa(-100600 - i)); len(m) == 1 {
				prompts = append(prompts, m[0])
			}
		}
		return len(prompts) == calls
	})
	for _, p := range prompts {
		f.Press(p, "Cancel", 9)
		f.Press(p, "Run", 9)
	}
	testkit.WaitFor(t, "every press answered", func() bool { return len(toasts(f)) == 2*calls })
	for i := range calls {
		if _, err := os.Stat(filepath.Join(h.ws, "f"+strconv.Itoa(i)+".log")); err != nil {
			t.Errorf("call %d: Cancel pressed before Run, and it ran", i)
		}
	}
}

// TestRunPressAnsweredBeforeTheCallEnds: a Run press is answered as soon
// as it is decided, while the call it lets run goes on (a long call would
// otherwise leave the button spinning, and Telegram drops an answer that
// comes too late); a second press on the same call is answered meanwhile.
func TestRunPressAnsweredBeforeTheCallEnds(t *testing.T) {
	f := newFakeBot(t)
	h := startHarness(t, f, hopts{configure: func(c *config.Config) {
		c.Access.Roles["runner"] = config.Role{Verbs: []string{"proc.run"}, Confirm: []string{"proc.run"}}
		c.Access.Grants["telegram:9"] = []string{"runner"}
		c.Verbs.Proc.User = "root"
	}})
	h.waitRunning()
	f.Push(telegramtest.TextUpdate(telegramtest.NextUpdateID(), -100700, 9, 1,
		"/proc.run sh -c \"while [ ! -f go ]; do sleep 0.05; done; touch done\""))
	testkit.WaitFor(t, "the prompt", func() bool { return len(f.MessagesTo("-100700")) == 1 })
	prompt := f.MessagesTo("-100700")[0]
	f.Press(prompt, "Run", 9)
	f.Press(prompt, "Run", 9)
	if got := waitToast(t, f, 1); got != "Running it." {
		t.Fatalf("the Run press: %q", got)
	}
	if got := waitToast(t, f, 2); !strings.Contains(got, "already decided") {
		t.Fatalf("the second press, while the call runs: %q", got)
	}
	if _, err := os.Stat(filepath.Join(h.ws, "done")); err == nil {
		t.Fatal("the call ended before it was let go")
	}
	os.WriteFile(filepath.Join(h.ws, "go"), nil, 0o644)
	testkit.WaitFor(t, "the call's end", func() bool {
		_, err := os.Stat(filepath.Join(h.ws, "done"))
		return err == nil
	})
}
