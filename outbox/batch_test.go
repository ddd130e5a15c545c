package outbox

import (
	"context"
	"errors"
	"reflect"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/a6afc2ce/hermes-hub/chat"
	"github.com/a6afc2ce/hermes-hub/internal/testkit"
)

// dumpBuckets returns every key and value of the outbox buckets.
func dumpBuckets(t *testing.T, s *BoltStore) map[string]map[string]string {
	t.Helper()
	out := map[string]map[string]string{}
	err := s.db.View(func(tx *bolt.Tx) error {
		for _, name := range allBuckets {
			m := map[string]string{}
			if err := tx.Bucket([]byte(name)).ForEach(func(k, v []byte) error {
				m[string(k)] = string(v)
				return nil
			}); err != nil {
				return err
			}
			out[name] = m
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestDeliveredBatchMatchesDelivered: a batch of marks leaves the store
// exactly as the same marks made one by one with Delivered, reports the
// same error for each, and returns each target's head as Head reads it
// after the whole batch.
func TestDeliveredBatchMatchesDelivered(t *testing.T) {
	ctx := context.Background()
	t1, t2, t3, loc := tg("1"), tg("2"), dc("3"), chat.LocalKey("x.jsonl")
	setup := func(t *testing.T) (*BoltStore, map[string][]Entry) {
		s := newBolt(t)
		es := map[string][]Entry{
			"t1": entries(KindReply, "t", t1, 3), "t2": entries(KindReply, "t", t2, 1),
			"t3": entries(KindReply, "t", t3, 2), "loc": entries(KindPMA, "t", loc, 3),
		}
		var all []Entry
		for _, k := range []string{"t1", "t2", "t3", "loc"} {
			all = append(all, es[k]...)
		}
		if _, err := s.Enqueue(ctx, all); err != nil {
			t.Fatal(err)
		}
		if err := s.Dead(ctx, es["t3"][0].ID, Retry{Attempts: 1, LastError: "404"}, t0); err != nil {
			t.Fatal(err)
		}
		if err := s.Delivered(ctx, es["t1"][0].ID, Receipt{MessageID: "m0"}, t0); err != nil {
			t.Fatal(err)
		}
		return s, es
	}
	at := t0.Add(time.Minute)
	for _, tc := range []struct {
		name  string
		marks func(es map[string][]Entry) []delivery
	}{
		{"distinct targets", func(es map[string][]Entry) []delivery {
			return []delivery{
				{id: es["t1"][1].ID, target: t1.String(), rc: Receipt{MessageID: "a"}, at: at},
				{id: es["t2"][0].ID, target: t2.String(), at: at},
				{id: es["loc"][0].ID, target: loc.String(), at: at.Add(time.Second)},
			}
		}},
		{"already delivered is a no-op", func(es map[string][]Entry) []delivery {
			return []delivery{
				{id: es["t1"][0].ID, target: t1.String(), rc: Receipt{MessageID: "other"}, at: at},
				{id: es["t2"][0].ID, target: t2.String(), at: at},
			}
		}},
		{"dead letter and unknown id refused, the rest marked", func(es map[string][]Entry) []delivery {
			return []delivery{
				{id: es["t3"][0].ID, target: t3.String(), at: at},
				{id: "reply:t:chat:telegram:9:0", target: "chat:telegram:9", at: at},
				{id: es["t3"][1].ID, target: t3.String(), at: at},
			}
		}},
		{"two marks of one target: heads after both", func(es map[string][]Entry) []delivery {
			return []delivery{
				{id: es["loc"][0].ID, target: loc.String(), at: at},
				{id: es["loc"][1].ID, target: loc.String(), at: at},
				{id: es["t2"][0].ID, target: t2.String(), at: at},
			}
		}},
		{"last chunk of every target", func(es map[string][]Entry) []delivery {
			return []delivery{
				{id: es["t1"][1].ID, target: t1.String(), at: at},
				{id: es["t1"][2].ID, target: t1.String(), at: at},
				{id: es["t2"][0].ID, target: t2.String(), at: at},
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			batched, es := setup(t)
			single, _ := setup(t)
			ds := tc.marks(es)
			res := make([]deliveryResult, len(ds))
			for i := range res {
				res[i] = deliveryResult{err: errBoom, head: []byte("stale")} // must be reset
			}
			if err := batched.deliveredBatch(ctx, ds, res); err != nil {
				t.Fatal(err)
			}
			for i, d := range ds {
				want := single.Delivered(ctx, d.id, d.rc, d.at)
				got := res[i].err
				if (want == nil) != (got == nil) || !errors.Is(got, ErrNotFound) && errors.Is(want, ErrNotFound) ||
					!errors.Is(got, ErrWrongState) && errors.Is(want, ErrWrongState) {
					t.Errorf("mark %s: batch error %v, Delivered error %v", d.id, got, want)
				}
			}
			if got, want := dumpBuckets(t, batched), dumpBuckets(t, single); !reflect.DeepEqual(got, want) {
				t.Fatalf("stores differ:\nbatch    %q\none by one %q", got, want)
			}
			for i, d := range ds {
				want, ok, err := single.Head(ctx, d.target)
				if err != nil {
					t.Fatal(err)
				}
				if !ok {
					if res[i].head != nil {
						t.Errorf("mark %s: head %q, want an empty queue", d.id, res[i].head)
					}
					continue
				}
				got, err := decodeRecord(res[i].head, StatePending)
				if err != nil {
					t.Fatalf("mark %s: %v", d.id, err)
				}
				if !reflect.DeepEqual(got, want) {
					t.Errorf("mark %s: head %+v, want %+v", d.id, got, want)
				}
			}
		})
	}
}

// hookedBatchStore is a BoltStore (batch marks included) that calls after
// once a batch has been written.
type hookedBatchStore struct {
	*BoltStore
	after func(ds []delivery, res []deliveryResult)
}

func (h *hookedBatchStore) deliveredBatch(ctx context.Context, ds []delivery, res []deliveryResult) error {
	err := h.BoltStore.deliveredBatch(ctx, ds, res)
	if err == nil && h.after != nil {
		h.after(ds, res)
	}
	return err
}

// TestEnqueueWhileMarking: an entry enqueued after a mark's transaction
// found the target's queue empty, but before the dispatcher took that
// answer, is delivered (the empty head read with the mark is not trusted).
func TestEnqueueWhileMarking(t *testing.T) {
	reached, release := make(chan struct{}), make(chan struct{})
	var once sync.Once
	h := &hookedBatchStore{BoltStore: newBolt(t)}
	h.after = func(ds []delivery, res []deliveryResult) {
		if res[0].head == nil {
			once.Do(func() {
				close(reached)
				<-release
			})
		}
	}
	rec := newRecorder(nil)
	ev := newEvents()
	o := New(h, muxFor(t, rec), Options{Events: ev, Logger: testkit.Discard()})
	if o.batcher == nil {
		t.Fatal("the hooked store is not marked in batches")
	}
	run(t, o)
	es := entries(KindReply, "t", tg("1"), 2)
	mustEnqueue(t, o, es[:1])
	recv(t, ev.delivered, "first chunk")
	<-reached // the mark is durable and saw an empty queue
	mustEnqueue(t, o, es[1:])
	close(release)
	if e := recv(t, ev.delivered, "chunk enqueued while marking"); e.ID != es[1].ID {
		t.Fatalf("delivered %s", e.ID)
	}
}

// TestEnqueueWhileMarkingForAnother: the same when the mark is written by
// the worker of another target (the target then goes through the ready
// queue, where a wake during the mark would otherwise be forgotten).
func TestEnqueueWhileMarkingForAnother(t *testing.T) {
	a, b := entries(KindReply, "t", tg("1"), 2), entries(KindReply, "t", tg("2"), 1)
	firstReached, goOn := make(chan struct{}), make(chan struct{})
	reached, release := make(chan struct{}), make(chan struct{})
	h := &hookedBatchStore{BoltStore: newBolt(t)}
	h.after = func(ds []delivery, res []deliveryResult) {
		switch ds[0].id {
		case b[0].ID: // b's worker writes: hold it until a's mark waits
			close(firstReached)
			<-goOn
		case a[0].ID:
			if res[0].head == nil {
				close(reached)
				<-release
			}
		}
	}
	rec := newRecorder(nil)
	ev := newEvents()
	o := New(h, muxFor(t, rec), Options{Concurrency: 2, Events: ev, Logger: testkit.Discard()})
	run(t, o)
	mustEnqueue(t, o, b)
	<-firstReached
	mustEnqueue(t, o, a[:1])
	testkit.WaitFor(t, "a's mark handed over", func() bool {
		o.mu.Lock()
		defer o.mu.Unlock()
		return len(o.marks) == 1
	})
	close(goOn)
	<-reached // a's mark is durable and saw an empty queue
	mustEnqueue(t, o, a[1:])
	close(release)
	got := map[string]bool{}
	for range 3 {
		got[recv(t, ev.delivered, "delivery").ID] = true
	}
	if !got[a[1].ID] {
		t.Fatalf("the chunk enqueued while marking was not delivered: %v", got)
	}
}

// failingBatchStore is a BoltStore whose batches of marks always fail.
type failingBatchStore struct{ *BoltStore }

func (failingBatchStore) deliveredBatch(context.Context, []delivery, []deliveryResult) error {
	return errBoom
}

// TestBatchFailureMarksOneByOne: when a batch transaction fails, each mark
// is made on its own, and every chunk is delivered once, in order.
func TestBatchFailureMarksOneByOne(t *testing.T) {
	s := failingBatchStore{newBolt(t)}
	rec := newRecorder(nil)
	ev := newEvents()
	o := New(s, muxFor(t, rec), Options{Events: ev, Logger: testkit.Discard()})
	run(t, o)
	var all []Entry
	for i := range 5 {
		all = append(all, entries(KindReply, "t", tg(strconv.Itoa(i+1)), 4)...)
	}
	mustEnqueue(t, o, all)
	for range all {
		recv(t, ev.delivered, "delivery")
	}
	testkit.WaitFor(t, "every chunk marked", func() bool {
		for _, e := range all {
			if mustGet(t, s, e.ID).State != StateDelivered {
				return false
			}
		}
		return true
	})
	for _, e := range all {
		if n := rec.count(e.ID); n != 1 {
			t.Fatalf("%s sent %d times", e.ID, n)
		}
	}
	for i := range 5 {
		k := tg(strconv.Itoa(i + 1))
		var want []string
		for _, e := range entries(KindReply, "t", k, 4) {
			want = append(want, e.ID)
		}
		if got := rec.deliveredTo(k.String()); !slices.Equal(got, want) {
			t.Fatalf("%s: delivered %q, want %q", k, got, want)
		}
	}
	rec.mu.Lock()
	defer rec.mu.Unlock()
	if len(rec.overlaps) > 0 {
		t.Fatalf("two sends in flight to one target: %q", rec.overlaps)
	}
}
