package outbox

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"reflect"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/a6afc2ce/hermes-hub/internal/testkit"

	"github.com/a6afc2ce/hermes-hub/chat"
	"github.com/a6afc2ce/hermes-hub/clock"
)

// TestDedupeAcrossStates enqueues the same ids again while they are pending,
// delivered and dead: nothing is added and nothing is sent again.
func TestDedupeAcrossStates(t *testing.T) {
	s := newBolt(t)
	rec := newRecorder(nil)
	rec.reply = func(e *Entry, _ int) error {
		if e.Target == dc("2") {
			return Permanent(errors.New("403 blocked"))
		}
		return nil
	}
	ev := newEvents()
	// Discord and Telegram have senders; web has none, so it stays pending.
	o := New(s, muxFor(t, rec, "chat"), Options{Events: ev, Logger: testkit.Discard()})
	stop := run(t, o)

	delivered := entries(KindReply, "t1", tg("1"), 3)
	dead := entries(KindReply, "t1", dc("2"), 1)
	pending := entries(KindReply, "t1", chat.WebKey, 2)
	all := append(append(append([]Entry{}, delivered...), dead...), pending...)
	if added := mustEnqueue(t, o, all); len(added) != len(all) {
		t.Fatalf("first enqueue added %d of %d", len(added), len(all))
	}
	for range delivered {
		recv(t, ev.delivered, "delivery")
	}
	recv(t, ev.dead, "dead letter")

	// Again, in every state, plus one new chunk for the telegram target.
	extra := entries(KindReply, "t2", tg("1"), 1)
	added := mustEnqueue(t, o, append(append([]Entry{}, all...), extra...))
	if !reflect.DeepEqual(added, []string{extra[0].ID}) {
		t.Fatalf("re-enqueue added %q, want only %q", added, extra[0].ID)
	}
	// The new chunk is behind the old ones in the same FIFO: once it is
	// delivered, any resend of an old one would already have happened.
	if e := recv(t, ev.delivered, "new delivery"); e.ID != extra[0].ID {
		t.Fatalf("delivered %s, want %s", e.ID, extra[0].ID)
	}
	stop()
	for _, e := range append(append([]Entry{}, delivered...), dead...) {
		if n := rec.count(e.ID); n != 1 {
			t.Errorf("%s sent %d times, want 1", e.ID, n)
		}
	}
	for _, e := range pending {
		if n := rec.count(e.ID); n != 0 {
			t.Errorf("%s (no sender) sent %d times", e.ID, n)
		}
		if got := mustGet(t, s, e.ID); got.State != StatePending {
			t.Errorf("%s is %s, want pending", e.ID, got.State)
		}
	}
}

// TestOrderingManyTargets: per target, exact enqueue order and never two
// sends at once; targets progress in parallel.
func TestOrderingManyTargets(t *testing.T) {
	const targets, turns, perTurn = 40, 5, 10
	s := newBolt(t)
	rec := newRecorder(nil)
	rec.reply = func(e *Entry, _ int) error {
		runtime.Gosched()
		return nil
	}
	ev := newEvents()
	o := New(s, muxFor(t, rec), Options{Concurrency: 8, Events: ev, Logger: testkit.Discard()})
	run(t, o)

	keys := make([]chat.Key, targets)
	for i := range keys {
		switch i % 4 {
		case 0:
			keys[i] = tg(fmt.Sprint(100 + i))
		case 1:
			keys[i] = dc(fmt.Sprint(200 + i))
		case 2:
			keys[i] = chat.ChatKey(chat.Telegram, "-1001", fmt.Sprint(i))
		default:
			keys[i] = chat.LocalKey(fmt.Sprintf("out/%d.jsonl", i))
		}
	}
	// One producer per target, all at once: each target's order is its
	// producer's order.
	var wg sync.WaitGroup
	want := map[string][]string{}
	for _, k := range keys {
		var ids []string
		for turn := range turns {
			for _, e := range entries(KindReply, fmt.Sprintf("turn%d", turn), k, perTurn) {
				ids = append(ids, e.ID)
			}
		}
		want[k.String()] = ids
		wg.Go(func() {
			for turn := range turns {
				if _, err := o.Enqueue(context.Background(), entries(KindReply, fmt.Sprintf("turn%d", turn), k, perTurn)); err != nil {
					t.Error(err)
				}
			}
		})
	}
	wg.Wait()
	for range targets * turns * perTurn {
		recv(t, ev.delivered, "deliveries")
	}
	rec.mu.Lock()
	overlaps := rec.overlaps
	rec.mu.Unlock()
	if len(overlaps) > 0 {
		t.Fatalf("concurrent sends to one target: %q", overlaps)
	}
	for _, k := range keys {
		if got := rec.deliveredTo(k.String()); !reflect.DeepEqual(got, want[k.String()]) {
			t.Errorf("order for %s:\n got %q\nwant %q", k, got, want[k.String()])
		}
	}
	if n := rec.total(); n != targets*turns*perTurn {
		t.Errorf("%d sends, want %d", n, targets*turns*perTurn)
	}
}

// TestRetryAfterExact: a 429 with retry_after waits exactly that long for
// that target only.
func TestRetryAfterExact(t *testing.T) {
	fake := clock.NewFake(t0)
	s := newBolt(t)
	rec := newRecorder(fake)
	rec.reply = func(e *Entry, n int) error {
		if e.Target == tg("1") && e.Index == 0 && n == 1 {
			return RetryAfter(30*time.Second, errors.New("429 Too Many Requests"))
		}
		return nil
	}
	ev := newEvents()
	o := New(s, muxFor(t, rec), Options{Clock: fake, Events: ev, Logger: testkit.Discard()})
	run(t, o)

	x := entries(KindReply, "t", tg("1"), 2)
	y := entries(KindReply, "t", tg("2"), 3)
	mustEnqueue(t, o, append(append([]Entry{}, x...), y...))

	r := recv(t, ev.retrying, "retry")
	if r.e.ID != x[0].ID || !r.next.Equal(t0.Add(30*time.Second)) {
		t.Fatalf("retrying %s at %v, want %s at %v", r.e.ID, r.next, x[0].ID, t0.Add(30*time.Second))
	}
	// The other target is not held up.
	for range y {
		if e := recv(t, ev.delivered, "other target"); e.Target != tg("2") {
			t.Fatalf("delivered %s while chat:telegram:1 waits", e.ID)
		}
	}
	stored := mustGet(t, s, x[0].ID)
	if stored.Attempts != 0 || stored.Throttled != 1 || !stored.NextAttemptAt.Equal(t0.Add(30*time.Second)) {
		t.Fatalf("stored retry state: attempts %d throttled %d next %v", stored.Attempts, stored.Throttled, stored.NextAttemptAt)
	}

	fake.Advance(30*time.Second - time.Nanosecond)
	if st, _ := o.targetState("chat:telegram:1"); st != tWaiting {
		t.Fatalf("target state %d just before retry_after, want waiting", st)
	}
	if n := rec.count(x[0].ID); n != 1 {
		t.Fatalf("sent %d times before retry_after elapsed", n)
	}
	fake.Advance(time.Nanosecond)
	for _, want := range x {
		if e := recv(t, ev.delivered, "retried chunk"); e.ID != want.ID {
			t.Fatalf("delivered %s, want %s", e.ID, want.ID)
		}
	}
	calls := rec.callsOf(x[0].ID)
	if len(calls) != 2 || !calls[1].At.Equal(t0.Add(30*time.Second)) {
		t.Fatalf("calls for %s: %+v; want the second exactly at +30s", x[0].ID, calls)
	}
}

// TestTransientBackoff: a burst of 5xx answers waits growing, capped delays
// within the jitter bounds, and nothing is sent before each is due.
func TestTransientBackoff(t *testing.T) {
	fake := clock.NewFake(t0)
	s := newBolt(t)
	const failures = 7
	rec := newRecorder(fake)
	rec.reply = func(e *Entry, n int) error {
		if n <= failures {
			return Transient(errors.New("502 Bad Gateway"))
		}
		return nil
	}
	ev := newEvents()
	b := Backoff{Base: time.Second, Max: 10 * time.Second, Factor: 2, Jitter: 0.2}
	o := New(s, muxFor(t, rec), Options{Clock: fake, Events: ev, Backoff: b, MaxAttempts: 10, Logger: testkit.Discard()})
	run(t, o)
	e := entries(KindReply, "t", dc("9"), 1)[0]
	mustEnqueue(t, o, []Entry{e})

	nominal := time.Second
	for i := 1; i <= failures; i++ {
		r := recv(t, ev.retrying, "retry")
		now := fake.Now()
		d := r.next.Sub(now)
		lo, hi := time.Duration(float64(nominal)*0.8), min(time.Duration(float64(nominal)*1.2), b.Max)
		if d < lo || d > hi {
			t.Errorf("attempt %d: delay %v outside [%v, %v]", i, d, lo, hi)
		}
		if r.e.Attempts != i {
			t.Errorf("attempt %d: entry says %d attempts", i, r.e.Attempts)
		}
		if got := mustGet(t, s, e.ID); got.Attempts != i || !got.NextAttemptAt.Equal(r.next) {
			t.Errorf("attempt %d: stored %d attempts, next %v", i, got.Attempts, got.NextAttemptAt)
		}
		fake.Advance(d - time.Nanosecond)
		if st, _ := o.targetState(e.Target.String()); st != tWaiting {
			t.Fatalf("attempt %d: target state %d before the backoff elapsed, want waiting", i, st)
		}
		if n := rec.count(e.ID); n != i {
			t.Fatalf("attempt %d: %d sends before the backoff elapsed", i, n)
		}
		fake.Advance(time.Nanosecond)
		nominal = min(2*nominal, b.Max)
	}
	got := recv(t, ev.delivered, "delivery after the burst")
	if got.ID != e.ID || rec.count(e.ID) != failures+1 {
		t.Fatalf("delivered %s after %d sends", got.ID, rec.count(e.ID))
	}
}

func TestPermanentDeadLetter(t *testing.T) {
	s := newBolt(t)
	rec := newRecorder(nil)
	rec.reply = func(e *Entry, _ int) error {
		if e.Index == 0 {
			return Permanent(errors.New("400 Bad Request: chat not found"))
		}
		return nil
	}
	ev := newEvents()
	o := New(s, muxFor(t, rec), Options{Events: ev, Logger: testkit.Discard()})
	run(t, o)
	es := entries(KindReply, "t", tg("3"), 2)
	mustEnqueue(t, o, es)
	d := recv(t, ev.dead, "dead letter")
	if d.ID != es[0].ID || d.State != StateDead || d.Attempts != 1 {
		t.Fatalf("dead: %+v", d)
	}
	// The target moves on to its next chunk.
	if e := recv(t, ev.delivered, "next chunk"); e.ID != es[1].ID {
		t.Fatalf("delivered %s", e.ID)
	}
	got := mustGet(t, s, es[0].ID)
	if got.State != StateDead || got.Attempts != 1 || got.Text != es[0].Text || !strings.Contains(got.LastError, "chat not found") {
		t.Fatalf("stored dead letter: %+v", got)
	}
	if n := rec.count(es[0].ID); n != 1 {
		t.Fatalf("permanent failure sent %d times", n)
	}
}

// TestMaxAttemptsThenRequeue: transient failures up to MaxAttempts make a
// dead letter; retrying it (Requeue) delivers it.
func TestMaxAttemptsThenRequeue(t *testing.T) {
	fake := clock.NewFake(t0)
	s := newBolt(t)
	var healthy sync.Mutex
	broken := true
	rec := newRecorder(fake)
	rec.reply = func(e *Entry, _ int) error {
		healthy.Lock()
		defer healthy.Unlock()
		if broken {
			return errors.New("connection refused") // unclassified: transient
		}
		return nil
	}
	ev := newEvents()
	o := New(s, muxFor(t, rec), Options{Clock: fake, Events: ev, MaxAttempts: 3, Logger: testkit.Discard()})
	run(t, o)
	e := entries(KindNotice, "n", chat.WebKey, 1)[0]
	mustEnqueue(t, o, []Entry{e})
	for i := 1; i < 3; i++ {
		r := recv(t, ev.retrying, "retry")
		fake.Set(r.next)
	}
	d := recv(t, ev.dead, "dead letter")
	if d.Attempts != 3 || rec.count(e.ID) != 3 {
		t.Fatalf("dead after %d attempts, %d sends; want 3", d.Attempts, rec.count(e.ID))
	}
	// Events come before the mark is stored; wait for it.
	testkit.WaitFor(t, "the dead letter stored", func() bool { return mustGet(t, s, e.ID).State == StateDead })
	if got := mustGet(t, s, e.ID); got.State != StateDead || got.Attempts != 3 || !strings.Contains(got.LastError, "connection refused") {
		t.Fatalf("stored: %+v", got)
	}

	healthy.Lock()
	broken = false
	healthy.Unlock()
	if _, err := o.Requeue(context.Background(), e.ID); err != nil {
		t.Fatal(err)
	}
	if got := recv(t, ev.delivered, "requeued delivery"); got.ID != e.ID {
		t.Fatalf("delivered %s", got.ID)
	}
	if _, err := o.Requeue(context.Background(), e.ID); !errors.Is(err, ErrWrongState) {
		t.Fatalf("requeue of a delivered entry: %v", err)
	}
}

func TestMaxRetryAfterThenDead(t *testing.T) {
	fake := clock.NewFake(t0)
	s := newBolt(t)
	rec := newRecorder(fake)
	rec.reply = func(*Entry, int) error { return RetryAfter(time.Second, errors.New("429")) }
	ev := newEvents()
	o := New(s, muxFor(t, rec), Options{Clock: fake, Events: ev, MaxRetryAfter: 2, Logger: testkit.Discard()})
	run(t, o)
	e := entries(KindReply, "t", tg("4"), 1)[0]
	mustEnqueue(t, o, []Entry{e})
	for range 2 {
		r := recv(t, ev.retrying, "retry")
		fake.Set(r.next)
	}
	d := recv(t, ev.dead, "dead letter")
	if d.Throttled != 3 || d.Attempts != 0 {
		t.Fatalf("dead letter: throttled %d attempts %d", d.Throttled, d.Attempts)
	}
}

// TestNoSenderStaysPending: a target without a sender is counted and logged
// once, never dead-lettered, never polled; a sender registered later lets it
// go on the next wake.
func TestNoSenderStaysPending(t *testing.T) {
	fake := clock.NewFake(t0)
	s := &countingStore{Store: newBolt(t)}
	rec := newRecorder(fake)
	mux := muxFor(t, rec, "chat:discord")
	var logs logBuffer
	ev := newEvents()
	o := New(s, mux, Options{Clock: fake, Events: ev, Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	run(t, o)

	es := entries(KindReply, "t", tg("7"), 2)
	mustEnqueue(t, o, es[:1])
	testkit.WaitFor(t, "target to be unroutable", func() bool { return o.Stats().Unroutable == 1 })
	mustEnqueue(t, o, es[1:])
	fake.Advance(24 * time.Hour)
	st := o.Stats()
	if st.Unroutable != 1 || st.Platforms["telegram"].Pending != 2 {
		t.Fatalf("stats: %+v", st)
	}
	if n := logs.count("no sender for target"); n != 1 {
		t.Fatalf("logged %d times, want once", n)
	}
	if heads := s.heads(); heads != 1 {
		t.Fatalf("queue head read %d times while no sender: a poll loop", heads)
	}
	for _, e := range es {
		if got := mustGet(t, s, e.ID); got.State != StatePending || got.Attempts != 0 {
			t.Fatalf("%s: %+v", e.ID, got)
		}
	}

	if err := mux.Handle("chat:telegram", rec); err != nil {
		t.Fatal(err)
	}
	more := entries(KindReply, "t2", tg("7"), 1)
	mustEnqueue(t, o, more)
	for _, want := range append(es, more...) {
		if e := recv(t, ev.delivered, "delivery"); e.ID != want.ID {
			t.Fatalf("delivered %s, want %s", e.ID, want.ID)
		}
	}
	if st := o.Stats(); st.Unroutable != 0 {
		t.Fatalf("still unroutable: %+v", st)
	}
}

// countingStore counts Head calls.
type countingStore struct {
	Store
	mu sync.Mutex
	n  int
}

func (c *countingStore) Head(ctx context.Context, target string) (Entry, bool, error) {
	c.mu.Lock()
	c.n++
	c.mu.Unlock()
	return c.Store.Head(ctx, target)
}

func (c *countingStore) heads() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n
}

// TestRetryTimeSurvivesRestart: the stored NextAttemptAt is honoured by the
// next process.
func TestRetryTimeSurvivesRestart(t *testing.T) {
	fake := clock.NewFake(t0)
	dir := t.TempDir()
	st, s := openBolt(t, dir)
	rec := newRecorder(fake)
	rec.reply = func(*Entry, int) error { return RetryAfter(time.Hour, errors.New("429")) }
	ev := newEvents()
	o := New(s, muxFor(t, rec), Options{Clock: fake, Events: ev, Logger: testkit.Discard()})
	stop := run(t, o)
	e := entries(KindReply, "t", tg("8"), 1)[0]
	mustEnqueue(t, o, []Entry{e})
	r := recv(t, ev.retrying, "retry")
	stop()
	st.Close()

	st, s = openBolt(t, dir)
	defer st.Close()
	rec2 := newRecorder(fake)
	ev2 := newEvents()
	o2 := New(s, muxFor(t, rec2), Options{Clock: fake, Events: ev2, Logger: testkit.Discard()})
	run(t, o2)
	testkit.WaitFor(t, "target to wait for its retry time", func() bool {
		st, ok := o2.targetState(e.Target.String())
		return ok && st == tWaiting
	})
	fake.Set(r.next.Add(-time.Nanosecond))
	if st, _ := o2.targetState(e.Target.String()); st != tWaiting {
		t.Fatalf("target state %d before the stored retry time, want waiting", st)
	}
	if n := rec2.total(); n != 0 {
		t.Fatalf("sent %d times before the stored retry time", n)
	}
	fake.Set(r.next)
	if got := recv(t, ev2.delivered, "delivery"); got.ID != e.ID || got.Throttled != 1 {
		t.Fatalf("delivered %+v", got)
	}
}

// TestPruneAfterRetention: delivered ids are kept for dedupe through the
// retention window and forgotten after it by the clock-driven pruner.
func TestPruneAfterRetention(t *testing.T) {
	fake := clock.NewFake(t0)
	s := newBolt(t)
	rec := newRecorder(fake)
	ev := newEvents()
	o := New(s, muxFor(t, rec), Options{Clock: fake, Events: ev, Retention: 24 * time.Hour, PruneEvery: time.Hour, Logger: testkit.Discard()})
	run(t, o)
	// The pruner re-arms its timer after each prune, from its own goroutine:
	// step the clock only when it has, so every tick is seen.
	armed := func() {
		testkit.WaitFor(t, "the pruner's timer", func() bool {
			due, ok := fake.NextDue()
			return ok && due.After(fake.Now())
		})
	}
	es := entries(KindReply, "t", tg("9"), 3)
	mustEnqueue(t, o, es)
	for range es {
		recv(t, ev.delivered, "delivery")
	}
	for range 23 {
		armed()
		fake.Advance(time.Hour)
	}
	armed()
	if added := mustEnqueue(t, o, es); len(added) != 0 {
		t.Fatalf("within retention, re-enqueue added %q", added)
	}
	for hours := 23; ; hours++ {
		if _, err := s.Get(context.Background(), es[0].ID); errors.Is(err, ErrNotFound) {
			if hours < 24 {
				t.Fatalf("pruned after %dh, before the 24h retention", hours)
			}
			break
		}
		if hours > 26 {
			t.Fatalf("not pruned %dh after delivery with a 24h retention", hours)
		}
		fake.Advance(time.Hour)
		armed() // the tick's prune has finished
	}
	for _, e := range es {
		if _, err := s.Get(context.Background(), e.ID); !errors.Is(err, ErrNotFound) {
			t.Errorf("%s still known after retention: %v", e.ID, err)
		}
	}
	if n := rec.total(); n != len(es) {
		t.Fatalf("%d sends, want %d", n, len(es))
	}
	if c := o.Stats().Platforms["telegram"]; c.Delivered != 3 {
		t.Fatalf("delivered total after pruning = %d, want 3 (totals survive pruning)", c.Delivered)
	}
}

// TestStats: pending, in flight, delivered, retried and dead per platform.
func TestStats(t *testing.T) {
	fake := clock.NewFake(t0)
	s := newBolt(t)
	release := make(chan struct{})
	rec := newRecorder(fake)
	rec.block = func(e *Entry) {
		if e.Target == tg("1") {
			<-release
		}
	}
	rec.reply = func(e *Entry, _ int) error {
		switch e.Target {
		case dc("2"):
			return Transient(errors.New("503"))
		case dc("3"):
			return Permanent(errors.New("404 Unknown Channel"))
		}
		return nil
	}
	ev := newEvents()
	o := New(s, muxFor(t, rec), Options{Clock: fake, Events: ev, Logger: testkit.Discard()})
	stop := run(t, o)
	mustEnqueue(t, o, entries(KindReply, "t", tg("1"), 3))
	mustEnqueue(t, o, entries(KindReply, "t", dc("2"), 1))
	mustEnqueue(t, o, entries(KindReply, "t", dc("3"), 1))
	mustEnqueue(t, o, entries(KindPMA, "t", chat.LocalKey("a.jsonl"), 2))
	recv(t, ev.retrying, "retry")
	recv(t, ev.dead, "dead letter")
	recv(t, ev.delivered, "local 0")
	recv(t, ev.delivered, "local 1")
	want := map[string]PlatformStats{
		"telegram": {Pending: 3, InFlight: 1},
		"discord":  {Pending: 1, Retried: 1, Dead: 1},
		"local":    {Delivered: 2},
	}
	// Events come before the marks are stored; wait until the counters
	// have caught up (a wrong counter still fails below).
	testkit.WaitFor(t, "counters settled", func() bool { return reflect.DeepEqual(o.Stats().Platforms, want) })
	got := o.Stats()
	if !reflect.DeepEqual(got.Platforms, want) {
		t.Fatalf("stats:\n got %+v\nwant %+v", got.Platforms, want)
	}
	close(release)
	for range 3 {
		recv(t, ev.delivered, "telegram")
	}
	stop()
	if got := o.Stats().Platforms["telegram"]; got != (PlatformStats{Delivered: 3}) {
		t.Fatalf("telegram after release: %+v", got)
	}
}

// TestShutdownWaitsForInFlight: Shutdown starts no new send, lets the one in
// flight finish and be marked, and Run returns; nothing leaks.
func TestShutdownWaitsForInFlight(t *testing.T) {
	base := runtime.NumGoroutine()
	s := newBolt(t)
	started := make(chan struct{}, 1)
	release := make(chan struct{})
	rec := newRecorder(nil)
	rec.block = func(*Entry) {
		started <- struct{}{}
		<-release
	}
	o := New(s, muxFor(t, rec), Options{Logger: testkit.Discard()})
	errc := make(chan error, 1)
	go func() { errc <- o.Run(context.Background()) }()
	es := entries(KindReply, "t", tg("1"), 2)
	mustEnqueue(t, o, es)
	<-started
	shut := make(chan error, 1)
	go func() { shut <- o.Shutdown(context.Background()) }()
	testkit.WaitFor(t, "stopping", func() bool {
		o.mu.Lock()
		defer o.mu.Unlock()
		return o.state == stateStopping
	})
	select {
	case err := <-errc:
		t.Fatalf("Run returned with a send in flight: %v", err)
	default:
	}
	close(release)
	if err := recv(t, shut, "Shutdown"); err != nil {
		t.Fatal(err)
	}
	if err := recv(t, errc, "Run"); err != nil {
		t.Fatal(err)
	}
	if got := mustGet(t, s, es[0].ID); got.State != StateDelivered {
		t.Fatalf("in-flight chunk is %s, want delivered", got.State)
	}
	if got := mustGet(t, s, es[1].ID); got.State != StatePending || rec.count(es[1].ID) != 0 {
		t.Fatalf("a send started after Shutdown: %+v", got)
	}
	if _, err := o.Enqueue(context.Background(), entries(KindReply, "u", tg("1"), 1)); err != nil {
		t.Fatalf("enqueue after shutdown must still be durable: %v", err)
	}
	if err := o.Run(context.Background()); !errors.Is(err, ErrClosed) {
		t.Fatalf("Run after Shutdown: %v", err)
	}
	checkNoLeak(t, base)
}

// TestShutdownDeadline: when Shutdown's ctx ends, in-flight sends are
// cancelled, their chunks stay pending untouched, and Run returns.
func TestShutdownDeadline(t *testing.T) {
	base := runtime.NumGoroutine()
	s := newBolt(t)
	started := make(chan struct{}, 1)
	// A sender that waits for its ctx.
	sender := SenderFunc(func(ctx context.Context, e *Entry) (Receipt, error) {
		started <- struct{}{}
		<-ctx.Done()
		return Receipt{}, ctx.Err()
	})
	o := New(s, muxFor(t, sender), Options{Logger: testkit.Discard()})
	errc := make(chan error, 1)
	go func() { errc <- o.Run(context.Background()) }()
	e := entries(KindReply, "t", dc("1"), 1)[0]
	mustEnqueue(t, o, []Entry{e})
	<-started
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := o.Shutdown(ctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("Shutdown = %v, want context.Canceled", err)
	}
	if err := recv(t, errc, "Run"); err != nil {
		t.Fatal(err)
	}
	if got := mustGet(t, s, e.ID); got.State != StatePending || got.Attempts != 0 || got.LastError != "" {
		t.Fatalf("cancelled chunk: %+v", got)
	}
	checkNoLeak(t, base)
}

// TestRunCtxCancelNoLeak: cancelling Run's ctx stops everything, timers
// included.
func TestRunCtxCancelNoLeak(t *testing.T) {
	base := runtime.NumGoroutine()
	s := newBolt(t)
	rec := newRecorder(nil)
	rec.reply = func(e *Entry, _ int) error {
		if e.Target == dc("1") {
			return RetryAfter(time.Hour, errors.New("429")) // leaves a real timer armed
		}
		return nil
	}
	ev := newEvents()
	o := New(s, muxFor(t, rec), Options{Concurrency: 16, Events: ev, Logger: testkit.Discard()})
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() { errc <- o.Run(ctx) }()
	mustEnqueue(t, o, entries(KindReply, "t", dc("1"), 1))
	for i := range 20 {
		mustEnqueue(t, o, entries(KindReply, "t", tg(fmt.Sprint(i+1)), 5))
	}
	recv(t, ev.retrying, "retry")
	for range 100 {
		recv(t, ev.delivered, "delivery")
	}
	cancel()
	if err := recv(t, errc, "Run"); err != nil {
		t.Fatal(err)
	}
	checkNoLeak(t, base)
}

// TestSenderPanicIsTransient: a panicking sender does not take the hub down.
func TestSenderPanicIsTransient(t *testing.T) {
	fake := clock.NewFake(t0)
	s := newBolt(t)
	sender := SenderFunc(func(ctx context.Context, e *Entry) (Receipt, error) { panic("nil map") })
	ev := newEvents()
	o := New(s, muxFor(t, sender), Options{Clock: fake, Events: ev, Logger: testkit.Discard()})
	run(t, o)
	mustEnqueue(t, o, entries(KindReply, "t", tg("1"), 1))
	r := recv(t, ev.retrying, "retry")
	if !strings.Contains(r.err.Error(), "sender panicked: nil map") || r.e.Attempts != 1 {
		t.Fatalf("retry after panic: %v, attempts %d", r.err, r.e.Attempts)
	}
}

// drainHookStore pauses the first Head that finds a target's queue empty
// until the test lets it go.
type drainHookStore struct {
	Store
	once    sync.Once
	reached chan struct{}
	release chan struct{}
}

func (h *drainHookStore) Head(ctx context.Context, target string) (Entry, bool, error) {
	e, ok, err := h.Store.Head(ctx, target)
	if err == nil && !ok {
		h.once.Do(func() {
			close(h.reached)
			<-h.release
		})
	}
	return e, ok, err
}

// TestWakeWhileDraining: an entry enqueued after the worker found the queue
// empty, but before it let the target go, is not forgotten.
func TestWakeWhileDraining(t *testing.T) {
	h := &drainHookStore{Store: newBolt(t), reached: make(chan struct{}), release: make(chan struct{})}
	rec := newRecorder(nil)
	ev := newEvents()
	o := New(h, muxFor(t, rec), Options{Events: ev, Logger: testkit.Discard()})
	run(t, o)
	es := entries(KindReply, "t", tg("1"), 2)
	mustEnqueue(t, o, es[:1])
	recv(t, ev.delivered, "first chunk")
	<-h.reached // the worker saw an empty queue and is about to leave
	mustEnqueue(t, o, es[1:])
	close(h.release)
	if e := recv(t, ev.delivered, "chunk enqueued while draining"); e.ID != es[1].ID {
		t.Fatalf("delivered %s", e.ID)
	}
}

// TestFairness: with one worker, a target with a long queue yields after a
// burst, so a target enqueued later is not stuck behind the whole queue.
func TestFairness(t *testing.T) {
	s := newBolt(t)
	hold := make(chan struct{})
	var once sync.Once
	rec := newRecorder(nil)
	rec.block = func(e *Entry) {
		if e.Target == tg("1") {
			once.Do(func() { <-hold })
		}
	}
	ev := newEvents()
	o := New(s, muxFor(t, rec), Options{Concurrency: 1, Events: ev, Logger: testkit.Discard()})
	run(t, o)
	long := entries(KindReply, "t", tg("1"), 100)
	mustEnqueue(t, o, long)
	testkit.WaitFor(t, "the first send", func() bool { return rec.total() == 1 })
	short := entries(KindReply, "t", tg("2"), 1)
	mustEnqueue(t, o, short)
	close(hold)
	for i := 1; ; i++ {
		e := recv(t, ev.delivered, "delivery")
		if e.ID == short[0].ID {
			if i > 10 {
				t.Fatalf("the short queue was delivered %dth of %d: it waited for the long one", i, len(long)+1)
			}
			break
		}
	}
}
