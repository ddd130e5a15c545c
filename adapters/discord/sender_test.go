package discord

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/a6afc2ce/hermes-hub/adapters/discord/discordtest"
	"github.com/a6afc2ce/hermes-hub/chat"
	"github.com/a6afc2ce/hermes-hub/clock"
	"github.com/a6afc2ce/hermes-hub/hub"
	"github.com/a6afc2ce/hermes-hub/outbox"
)

// entry is a reply chunk for a channel, as the hub would enqueue it.
func entry(turn, channel string, index, total int, text string, meta map[string]string) *outbox.Entry {
	key := chat.ChatKey(chat.Discord, channel, "")
	return &outbox.Entry{
		ID: outbox.ID(outbox.KindReply, turn, key, index), Kind: outbox.KindReply, TurnID: turn, Target: key,
		Index: index, Total: total, Text: text, Meta: meta, State: outbox.StatePending,
	}
}

// deferred acknowledges an interaction at the fake as the adapter does and
// returns the reply meta the hub would copy onto its entries.
func (e *testEnv) deferred(id string, ephemeral bool, created time.Time) map[string]string {
	e.t.Helper()
	ref := interactionRef{ID: id, Token: "itok-" + id, AppID: e.fake.AppID, Ephemeral: ephemeral}
	if err := e.ad.deferInteraction(context.Background(), ref); err != nil {
		e.t.Fatal(err)
	}
	m := map[string]string{
		MetaInteractionID: id, MetaInteractionToken: ref.Token, MetaApplicationID: ref.AppID,
		MetaInteractionCreated: created.UTC().Format("2006-01-02T15:04:05.000Z07:00"),
	}
	if ephemeral {
		m[MetaEphemeral] = "1"
	}
	return m
}

func send(t *testing.T, e *testEnv, en *outbox.Entry) (outbox.Receipt, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	return e.ad.Sender().Send(ctx, en)
}

func mustSend(t *testing.T, e *testEnv, en *outbox.Entry) outbox.Receipt {
	t.Helper()
	r, err := send(t, e, en)
	if err != nil {
		t.Fatalf("send %s: %v", en.ID, err)
	}
	return r
}

// assertNoMentions checks that every message the adapter created or edited
// carried an empty allowed_mentions: output never pings anyone.
func assertNoMentions(t *testing.T, f *discordtest.Server) {
	t.Helper()
	n := 0
	for _, r := range f.RequestsTo("", "/") {
		isMessage := (r.Method == http.MethodPost && strings.HasPrefix(r.Path, "/channels/")) ||
			strings.HasPrefix(r.Path, "/webhooks/") && r.Method != http.MethodDelete
		if !isMessage {
			continue
		}
		n++
		var p struct {
			AllowedMentions *struct {
				Parse []string `json:"parse"`
			} `json:"allowed_mentions"`
		}
		if err := json.Unmarshal(r.Body, &p); err != nil || p.AllowedMentions == nil || p.AllowedMentions.Parse == nil || len(p.AllowedMentions.Parse) != 0 {
			t.Errorf("%s %s: allowed_mentions is not {\"parse\": []}: %s", r.Method, r.Path, r.Body)
		}
	}
	if n == 0 {
		t.Errorf("no message requests to check")
	}
}

func TestSendInteractionChunksInOrder(t *testing.T) {
	e := newEnv(t, envOptions{noRun: true})
	meta := e.deferred("930000000000000001", false, time.Now())
	ch := e.fake.ChannelID
	turn := "discord.i.930000000000000001"
	for i, text := range []string{"first", "second", "third"} {
		mustSend(t, e, entry(turn, ch, i, 3, text, meta))
	}
	var got []string
	for _, r := range e.fake.RequestsTo("", "/") {
		got = append(got, r.Method+" "+strings.Replace(r.Path, "itok-930000000000000001", "T", 1)+" "+r.Query)
	}
	want := []string{
		"POST /interactions/930000000000000001/T/callback ",
		"PATCH /webhooks/" + e.fake.AppID + "/T/messages/@original ",
		"POST /webhooks/" + e.fake.AppID + "/T wait=true",
		"POST /webhooks/" + e.fake.AppID + "/T wait=true",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("requests:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	c, _ := e.fake.Callback("930000000000000001")
	if c.Type != 5 || c.Flags != 0 || c.Original == nil || c.Original.Content != "first" {
		t.Errorf("callback = %+v", c)
	}
	fu := e.fake.Followups("itok-930000000000000001")
	if len(fu) != 2 || fu[0].Content != "second" || fu[1].Content != "third" || fu[0].Flags != 0 {
		t.Errorf("follow-ups = %+v", fu)
	}
	if n := len(e.fake.ChannelMessages(ch)); n != 0 {
		t.Errorf("%d channel messages, want none", n)
	}
	assertNoMentions(t, e.fake)
}

func TestSendExpiredTokenFallsBackToChannel(t *testing.T) {
	clk := clock.NewFake(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
	e := newEnv(t, envOptions{noRun: true, clock: clk})
	ch := e.fake.ChannelID

	// Expired by the clock: the webhook is not even tried.
	meta := e.deferred("930000000000000002", false, clk.Now())
	clk.Advance(InteractionTokenTTL)
	turn := "discord.i.930000000000000002"
	mustSend(t, e, entry(turn, ch, 0, 2, "late first", meta))
	mustSend(t, e, entry(turn, ch, 1, 2, "late second", meta))
	if n := len(e.fake.RequestsTo("", "/webhooks/")); n != 0 {
		t.Errorf("%d webhook requests after the token expired", n)
	}
	msgs := e.fake.ChannelMessages(ch)
	if len(msgs) != 2 || msgs[0].Content != "late first" || msgs[1].Content != "late second" || msgs[0].Nonce == "" {
		t.Fatalf("channel messages = %+v", msgs)
	}

	// Refused by Discord although the clock says it is fresh: the chunk
	// goes to the channel too.
	meta = e.deferred("930000000000000003", false, clk.Now())
	e.fake.Expire("itok-930000000000000003")
	mustSend(t, e, entry("discord.i.930000000000000003", ch, 0, 1, "refused", meta))
	if n := len(e.fake.RequestsTo(http.MethodPatch, "/webhooks/")); n != 1 {
		t.Errorf("%d edits tried, want 1", n)
	}
	msgs = e.fake.ChannelMessages(ch)
	if len(msgs) != 3 || msgs[2].Content != "refused" {
		t.Fatalf("channel messages = %+v", msgs)
	}
	assertNoMentions(t, e.fake)
}

// TestSendResendReusesNonce simulates a crash between a successful send
// and its delivered mark: the outbox sends the same entry again, and the
// nonce makes Discord return the message it already created.
func TestSendResendReusesNonce(t *testing.T) {
	e := newEnv(t, envOptions{noRun: true})
	ch := e.fake.ChannelID
	en := entry("discord."+ch+".940000000000000001", ch, 0, 1, "exactly once", map[string]string{MetaReplyTo: "940000000000000001"})
	first := mustSend(t, e, en)
	again := mustSend(t, e, en)
	if first.MessageID == "" || again.MessageID != first.MessageID {
		t.Errorf("receipts %q and %q, want the same message", first.MessageID, again.MessageID)
	}
	posts := e.fake.RequestsTo(http.MethodPost, "/channels/"+ch+"/messages")
	if len(posts) != 2 {
		t.Fatalf("%d POSTs, want 2 (the resend reaches Discord)", len(posts))
	}
	for _, p := range posts {
		var b struct {
			Nonce        string `json:"nonce"`
			EnforceNonce bool   `json:"enforce_nonce"`
		}
		_ = json.Unmarshal(p.Body, &b)
		if b.Nonce != Nonce(en.ID) || !b.EnforceNonce {
			t.Errorf("request body %s: want nonce %q with enforce_nonce", p.Body, Nonce(en.ID))
		}
	}
	msgs := e.fake.ChannelMessages(ch)
	if len(msgs) != 1 || msgs[0].Reference != "940000000000000001" {
		t.Fatalf("messages = %+v, want one replying to the asking message", msgs)
	}
	// A different chunk is a different message.
	second := entry("discord."+ch+".940000000000000001", ch, 1, 2, "next chunk", en.Meta)
	mustSend(t, e, second)
	msgs = e.fake.ChannelMessages(ch)
	if len(msgs) != 2 || msgs[1].Reference != "" {
		t.Fatalf("messages = %+v, want a second one without a reply reference", msgs)
	}
	assertNoMentions(t, e.fake)
}

func TestSendRateLimitIsLeftToTheOutbox(t *testing.T) {
	e := newEnv(t, envOptions{noRun: true})
	ch := e.fake.ChannelID
	e.fake.FailNext(rateLimit(http.MethodPost, "/channels/"+ch+"/messages", 5))
	en := entry("discord."+ch+".940000000000000002", ch, 0, 1, "hello", nil)
	_, err := send(t, e, en)
	if d, ok := outbox.RetryAfterOf(err); !ok || d != 5*time.Second {
		t.Fatalf("error = %v, want a retry after exactly 5s", err)
	}
	if n := len(e.fake.RequestsTo(http.MethodPost, "/channels/")); n != 1 {
		t.Fatalf("%d requests, want 1: the library must not retry by itself", n)
	}
	// The bucket is exhausted: a send now is answered at once, without a
	// request and without sleeping in the library.
	_, err = send(t, e, en)
	if d, ok := outbox.RetryAfterOf(err); !ok || d <= 0 || d > 5*time.Second {
		t.Fatalf("error = %v, want a retry after at most 5s", err)
	}
	if n := len(e.fake.RequestsTo(http.MethodPost, "/channels/")); n != 1 {
		t.Fatalf("%d requests, want still 1", n)
	}
}

// TestRateLimitThroughTheOutbox: the outbox parks the target for exactly
// retry_after on its clock, and the chunk is sent once the limit is over,
// with no request in between.
func TestRateLimitThroughTheOutbox(t *testing.T) {
	start := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	clk := clock.NewFake(start)
	e := newEnv(t, envOptions{noRun: true, clock: clk})
	ch := e.fake.ChannelID
	e.fake.FailNext(rateLimit(http.MethodPost, "/channels/"+ch+"/messages", 0.3))
	key := chat.ChatKey(chat.Discord, ch, "")
	entries := outbox.NewEntries(outbox.KindReply, "discord."+ch+".940000000000000003", key, chat.SplitText("after the limit", chat.ChunkOptionsFor(chat.Discord)), nil)
	if _, err := e.rt.Outbox.Enqueue(context.Background(), entries); err != nil {
		t.Fatal(err)
	}
	e.fake.WaitFor(e.t, "the rate-limited request", func() bool { return len(e.fake.Requests()) >= 1 })
	waitDue := func() time.Time {
		for i := 0; ; i++ {
			if at, ok := clk.NextDue(); ok && at.Before(start.Add(time.Hour)) {
				return at
			}
			if i > 3000 {
				t.Fatal("the outbox scheduled no retry")
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	if at := waitDue(); !at.Equal(start.Add(300 * time.Millisecond)) {
		t.Fatalf("retry scheduled at %v, want exactly retry_after (0.3s) after the 429", at.Sub(start))
	}
	// Drive the fake clock until the chunk is delivered; discordgo's bucket
	// runs on real time, so a retry before it reopens is answered by the
	// sender without a request.
	for i := 0; ; i++ {
		st, err := e.rt.Outbox.Store().Get(context.Background(), entries[0].ID)
		if err != nil {
			t.Fatal(err)
		}
		if st.State == outbox.StateDelivered {
			break
		}
		if st.State == outbox.StateDead {
			t.Fatalf("dead letter: %s", st.LastError)
		}
		if at, ok := clk.NextDue(); ok && at.Before(clk.Now().Add(time.Hour)) {
			clk.Set(at)
		}
		if i > 2000 {
			t.Fatal("not delivered")
		}
		time.Sleep(20 * time.Millisecond)
	}
	if n := len(e.fake.RequestsTo(http.MethodPost, "/channels/")); n != 2 {
		t.Errorf("%d requests, want 2 (the 429 and the send after it)", n)
	}
	if msgs := e.fake.ChannelMessages(ch); len(msgs) != 1 {
		t.Errorf("%d messages, want 1", len(msgs))
	}
}

func TestSendErrorClasses(t *testing.T) {
	e := newEnv(t, envOptions{noRun: true})
	e.fake.SetUnknownChannel("950000000000000001")
	e.fake.SetNoAccess("950000000000000002")
	ok := "950000000000000003"
	for _, tc := range []struct {
		name    string
		channel string
		fault   *fault
		class   string
	}{
		{"unknown channel", "950000000000000001", nil, "permanent"},
		{"missing access", "950000000000000002", nil, "permanent"},
		{"bad request", ok, &fault{Status: 400, Body: `{"code": 50035, "message": "Invalid Form Body"}`}, "permanent"},
		{"server error", ok, &fault{Status: 500, Body: `{"message": "500: Internal Server Error", "code": 0}`}, "transient"},
		{"bad gateway", ok, &fault{Status: 502, Body: `bad gateway`}, "transient"},
		{"unauthorized", ok, &fault{Status: 401, Body: `{"message": "401: Unauthorized", "code": 0}`}, "transient"},
		{"connection dropped", ok, &fault{Hijack: true}, "transient"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.fault != nil {
				f := *tc.fault
				f.Method, f.PathPrefix = http.MethodPost, "/channels/"+tc.channel
				e.fake.FailNext(f)
			}
			_, err := send(t, e, entry("discord."+tc.channel+".1", tc.channel, 0, 1, "x", nil))
			var got string
			switch {
			case err == nil:
				got = "delivered"
			case outbox.IsPermanent(err):
				got = "permanent"
			case outbox.IsTransient(err):
				got = "transient"
			default:
				got = "rate limit"
			}
			if got != tc.class {
				t.Errorf("error %v is %s, want %s", err, got, tc.class)
			}
		})
	}
	_, err := send(t, e, &outbox.Entry{ID: "reply:x:chat:telegram:1:0", Target: chat.ChatKey(chat.Telegram, "1", ""), Text: "x"})
	if !outbox.IsPermanent(err) || !strings.Contains(err.Error(), "chat:discord:<channel_id>") {
		t.Errorf("foreign target: %v", err)
	}
}

// TestSendNeverLeaksTheToken: errors end up in the outbox's last_error and
// in the mirrors; no interaction token may appear in them.
func TestSendNeverLeaksTheToken(t *testing.T) {
	e := newEnv(t, envOptions{noRun: true})
	meta := e.deferred("930000000000000009", false, time.Now())
	tok := meta[MetaInteractionToken]
	prefix := "/webhooks/" + e.fake.AppID + "/" + tok
	for _, f := range []fault{
		{Method: http.MethodPatch, PathPrefix: prefix, Status: 500, Body: `{"message": "boom", "code": 0}`},
		{Method: http.MethodPatch, PathPrefix: prefix, Hijack: true},
		rateLimit(http.MethodPatch, prefix, 0.001),
	} {
		e.fake.FailNext(f)
		_, err := send(t, e, entry("discord.i.930000000000000009", e.fake.ChannelID, 0, 1, "x", meta))
		if err == nil {
			t.Fatal("send succeeded despite the fault")
		}
		if strings.Contains(err.Error(), tok) || strings.Contains(err.Error(), botToken) {
			t.Errorf("error leaks a token: %v", err)
		}
		if !strings.Contains(err.Error(), "[token]") {
			t.Errorf("error does not name the (redacted) request: %v", err)
		}
		time.Sleep(5 * time.Millisecond) // let the 1 ms rate limit pass
	}
}

func TestSendPrivateAnswers(t *testing.T) {
	e := newEnv(t, envOptions{noRun: true})
	ch := e.fake.ChannelID

	// A verb failed after a public deferral: the response becomes a neutral
	// line and the error follows, visible to the asker only.
	meta := e.deferred("930000000000000004", false, time.Now())
	meta[hub.MetaPrivate] = "1"
	mustSend(t, e, entry("discord.i.930000000000000004", ch, 0, 1, "⚠ not found (not_found)", meta))
	c, _ := e.fake.Callback("930000000000000004")
	if c.Original == nil || c.Original.Content != privateNotice {
		t.Errorf("original = %+v, want the neutral line", c.Original)
	}
	fu := e.fake.Followups("itok-930000000000000004")
	if len(fu) != 1 || fu[0].Flags != flagEphemeral || fu[0].Content != "⚠ not found (not_found)" {
		t.Errorf("follow-ups = %+v, want one ephemeral with the error", fu)
	}

	// Deferred ephemeral (a denial): the response is edited in place and
	// every further chunk stays ephemeral.
	meta = e.deferred("930000000000000005", true, time.Now())
	meta[hub.MetaPrivate] = "1"
	mustSend(t, e, entry("discord.i.930000000000000005", ch, 0, 2, "denied", meta))
	mustSend(t, e, entry("discord.i.930000000000000005", ch, 1, 2, "more", meta))
	c, _ = e.fake.Callback("930000000000000005")
	if c.Flags != flagEphemeral || c.Original == nil || c.Original.Content != "denied" {
		t.Errorf("callback = %+v, want an ephemeral deferral edited with the denial", c)
	}
	fu = e.fake.Followups("itok-930000000000000005")
	if len(fu) != 1 || fu[0].Flags != flagEphemeral {
		t.Errorf("follow-ups = %+v, want one ephemeral", fu)
	}
}

func TestSendAttachments(t *testing.T) {
	e := newEnv(t, envOptions{noRun: true})
	ch := e.fake.ChannelID
	att := &chat.Attachment{Name: "output.txt", MIME: chat.AttachmentMIME, Data: []byte("the whole output\n")}

	en := entry("discord."+ch+".960000000000000001", ch, 1, 2, "output.txt (17 bytes)", nil)
	en.Attachment = att
	mustSend(t, e, en)
	msgs := e.fake.ChannelMessages(ch)
	if len(msgs) != 1 || string(msgs[0].Files["output.txt"]) != "the whole output\n" || msgs[0].Content != "output.txt (17 bytes)" {
		t.Fatalf("channel messages = %+v", msgs)
	}

	meta := e.deferred("930000000000000006", false, time.Now())
	en = entry("discord.i.930000000000000006", ch, 1, 2, "output.txt (17 bytes)", meta)
	en.Attachment = att
	mustSend(t, e, en)
	fu := e.fake.Followups("itok-930000000000000006")
	if len(fu) != 1 || string(fu[0].Files["output.txt"]) != "the whole output\n" {
		t.Fatalf("follow-ups = %+v", fu)
	}
	assertNoMentions(t, e.fake)
}
