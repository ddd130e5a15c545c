package discord

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/a6afc2ce/hermes-hub/adapters/discord/discordtest"
	"github.com/a6afc2ce/hermes-hub/chat"
	"github.com/a6afc2ce/hermes-hub/clock"
	"github.com/a6afc2ce/hermes-hub/hub"
	"github.com/a6afc2ce/hermes-hub/internal/testkit"
	"github.com/a6afc2ce/hermes-hub/store"
)

// longScript prints two lines, says it runs, and waits until the test
// releases it (or a cancel kills it); then prints a third line.
const longScript = "echo one; echo two; touch started; while [ ! -e release ]; do sleep 0.05; done; echo three"

func progressEnv(t *testing.T, o envOptions) (*testEnv, *clock.Fake) {
	t.Helper()
	clk := clock.NewFake(time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC))
	o.clock, o.progress = clk, true
	return newEnv(t, o), clk
}

// waitStarted waits until longScript runs: the hub has then armed the
// call's progress timer.
func (e *testEnv) waitStarted() {
	e.t.Helper()
	testkit.WaitFor(e.t, "the program to start", func() bool {
		_, err := os.Stat(filepath.Join(e.ws, "started"))
		return err == nil
	})
}

// release lets longScript finish.
func (e *testEnv) release() {
	e.t.Helper()
	if err := os.WriteFile(filepath.Join(e.ws, "release"), nil, 0o644); err != nil {
		e.t.Fatal(err)
	}
}

// startLong runs longScript through /proc run and waits until it runs.
func (e *testEnv) startLong(user string) interaction {
	e.t.Helper()
	i := e.interact(user, "proc", sub("run", str("executable", "sh"), str("arguments", "-c '"+longScript+"'")))
	e.waitStarted()
	return i
}

// press dispatches a press on a button of a message.
func (e *testEnv) press(user, messageID, customID string) discordtest.Press {
	p := discordtest.Press{ID: e.nextID(), Channel: e.fake.ChannelID, Guild: e.fake.GuildID, User: user, Message: messageID, CustomID: customID}
	p.Token = "ptok-" + p.ID
	e.fake.Dispatch("INTERACTION_CREATE", e.fake.PressPayload(p))
	return p
}

// answer waits for the answer to an interaction (a press or a command).
func (e *testEnv) answer(id string) discordtest.Callback {
	e.t.Helper()
	e.fake.WaitFor(e.t, "the answer to interaction "+id, func() bool {
		c, ok := e.fake.Callback(id)
		return ok && c.Original != nil && c.Original.Content != ""
	})
	c, _ := e.fake.Callback(id)
	return c
}

// advanceUntil moves the clock on by the hub's progress period until cond
// holds: the program reports its lines on its own (real) clock, so each
// step gives it a moment.
func advanceUntil(t *testing.T, clk *clock.Fake, what string, cond func() bool) {
	t.Helper()
	testkit.WaitFor(t, what, func() bool {
		clk.Advance(hub.DefaultProgressEvery)
		if cond() {
			return true
		}
		time.Sleep(50 * time.Millisecond)
		return false
	})
}

func original(e *testEnv, i interaction) fakeMessage {
	c, ok := e.fake.Callback(i.ID)
	if !ok || c.Original == nil {
		return fakeMessage{}
	}
	return *c.Original
}

func originalEdits(e *testEnv, i interaction) int {
	return len(e.fake.RequestsTo(http.MethodPatch, "/webhooks/"+e.fake.AppID+"/"+i.Token+"/messages/@original"))
}

// tooMany is a 429 on the edit route asking to wait retryAfter seconds.
// It carries no X-RateLimit headers: the library's own bucket runs on the
// wall clock, and this test pins the view's handling of retry_after on the
// fake clock.
func tooMany(prefix string, retryAfter int) fault {
	return fault{Method: http.MethodPatch, PathPrefix: prefix, Status: http.StatusTooManyRequests,
		Body: fmt.Sprintf(`{"message": "You are being rate limited.", "retry_after": %d, "global": false}`, retryAfter)}
}

// TestProgressEditsThenResult: a long proc.run fills its deferred response
// with progress (elapsed time, last lines, a Cancel button), edited on the
// hub's pace and not while a 429's retry_after lasts; the final edit drops
// the button before the result follows up, once.
func TestProgressEditsThenResult(t *testing.T) {
	e, clk := progressEnv(t, envOptions{})
	i := e.startLong(adminUser)
	clk.Advance(2 * time.Second)
	if n := originalEdits(e, i); n != 0 {
		t.Fatalf("%d edits before the progress threshold", n)
	}
	clk.Advance(time.Second)
	o := e.waitOriginal(i)
	if !strings.Contains(o.Content, "proc.run running for 3s") || !slices.Equal(o.Buttons, []string{"cancel:discord.i." + i.ID}) {
		t.Fatalf("progress response %+v", o)
	}
	// Discord has no /cancel: the hint names its slash command.
	if !strings.Contains(o.Content, "(/hub cancel or the button stops it)") {
		t.Fatalf("progress response %q does not say how to stop the call on Discord", o.Content)
	}
	// The last lines show as the program reports them.
	advanceUntil(t, clk, "the last lines in the progress", func() bool { return strings.Contains(original(e, i).Content, "one\ntwo") })

	// A 429: no edit is tried until retry_after has passed.
	route := "/webhooks/" + e.fake.AppID + "/" + i.Token + "/messages/@original"
	e.fake.FailNext(tooMany(route, 10))
	before := originalEdits(e, i)
	clk.Advance(3 * time.Second) // tried: 429
	if n := originalEdits(e, i); n != before+1 {
		t.Fatalf("%d edits after the tick, want %d", n, before+1)
	}
	for range 3 {
		clk.Advance(3 * time.Second) // 3, 6, 9 s into the 10
	}
	if n := originalEdits(e, i); n != before+1 {
		t.Fatalf("%d edit requests during retry_after, want %d", n, before+1)
	}
	clk.Advance(3 * time.Second) // 12 s: allowed again
	if n := originalEdits(e, i); n != before+2 {
		t.Fatalf("%d edit requests after retry_after, want %d", n, before+2)
	}

	e.release()
	e.fake.WaitFor(t, "the result", func() bool { return len(e.fake.Followups(i.Token)) > 0 })
	o = original(e, i)
	if !strings.Contains(o.Content, "proc.run finished after") || len(o.Buttons) != 0 {
		t.Fatalf("final progress %+v", o)
	}
	fu := e.fake.Followups(i.Token)
	if len(fu) != 1 || !strings.Contains(fu[0].Content, "three") || fu[0].Flags != 0 {
		t.Fatalf("follow-ups %+v", fu)
	}
	// The final edit came before the result, and nothing came after.
	var kinds []string
	for _, r := range e.fake.Receipts() {
		if r.Token == i.Token {
			kinds = append(kinds, r.Kind)
		}
	}
	if kinds[len(kinds)-1] != discordtest.ReceiptFollowup || kinds[len(kinds)-2] != discordtest.ReceiptOriginal {
		t.Fatalf("receipts %v", kinds)
	}
	edits := originalEdits(e, i)
	clk.Advance(10 * time.Second)
	if n := originalEdits(e, i); n != edits || len(e.fake.Followups(i.Token)) != 1 || len(e.fake.ChannelMessages(e.fake.ChannelID)) != 0 {
		t.Fatalf("activity after the end: %d edits (was %d), %d follow-ups, channel %+v", n, edits, len(e.fake.Followups(i.Token)), e.fake.ChannelMessages(e.fake.ChannelID))
	}
}

// TestCancelButtonAndCommand: the Cancel button and /hub cancel stop the
// call, which answers with its output so far; someone else's press is
// refused, visible to them only.
func TestCancelButtonAndCommand(t *testing.T) {
	for _, how := range []string{"button", "command"} {
		t.Run(how, func(t *testing.T) {
			e, clk := progressEnv(t, envOptions{})
			i := e.startLong(adminUser)
			clk.Advance(3 * time.Second)
			o := e.waitOriginal(i)
			custom := "cancel:discord.i." + i.ID
			if !slices.Equal(o.Buttons, []string{custom}) {
				t.Fatalf("progress response %+v", o)
			}
			// The reader may not stop the admin's call.
			if how == "button" {
				p := e.press(readerUser, o.ID, custom)
				if a := e.answer(p.ID); a.Type != 4 || a.Flags != flagEphemeral || !strings.Contains(a.Original.Content, "You may not cancel proc.run") {
					t.Fatalf("answer to the reader %+v %+v", a, a.Original)
				}
			} else {
				c := e.interact(readerUser, "hub", sub("cancel"))
				if a := e.waitOriginal(c); !strings.Contains(a.Content, "You may not cancel proc.run") {
					t.Fatalf("answer to the reader %+v", a)
				}
			}
			clk.Advance(3 * time.Second)
			if o := original(e, i); !strings.Contains(o.Content, "running for 6s") || len(o.Buttons) != 1 {
				t.Fatalf("the call stopped for the reader: %+v", o)
			}

			if how == "button" {
				p := e.press(adminUser, o.ID, custom)
				if a := e.answer(p.ID); a.Flags != flagEphemeral || !strings.Contains(a.Original.Content, "Cancelling proc.run") {
					t.Fatalf("answer to the caller %+v", a.Original)
				}
			} else {
				c := e.interact(adminUser, "hub", sub("cancel", str("turn", "discord.i."+i.ID)))
				if a := e.waitOriginal(c); !strings.Contains(a.Content, "Cancelling proc.run") {
					t.Fatalf("answer to the caller %+v", a)
				}
			}
			e.fake.WaitFor(t, "the cancelled call's reply", func() bool { return len(e.fake.Followups(i.Token)) > 0 })
			fu := e.fake.Followups(i.Token)
			if len(fu) != 1 || !strings.Contains(fu[0].Content, "Cancelled by discord:"+adminUser) || !strings.Contains(fu[0].Content, "two") {
				t.Fatalf("reply %+v", fu)
			}
			if o := original(e, i); !strings.Contains(o.Content, "was cancelled by discord:"+adminUser) || len(o.Buttons) != 0 {
				t.Fatalf("final progress %+v", o)
			}
			if strings.Contains(fu[0].Content, "three") {
				t.Fatalf("the program went on: %q", fu[0].Content)
			}
		})
	}
}

// TestCancelTypedInTheChannel: a channel message's progress is a reply
// with a Cancel button; a typed !cancel does not wait behind the call it
// stops, and the progress message is finalised.
func TestCancelTypedInTheChannel(t *testing.T) {
	e, clk := progressEnv(t, envOptions{})
	m := e.say(adminUser, "!proc.run sh -c '"+longScript+"'")
	e.waitStarted()
	clk.Advance(3 * time.Second)
	pm := e.waitReply(m)
	if !strings.Contains(pm.Content, "proc.run running for 3s") || !slices.Equal(pm.Buttons, []string{"cancel:discord." + m.Channel + "." + m.ID}) {
		t.Fatalf("progress message %+v", pm)
	}
	c := e.say(adminUser, "!cancel")
	if r := e.waitReply(c); !strings.Contains(r.Content, "Cancelling proc.run") {
		t.Fatalf("answer to !cancel %+v", r)
	}
	var reply fakeMessage
	e.fake.WaitFor(t, "the cancelled call's reply", func() bool {
		for _, x := range e.fake.ChannelMessages(m.Channel) {
			if x.Reference == m.ID && x.ID != pm.ID {
				reply = x
				return true
			}
		}
		return false
	})
	if !strings.Contains(reply.Content, "Cancelled by discord:"+adminUser) {
		t.Fatalf("reply %+v", reply)
	}
	for _, x := range e.fake.ChannelMessages(m.Channel) {
		if x.ID == pm.ID && (!strings.Contains(x.Content, "was cancelled by") || len(x.Buttons) != 0 || x.Edits == 0) {
			t.Fatalf("final progress %+v", x)
		}
	}
}

// TestProgressAfterTheTokenIsRefused: when Discord no longer accepts the
// interaction's token, progress moves to a channel message, which the end
// finalises; the result goes to the channel once.
func TestProgressAfterTheTokenIsRefused(t *testing.T) {
	e, clk := progressEnv(t, envOptions{})
	i := e.startLong(adminUser)
	clk.Advance(3 * time.Second)
	e.waitOriginal(i)
	e.fake.Expire(i.Token)
	clk.Advance(3 * time.Second)
	msgs := e.fake.ChannelMessages(e.fake.ChannelID)
	if len(msgs) != 1 || !strings.Contains(msgs[0].Content, "running for 6s") || len(msgs[0].Buttons) != 1 {
		t.Fatalf("channel %+v", msgs)
	}
	pm := msgs[0]
	clk.Advance(3 * time.Second)
	e.release()
	e.fake.WaitFor(t, "the result in the channel", func() bool { return len(e.fake.ChannelMessages(e.fake.ChannelID)) == 2 })
	msgs = e.fake.ChannelMessages(e.fake.ChannelID)
	if msgs[0].ID != pm.ID || !strings.Contains(msgs[0].Content, "finished after") || len(msgs[0].Buttons) != 0 {
		t.Fatalf("final progress %+v", msgs[0])
	}
	if !strings.Contains(msgs[1].Content, "three") {
		t.Fatalf("result %+v", msgs[1])
	}
	clk.Advance(10 * time.Second)
	if n := len(e.fake.ChannelMessages(e.fake.ChannelID)); n != 2 {
		t.Fatalf("%d channel messages", n)
	}
}

// TestProgressHandOverBeforeTheTokenExpires: a minute before the token's
// fifteen minutes end, the original response says where progress goes on
// and a channel message carries it; once the token has expired, a final
// update of the response is given up without a request.
func TestProgressHandOverBeforeTheTokenExpires(t *testing.T) {
	clk := clock.NewFake(time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC))
	e := newEnv(t, envOptions{noRun: true, clock: clk})
	v := e.ad.ProgressView()
	ctx := context.Background()
	meta := e.deferred("930000000000000100", false, clk.Now())
	u := hub.ProgressUpdate{TurnID: "discord.i.930000000000000100", Target: chat.ChatKey(chat.Discord, e.fake.ChannelID, ""), Meta: meta, Verb: "proc.run", State: hub.ProgressRunning, Text: "⏳ proc.run running for 3s"}
	id, err := v.ShowProgress(ctx, u)
	if err != nil || id != progressOriginal {
		t.Fatalf("first update: %q, %v", id, err)
	}
	clk.Advance(InteractionTokenTTL - tokenMargin)
	u.MessageID, u.Text = id, "⏳ proc.run running for 14m0s"
	id, err = v.ShowProgress(ctx, u)
	if err != nil || id == progressOriginal || id == "" {
		t.Fatalf("hand-over: %q, %v", id, err)
	}
	c, _ := e.fake.Callback("930000000000000100")
	if !strings.Contains(c.Original.Content, "continues in a message in this channel") || len(c.Original.Buttons) != 0 {
		t.Fatalf("original after the hand-over %+v", c.Original)
	}
	msgs := e.fake.ChannelMessages(e.fake.ChannelID)
	if len(msgs) != 1 || msgs[0].ID != id || !strings.Contains(msgs[0].Content, "14m0s") || len(msgs[0].Buttons) != 1 {
		t.Fatalf("channel %+v", msgs)
	}
	u.MessageID, u.State, u.Text = id, hub.ProgressDone, "✓ proc.run finished after 14m2s; its result follows."
	if _, err := v.ShowProgress(ctx, u); err != nil {
		t.Fatal(err)
	}
	if msgs := e.fake.ChannelMessages(e.fake.ChannelID); !strings.Contains(msgs[0].Content, "finished") || len(msgs[0].Buttons) != 0 {
		t.Fatalf("final %+v", msgs[0])
	}
	// An update of a response whose token has expired is given up.
	clk.Advance(2 * tokenMargin)
	u.MessageID = progressOriginal
	n := len(e.fake.Requests())
	if id, err := v.ShowProgress(ctx, u); err != nil || id != progressOriginal || len(e.fake.Requests()) != n {
		t.Fatalf("final update after expiry: %q, %v, %d requests", id, err, len(e.fake.Requests())-n)
	}
}

// TestStaleProgressFinalisedAtStart: the progress a previous run left in
// an interaction response and in a channel message is finalised when the
// runtime starts; one whose token has expired is forgotten untouched.
func TestStaleProgressFinalisedAtStart(t *testing.T) {
	clk := clock.NewFake(time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC))
	var chanMsg string
	var fresh, old map[string]string
	e := newEnv(t, envOptions{clock: clk, progress: true, noRun: true, beforeStart: func(e *testEnv) {
		ctx := context.Background()
		v := e.ad.ProgressView()
		key := chat.ChatKey(chat.Discord, e.fake.ChannelID, "")
		fresh = e.deferred("930000000000000200", false, clk.Now())
		old = e.deferred("930000000000000201", false, clk.Now().Add(-20*time.Minute))
		running := func(turn string, meta map[string]string) string {
			id, err := v.ShowProgress(ctx, hub.ProgressUpdate{TurnID: turn, Target: key, Meta: meta, Verb: "proc.run", State: hub.ProgressRunning, Text: "⏳ proc.run running for 9s"})
			if err != nil {
				t.Fatal(err)
			}
			return id
		}
		origID := running("discord.i.930000000000000200", fresh)
		chanMsg = running("discord."+e.fake.ChannelID+".940000000000000300", map[string]string{MetaReplyTo: "940000000000000300"})
		p, err := store.OpenProgressMessages(e.rt.State.DB())
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range []store.ProgressMessage{
			{TurnID: "discord.i.930000000000000200", Target: key.String(), MessageID: origID, Meta: fresh, Verb: "proc.run", Started: clk.Now()},
			{TurnID: "discord." + e.fake.ChannelID + ".940000000000000300", Target: key.String(), MessageID: chanMsg, Meta: map[string]string{MetaReplyTo: "940000000000000300"}, Verb: "proc.run", Started: clk.Now()},
			{TurnID: "discord.i.930000000000000201", Target: key.String(), MessageID: progressOriginal, Meta: old, Verb: "proc.run", Started: clk.Now().Add(-20 * time.Minute)},
		} {
			if err := p.PutProgress(m); err != nil {
				t.Fatal(err)
			}
		}
	}})
	c, _ := e.fake.Callback("930000000000000200")
	if !strings.Contains(c.Original.Content, "The hub restarted while proc.run ran") || len(c.Original.Buttons) != 0 {
		t.Fatalf("stale response %+v", c.Original)
	}
	msgs := e.fake.ChannelMessages(e.fake.ChannelID)
	if len(msgs) != 1 || msgs[0].ID != chanMsg || !strings.Contains(msgs[0].Content, "restarted") || len(msgs[0].Buttons) != 0 {
		t.Fatalf("stale channel message %+v", msgs)
	}
	if n := len(e.fake.RequestsTo(http.MethodPatch, "/webhooks/"+e.fake.AppID+"/"+old[MetaInteractionToken])); n != 0 {
		t.Fatalf("%d edits of an expired response", n)
	}
	p, err := store.OpenProgressMessages(e.rt.State.DB())
	if err != nil {
		t.Fatal(err)
	}
	if left, err := p.ProgressMessages(); err != nil || len(left) != 0 {
		t.Fatalf("records left: %+v, %v", left, err)
	}
}
