package lab

import (
	"testing"

	"github.com/a6afc2ce/hermes-hub/adapters/telegram/telegramtest"
	"github.com/a6afc2ce/hermes-hub/outbox"
	"github.com/a6afc2ce/hermes-hub/store"
)

// scheduleRun adds a run of the schedule tick for the minute m: mirrored,
// its result (with ran, a line in tick.log and a succeeded result record)
// or, with notice, the restart notice delivered to both targets.
func (b *obsBuilder) scheduleRun(m int, ran, notice bool) string {
	b.o.Schedule = true
	turn := "schedule.tick." + itoa(1774764000+60*m)
	b.o.Inbound = append(b.o.Inbound, store.MirrorRecord{Direction: store.DirectionInbound, Kind: store.KindSchedule, Actor: scheduleIdentity, Meta: map[string]string{"turn_id": turn}})
	kind := outbox.KindPMA
	if notice {
		kind = outbox.KindNotice
	}
	if ran {
		b.o.Files[tickFile] += tickLine + "\n"
		b.o.Outbound = append(b.o.Outbound, store.MirrorRecord{Direction: store.DirectionOutbound, Platform: "schedule", Kind: "result", Meta: map[string]string{"turn_id": turn}})
	}
	tg := outbox.ID(kind, turn, mustKey("chat:telegram:"+itoa(scheduleChat)), 0)
	local := outbox.ID(kind, turn, mustKey("local:"+scheduleLocal), 0)
	b.msgID++
	b.o.Delivered = append(b.o.Delivered,
		outbox.Entry{ID: tg, State: outbox.StateDelivered, PlatformMessageID: itoa(int(b.msgID)), DeliveredAt: t0},
		outbox.Entry{ID: local, State: outbox.StateDelivered, PlatformMessageID: "0", DeliveredAt: t0})
	b.o.Telegram = append(b.o.Telegram, telegramtest.Message{Method: "sendMessage", ChatID: itoa(scheduleChat), Text: turn, MessageID: b.msgID})
	b.o.Local = append(b.o.Local, localDelivery{TurnID: turn, OutboxID: local})
	for _, id := range []string{tg, local} {
		b.o.Outbound = append(b.o.Outbound, store.MirrorRecord{Direction: store.DirectionOutbound, Kind: string(kind), Meta: map[string]string{store.MetaOutboxID: id}})
	}
	return turn
}

// TestCheckSchedule: runs of a schedule that each ran once, or were cut
// short and answered with a notice, pass; a time run twice, more lines than
// runs, a run delivered both ways or to no target, and a local chunk
// written twice or never are reported as the invariant they break.
func TestCheckSchedule(t *testing.T) {
	b := newObs()
	b.telegram("-2001", 1, 1, "mk000001z")
	b.scheduleRun(1, true, false)
	b.scheduleRun(2, false, true)
	vs, fig := Check(b.o)
	if len(vs) != 0 {
		t.Fatalf("violations in a consistent run: %v", vs)
	}
	if fig.ScheduleRuns != 2 || fig.ScheduleResults != 1 || fig.ScheduleTicks != 1 || fig.ScheduleNotices != 1 {
		t.Fatalf("figures %+v", fig)
	}
	for _, tc := range []struct {
		name, inv string
		breakIt   func(b *obsBuilder)
	}{
		{"mirrored twice", "at most once", func(b *obsBuilder) {
			turn := b.scheduleRun(3, true, false)
			b.o.Inbound = append(b.o.Inbound, store.MirrorRecord{Direction: store.DirectionInbound, Kind: store.KindSchedule, Actor: scheduleIdentity, Meta: map[string]string{"turn_id": turn}})
		}},
		{"ran twice", "at most once", func(b *obsBuilder) {
			b.scheduleRun(3, true, false)
			b.o.Files[tickFile] += tickLine + "\n"
		}},
		{"reported a result, did not run", "at most once", func(b *obsBuilder) {
			b.scheduleRun(3, true, false)
			b.o.Files[tickFile] = ""
		}},
		{"result and notice", "answered", func(b *obsBuilder) {
			turn := b.scheduleRun(3, true, false)
			b.o.Delivered = append(b.o.Delivered, outbox.Entry{ID: outbox.ID(outbox.KindNotice, turn, mustKey("local:"+scheduleLocal), 0), State: outbox.StateDelivered})
		}},
		{"no target", "answered", func(b *obsBuilder) {
			b.o.Inbound = append(b.o.Inbound, store.MirrorRecord{Direction: store.DirectionInbound, Kind: store.KindSchedule, Actor: scheduleIdentity, Meta: map[string]string{"turn_id": "schedule.tick.1"}})
		}},
		{"local written twice", "no duplicates", func(b *obsBuilder) {
			b.scheduleRun(3, true, false)
			b.o.Local = append(b.o.Local, b.o.Local[len(b.o.Local)-1])
		}},
		{"local never written", "delivered", func(b *obsBuilder) {
			b.scheduleRun(3, true, false)
			b.o.Local = b.o.Local[:len(b.o.Local)-1]
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := newObs()
			b.scheduleRun(1, true, false)
			tc.breakIt(b)
			if vs, _ := Check(b.o); !has(vs, tc.inv) {
				t.Fatalf("want a %q violation, got %v", tc.inv, vs)
			}
		})
	}
}
