package telegram

import (
	"fmt"
	"testing"
	"time"

	"github.com/a6afc2ce/hermes-hub/clock"
)

var t0 = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

func TestLimiterPerChatBurstThenRate(t *testing.T) {
	clk := clock.NewFake(t0)
	l := newLimiter(clk, Limits{PerChat: 1, PerChatBurst: 3})
	for i := range 3 {
		if d := l.wait(fmt.Sprintf("t%d", i), "42"); d != 0 {
			t.Fatalf("message %d of the burst waits %s", i, d)
		}
	}
	// The fourth message to the same chat waits one interval (a second and
	// the pacing margin), and its slot is reserved: asking again before
	// then reports the rest of the wait.
	iv := paced(time.Second)
	if iv != 1020*time.Millisecond {
		t.Fatalf("interval at 1/s is %s, want 1.02s", iv)
	}
	if d := l.wait("t3", "42"); d != iv {
		t.Fatalf("4th message waits %s, want %s", d, iv)
	}
	clk.Advance(400 * time.Millisecond)
	if d := l.wait("t3", "42"); d != iv-400*time.Millisecond {
		t.Fatalf("asking again waits %s, want the rest", d)
	}
	// Another target of the same chat (a second topic) queues behind it.
	if d := l.wait("t4", "42"); d != 2*iv-400*time.Millisecond {
		t.Fatalf("next target waits %s, want %s", d, 2*iv-400*time.Millisecond)
	}
	clk.Advance(iv - 400*time.Millisecond)
	if d := l.wait("t3", "42"); d != 0 {
		t.Fatalf("the reserved slot is due, yet it waits %s", d)
	}
	// Other chats are not held back.
	if d := l.wait("u", "43"); d != 0 {
		t.Fatalf("another chat waits %s", d)
	}
}

func TestLimiterGlobalEvenSpacing(t *testing.T) {
	clk := clock.NewFake(t0)
	l := newLimiter(clk, Limits{GlobalPerSecond: 30})
	// 60 different chats at once: the first goes now, each next one
	// 1/30 s later, and no one-second window holds more than 30.
	var slots []time.Time
	for i := range 60 {
		d := l.wait(fmt.Sprintf("t%d", i), fmt.Sprint(i))
		slots = append(slots, t0.Add(d))
	}
	interval := paced(time.Second / 30)
	for i, s := range slots {
		if want := t0.Add(time.Duration(i) * interval); !s.Equal(want) {
			t.Fatalf("slot %d at %s, want %s", i, s.Sub(t0), want.Sub(t0))
		}
	}
	for i := 30; i < len(slots); i++ {
		if slots[i].Sub(slots[i-30]) < time.Second-time.Millisecond {
			t.Fatalf("31 messages within %s", slots[i].Sub(slots[i-30]))
		}
	}
}

func TestLimiterGroupPerMinute(t *testing.T) {
	clk := clock.NewFake(t0)
	l := newLimiter(clk, Limits{PerChat: 100, PerChatBurst: 1, PerGroupPerMinute: 20})
	// A group gets one message per 3 s; a private chat is not a group.
	if d := l.wait("g1", "-100"); d != 0 {
		t.Fatal(d)
	}
	if d := l.wait("g2", "-100"); d != paced(3*time.Second) {
		t.Fatalf("second group message waits %s, want 3s and the margin", d)
	}
	if d := l.wait("p1", "100"); d != 0 {
		t.Fatalf("private chat waits %s", d)
	}
	if d := l.wait("p2", "100"); d != paced(10*time.Millisecond) {
		t.Fatalf("private chat at 100/s waits %s, want 10ms and the margin", d)
	}
}

func TestLimiterOff(t *testing.T) {
	l := newLimiter(clock.NewFake(t0), Limits{})
	for i := range 1000 {
		if d := l.wait("t", "-1"); d != 0 {
			t.Fatalf("message %d waits %s with every limit off", i, d)
		}
	}
}

func TestLimiterPenalize(t *testing.T) {
	clk := clock.NewFake(t0)
	l := newLimiter(clk, Limits{PerChat: 1, PerChatBurst: 3})
	l.wait("t", "42")
	l.penalize("t", "42", 7*time.Second)
	if d := l.wait("t", "42"); d != 7*time.Second {
		t.Fatalf("after a 429 with retry_after 7 the chat waits %s", d)
	}
	clk.Advance(7 * time.Second)
	if d := l.wait("t", "42"); d != 0 {
		t.Fatalf("due, yet waits %s", d)
	}
	// No burst right after a penalty: the next one is an interval later.
	if d := l.wait("t2", "42"); d != paced(time.Second) {
		t.Fatalf("after the penalty the next waits %s, want one interval", d)
	}
}

// TestLimiterUnderLoad simulates the outbox with 100 chats of 5 messages
// each at 1/s per chat and 30/s overall: every message is told to wait at
// most once (so pacing never nears the outbox's cap on throttled retries),
// no two sends are closer than 1/30 s, no chat gets two within a second,
// and the global rate is used in full but for the pacing margin (in fake
// time, so exactly).
func TestLimiterUnderLoad(t *testing.T) {
	clk := clock.NewFake(t0)
	l := newLimiter(clk, Limits{PerChat: 1, PerChatBurst: 1, GlobalPerSecond: 30})
	type target struct {
		key, chat string
		left      int
		at        time.Time
		waits     int
	}
	var targets []*target
	for i := range 100 {
		targets = append(targets, &target{key: fmt.Sprintf("chat:telegram:%d", i), chat: fmt.Sprint(i), left: 5, at: t0})
	}
	var sends []time.Time
	lastByChat := map[string]time.Time{}
	for len(targets) > 0 {
		best := 0
		for i, p := range targets {
			if p.at.Before(targets[best].at) {
				best = i
			}
		}
		p := targets[best]
		if clk.Now().Before(p.at) {
			clk.Set(p.at)
		}
		if d := l.wait(p.key, p.chat); d > 0 {
			p.waits++
			if p.waits > 1 {
				t.Fatalf("%s told to wait twice for one message", p.key)
			}
			p.at = clk.Now().Add(d)
			continue
		}
		now := clk.Now()
		if last, ok := lastByChat[p.chat]; ok && now.Sub(last) < paced(time.Second) {
			t.Fatalf("chat %s got two messages %s apart", p.chat, now.Sub(last))
		}
		if n := len(sends); n > 0 && now.Sub(sends[n-1]) < paced(time.Second/30) {
			t.Fatalf("two sends %s apart", now.Sub(sends[n-1]))
		}
		lastByChat[p.chat] = now
		sends = append(sends, now)
		p.waits, p.left = 0, p.left-1
		if p.left == 0 {
			targets = append(targets[:best], targets[best+1:]...)
		}
	}
	if len(sends) != 500 {
		t.Fatalf("sent %d of 500", len(sends))
	}
	// 500 messages at 30/s: the last goes 499 intervals after the first.
	if got, want := sends[len(sends)-1].Sub(t0), 499*paced(time.Second/30); got-want > time.Microsecond || want-got > time.Microsecond {
		t.Fatalf("last message at %s, want %s (the global rate used in full)", got, want)
	}
}
