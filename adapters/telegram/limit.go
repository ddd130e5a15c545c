package telegram

import (
	"strings"
	"sync"
	"time"

	"github.com/a6afc2ce/hermes-hub/clock"
)

// Limits are the sender's proactive pacing, so that Telegram rarely has to
// answer 429. A zero field turns that limit off.
type Limits struct {
	// PerChat is messages per second to one chat; PerChatBurst is how many
	// may go at once before that rate applies.
	PerChat      float64
	PerChatBurst int
	// PerGroupPerMinute is messages per minute to one group or supergroup.
	PerGroupPerMinute int
	// GlobalPerSecond is messages per second over all chats.
	GlobalPerSecond int
}

// gcra is one rate limit in the generic cell rate algorithm: a message may
// go at t when t >= tat - tolerance, and then moves tat one interval past
// max(tat, t). Time only moves tat forward, so a slot handed out for the
// future stays reserved.
type gcra struct {
	interval  time.Duration
	tolerance time.Duration
	tat       time.Time
}

func newGCRA(interval time.Duration, burst int) *gcra {
	if burst < 1 {
		burst = 1
	}
	return &gcra{interval: interval, tolerance: time.Duration(burst-1) * interval}
}

// earliest is the first time at or after now when a message conforms.
func (g *gcra) earliest(now time.Time) time.Time {
	if t := g.tat.Add(-g.tolerance); t.After(now) {
		return t
	}
	return now
}

// take spends the slot at t.
func (g *gcra) take(t time.Time) {
	if g.tat.Before(t) {
		g.tat = t
	}
	g.tat = g.tat.Add(g.interval)
}

// idle reports whether the limit has forgotten every message by now.
func (g *gcra) idle(now time.Time) bool { return !g.tat.After(now) }

// spacer keeps sends at least interval apart, over all chats. Unlike a
// gcra it fills gaps: a slot handed out for the future (a chat waiting for
// its own limit) does not hold back sends that fit before it, so the global
// rate is used in full when many chats wait on their per-chat limits.
type spacer struct {
	interval time.Duration
	times    []time.Time // taken slots, ascending; older ones are pruned
}

// earliest is the first time at or after e that is at least interval away
// from every taken slot.
func (s *spacer) earliest(e time.Time) time.Time {
	t := e
	for _, x := range s.times {
		if !x.After(t.Add(-s.interval)) {
			continue // far enough before
		}
		if !x.Before(t.Add(s.interval)) {
			break // far enough after: t fits
		}
		t = x.Add(s.interval)
	}
	return t
}

// take spends the slot at t and forgets slots that can no longer matter.
func (s *spacer) take(t, now time.Time) {
	i := len(s.times)
	for i > 0 && s.times[i-1].After(t) {
		i--
	}
	s.times = append(s.times, time.Time{})
	copy(s.times[i+1:], s.times[i:])
	s.times[i] = t
	cut := 0
	for cut < len(s.times) && s.times[cut].Before(now.Add(-s.interval)) {
		cut++
	}
	if cut > 0 {
		s.times = append(s.times[:0], s.times[cut:]...)
	}
}

// limiter paces the messages of the sender. Each send asks for a slot; when
// the slot is in the future it is reserved for that target, and the target
// is told how long to wait: when it comes back, the reserved slot is its own,
// so a target under load waits once per message, never in a loop, and the
// outbox's cap on throttled retries is never reached by pacing alone.
type limiter struct {
	clk    clock.Clock
	limits Limits

	mu       sync.Mutex
	global   *spacer
	chats    map[string]*gcra // per chat id
	groups   map[string]*gcra // per group chat id
	reserved map[string]time.Time
}

// pacingMargin widens every interval by 2%: a send that leaves a few
// milliseconds late (timers, scheduling, the network) must not make the
// next one look early to Telegram. 98% of each limit is still used.
const pacingMargin = 1.02

// paced is an interval with the margin.
func paced(d time.Duration) time.Duration { return time.Duration(float64(d) * pacingMargin) }

func (l *limiter) chatInterval() time.Duration {
	return paced(time.Duration(float64(time.Second) / l.limits.PerChat))
}

// reservationSlack lets a target that comes back a moment early (timer
// granularity) use its slot.
const reservationSlack = 2 * time.Millisecond

// pruneAbove is the size of a map past which idle limits are dropped.
const pruneAbove = 1024

func newLimiter(clk clock.Clock, l Limits) *limiter {
	lim := &limiter{
		clk: clk, limits: l,
		chats: map[string]*gcra{}, groups: map[string]*gcra{}, reserved: map[string]time.Time{},
	}
	if l.GlobalPerSecond > 0 {
		// No burst: an even spacing keeps every one-second window within
		// the limit, which is how Telegram counts.
		lim.global = &spacer{interval: paced(time.Second / time.Duration(l.GlobalPerSecond))}
	}
	return lim
}

// isGroup reports whether a chat id names a group, supergroup or channel
// (negative ids) rather than a private chat.
func isGroup(chatID string) bool { return strings.HasPrefix(chatID, "-") }

// wait returns how long target (a message to chatID) must wait before it
// may be sent; zero means now, and the slot is taken.
func (l *limiter) wait(target, chatID string) time.Duration {
	if l == nil {
		return 0
	}
	now := l.clk.Now()
	l.mu.Lock()
	defer l.mu.Unlock()
	if at, ok := l.reserved[target]; ok {
		if d := at.Sub(now); d > reservationSlack {
			return d
		}
		delete(l.reserved, target)
		return 0
	}
	var lims []*gcra
	if l.limits.PerChat > 0 {
		lims = append(lims, l.limit(l.chats, chatID, l.chatInterval(), l.limits.PerChatBurst, now))
	}
	if n := l.limits.PerGroupPerMinute; n > 0 && isGroup(chatID) {
		burst := min(max(l.limits.PerChatBurst, 1), n)
		lims = append(lims, l.limit(l.groups, chatID, paced(time.Minute/time.Duration(n)), burst, now))
	}
	// The per-chat and per-group limits say when this chat may send; the
	// global spacing picks the first free slot from then on.
	at := now
	for _, g := range lims {
		if t := g.earliest(now); t.After(at) {
			at = t
		}
	}
	if l.global != nil {
		at = l.global.earliest(at)
		l.global.take(at, now)
	}
	for _, g := range lims {
		g.take(at)
	}
	if d := at.Sub(now); d > 0 {
		l.reserved[target] = at
		if len(l.reserved) > pruneAbove {
			for k, t := range l.reserved {
				if now.Sub(t) > time.Minute {
					delete(l.reserved, k) // never came back (shut down, purged)
				}
			}
		}
		return d
	}
	return 0
}

// limit returns the limit of key in m, creating it, and drops idle ones when
// m has grown large.
func (l *limiter) limit(m map[string]*gcra, key string, interval time.Duration, burst int, now time.Time) *gcra {
	if g, ok := m[key]; ok {
		return g
	}
	if len(m) >= pruneAbove {
		for k, g := range m {
			if g.idle(now) {
				delete(m, k)
			}
		}
	}
	g := newGCRA(interval, burst)
	m[key] = g
	return g
}

// penalize pushes chatID's next slot to d from now, after Telegram answered
// a 429 with retry_after d, and forgets target's reservation (it was used).
func (l *limiter) penalize(target, chatID string, d time.Duration) {
	if l == nil {
		return
	}
	now := l.clk.Now()
	l.mu.Lock()
	defer l.mu.Unlock()
	delete(l.reserved, target)
	if l.limits.PerChat <= 0 {
		return
	}
	g := l.limit(l.chats, chatID, l.chatInterval(), l.limits.PerChatBurst, now)
	// The next message may go at now+d: tat - tolerance = now + d.
	if t := now.Add(d + g.tolerance); g.tat.Before(t) {
		g.tat = t
	}
}
