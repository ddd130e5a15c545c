package telegram

import (
	"strings"
	"testing"
	"time"

	"github.com/a6afc2ce/hermes-hub/adapters/telegram/telegramtest"
	"github.com/a6afc2ce/hermes-hub/clock"
	"github.com/a6afc2ce/hermes-hub/internal/testkit"
)

func progressHarness(t *testing.T) (*harness, *telegramtest.Server, *clock.Fake) {
	t.Helper()
	f := newFakeBot(t)
	clk := clock.NewFake(time.Date(2026, 11, 21, 0, 0, 0, 0, time.UTC))
	h := startHarness(t, f, hopts{clk: clk, progress: true})
	h.waitRunning()
	return h, f, clk
}

// progressMessage waits for the progress message (the one with a Cancel
// button) and returns it.
func progressMessage(t *testing.T, f *telegramtest.Server) telegramtest.Message {
	t.Helper()
	var pm telegramtest.Message
	testkit.WaitFor(t, "the progress message", func() bool {
		for _, m := range f.Messages() {
			if strings.Contains(m.ReplyMarkup, `"callback_data":"cancel:`) {
				pm = m
				return true
			}
		}
		return false
	})
	return pm
}

func editCalls(f *telegramtest.Server) int { return len(f.CallsOf("editMessageText")) }

// TestProgressEditsThenResult: a long call shows one progress message,
// edited within the edit rate (a 429's retry_after is waited out), then
// finalised before the result's chunk is sent, once.
func TestProgressEditsThenResult(t *testing.T) {
	h, f, clk := progressHarness(t)
	f.Push(telegramtest.TextUpdate(telegramtest.NextUpdateID(), 1, 1, 10, "/test_block a"))
	<-h.tv.started
	clk.Advance(2 * time.Second)
	if n := len(f.Messages()); n != 0 {
		t.Fatalf("%d messages before the progress threshold", n)
	}
	clk.Advance(time.Second)
	pm := progressMessage(t, f)
	if !strings.Contains(pm.Text, "test.block running for 3s") || pm.ReplyTo != "10" {
		t.Fatalf("progress message %+v", pm)
	}
	clk.Advance(3 * time.Second)
	testkit.WaitFor(t, "an edit", func() bool { return len(f.Edits()) == 1 })
	if e := f.Edits()[0]; e.MessageID != pm.MessageID || !strings.Contains(e.Text, "running for 6s") || !strings.Contains(e.ReplyMarkup, "cancel:") {
		t.Fatalf("edit %+v", e)
	}
	// A 429: no edit is even tried until retry_after has passed.
	f.Inject("editMessageText", telegramtest.TooManyRequests(10))
	clk.Advance(3 * time.Second) // t=9: tried, 429
	testkit.WaitFor(t, "the refused edit", func() bool { return editCalls(f) == 2 })
	for range 3 {
		clk.Advance(3 * time.Second) // t=12, 15, 18: within the 10 s
	}
	if n := editCalls(f); n != 2 {
		t.Fatalf("%d edit calls during retry_after", n)
	}
	clk.Advance(3 * time.Second) // t=21: allowed again
	testkit.WaitFor(t, "the edit after retry_after", func() bool { return len(f.Edits()) == 2 })

	clk.Advance(time.Second) // the final edit may follow the last one after 1 s
	close(h.tv.release)
	testkit.WaitFor(t, "the reply", func() bool { return len(f.Messages()) == 2 })
	edits := f.Edits()
	last := edits[len(edits)-1]
	if len(edits) != 3 || !strings.Contains(last.Text, "test.block finished after") || last.ReplyMarkup != "" {
		t.Fatalf("final edit %+v (edits %d)", last, len(edits))
	}
	// The fake stamps edits and sends under one lock: the final edit came
	// first.
	if reply := f.Messages()[1]; reply.At.Before(last.At) {
		t.Fatalf("the reply (%v) was sent before the final edit (%v)", reply.At, last.At)
	}
	// Later ticks edit nothing; the reply was sent once.
	clk.Advance(10 * time.Second)
	if n := len(f.Edits()); n != 3 {
		t.Fatalf("%d edits after the end", n)
	}
	if msgs := f.Messages(); len(msgs) != 2 || msgs[1].MessageID == pm.MessageID {
		t.Fatalf("messages %+v", msgs)
	}
}

// TestCancelButtonAndCommand: the Cancel button stops the call for its
// caller only; /cancel does not wait behind the call it stops.
func TestCancelButtonAndCommand(t *testing.T) {
	for _, how := range []string{"button", "command"} {
		t.Run(how, func(t *testing.T) {
			h, f, clk := progressHarness(t)
			f.Push(telegramtest.TextUpdate(telegramtest.NextUpdateID(), 1, 1, 10, "/test_block a"))
			<-h.tv.started
			clk.Advance(3 * time.Second)
			pm := progressMessage(t, f)
			// telegram:2 (reader) may not stop telegram:1's call.
			f.Push(telegramtest.CallbackUpdate(telegramtest.NextUpdateID(), 1, 2, pm.MessageID, "cancel:telegram.1.10"))
			// The poller pauses on the fake clock between polls: nudge it.
			nudge := func() { clk.Advance(100 * time.Millisecond) }
			testkit.WaitFor(t, "the refusal", func() bool { nudge(); return len(f.CallsOf("answerCallbackQuery")) == 1 })
			if got := f.CallsOf("answerCallbackQuery")[0].Params.Get("text"); !strings.Contains(got, "You may not cancel test.block") {
				t.Fatalf("answer %q", got)
			}
			if how == "button" {
				f.Push(telegramtest.CallbackUpdate(telegramtest.NextUpdateID(), 1, 1, pm.MessageID, "cancel:telegram.1.10"))
			} else {
				f.Push(telegramtest.TextUpdate(telegramtest.NextUpdateID(), 1, 1, 11, "/cancel"))
			}
			var reply telegramtest.Message
			testkit.WaitFor(t, "the cancelled call's reply", func() bool {
				nudge()
				for _, m := range f.Messages() {
					if m.ReplyTo == "10" && m.MessageID != pm.MessageID {
						reply = m
						return true
					}
				}
				return false
			})
			if !strings.Contains(reply.Text, "Cancelled by telegram:1") || !strings.Contains(reply.Text, "(cancelled)") {
				t.Fatalf("reply %q", reply.Text)
			}
			testkit.WaitFor(t, "the final edit", func() bool {
				e := f.Edits()
				return len(e) > 0 && strings.Contains(e[len(e)-1].Text, "was cancelled by telegram:1")
			})
		})
	}
}
