package clock

import (
	"context"
	"sync/atomic"
	"testing"
	"time"
)

func TestFakeRunsDueTimersInOrder(t *testing.T) {
	t0 := time.Date(2026, 11, 21, 0, 0, 0, 0, time.UTC)
	c := NewFake(t0)
	var order []string
	c.AfterFunc(3*time.Second, func() { order = append(order, "c") })
	c.AfterFunc(time.Second, func() {
		order = append(order, "a")
		// A timer armed by a callback runs in the same Advance when due.
		c.AfterFunc(time.Second, func() { order = append(order, "b") })
	})
	stopped := c.AfterFunc(2*time.Second, func() { order = append(order, "never") })
	if !stopped.Stop() || stopped.Stop() {
		t.Fatal("Stop must report true once, then false")
	}
	c.Advance(2500 * time.Millisecond)
	if got := len(order); got != 2 || order[0] != "a" || order[1] != "b" {
		t.Fatalf("after 2.5s: %v", order)
	}
	if !c.Now().Equal(t0.Add(2500 * time.Millisecond)) {
		t.Fatalf("now %v", c.Now())
	}
	if due, ok := c.NextDue(); !ok || !due.Equal(t0.Add(3*time.Second)) || c.Pending() != 1 {
		t.Fatalf("next due %v %v, pending %d", due, ok, c.Pending())
	}
	c.Set(t0) // never backwards
	if !c.Now().Equal(t0.Add(2500 * time.Millisecond)) {
		t.Fatal("Set moved the clock backwards")
	}
	c.Advance(time.Second)
	if len(order) != 3 || order[2] != "c" || c.Pending() != 0 {
		t.Fatalf("after 3.5s: %v", order)
	}
}

func TestRealAfterFunc(t *testing.T) {
	var fired atomic.Bool
	done := make(chan struct{})
	(Real{}).AfterFunc(time.Millisecond, func() { fired.Store(true); close(done) })
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("real timer never fired")
	}
	if now := (Real{}).Now(); !fired.Load() || now.IsZero() {
		t.Fatal("real clock")
	}
}

func TestSleep(t *testing.T) {
	c := NewFake(time.Unix(0, 0))
	done := make(chan bool)
	go func() { done <- Sleep(context.Background(), c, time.Minute) }()
	for c.Pending() == 0 {
		time.Sleep(time.Millisecond)
	}
	c.Advance(time.Minute)
	if !<-done {
		t.Fatal("Sleep reported an early end after its full wait")
	}
	ctx, cancel := context.WithCancel(context.Background())
	go func() { done <- Sleep(ctx, c, time.Minute) }()
	for c.Pending() == 0 {
		time.Sleep(time.Millisecond)
	}
	cancel()
	if <-done {
		t.Fatal("Sleep reported a full wait after its context ended")
	}
	if c.Pending() != 0 {
		t.Error("the timer of a cancelled Sleep is still scheduled")
	}
}
