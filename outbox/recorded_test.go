package outbox

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/a6afc2ce/hermes-hub/chat"
	"github.com/a6afc2ce/hermes-hub/clock"
	"github.com/a6afc2ce/hermes-hub/internal/testkit"
)

// recordedRecorder is a recorder whose delivery is the outbox's record.
type recordedRecorder struct{ *recorder }

func (recordedRecorder) DeliveryIsRecord() {}

var _ RecordedSender = recordedRecorder{}

// batchEvents is an events that hears of batches: it keeps each batch's ids
// and checks, when told, that none of them is marked yet (observers come
// before the marks).
type batchEvents struct {
	*events
	st Store
	t  testing.TB

	mu      sync.Mutex
	batches [][]string
	singles []string // ids told with Delivered
}

func newBatchEvents(t testing.TB, st Store) *batchEvents {
	return &batchEvents{events: newEvents(), st: st, t: t}
}

func (b *batchEvents) DeliveredBatch(es []*Entry, rs []Receipt) {
	ids := make([]string, len(es))
	for i, e := range es {
		ids[i] = e.ID
		if got, err := b.st.Get(context.Background(), e.ID); err != nil || got.State != StatePending {
			b.t.Errorf("%s told delivered while %s (%v): observers must come before the mark", e.ID, got.State, err)
		}
		if rs[i].MessageID != "m-"+e.ID || e.State != StateDelivered || e.PlatformMessageID != rs[i].MessageID {
			b.t.Errorf("%s told with receipt %+v, state %s, message id %q", e.ID, rs[i], e.State, e.PlatformMessageID)
		}
	}
	b.mu.Lock()
	b.batches = append(b.batches, ids)
	b.mu.Unlock()
	for _, e := range es {
		cp := *e
		b.delivered <- &cp
	}
}

func (b *batchEvents) Delivered(e *Entry, r Receipt) {
	b.mu.Lock()
	b.singles = append(b.singles, e.ID)
	b.mu.Unlock()
	b.events.Delivered(e, r)
}

// told returns every id told, batches flattened, and the batches' sizes.
func (b *batchEvents) told() (batched []string, sizes []int, singles []string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, ids := range b.batches {
		batched = append(batched, ids...)
		sizes = append(sizes, len(ids))
	}
	return batched, sizes, slices.Clone(b.singles)
}

// storeOnly hides every method of a store but Store's: no batch path.
type storeOnly struct{ Store }

func idsOf(es []Entry) []string {
	out := make([]string, len(es))
	for i, e := range es {
		out[i] = e.ID
	}
	return out
}

func waitMarked(t *testing.T, s Store, es []Entry, state State) {
	t.Helper()
	testkit.WaitFor(t, "every chunk "+string(state), func() bool {
		for _, e := range es {
			if mustGet(t, s, e.ID).State != state {
				return false
			}
		}
		return true
	})
}

// TestRecordedSenderBatches: the chunks of a RecordedSender's target go in
// batches (several per DeliveredBatch), each sent and marked once, in queue
// order, observers before the marks; other senders, and stores without the
// batch reads, keep one chunk at a time with one Delivered each.
func TestRecordedSenderBatches(t *testing.T) {
	tests := []struct {
		name     string
		recorded bool
		plain    bool // the store is behind the Store interface only
		batched  bool
	}{
		{"recorded sender, bolt store", true, false, true},
		{"plain sender, bolt store", false, false, false},
		{"recorded sender, store without batches", true, true, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			bs := newBolt(t)
			var s Store = bs
			if tc.plain {
				s = storeOnly{bs}
			}
			rec := newRecorder(nil)
			var sender Sender = rec
			if tc.recorded {
				sender = recordedRecorder{rec}
			}
			chatRec := newRecorder(nil)
			mux := muxFor(t, sender, "web")
			if err := mux.Handle("chat", chatRec); err != nil {
				t.Fatal(err)
			}
			ev := newBatchEvents(t, s)
			o := New(s, mux, Options{Events: ev, Logger: testkit.Discard()})
			web := entries(KindReply, "t", chat.WebKey, 600)
			other := entries(KindReply, "t", tg("1"), 5)
			// Enqueued before Run: the first batch finds them all.
			mustEnqueue(t, o, append(slices.Clone(web), other...))
			run(t, o)
			for range len(web) + len(other) {
				recv(t, ev.delivered, "delivery")
			}
			waitMarked(t, s, web, StateDelivered)
			waitMarked(t, s, other, StateDelivered)

			for _, e := range append(slices.Clone(web), other...) {
				if n := rec.count(e.ID) + chatRec.count(e.ID); n != 1 {
					t.Fatalf("%s sent %d times", e.ID, n)
				}
			}
			if got := rec.deliveredTo("web"); !slices.Equal(got, idsOf(web)) {
				t.Fatalf("web sends out of order: %d sends", len(got))
			}
			batched, sizes, singles := ev.told()
			if tc.batched {
				if !slices.Equal(batched, idsOf(web)) {
					t.Fatalf("batches told %d ids, not the web chunks in order", len(batched))
				}
				if slices.Max(sizes) < 2 || slices.Max(sizes) > recordedBatch {
					t.Fatalf("batch sizes %v: want several chunks per batch, at most %d", sizes, recordedBatch)
				}
				if !slices.Equal(singles, idsOf(other)) {
					t.Fatalf("the telegram target was told %q, want one Delivered each in order", singles)
				}
			} else {
				if len(batched) != 0 {
					t.Fatalf("batches %v on the one-by-one path", sizes)
				}
				var webSingles []string
				for _, id := range singles {
					if _, _, target, _, err := ParseID(id); err == nil && target == chat.WebKey {
						webSingles = append(webSingles, id)
					}
				}
				if !slices.Equal(webSingles, idsOf(web)) {
					t.Fatalf("web told %d ids one by one, not its chunks in order", len(webSingles))
				}
			}
			rec.mu.Lock()
			defer rec.mu.Unlock()
			if len(rec.overlaps) > 0 {
				t.Fatalf("two sends in flight to one target: %q", rec.overlaps)
			}
		})
	}
}

// TestRecordedBatchFailure: a failed send stops the batch there. The chunks
// before it are marked, it is settled as any failed send (retried or dead),
// and the chunks after it wait for it.
func TestRecordedBatchFailure(t *testing.T) {
	tests := []struct {
		name string
		err  error
		dead bool
	}{
		{"transient", errors.New("503"), false},
		{"permanent", Permanent(errors.New("400")), true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			fake := clock.NewFake(t0)
			s := newBolt(t)
			rec := newRecorder(fake)
			web := entries(KindReply, "t", chat.WebKey, 10)
			const bad = 4
			rec.reply = func(e *Entry, n int) error {
				if e.ID == web[bad].ID && n == 1 {
					return tc.err
				}
				return nil
			}
			ev := newBatchEvents(t, s)
			o := New(s, muxFor(t, recordedRecorder{rec}, "web"), Options{Clock: fake, Events: ev, Logger: testkit.Discard()})
			mustEnqueue(t, o, web)
			run(t, o)

			for i := range bad {
				if e := recv(t, ev.delivered, "delivery"); e.ID != web[i].ID {
					t.Fatalf("delivered %s, want %s", e.ID, web[i].ID)
				}
			}
			waitMarked(t, s, web[:bad], StateDelivered)
			if tc.dead {
				if e := recv(t, ev.dead, "dead letter"); e.ID != web[bad].ID {
					t.Fatalf("dead %s, want %s", e.ID, web[bad].ID)
				}
				for i := bad + 1; i < len(web); i++ {
					if e := recv(t, ev.delivered, "delivery after the dead letter"); e.ID != web[i].ID {
						t.Fatalf("delivered %s, want %s", e.ID, web[i].ID)
					}
				}
				waitMarked(t, s, web[bad+1:], StateDelivered)
				if got := mustGet(t, s, web[bad].ID); got.State != StateDead {
					t.Fatalf("failed chunk is %s, want dead", got.State)
				}
			} else {
				r := recv(t, ev.retrying, "retry")
				if r.e.ID != web[bad].ID {
					t.Fatalf("retrying %s, want %s", r.e.ID, web[bad].ID)
				}
				testkit.WaitFor(t, "target waiting", func() bool {
					st, _ := o.targetState("web")
					return st == tWaiting
				})
				for _, e := range web[bad+1:] {
					if n := rec.count(e.ID); n != 0 {
						t.Fatalf("%s sent while %s waits for its retry", e.ID, web[bad].ID)
					}
				}
				if got := mustGet(t, s, web[bad].ID); got.State != StatePending || got.Attempts != 1 {
					t.Fatalf("failed chunk %+v, want pending with one attempt", got)
				}
				fake.Advance(r.next.Sub(fake.Now()))
				for i := bad; i < len(web); i++ {
					if e := recv(t, ev.delivered, "delivery after the retry"); e.ID != web[i].ID {
						t.Fatalf("delivered %s, want %s", e.ID, web[i].ID)
					}
				}
				waitMarked(t, s, web[bad:], StateDelivered)
			}
			batched, _, _ := ev.told()
			var want []string
			for i, e := range web {
				if i != bad || !tc.dead {
					want = append(want, e.ID)
				}
			}
			if !slices.Equal(batched, want) {
				t.Fatalf("told %q, want %q", batched, want)
			}
			for i, e := range web {
				want := 1
				if i == bad {
					want = 2
					if tc.dead {
						want = 1
					}
				}
				if n := rec.count(e.ID); n != want {
					t.Fatalf("%s sent %d times, want %d", e.ID, n, want)
				}
			}
		})
	}
}

// lostMarks is a store whose delivered marks never land, as if the process
// died between the observers and the marks.
type lostMarks struct{ *BoltStore }

func (lostMarks) deliveredBatch(context.Context, []delivery, []deliveryResult) error {
	return errBoom
}

func (lostMarks) Delivered(context.Context, string, Receipt, time.Time) error { return errBoom }

// TestRecordedBatchLostMarks: chunks sent and told but never marked (a
// crash between the two) are sent and told again by the next run, in order,
// and marked once; told twice, the first telling of each id (what the panel
// keeps, by outbox id) is still the queue order.
func TestRecordedBatchLostMarks(t *testing.T) {
	bs := newBolt(t)
	web := entries(KindReply, "t", chat.WebKey, 20)

	rec1 := newRecorder(nil)
	ev1 := newBatchEvents(t, bs)
	o1 := New(lostMarks{bs}, muxFor(t, recordedRecorder{rec1}, "web"), Options{Events: ev1, Logger: testkit.Discard(), Backoff: Backoff{Base: time.Hour}})
	mustEnqueue(t, o1, web)
	stop1 := run(t, o1)
	for range web {
		recv(t, ev1.delivered, "first delivery")
	}
	stop1()
	for _, e := range web {
		if got := mustGet(t, bs, e.ID); got.State != StatePending {
			t.Fatalf("%s is %s after lost marks, want pending", e.ID, got.State)
		}
	}

	rec2 := newRecorder(nil)
	ev2 := newBatchEvents(t, bs)
	o2 := New(bs, muxFor(t, recordedRecorder{rec2}, "web"), Options{Events: ev2, Logger: testkit.Discard()})
	run(t, o2)
	for range web {
		recv(t, ev2.delivered, "second delivery")
	}
	waitMarked(t, bs, web, StateDelivered)
	counts, err := bs.Counts(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if c := counts["web"]; c.Delivered != int64(len(web)) || c.Pending != 0 {
		t.Fatalf("web counters %+v, want %d delivered once each, none pending", c, len(web))
	}
	told1, _, _ := ev1.told()
	told2, _, _ := ev2.told()
	if !slices.Equal(told1, idsOf(web)) || !slices.Equal(told2, idsOf(web)) {
		t.Fatalf("told %q then %q, want the queue order each time", told1, told2)
	}
	var firsts []string
	seen := map[string]bool{}
	for _, id := range append(told1, told2...) {
		if !seen[id] {
			seen[id] = true
			firsts = append(firsts, id)
		}
	}
	if !slices.Equal(firsts, idsOf(web)) {
		t.Fatalf("first tellings %q, want the queue order", firsts)
	}
}

// TestRecordedBatchShutdown: Shutdown in the middle of a batch starts no
// more sends; Run returns only once the chunks sent are marked. A hard stop
// cancels the send in flight, which stays pending untouched.
func TestRecordedBatchShutdown(t *testing.T) {
	for _, hard := range []bool{false, true} {
		name := "graceful"
		if hard {
			name = "hard"
		}
		t.Run(name, func(t *testing.T) {
			s := newBolt(t)
			web := entries(KindReply, "t", chat.WebKey, 10)
			const blocked = 3
			started := make(chan struct{})
			release := make(chan struct{})
			sender := SenderFunc(func(ctx context.Context, e *Entry) (Receipt, error) {
				if e.ID == web[blocked].ID {
					close(started)
					select {
					case <-release:
					case <-ctx.Done():
						return Receipt{}, ctx.Err()
					}
				}
				return Receipt{MessageID: "m-" + e.ID}, nil
			})
			ev := newBatchEvents(t, s)
			o := New(s, muxFor(t, recordedFunc{sender}, "web"), Options{Events: ev, Logger: testkit.Discard()})
			mustEnqueue(t, o, web)
			errc := make(chan error, 1)
			go func() { errc <- o.Run(context.Background()) }()
			<-started
			shut := make(chan error, 1)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			if hard {
				cancel()
			}
			go func() { shut <- o.Shutdown(ctx) }()
			testkit.WaitFor(t, "stopping", func() bool {
				o.mu.Lock()
				defer o.mu.Unlock()
				return o.state == stateStopping || o.state == stateStopped
			})
			if !hard {
				select {
				case err := <-errc:
					t.Fatalf("Run returned with a send in flight: %v", err)
				default:
				}
				close(release)
				if err := recv(t, shut, "Shutdown"); err != nil {
					t.Fatal(err)
				}
			} else if err := recv(t, shut, "Shutdown"); !errors.Is(err, context.Canceled) {
				t.Fatalf("Shutdown = %v, want context.Canceled", err)
			}
			if err := recv(t, errc, "Run"); err != nil {
				t.Fatal(err)
			}
			sent := blocked + 1
			if hard {
				sent = blocked
			}
			for i, e := range web {
				got := mustGet(t, s, e.ID)
				want := StatePending
				if i < sent {
					want = StateDelivered
				}
				if got.State != want || got.Attempts != 0 || got.LastError != "" {
					t.Fatalf("chunk %d is %s (attempts %d, %q) after Run returned, want %s", i, got.State, got.Attempts, got.LastError, want)
				}
			}
			if told, _, _ := ev.told(); !slices.Equal(told, idsOf(web[:sent])) {
				t.Fatalf("told %q, want %q", told, idsOf(web[:sent]))
			}
		})
	}
}

// recordedFunc makes a SenderFunc a RecordedSender.
type recordedFunc struct{ SenderFunc }

func (recordedFunc) DeliveryIsRecord() {}

// TestNotifyDelivered: observers that hear of batches get one call, the
// others one Delivered per chunk, in order.
func TestNotifyDelivered(t *testing.T) {
	es := entries(KindReply, "t", chat.WebKey, 3)
	ptrs := []*Entry{&es[0], &es[1], &es[2]}
	rs := []Receipt{{MessageID: "m-" + es[0].ID}, {MessageID: "m-" + es[1].ID}, {MessageID: "m-" + es[2].ID}}
	for i := range es {
		es[i].State, es[i].PlatformMessageID = StateDelivered, rs[i].MessageID
	}
	plain := newEvents()
	NotifyDelivered(plain, ptrs, rs)
	for _, want := range es {
		if e := recv(t, plain.delivered, "delivery"); e.ID != want.ID {
			t.Fatalf("told %s, want %s", e.ID, want.ID)
		}
	}
	batch := newBatchEvents(t, newBolt(t))
	batch.st = storeOnly{pendingStore{}}
	NotifyDelivered(batch, ptrs, rs)
	told, sizes, singles := batch.told()
	if !slices.Equal(told, idsOf(es)) || !slices.Equal(sizes, []int{3}) || len(singles) != 0 {
		t.Fatalf("batch told %q in %v, singles %q", told, sizes, singles)
	}
	NotifyDelivered(batch, nil, nil)
	if _, sizes, _ := batch.told(); len(sizes) != 1 {
		t.Fatalf("an empty batch was told: %v", sizes)
	}
}

// pendingStore answers every Get with a pending entry.
type pendingStore struct{ Store }

func (pendingStore) Get(_ context.Context, id string) (Entry, error) {
	return Entry{ID: id, State: StatePending}, nil
}

// TestLocalSenderIsNotRecorded: a local file target's line is written by its
// send, so it keeps one chunk in flight.
func TestLocalSenderIsNotRecorded(t *testing.T) {
	var s Sender = NewLocalSender(openState(t, t.TempDir()), nil, clock.Real{})
	if _, ok := s.(RecordedSender); ok {
		t.Fatal("the local sender is a RecordedSender")
	}
}
