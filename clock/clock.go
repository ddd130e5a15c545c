// Package clock abstracts time for code with timers (backoff, rate limits,
// retention, flush intervals) so tests drive time with a Fake instead of
// sleeping.
package clock

import (
	"context"
	"sort"
	"sync"
	"time"
)

// Clock tells the time and schedules callbacks.
type Clock interface {
	Now() time.Time
	// AfterFunc calls f after d: Real in its own goroutine, Fake inside
	// Advance/Set on the caller's goroutine.
	AfterFunc(d time.Duration, f func()) Timer
}

// Timer is a scheduled callback.
type Timer interface {
	// Stop prevents the callback from running; it reports whether it did.
	Stop() bool
}

// Real is the system clock.
type Real struct{}

// Now returns time.Now().
func (Real) Now() time.Time { return time.Now() }

// AfterFunc wraps time.AfterFunc.
func (Real) AfterFunc(d time.Duration, f func()) Timer { return time.AfterFunc(d, f) }

// Fake is a manually advanced clock for tests. Callbacks due at or before the
// new time run, in due order, when Advance or Set is called.
type Fake struct {
	mu     sync.Mutex
	now    time.Time
	seq    int
	timers map[int]*fakeTimer
}

type fakeTimer struct {
	c   *Fake
	id  int
	at  time.Time
	f   func()
	seq int
}

// NewFake returns a Fake clock set to t.
func NewFake(t time.Time) *Fake { return &Fake{now: t, timers: map[int]*fakeTimer{}} }

// Now returns the fake time.
func (c *Fake) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// AfterFunc schedules f to run (synchronously, inside Advance) once the fake
// time reaches Now()+d. A non-positive d still waits for the next Advance.
func (c *Fake) AfterFunc(d time.Duration, f func()) Timer {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.seq++
	t := &fakeTimer{c: c, id: c.seq, at: c.now.Add(d), f: f, seq: c.seq}
	c.timers[t.id] = t
	return t
}

func (t *fakeTimer) Stop() bool {
	t.c.mu.Lock()
	defer t.c.mu.Unlock()
	_, ok := t.c.timers[t.id]
	delete(t.c.timers, t.id)
	return ok
}

// Advance moves the clock forward by d and runs every callback that is due.
func (c *Fake) Advance(d time.Duration) {
	c.mu.Lock()
	target := c.now.Add(d)
	c.mu.Unlock()
	c.Set(target)
}

// Set moves the clock to t (never backwards) and runs due callbacks in order
// of their due time. Callbacks may schedule new timers; those due by t run too.
func (c *Fake) Set(t time.Time) {
	for {
		c.mu.Lock()
		var due []*fakeTimer
		for _, tm := range c.timers {
			if !tm.at.After(t) {
				due = append(due, tm)
			}
		}
		if len(due) == 0 {
			if t.After(c.now) {
				c.now = t
			}
			c.mu.Unlock()
			return
		}
		sort.Slice(due, func(i, j int) bool {
			if !due[i].at.Equal(due[j].at) {
				return due[i].at.Before(due[j].at)
			}
			return due[i].seq < due[j].seq
		})
		next := due[0]
		delete(c.timers, next.id)
		if next.at.After(c.now) {
			c.now = next.at
		}
		c.mu.Unlock()
		next.f()
	}
}

// Pending reports how many timers are scheduled; tests use it to wait until
// the code under test has armed its timer before advancing.
func (c *Fake) Pending() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.timers)
}

// NextDue returns the due time of the earliest timer, and false if none.
func (c *Fake) NextDue() (time.Time, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	var best time.Time
	ok := false
	for _, tm := range c.timers {
		if !ok || tm.at.Before(best) {
			best, ok = tm.at, true
		}
	}
	return best, ok
}

// Sleep waits d on c; it reports false, at once, when ctx ends first.
func Sleep(ctx context.Context, c Clock, d time.Duration) bool {
	done := make(chan struct{})
	t := c.AfterFunc(d, func() { close(done) })
	select {
	case <-done:
		return true
	case <-ctx.Done():
		t.Stop()
		return false
	}
}
