package outbox

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/a6afc2ce/hermes-hub/internal/testkit"

	"github.com/a6afc2ce/hermes-hub/chat"
	"github.com/a6afc2ce/hermes-hub/clock"
	"github.com/a6afc2ce/hermes-hub/store"
)

// t0 is the fake clock's start in every test.
var t0 = time.Date(2026, 11, 21, 23, 46, 40, 0, time.UTC)

func openBolt(t testing.TB, dir string) (*store.State, *BoltStore) {
	t.Helper()
	st, err := store.Open(dir, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	bs, err := NewBoltStore(st.DB())
	if err != nil {
		st.Close()
		t.Fatal(err)
	}
	return st, bs
}

func newBolt(t testing.TB) *BoltStore {
	t.Helper()
	st, bs := openBolt(t, t.TempDir())
	t.Cleanup(func() { st.Close() })
	return bs
}

// run starts o.Run and returns a stop function that shuts it down and checks
// that Run returned.
func run(t testing.TB, o *Outbox) (stop func()) {
	t.Helper()
	errc := make(chan error, 1)
	go func() { errc <- o.Run(context.Background()) }()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			ctx, cancel := context.WithTimeout(context.Background(), testkit.Wait)
			defer cancel()
			if err := o.Shutdown(ctx); err != nil {
				t.Errorf("shutdown: %v", err)
			}
			select {
			case err := <-errc:
				if err != nil {
					t.Errorf("run: %v", err)
				}
			case <-time.After(testkit.Wait):
				t.Errorf("Run did not return after Shutdown")
			}
		})
	}
	t.Cleanup(stop)
	return stop
}

// entries builds n chunks of one turn for one target.
func entries(kind Kind, turn string, target chat.Key, n int) []Entry {
	out := make([]Entry, n)
	for i := range out {
		out[i] = Entry{
			ID: ID(kind, turn, target, i), Kind: kind, TurnID: turn, Target: target,
			Index: i, Total: n, Text: fmt.Sprintf("chunk %d of %s for %s", i, turn, target),
		}
	}
	return out
}

func tg(chatID string) chat.Key { return chat.ChatKey(chat.Telegram, chatID, "") }
func dc(chatID string) chat.Key { return chat.ChatKey(chat.Discord, chatID, "") }

// call is one Send as a recorder saw it.
type call struct {
	ID     string
	Target string
	At     time.Time // the clock's time at the call
}

// recorder is a Sender that records every call, fails the test on two
// concurrent sends to one target, and answers with reply (nil: success).
type recorder struct {
	clk   clock.Clock
	reply func(e *Entry, n int) error // n counts calls for e.ID, from 1
	block func(e *Entry)              // optional, called before replying

	mu        sync.Mutex
	active    map[string]bool
	calls     []call
	perID     map[string]int
	overlaps  []string
	delivered map[string][]string // target → ids answered with success
	notify    chan call
}

func newRecorder(clk clock.Clock) *recorder {
	if clk == nil {
		clk = clock.Real{}
	}
	return &recorder{
		clk: clk, active: map[string]bool{}, perID: map[string]int{},
		delivered: map[string][]string{}, notify: make(chan call, 100000),
	}
}

func (r *recorder) Send(ctx context.Context, e *Entry) (Receipt, error) {
	r.mu.Lock()
	c := call{ID: e.ID, Target: e.Target.String(), At: r.clk.Now()}
	if r.active[c.Target] {
		r.overlaps = append(r.overlaps, e.ID)
	}
	r.active[c.Target] = true
	r.perID[e.ID]++
	n := r.perID[e.ID]
	r.calls = append(r.calls, c)
	r.mu.Unlock()

	if r.block != nil {
		r.block(e)
	}
	var err error
	if r.reply != nil {
		err = r.reply(e, n)
	}
	if err == nil && ctx.Err() != nil {
		err = ctx.Err()
	}
	r.mu.Lock()
	r.active[c.Target] = false
	if err == nil {
		r.delivered[c.Target] = append(r.delivered[c.Target], e.ID)
	}
	r.mu.Unlock()
	r.notify <- c
	if err != nil {
		return Receipt{}, err
	}
	return Receipt{MessageID: "m-" + e.ID}, nil
}

func (r *recorder) count(id string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.perID[id]
}

func (r *recorder) total() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.calls)
}

func (r *recorder) deliveredTo(target string) []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.delivered[target]...)
}

func (r *recorder) callsOf(id string) []call {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []call
	for _, c := range r.calls {
		if c.ID == id {
			out = append(out, c)
		}
	}
	return out
}

// events records Events as channels.
type events struct {
	delivered chan *Entry
	dead      chan *Entry
	retrying  chan retryEvent
}

type retryEvent struct {
	e    Entry
	err  error
	next time.Time
}

func newEvents() *events {
	return &events{delivered: make(chan *Entry, 100000), dead: make(chan *Entry, 1000), retrying: make(chan retryEvent, 1000)}
}

func (ev *events) Delivered(e *Entry, _ Receipt) { cp := *e; ev.delivered <- &cp }
func (ev *events) Dead(e *Entry)                 { cp := *e; ev.dead <- &cp }
func (ev *events) Retrying(e *Entry, err error, next time.Time) {
	ev.retrying <- retryEvent{e: *e, err: err, next: next}
}

func recv[T any](t testing.TB, c <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-c:
		return v
	case <-time.After(testkit.Wait):
		t.Fatalf("timed out waiting for %s", what)
		panic("unreachable")
	}
}

func muxFor(t testing.TB, s Sender, patterns ...string) *Mux {
	t.Helper()
	m := NewMux()
	if len(patterns) == 0 {
		patterns = []string{"web", "local", "chat"}
	}
	for _, p := range patterns {
		if err := m.Handle(p, s); err != nil {
			t.Fatal(err)
		}
	}
	return m
}

func mustEnqueue(t testing.TB, o *Outbox, es []Entry) []string {
	t.Helper()
	added, err := o.Enqueue(context.Background(), es)
	if err != nil {
		t.Fatal(err)
	}
	return added
}

func mustGet(t testing.TB, s Store, id string) Entry {
	t.Helper()
	e, err := s.Get(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// targetState peeks at the dispatcher's state of a target.
func (o *Outbox) targetState(key string) (targetState, bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	t := o.targets[key]
	if t == nil {
		return 0, false
	}
	return t.state, true
}

// checkNoLeak waits for the goroutine count to settle back to base and
// prints the stacks if it does not.
func checkNoLeak(t testing.TB, base int) {
	t.Helper()
	deadline := time.Now().Add(testkit.Wait)
	for runtime.NumGoroutine() > base {
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<20)
			n := runtime.Stack(buf, true)
			t.Fatalf("goroutines leaked: %d > %d\n%s", runtime.NumGoroutine(), base, buf[:n])
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// logBuffer is a concurrency-safe log sink.
type logBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logBuffer) count(substr string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Count(l.b.String(), substr)
}

var errBoom = errors.New("boom")
