package lab

import (
	"strconv"
	"testing"
	"time"

	"github.com/a6afc2ce/hermes-hub/adapters/discord"
	"github.com/a6afc2ce/hermes-hub/adapters/discord/discordtest"
	"github.com/a6afc2ce/hermes-hub/adapters/telegram/telegramtest"
	"github.com/a6afc2ce/hermes-hub/chat"
	"github.com/a6afc2ce/hermes-hub/outbox"
	"github.com/a6afc2ce/hermes-hub/store"
)

var t0 = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

// obsBuilder makes consistent observations: every turn added is delivered,
// answered, received and mirrored, unless a test breaks it afterwards.
type obsBuilder struct {
	o     Observation
	msgID int64
}

func newObs() *obsBuilder {
	return &obsBuilder{o: Observation{Files: map[string]string{}}, msgID: 1000}
}

// telegram adds a turn in chat with chunks reply chunks, answered in that
// order; with marker it wrote its marker to ran.log once.
func (b *obsBuilder) telegram(chat string, msg int, chunks int, marker string) Turn {
	t := Turn{Seq: len(b.o.Turns) + 1, Platform: "telegram", Source: "telegram:" + chat, Ordered: true,
		Target: "chat:telegram:" + chat, TurnID: "telegram." + chat + "." + itoa(msg), Delivered: true,
		Sent: t0.Add(time.Duration(len(b.o.Turns)) * time.Second)}
	if marker != "" {
		t.Marker, t.MarkerFile = marker, "ran.log"
		b.o.Files["ran.log"] += marker + "\n"
	}
	b.o.Turns = append(b.o.Turns, t)
	b.o.Inbound = append(b.o.Inbound, store.MirrorRecord{Direction: store.DirectionInbound, Meta: map[string]string{"turn_id": t.TurnID}})
	for i := range chunks {
		b.msgID++
		id := outbox.ID(outbox.KindReply, t.TurnID, mustKey(t.Target), i)
		b.o.Delivered = append(b.o.Delivered, outbox.Entry{ID: id, State: outbox.StateDelivered, PlatformMessageID: itoa(int(b.msgID)), DeliveredAt: t.Sent})
		b.o.Telegram = append(b.o.Telegram, telegramtest.Message{Method: "sendMessage", ChatID: chat, Text: t.TurnID + " chunk " + itoa(i), MessageID: b.msgID})
		b.o.Outbound = append(b.o.Outbound, store.MirrorRecord{Direction: store.DirectionOutbound, Kind: "reply", Meta: map[string]string{store.MetaOutboxID: id}})
	}
	return t
}

// discordChannel adds a Discord channel-message turn answered with one
// chunk.
func (b *obsBuilder) discordChannel(channel string, msg int) Turn {
	t := Turn{Seq: len(b.o.Turns) + 1, Platform: "discord", Source: "discord-messages:" + channel, Ordered: true,
		Target: "chat:discord:" + channel, TurnID: "discord." + channel + "." + itoa(msg), Delivered: true, Sent: t0}
	b.o.Turns = append(b.o.Turns, t)
	b.o.Inbound = append(b.o.Inbound, store.MirrorRecord{Direction: store.DirectionInbound, Meta: map[string]string{"turn_id": t.TurnID}})
	id := outbox.ID(outbox.KindReply, t.TurnID, mustKey(t.Target), 0)
	b.msgID++
	b.o.Delivered = append(b.o.Delivered, outbox.Entry{ID: id, State: outbox.StateDelivered, PlatformMessageID: itoa(int(b.msgID))})
	b.o.Discord = append(b.o.Discord, discordtest.Receipt{Kind: discordtest.ReceiptChannel, ChannelID: channel, MessageID: itoa(int(b.msgID)), Nonce: discord.Nonce(id), Content: "answer"})
	b.o.Outbound = append(b.o.Outbound, store.MirrorRecord{Direction: store.DirectionOutbound, Kind: "reply", Meta: map[string]string{store.MetaOutboxID: id}})
	return t
}

// discordInteraction adds a Discord interaction turn answered with one
// chunk in its deferred response, after the texts of notices the adapter
// wrote there itself.
func (b *obsBuilder) discordInteraction(channel string, id int, notices ...string) Turn {
	t := Turn{Seq: len(b.o.Turns) + 1, Platform: "discord", Source: "discord-interactions:" + channel,
		Target: "chat:discord:" + channel, TurnID: "discord.i." + itoa(id), Token: "itok-" + itoa(id), Delivered: true, Sent: t0}
	b.o.Turns = append(b.o.Turns, t)
	b.o.Inbound = append(b.o.Inbound, store.MirrorRecord{Direction: store.DirectionInbound, Meta: map[string]string{"turn_id": t.TurnID}})
	entry := outbox.ID(outbox.KindReply, t.TurnID, mustKey(t.Target), 0)
	b.msgID++
	original := itoa(int(b.msgID))
	b.o.Delivered = append(b.o.Delivered, outbox.Entry{ID: entry, State: outbox.StateDelivered, PlatformMessageID: original})
	for _, n := range notices {
		b.o.Discord = append(b.o.Discord, discordtest.Receipt{Kind: discordtest.ReceiptOriginal, Token: t.Token, MessageID: original, Content: n})
	}
	b.o.Discord = append(b.o.Discord, discordtest.Receipt{Kind: discordtest.ReceiptOriginal, Token: t.Token, MessageID: original, Content: "answer"})
	b.o.Outbound = append(b.o.Outbound, store.MirrorRecord{Direction: store.DirectionOutbound, Kind: "reply", Meta: map[string]string{store.MetaOutboxID: entry}})
	return t
}

// stoppedReply is how the hub answers a proc.run a graceful stop cut short.
const stoppedReply = "⚠ sh was cancelled before it finished; all of its output so far: `/proc.output outputId=t stream=stdout startLine=1` (cancelled)"

func mustKey(s string) chat.Key {
	k, err := chat.ParseKey(s)
	if err != nil {
		panic(err)
	}
	return k
}

func itoa(n int) string { return strconv.Itoa(n) }

func has(vs []Violation, inv string) bool {
	for _, v := range vs {
		if v.Invariant == inv {
			return true
		}
	}
	return false
}

func TestCheckAcceptsAConsistentRun(t *testing.T) {
	b := newObs()
	b.telegram("-2001", 1, 2, "mk000001z")
	b.telegram("-2001", 2, 1, "mk000002z")
	b.telegram("-2002", 1, 3, "")
	b.discordChannel("55", 7)
	vs, fig := Check(b.o)
	if len(vs) != 0 {
		t.Fatalf("violations in a consistent run: %v", vs)
	}
	if fig.Answered != 4 || fig.Receipts != 7 || fig.SideEffects != 2 {
		t.Fatalf("figures %+v", fig)
	}
}

// TestCheckCatchesEachViolation breaks a consistent run in one way at a
// time; each must be reported as the invariant it breaks, and only the
// allowed exceptions must pass.
func TestCheckCatchesEachViolation(t *testing.T) {
	cases := []struct {
		name   string
		mutate func(b *obsBuilder)
		want   string // "" when the change is allowed
		check  func(t *testing.T, f Figures)
	}{
		{"a chunk still pending", func(b *obsBuilder) {
			e := b.o.Delivered[0]
			b.o.Delivered = b.o.Delivered[1:]
			b.o.Telegram = b.o.Telegram[1:]
			e.State = outbox.StatePending
			b.o.Pending = append(b.o.Pending, e)
		}, "delivered", nil},
		{"delivered but never received", func(b *obsBuilder) { b.o.Telegram = b.o.Telegram[1:] }, "delivered", nil},
		{"a dead letter", func(b *obsBuilder) {
			e := b.o.Delivered[2]
			b.o.Delivered = append(b.o.Delivered[:2:2], b.o.Delivered[3:]...)
			b.o.Telegram = append(b.o.Telegram[:2:2], b.o.Telegram[3:]...)
			e.State = outbox.StateDead
			b.o.Dead = append(b.o.Dead, e)
			b.o.Outbound[2].Kind = store.KindDead
		}, "delivered", nil},
		{"a dead letter the scenario allows", func(b *obsBuilder) {
			e := b.o.Delivered[2]
			b.o.Delivered = append(b.o.Delivered[:2:2], b.o.Delivered[3:]...)
			b.o.Telegram = append(b.o.Telegram[:2:2], b.o.Telegram[3:]...)
			e.State = outbox.StateDead
			b.o.Dead = append(b.o.Dead, e)
			b.o.Outbound[2].Kind = store.KindDead
			b.o.Expect.DeadLetters = "allowed"
		}, "", nil},
		{"a chunk received twice without a kill", func(b *obsBuilder) {
			dup := b.o.Telegram[0]
			dup.MessageID = 9999
			b.o.Telegram = append([]telegramtest.Message{dup}, b.o.Telegram...)
		}, "no duplicates", nil},
		{"a chunk received twice across a kill", func(b *obsBuilder) {
			dup := b.o.Telegram[0]
			dup.MessageID = 9999
			b.o.Telegram = append([]telegramtest.Message{dup}, b.o.Telegram...)
			b.o.Kills = []time.Time{t0}
		}, "", func(t *testing.T, f Figures) {
			if f.CrashDuplicates != 1 || f.CrashDuplicatesByTarget["chat:telegram:-2001"] != 1 {
				t.Errorf("crash window duplicates %d %v", f.CrashDuplicates, f.CrashDuplicatesByTarget)
			}
		}},
		{"a chunk like another turn's sent again across a kill", func(b *obsBuilder) {
			// chat -2001: turn 1 (messages 0, 1), turn 2 (message 2). Turn 1's
			// chunk 1 reads like turn 3's; its first send went unrecorded.
			b.o.Telegram[1].Text = "same text"
			b.o.Turns = append(b.o.Turns, Turn{Seq: 10, Platform: "telegram", Source: "telegram:-2001", Ordered: true,
				Target: "chat:telegram:-2001", TurnID: "telegram.-2001.3", Delivered: true, Sent: t0})
			b.o.Inbound = append(b.o.Inbound, store.MirrorRecord{Meta: map[string]string{"turn_id": "telegram.-2001.3"}})
			id := outbox.ID(outbox.KindReply, "telegram.-2001.3", mustKey("chat:telegram:-2001"), 0)
			b.o.Delivered = append(b.o.Delivered, outbox.Entry{ID: id, State: outbox.StateDelivered, PlatformMessageID: "8000"})
			b.o.Outbound = append(b.o.Outbound, store.MirrorRecord{Kind: "reply", Meta: map[string]string{store.MetaOutboxID: id}})
			first := b.o.Telegram[1]
			first.MessageID = 7000 // the unrecorded first send
			m := b.o.Telegram
			b.o.Telegram = append([]telegramtest.Message{m[0], first, m[1], m[2],
				{ChatID: "-2001", Method: "sendMessage", Text: "same text", MessageID: 8000}}, m[3:]...)
			b.o.Kills = []time.Time{t0}
		}, "", func(t *testing.T, f Figures) {
			if f.CrashDuplicatesByTarget["chat:telegram:-2001"] != 1 {
				t.Errorf("duplicates %v", f.CrashDuplicatesByTarget)
			}
		}},
		{"a chunk received twice across a cut of its platform", func(b *obsBuilder) {
			dup := b.o.Telegram[0]
			dup.MessageID = 9999
			b.o.Telegram = append([]telegramtest.Message{dup}, b.o.Telegram...)
			b.o.Cuts = map[string]int{"telegram": 1}
		}, "", nil},
		{"a chunk received twice across a cut of another platform", func(b *obsBuilder) {
			dup := b.o.Telegram[0]
			dup.MessageID = 9999
			b.o.Telegram = append([]telegramtest.Message{dup}, b.o.Telegram...)
			b.o.Cuts = map[string]int{"discord": 1}
		}, "no duplicates", nil},
		{"two repeats on one target with one kill", func(b *obsBuilder) {
			d1, d2 := b.o.Telegram[0], b.o.Telegram[1]
			d1.MessageID, d2.MessageID = 9998, 9999
			b.o.Telegram = append([]telegramtest.Message{d1, d2}, b.o.Telegram...)
			b.o.Kills = []time.Time{t0}
		}, "no duplicates", nil},
		{"a chunk delivered to the wrong chat", func(b *obsBuilder) { b.o.Telegram[4].ChatID = "-2001" }, "delivered", nil},
		{"a message nothing explains", func(b *obsBuilder) {
			b.o.Telegram = append(b.o.Telegram, telegramtest.Message{ChatID: "-2001", Text: "who sent this?", MessageID: 7777})
		}, "no duplicates", nil},
		{"chunks out of index order", func(b *obsBuilder) {
			b.o.Telegram[0], b.o.Telegram[1] = b.o.Telegram[1], b.o.Telegram[0]
		}, "order", nil},
		{"turns of a chat answered out of order", func(b *obsBuilder) {
			// chat -2001: turn 1 (messages 0, 1), turn 2 (message 2)
			m := b.o.Telegram
			b.o.Telegram = append([]telegramtest.Message{m[2], m[0], m[1]}, m[3:]...)
		}, "order", nil},
		{"a turn's chunks split by another turn", func(b *obsBuilder) {
			m := b.o.Telegram
			b.o.Telegram = append([]telegramtest.Message{m[0], m[2], m[1]}, m[3:]...)
		}, "order", nil},
		{"a delivered turn without an answer", func(b *obsBuilder) {
			b.o.Turns = append(b.o.Turns, Turn{Seq: 99, Platform: "telegram", TurnID: "telegram.-2009.1", Delivered: true, Sent: t0})
			b.o.Inbound = append(b.o.Inbound, store.MirrorRecord{Meta: map[string]string{"turn_id": "telegram.-2009.1"}})
		}, "answered", nil},
		{"a Discord turn a kill swallowed", func(b *obsBuilder) {
			b.o.Turns = append(b.o.Turns, Turn{Seq: 99, Platform: "discord", TurnID: "discord.i.5", Delivered: true, Sent: t0})
			b.o.Kills = []time.Time{t0.Add(time.Second)}
		}, "", func(t *testing.T, f Figures) {
			if f.DiscordLostInCrash != 1 {
				t.Errorf("discord lost in crash %d", f.DiscordLostInCrash)
			}
		}},
		{"a Discord turn lost without a kill", func(b *obsBuilder) {
			b.o.Turns = append(b.o.Turns, Turn{Seq: 99, Platform: "discord", TurnID: "discord.i.5", Delivered: true, Sent: t0})
		}, "answered", nil},
		{"both a reply and a notice", func(b *obsBuilder) {
			tr := b.o.Turns[1]
			id := outbox.ID(outbox.KindNotice, tr.TurnID, mustKey(tr.Target), 0)
			b.o.Delivered = append(b.o.Delivered, outbox.Entry{ID: id, State: outbox.StateDelivered, PlatformMessageID: "5555"})
			b.o.Telegram = append(b.o.Telegram, telegramtest.Message{ChatID: "-2001", Text: "notice", MessageID: 5555})
			b.o.Outbound = append(b.o.Outbound, store.MirrorRecord{Kind: "notice", Meta: map[string]string{store.MetaOutboxID: id}})
		}, "answered", nil},
		{"a stranger answered twice", func(b *obsBuilder) {
			for i, msg := range []int{1, 2} {
				tr := Turn{Seq: 90 + i, Platform: "telegram", TurnID: "telegram.-2666." + itoa(msg), Target: "chat:telegram:-2666",
					Delivered: true, Stranger: true, Identity: "telegram:666", Sent: t0}
				b.o.Turns = append(b.o.Turns, tr)
				b.o.Inbound = append(b.o.Inbound, store.MirrorRecord{Meta: map[string]string{"turn_id": tr.TurnID}})
				id := outbox.ID(outbox.KindReply, tr.TurnID, mustKey(tr.Target), 0)
				b.o.Delivered = append(b.o.Delivered, outbox.Entry{ID: id, State: outbox.StateDelivered, PlatformMessageID: itoa(6000 + i)})
				b.o.Telegram = append(b.o.Telegram, telegramtest.Message{ChatID: "-2666", Text: "denied", MessageID: int64(6000 + i)})
				b.o.Outbound = append(b.o.Outbound, store.MirrorRecord{Kind: "reply", Meta: map[string]string{store.MetaOutboxID: id}})
			}
		}, "answered", nil},
		{"a turn missing from the inbound mirror", func(b *obsBuilder) { b.o.Inbound = b.o.Inbound[1:] }, "mirrored", nil},
		{"a chunk missing from the outbound mirror", func(b *obsBuilder) { b.o.Outbound = b.o.Outbound[1:] }, "mirrored", nil},
		{"a chunk missing from the outbound mirror across a kill", func(b *obsBuilder) {
			b.o.Outbound = b.o.Outbound[1:]
			b.o.Kills = []time.Time{t0}
		}, "", func(t *testing.T, f Figures) {
			if f.MirrorGapsInCrash != 1 {
				t.Errorf("mirror gaps in crash %d", f.MirrorGapsInCrash)
			}
		}},
		{"a chunk missing from the mirror during an allowed fault", func(b *obsBuilder) {
			b.o.Outbound = b.o.Outbound[1:]
			b.o.Expect.MirrorGaps = "allowed_during_fault"
			b.o.MirrorFaults = []Window{{From: t0.Add(-time.Second), To: t0.Add(time.Second)}}
		}, "", nil},
		{"a chunk mirrored as the wrong kind", func(b *obsBuilder) { b.o.Outbound[0].Kind = "dead" }, "mirrored", nil},
		{"a side effect twice", func(b *obsBuilder) { b.o.Files["ran.log"] += "mk000001z\n" }, "at most once", nil},
		{"a reply without its side effect", func(b *obsBuilder) { b.o.Files["ran.log"] = "mk000002z\n" }, "at most once", nil},
		// A verb a graceful stop cut short is answered with its
		// cancellation: its program may or may not have written its marker.
		{"a cancellation answered without its side effect", func(b *obsBuilder) {
			b.o.Outbound[2].Text = stoppedReply
			b.o.Files["ran.log"] = "mk000001z\n"
		}, "", nil},
		{"a cancellation answered with its side effect", func(b *obsBuilder) { b.o.Outbound[2].Text = stoppedReply }, "", nil},
		{"a cancellation answered with its side effect twice", func(b *obsBuilder) {
			b.o.Outbound[2].Text = stoppedReply
			b.o.Files["ran.log"] += "mk000002z\n"
		}, "at most once", nil},
		{"another failure answered without its side effect", func(b *obsBuilder) {
			b.o.Outbound[2].Text = "⚠ Cannot start sh: permission denied (forbidden)"
			b.o.Files["ran.log"] = "mk000001z\n"
		}, "at most once", nil},
		{"an interaction's answer replacing the restart notice", func(b *obsBuilder) {
			b.discordInteraction("56", 8, discord.RestartNotice)
		}, "", func(t *testing.T, f Figures) {
			if f.CrashDuplicates != 0 || f.Receipts != 8 {
				t.Errorf("duplicates %d, receipts %d", f.CrashDuplicates, f.Receipts)
			}
		}},
		{"an interaction's answer written twice into its response", func(b *obsBuilder) {
			b.discordInteraction("56", 8, "answer")
		}, "no duplicates", nil},
		{"a data race in the hub", func(b *obsBuilder) {
			b.o.HubLogs = []string{"ok\n==================\nWARNING: DATA RACE\nWrite at 0x00c000\n"}
		}, "alive", nil},
		{"a hub that stopped answering", func(b *obsBuilder) { b.o.Alive = "the admin API did not answer" }, "alive", nil},
		{"a Discord channel send repeated with its nonce", func(b *obsBuilder) {
			r := b.o.Discord[0]
			r.Repeat = true
			b.o.Discord = append(b.o.Discord, r)
		}, "", func(t *testing.T, f Figures) {
			if f.NonceRepeats != 1 || f.CrashDuplicates != 0 {
				t.Errorf("nonce repeats %d, duplicates %d", f.NonceRepeats, f.CrashDuplicates)
			}
		}},
		{"a Discord message with an unknown nonce", func(b *obsBuilder) {
			b.o.Discord = append(b.o.Discord, discordtest.Receipt{Kind: discordtest.ReceiptChannel, ChannelID: "55", MessageID: "1", Nonce: "zzz"})
		}, "no duplicates", nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			b := newObs()
			b.telegram("-2001", 1, 2, "mk000001z")
			b.telegram("-2001", 2, 1, "mk000002z")
			b.telegram("-2002", 1, 3, "")
			b.discordChannel("55", 7)
			tc.mutate(b)
			vs, fig := Check(b.o)
			switch {
			case tc.want == "" && len(vs) > 0:
				t.Fatalf("an allowed change was reported: %v", vs)
			case tc.want != "" && !has(vs, tc.want):
				t.Fatalf("want a %q violation, got %v", tc.want, vs)
			}
			if tc.check != nil {
				tc.check(t, fig)
			}
		})
	}
}

// TestCheckUploads: the uploads invariant holds for uploads saved whole,
// and fails for a file with other bytes, a file no turn sent, a leftover
// temporary file and a reply saying saved with no file; documents of
// blob.bin must hold its bytes.
func TestCheckUploads(t *testing.T) {
	build := func() *obsBuilder {
		b := newObs()
		b.telegram("-2001", 1, 1, "")
		b.o.Turns[0].Action, b.o.Turns[0].Marker = "upload", "mk000001z"
		b.o.Uploads = map[string][]byte{uploadPath("mk000001z"): uploadData("mk000001z")}
		return b
	}
	if vs, fig := Check(build().o); len(vs) > 0 || fig.Uploads != 1 {
		t.Fatalf("a whole upload: %v, %d uploads", vs, fig.Uploads)
	}
	for name, mutate := range map[string]func(*obsBuilder){
		"other bytes":      func(b *obsBuilder) { b.o.Uploads[uploadPath("mk000001z")] = []byte("short") },
		"no turn sent it":  func(b *obsBuilder) { b.o.Uploads["up/mk000099z.bin"] = uploadData("mk000099z") },
		"a temporary file": func(b *obsBuilder) { b.o.Uploads["up/.mk000002z.bin.tmp-0123456789ab"] = nil },
		"said saved, missing": func(b *obsBuilder) {
			delete(b.o.Uploads, uploadPath("mk000001z"))
			b.o.Outbound[0].Text = "Saved `" + uploadPath("mk000001z") + "` (6001 bytes)."
		},
		"a document with other bytes": func(b *obsBuilder) {
			b.o.Telegram = append(b.o.Telegram, telegramtest.Message{Method: "sendDocument", ChatID: "-2001", DocName: blobName, Doc: []byte("x")})
		},
	} {
		t.Run(name, func(t *testing.T) {
			b := build()
			mutate(b)
			if vs, _ := Check(b.o); !has(vs, "uploads") {
				t.Fatalf("want an uploads violation, got %v", vs)
			}
		})
	}
}
