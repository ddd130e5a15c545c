package telegram

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/a6afc2ce/hermes-hub/internal/testkit"

	"github.com/a6afc2ce/hermes-hub/adapters/telegram/telegramtest"
	"github.com/a6afc2ce/hermes-hub/chat"
	"github.com/a6afc2ce/hermes-hub/clock"
	"github.com/a6afc2ce/hermes-hub/config"
	"github.com/a6afc2ce/hermes-hub/outbox"
)

// senderOnly is an adapter without a runtime, used only as a Sender.
func senderOnly(t testing.TB, f *telegramtest.Server, clk clock.Clock, l Limits) *Adapter {
	t.Helper()
	cfg := config.Telegram{Enabled: true, Token: config.NewSecret(f.Token()), APIEndpoint: f.URL(), Mode: ModePolling, PollTimeout: config.Duration(2 * time.Second)}
	cfg.Rate.PerChat, cfg.Rate.PerChatBurst, cfg.Rate.PerGroupPerMinute, cfg.Rate.GlobalPerSecond = l.PerChat, l.PerChatBurst, l.PerGroupPerMinute, l.GlobalPerSecond
	a, err := New(Options{Config: cfg, Clock: clk, Logger: testkit.Discard()})
	if err != nil {
		t.Fatal(err)
	}
	return a
}

func entryFor(target, text string, index, total int, meta map[string]string) *outbox.Entry {
	k, err := chat.ParseKey(target)
	if err != nil {
		panic(err)
	}
	return &outbox.Entry{
		ID: outbox.ID(outbox.KindReply, "telegram.1.1", k, index), Kind: outbox.KindReply, TurnID: "telegram.1.1",
		Target: k, Index: index, Total: total, Text: text, Meta: meta, State: outbox.StatePending,
	}
}

func TestSendHTMLReplyAndTopic(t *testing.T) {
	f := newFakeBot(t)
	a := senderOnly(t, f, nil, Limits{})
	meta := map[string]string{MetaReplyTo: "77", "private": "1"}
	target := "chat:telegram:-100300:44"
	for i, text := range []string{"`a<b>` (1/2)", "```go\nx := 1 & 2\n```\n(2/2)"} {
		rc, err := a.Sender().Send(withTimeout(t), entryFor(target, text, i, 2, meta))
		if err != nil {
			t.Fatalf("chunk %d: %v", i, err)
		}
		if rc.MessageID == "" {
			t.Fatalf("chunk %d: no message id in the receipt", i)
		}
	}
	got := f.MessagesTo("-100300")
	if len(got) != 2 {
		t.Fatalf("sent %d messages, want 2", len(got))
	}
	if got[0].Text != "<code>a&lt;b&gt;</code> (1/2)" || got[0].ParseMode != "HTML" || got[0].ReplyTo != "77" || got[0].ThreadID != "44" {
		t.Errorf("first chunk %+v", got[0])
	}
	if got[1].Text != "<pre><code class=\"language-go\">x := 1 &amp; 2</code></pre>\n(2/2)" || got[1].ReplyTo != "" || got[1].ThreadID != "44" {
		t.Errorf("second chunk %+v: only the first chunk replies; every chunk carries the topic", got[1])
	}
}

func TestSend429RetriesAfterExactly(t *testing.T) {
	f := newFakeBot(t)
	a := senderOnly(t, f, nil, Limits{})
	f.Inject("sendMessage", telegramtest.Fault{Code: 429, Description: "Too Many Requests: retry after 7", RetryAfter: 7})
	_, err := a.Sender().Send(withTimeout(t), entryFor("chat:telegram:42", "hi", 0, 1, nil))
	d, ok := outbox.RetryAfterOf(err)
	if !ok || d != 7*time.Second {
		t.Fatalf("want retry after exactly 7s, got %v (%v)", d, err)
	}
	if _, err := a.Sender().Send(withTimeout(t), entryFor("chat:telegram:42", "hi", 0, 1, nil)); err != nil {
		t.Fatalf("after the wait the chunk goes: %v", err)
	}
}

func TestSendCantParseEntitiesFallsBackToPlainText(t *testing.T) {
	f := newFakeBot(t)
	a := senderOnly(t, f, nil, Limits{})
	f.Inject("sendMessage", telegramtest.Fault{Code: 400, Description: "Bad Request: can't parse entities: Unsupported start tag \"x\" at byte offset 3"})
	text := "``` weird\n<x>\n```"
	if _, err := a.Sender().Send(withTimeout(t), entryFor("chat:telegram:42", text, 0, 1, map[string]string{MetaReplyTo: "5"})); err != nil {
		t.Fatal(err)
	}
	calls := f.CallsOf("sendMessage")
	if len(calls) != 2 || calls[0].Params.Get("parse_mode") != "HTML" || calls[1].Params.Get("parse_mode") != "" {
		t.Fatalf("want an HTML attempt then a plain one, got %d calls", len(calls))
	}
	got := f.MessagesTo("42")
	if len(got) != 1 || got[0].Text != text || got[0].ReplyTo != "5" {
		t.Fatalf("plain resend %+v", got)
	}
	// Only once: a chunk refused as plain text too is a dead letter.
	f.Inject("sendMessage",
		telegramtest.Fault{Code: 400, Description: "Bad Request: can't parse entities: x"},
		telegramtest.Fault{Code: 400, Description: "Bad Request: can't parse entities: x"})
	_, err := a.Sender().Send(withTimeout(t), entryFor("chat:telegram:42", "again", 0, 1, nil))
	if !outbox.IsPermanent(err) || len(f.CallsOf("sendMessage")) != 4 {
		t.Fatalf("want permanent after one plain retry, got %v after %d calls", err, len(f.CallsOf("sendMessage")))
	}
}

func TestSendPermanentFailures(t *testing.T) {
	f := newFakeBot(t)
	a := senderOnly(t, f, nil, Limits{})
	f.Block("42", "Forbidden: bot was blocked by the user")
	f.RefuseChat("43", "Bad Request: chat not found")
	f.RefuseChat("-44", "Bad Request: not enough rights to send text messages to the chat")
	for _, chatID := range []string{"42", "43", "-44"} {
		_, err := a.Sender().Send(withTimeout(t), entryFor("chat:telegram:"+chatID, "hi", 0, 1, nil))
		if !outbox.IsPermanent(err) {
			t.Errorf("chat %s: want a permanent error, got %v", chatID, err)
		}
	}
	_, err := a.Sender().Send(withTimeout(t), entryFor("chat:discord:42", "hi", 0, 1, nil))
	if !outbox.IsPermanent(err) {
		t.Errorf("a discord target: want permanent, got %v", err)
	}
}

func TestSendTransientFailures(t *testing.T) {
	f := newFakeBot(t)
	a := senderOnly(t, f, nil, Limits{})
	f.Inject("sendMessage", telegramtest.Fault{HTMLStatus: 502}, telegramtest.Fault{Code: 500, Description: "Internal Server Error"}, telegramtest.Fault{Code: 429, Description: "Too Many Requests"})
	for i := range 3 {
		_, err := a.Sender().Send(withTimeout(t), entryFor("chat:telegram:42", "hi", 0, 1, nil))
		if !outbox.IsTransient(err) {
			t.Fatalf("attempt %d: want transient, got %v", i, err)
		}
		if strings.Contains(err.Error(), f.Token()) || strings.Contains(err.Error(), "TEST-secret") {
			t.Fatalf("the token leaked into %q", err)
		}
	}
}

// TestSendDocumentOverflow: an overflow attachment goes as sendDocument with
// its bytes and the entry's text as caption, in the topic; a failed attempt
// sends the same bytes again.
func TestSendDocumentOverflow(t *testing.T) {
	f := newFakeBot(t)
	a := senderOnly(t, f, nil, Limits{})
	data := bytes.Repeat([]byte("line <with> & stuff\n"), 5000)
	e := entryFor("chat:telegram:-100300:44", "output.txt (100000 bytes)", 1, 2, map[string]string{MetaReplyTo: "9"})
	e.Attachment = &chat.Attachment{Name: "output.txt", MIME: chat.AttachmentMIME, Data: data}
	f.Inject("sendDocument", telegramtest.Fault{Code: 502, Description: "Bad Gateway"})
	if _, err := a.Sender().Send(withTimeout(t), e); !outbox.IsTransient(err) {
		t.Fatalf("first attempt: want transient, got %v", err)
	}
	if _, err := a.Sender().Send(withTimeout(t), e); err != nil {
		t.Fatal(err)
	}
	got := f.MessagesTo("-100300")
	if len(got) != 1 || got[0].Method != "sendDocument" || !bytes.Equal(got[0].Doc, data) || got[0].DocName != "output.txt" ||
		got[0].Caption != "output.txt (100000 bytes)" || got[0].ThreadID != "44" || got[0].ReplyTo != "" {
		t.Fatalf("document %+v", got)
	}
	if calls := f.CallsOf("sendDocument"); len(calls) != 2 {
		t.Fatalf("%d sendDocument calls, want 2", len(calls))
	}
}

// TestSendPacing: with one message per second per chat and no burst, the
// second chunk to a chat is told to wait (without calling Telegram) and goes
// once its slot is due; other chats are not held back.
func TestSendPacing(t *testing.T) {
	f := newFakeBot(t)
	clk := clock.NewFake(t0)
	a := senderOnly(t, f, clk, Limits{PerChat: 1, PerChatBurst: 1, GlobalPerSecond: 30})
	s := a.Sender()
	if _, err := s.Send(withTimeout(t), entryFor("chat:telegram:42", "one", 0, 2, nil)); err != nil {
		t.Fatal(err)
	}
	_, err := s.Send(withTimeout(t), entryFor("chat:telegram:42", "two", 1, 2, nil))
	d, ok := outbox.RetryAfterOf(err)
	if !ok || d != paced(time.Second) || !errors.Is(err, errPaced) {
		t.Fatalf("want paced for 1s and the margin, got %v", err)
	}
	if n := len(f.CallsOf("sendMessage")); n != 1 {
		t.Fatalf("pacing must not call Telegram: %d calls", n)
	}
	if _, err := s.Send(withTimeout(t), entryFor("chat:telegram:43", "other", 0, 1, nil)); err == nil {
		t.Fatal("the global limit spaces messages to different chats too")
	} else if d, _ := outbox.RetryAfterOf(err); d != paced(time.Second/30) {
		t.Fatalf("another chat waits %s, want 1/30 s and the margin", d)
	}
	clk.Advance(paced(time.Second))
	if _, err := s.Send(withTimeout(t), entryFor("chat:telegram:42", "two", 1, 2, nil)); err != nil {
		t.Fatalf("the reserved slot is due: %v", err)
	}
}

// TestErrorsNeverCarryTheToken: the Bot API URL holds the token; errors of
// calls that got no answer must not.
func TestErrorsNeverCarryTheToken(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // nothing listens there now: connection refused
	token := "987654:SECRET-never-log-me"
	for _, endpoint := range []string{"http://" + addr, "http://" + addr + "/base/"} {
		api, err := newBotAPI(token, endpoint, &http.Client{Timeout: 5 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		_, err = api.call(context.Background(), "getMe", nil)
		if err == nil {
			t.Fatal("want an error")
		}
		if strings.Contains(err.Error(), "SECRET-never-log-me") {
			t.Fatalf("token in %q", err)
		}
	}
	for _, bad := range []string{"ftp://x", "http://", "127.0.0.1:80", "http://x/%zz", "http://x/?q=1"} {
		if _, err := newBotAPI(token, bad, http.DefaultClient); err == nil {
			t.Errorf("endpoint %q must be refused", bad)
		} else if strings.Contains(err.Error(), "SECRET") {
			t.Errorf("token in %q", err)
		}
	}
}

// TestLogsNeverCarryTheToken runs through failures of every kind with the
// logs captured: nothing logged holds the token.
func TestLogsNeverCarryTheToken(t *testing.T) {
	f := newFakeBot(t)
	var logs syncBuffer
	logger := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	clk := clock.NewFake(time.Now())
	f.Inject("getMe", telegramtest.Fault{HTMLStatus: 502})
	f.Inject("setMyCommands", telegramtest.Fault{Code: 400, Description: "Bad Request: BOT_COMMAND_INVALID"})
	f.Inject("getUpdates", telegramtest.Fault{HTMLStatus: 504}, telegramtest.Fault{Code: 409, Description: "Conflict: can't use getUpdates method while webhook is active"})
	f.Inject("sendMessage", telegramtest.Fault{Code: 500, Description: "Internal Server Error"}, telegramtest.Fault{Code: 400, Description: "Bad Request: can't parse entities"})
	h := startHarness(t, f, hopts{clk: clk, logger: logger})
	autoAdvance(t, clk)
	f.Push(telegramtest.TextUpdate(telegramtest.NextUpdateID(), 1, 1, 10, "/whoami"))
	testkit.WaitFor(t, "the reply", func() bool { return len(f.MessagesTo("1")) == 1 })
	h.stop()
	out := logs.String()
	if !strings.Contains(out, "getUpdates failed") || !strings.Contains(out, "command menu") {
		t.Fatalf("the failures were not logged:\n%s", out)
	}
	if strings.Contains(out, f.Token()) || strings.Contains(out, "TEST-secret-token") {
		t.Fatalf("the token is in the logs:\n%s", out)
	}
}
