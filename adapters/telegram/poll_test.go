package telegram

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	"github.com/a6afc2ce/hermes-hub/internal/testkit"
	"github.com/a6afc2ce/hermes-hub/store"

	"strings"
	"testing"
	"time"

	"github.com/a6afc2ce/hermes-hub/adapters/telegram/telegramtest"
	"github.com/a6afc2ce/hermes-hub/chat"
	"github.com/a6afc2ce/hermes-hub/clock"
)

func storedOffset(t testing.TB, h *harness) int64 {
	t.Helper()
	v, err := h.rt.State.Cursors("telegram").Cursor(offsetCursor(h.fake.BotID()))
	if err != nil {
		t.Fatal(err)
	}
	if v == "" {
		return 0
	}
	var s savedOffset
	if err := json.Unmarshal([]byte(v), &s); err != nil {
		t.Fatal(err)
	}
	return s.Offset
}

func TestPollingTurnAndReply(t *testing.T) {
	f := newFakeBot(t)
	h := startHarness(t, f, hopts{})
	id := telegramtest.NextUpdateID()
	f.Push(telegramtest.TextUpdate(id, 1, 1, 10, "/fs_listdir@HermesTestBot ."))
	testkit.WaitFor(t, "the listing", func() bool { return len(f.MessagesTo("1")) == 1 })
	m := f.MessagesTo("1")[0]
	if !strings.Contains(m.Text, "README.md") || m.ReplyTo != "10" || m.ParseMode != "HTML" || m.ThreadID != "" {
		t.Fatalf("reply %+v", m)
	}
	// The offset moves past the update once the turn is recorded, and is
	// stored before the next getUpdates.
	testkit.WaitFor(t, "the stored offset", func() bool { return storedOffset(t, h) == int64(id)+1 })
	rec, err := h.rt.Ledger.Get("telegram.1.10")
	if err != nil || rec == nil || rec.State != store.TurnDone {
		t.Fatalf("ledger record %+v, %v", rec, err)
	}
	calls := f.CallsOf("getUpdates")
	if got := calls[0].Params.Get("allowed_updates"); got != `["message","edited_message","callback_query"]` {
		t.Fatalf("allowed_updates %q", got)
	}
	if len(f.CallsOf("deleteWebhook")) == 0 {
		t.Fatal("polling mode must delete any webhook first")
	}
}

// TestPollingDuplicateUpdateIDs: an update that arrives twice in one answer,
// and again after its offset was passed, runs once and is answered once.
func TestPollingDuplicateUpdateIDs(t *testing.T) {
	f := newFakeBot(t)
	h := startHarness(t, f, hopts{noStart: true})
	id := telegramtest.NextUpdateID()
	u := telegramtest.TextUpdate(id, 1, 1, 11, "/test_count dup")
	f.Push(u, u)
	f.DuplicateNextUpdates() // and the whole answer repeated once more
	h.run()
	testkit.WaitFor(t, "the reply", func() bool { return len(f.MessagesTo("1")) >= 1 })
	testkit.WaitFor(t, "the stored offset", func() bool { return storedOffset(t, h) == int64(id)+1 })
	// Telegram sending it again later (a lost acknowledgement) changes nothing.
	f.Push(u)
	next := telegramtest.NextUpdateID()
	f.Push(telegramtest.TextUpdate(next, 1, 1, 12, "/test_count after"))
	testkit.WaitFor(t, "the next reply", func() bool { return h.tv.count("after") == 1 && len(f.MessagesTo("1")) >= 2 })
	if n := h.tv.count("dup"); n != 1 {
		t.Fatalf("the duplicated update ran %d times", n)
	}
	replies := 0
	for _, m := range f.MessagesTo("1") {
		if m.ReplyTo == "11" {
			replies++
		}
	}
	if replies != 1 {
		t.Fatalf("%d replies to the duplicated message", replies)
	}
}

// TestPolling5xxBurstBacksOff: getUpdates failing (HTML 502s, a JSON 500)
// is retried with backoff on the clock, the board says degraded, and the
// adapter recovers and handles the message.
func TestPolling5xxBurstBacksOff(t *testing.T) {
	f := newFakeBot(t)
	clk := clock.NewFake(time.Now())
	f.Inject("getUpdates", telegramtest.Fault{HTMLStatus: 502}, telegramtest.Fault{HTMLStatus: 502}, telegramtest.Fault{Code: 500, Description: "Internal Server Error"}, telegramtest.Fault{HTMLStatus: 503})
	h := startHarness(t, f, hopts{clk: clk, noStart: true})
	h.run()
	testkit.WaitFor(t, "backoff after a failed getUpdates", func() bool { return clk.Pending() > 0 && h.boardState() == "degraded" })
	autoAdvance(t, clk)
	f.Push(telegramtest.TextUpdate(telegramtest.NextUpdateID(), 1, 1, 13, "/whoami"))
	testkit.WaitFor(t, "the reply after the burst", func() bool { return len(f.MessagesTo("1")) == 1 })
	testkit.WaitFor(t, "running again", func() bool { return h.boardState() == "running" })
	if n := len(f.CallsOf("getUpdates")); n < 5 {
		t.Fatalf("%d getUpdates calls, want the 4 failures and a success", n)
	}
	if !strings.Contains(f.MessagesTo("1")[0].Text, "telegram:1") {
		t.Fatalf("reply %q", f.MessagesTo("1")[0].Text)
	}
}

// TestPollingSlowGetUpdatesDoesNotBlockShutdown: a getUpdates that hangs far
// past its timeout is cancelled when the adapter stops.
func TestPollingSlowGetUpdatesDoesNotBlockShutdown(t *testing.T) {
	f := newFakeBot(t)
	f.SetPollDelay(time.Hour)
	h := startHarness(t, f, hopts{})
	testkit.WaitFor(t, "a getUpdates in flight", func() bool { return len(f.CallsOf("getUpdates")) > 0 })
	stopped := make(chan struct{})
	go func() {
		h.stop()
		close(stopped)
	}()
	select {
	case <-stopped:
	case <-time.After(20 * time.Second):
		t.Fatal("Run is stuck in a slow getUpdates after cancel")
	}
	if s := h.boardState(); s != "stopped" {
		t.Fatalf("board %q after stop", s)
	}
}

// TestPollingForumTopicAndGroups: a topic message is answered in its topic
// (message_thread_id on the reply), the directory names it "Chat / Topic";
// a command for another bot is dropped but acknowledged; a stranger is
// denied with one short reply.
func TestPollingForumTopicAndGroups(t *testing.T) {
	f := newFakeBot(t)
	h := startHarness(t, f, hopts{})
	other := telegramtest.NextUpdateID()
	f.Push(telegramtest.TextUpdate(other, -100300, 1, 20, "/verbs@OtherBot", telegramtest.InTopic(44, "Deploys")))
	topic := telegramtest.NextUpdateID()
	f.Push(telegramtest.TextUpdate(topic, -100300, 1, 21, "/fs_listdir .", telegramtest.InTopic(44, "Deploys")))
	testkit.WaitFor(t, "the topic reply", func() bool { return len(f.MessagesTo("-100300")) == 1 })
	m := f.MessagesTo("-100300")[0]
	if m.ThreadID != "44" || m.ReplyTo != "21" || !strings.Contains(m.Text, "README.md") {
		t.Fatalf("topic reply %+v", m)
	}
	if _, err := h.rt.Ledger.Get("telegram.-100300.20"); err != nil {
		t.Fatal(err)
	}
	if rec, _ := h.rt.Ledger.Get("telegram.-100300.20"); rec != nil {
		t.Fatalf("a command for another bot reached the hub: %+v", rec)
	}
	testkit.WaitFor(t, "the offset past both", func() bool { return storedOffset(t, h) == int64(topic)+1 })
	if h.rt.Directory() == nil {
		t.Fatal("no channel directory")
	}
	e, ok := h.rt.Directory().Get(chat.ChannelKey{Platform: chat.Telegram, ChatID: "-100300", ThreadID: "44"})
	if !ok || e.Display != "Ops / Deploys" {
		t.Fatalf("directory entry %+v, %v", e, ok)
	}

	f.Push(telegramtest.TextUpdate(telegramtest.NextUpdateID(), 99, 99, 22, "/fs_listdir ."))
	testkit.WaitFor(t, "the denial", func() bool { return len(f.MessagesTo("99")) == 1 })
	if d := f.MessagesTo("99")[0].Text; !strings.Contains(d, "telegram:99") || strings.Contains(d, "README.md") {
		t.Fatalf("denial %q", d)
	}
}

// TestPollingEditedMessage: an edit is a turn of its own.
func TestPollingEditedMessage(t *testing.T) {
	f := newFakeBot(t)
	startHarness(t, f, hopts{})
	f.Push(telegramtest.TextUpdate(telegramtest.NextUpdateID(), 1, 1, 30, "/test_count e"))
	edit := telegramtest.TextUpdate(telegramtest.NextUpdateID(), 1, 1, 30, "/test_count e")
	edit["edited_message"] = edit["message"]
	delete(edit, "message")
	edit["edited_message"].(map[string]any)["edit_date"] = time.Now().Unix()
	f.Push(edit)
	testkit.WaitFor(t, "two replies", func() bool { return len(f.MessagesTo("1")) == 2 })
}

// TestTypingIndicator: a turn running longer than a second shows "typing…"
// in its topic, renewed while it runs, and not after it ends.
func TestTypingIndicator(t *testing.T) {
	f := newFakeBot(t)
	clk := clock.NewFake(time.Now())
	h := startHarness(t, f, hopts{clk: clk})
	h.waitRunning()
	f.Push(telegramtest.TextUpdate(telegramtest.NextUpdateID(), -100300, 1, 40, "/test_block slow", telegramtest.InTopic(44, "Deploys")))
	<-h.tv.started // the typing timer is armed before the hub is called
	if n := len(f.CallsOf("sendChatAction")); n != 0 {
		t.Fatalf("typing shown before a second passed: %d", n)
	}
	clk.Advance(typingAfter)
	calls := f.CallsOf("sendChatAction")
	if len(calls) != 1 || calls[0].Params.Get("chat_id") != "-100300" || calls[0].Params.Get("message_thread_id") != "44" || calls[0].Params.Get("action") != "typing" {
		t.Fatalf("chat actions %+v", calls)
	}
	clk.Advance(typingEvery)
	if n := len(f.CallsOf("sendChatAction")); n != 2 {
		t.Fatalf("%d chat actions after renewal, want 2", n)
	}
	close(h.tv.release)
	testkit.WaitFor(t, "the reply", func() bool { return len(f.MessagesTo("-100300")) == 1 })
	testkit.WaitFor(t, "the typing indicator stopped", func() bool { return h.ad.typers.Load() == 0 })
	clk.Advance(time.Minute)
	if n := len(f.CallsOf("sendChatAction")); n != 2 {
		t.Fatalf("typing continued after the turn ended: %d actions", n)
	}
}

// TestSetMyCommands: the menu holds the verbs a default role may run (here
// the built-in reader: read-only verbs) and the built-ins.
func TestSetMyCommands(t *testing.T) {
	f := newFakeBot(t)
	h := startHarness(t, f, hopts{defaults: []string{"reader"}})
	h.waitRunning()
	calls := f.CallsOf("setMyCommands")
	if len(calls) != 1 {
		t.Fatalf("%d setMyCommands calls", len(calls))
	}
	var menu []BotCommand
	if err := json.Unmarshal([]byte(calls[0].Params.Get("commands")), &menu); err != nil {
		t.Fatal(err)
	}
	names := map[string]bool{}
	for _, c := range menu {
		if !commandRE.MatchString(c.Command) {
			t.Fatalf("bad command %q", c.Command)
		}
		names[c.Command] = true
	}
	if !names["fs_readfile"] || !names["fs_listdir"] || !names["help"] || names["proc_run"] || names["fs_writefile"] {
		t.Fatalf("menu %v: want read-only verbs and built-ins only", names)
	}
}

// TestSetMyCommandsFailureIsNotFatal: an API without setMyCommands (or
// sendChatAction) does not stop the adapter.
func TestSetMyCommandsFailureIsNotFatal(t *testing.T) {
	f := newFakeBot(t)
	f.Inject("setMyCommands", telegramtest.Fault{HTMLStatus: 500})
	startHarness(t, f, hopts{})
	f.Push(telegramtest.TextUpdate(telegramtest.NextUpdateID(), 1, 1, 50, "/whoami"))
	testkit.WaitFor(t, "the reply", func() bool { return len(f.MessagesTo("1")) == 1 })
}

// TestGetMeRetriesWhileTheAPIIsDown: getMe failing keeps the adapter
// degraded and retrying on the clock; it connects when the API is back.
func TestGetMeRetriesWhileTheAPIIsDown(t *testing.T) {
	f := newFakeBot(t)
	clk := clock.NewFake(time.Now())
	f.Inject("getMe", telegramtest.Fault{HTMLStatus: 502}, telegramtest.Fault{Code: 500, Description: "Internal Server Error"})
	h := startHarness(t, f, hopts{clk: clk})
	testkit.WaitFor(t, "degraded while getMe fails", func() bool { return h.boardState() == "degraded" && clk.Pending() > 0 })
	autoAdvance(t, clk)
	h.waitRunning()
	if n := len(f.CallsOf("getMe")); n != 3 {
		t.Fatalf("%d getMe calls, want 3", n)
	}
}

// TestRefusedTokenStopsTheAdapter: a token the API refuses is final, and the
// error names the setting, not the token.
func TestRefusedTokenStopsTheAdapter(t *testing.T) {
	f := newFakeBot(t)
	h := startHarness(t, f, hopts{noStart: true})
	f.SetToken("999:another-token-entirely") // the adapter's token is now unknown
	h.run()
	select {
	case err := <-h.done:
		if err == nil || !strings.Contains(err.Error(), "telegram.token") || strings.Contains(err.Error(), "TEST-secret") {
			t.Fatalf("Run: %v", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("Run did not give up on a refused token")
	}
	h.cancel = nil // Run has returned
}

// TestStopWaitsForTheTurnInFlight: a stop during a turn lets the turn finish
// (within the grace period) and records it; nothing is left half-done.
func TestStopWaitsForTheTurnInFlight(t *testing.T) {
	f := newFakeBot(t)
	h := startHarness(t, f, hopts{})
	id := telegramtest.NextUpdateID()
	f.Push(telegramtest.TextUpdate(id, 1, 1, 60, "/test_block stop"))
	<-h.tv.started
	h.cancel()
	time.AfterFunc(50*time.Millisecond, func() { close(h.tv.release) })
	if err := <-h.done; err != nil {
		t.Fatal(err)
	}
	h.cancel = nil
	rec, err := h.rt.Ledger.Get("telegram.1.60")
	if err != nil || rec == nil || rec.State != store.TurnDone || rec.Code != "" {
		t.Fatalf("the turn in flight: %+v, %v", rec, err)
	}
	if got := storedOffset(t, h); got != int64(id)+1 {
		t.Fatalf("stored offset %d, want %d", got, id+1)
	}
}

// TestOverflowAsDocument: output needing more than a few chunks arrives as
// its head (replying to the command) and then the whole output as a
// document, both in the topic. (A long file read whole goes as the file
// itself: TestFileReplyIsADocument.)
func TestOverflowAsDocument(t *testing.T) {
	f := newFakeBot(t)
	h := startHarness(t, f, hopts{})
	var b strings.Builder
	for i := range 3000 {
		fmt.Fprintf(&b, "line %04d <%s>\n", i, strings.Repeat("x", 20))
	}
	if err := os.WriteFile(filepath.Join(h.ws, "big.txt"), []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	f.Push(telegramtest.TextUpdate(telegramtest.NextUpdateID(), -100300, 1, 95, "/fs_readrange big.txt 1 3000", telegramtest.InTopic(44, "Deploys")))
	testkit.WaitFor(t, "head and document", func() bool { return len(f.MessagesTo("-100300")) == 2 })
	got := f.MessagesTo("-100300")
	head, doc := got[0], got[1]
	if head.Method != "sendMessage" || head.ReplyTo != "95" || head.ThreadID != "44" || !strings.Contains(head.Text, "1: line 0000 &lt;xxx") {
		t.Fatalf("head %+v", head)
	}
	if doc.Method != "sendDocument" || doc.ThreadID != "44" || doc.ReplyTo != "" || !strings.Contains(string(doc.Doc), "3000: line 2999 <") || doc.Caption == "" {
		t.Fatalf("document %s %q (%d bytes), caption %q", doc.Method, doc.DocName, len(doc.Doc), doc.Caption)
	}
}
