package outbox

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/a6afc2ce/hermes-hub/chat"
	"github.com/a6afc2ce/hermes-hub/store"
)

func TestBoltEnqueueAtomicAndValidated(t *testing.T) {
	ctx := context.Background()
	s := newBolt(t)
	good := entries(KindReply, "turn", tg("1"), 2)
	bad := good[1]
	bad.Target = chat.ChatKey("slack", "1", "")
	if _, err := s.Enqueue(ctx, []Entry{good[0], bad}); err == nil {
		t.Fatal("enqueue with an invalid entry succeeded")
	}
	if _, ok, _ := s.Head(ctx, "chat:telegram:1"); ok {
		t.Fatal("a failed enqueue left an entry behind")
	}
	counts, _ := s.Counts(ctx)
	if len(counts) != 0 {
		t.Fatalf("a failed enqueue changed counters: %v", counts)
	}
	// Repeats within one call are added once.
	added, err := s.Enqueue(ctx, []Entry{good[0], good[1], good[0]})
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(added, []string{good[0].ID, good[1].ID}) {
		t.Fatalf("added = %v", added)
	}
}

func TestBoltQueueOrderAndTargets(t *testing.T) {
	ctx := context.Background()
	s := newBolt(t)
	// Targets whose keys are prefixes of one another must not mix.
	keys := []chat.Key{tg("1"), tg("12"), chat.ChatKey(chat.Telegram, "1", "3"), chat.LocalKey("a"), chat.LocalKey("a\u00e9"), chat.WebKey}
	for _, k := range keys {
		if _, err := s.Enqueue(ctx, entries(KindReply, "first", k, 3)); err != nil {
			t.Fatal(err)
		}
	}
	for _, k := range keys {
		if _, err := s.Enqueue(ctx, entries(KindReply, "second", k, 2)); err != nil {
			t.Fatal(err)
		}
	}
	var all []string
	for after := ""; ; {
		page, err := s.PendingTargets(ctx, after, 2)
		if err != nil {
			t.Fatal(err)
		}
		all = append(all, page...)
		if len(page) < 2 {
			break
		}
		after = page[len(page)-1]
	}
	want := []string{"chat:telegram:1", "chat:telegram:12", "chat:telegram:1:3", "local:a", "local:a\u00e9", "web"}
	if !reflect.DeepEqual(all, want) {
		t.Fatalf("PendingTargets = %q, want %q", all, want)
	}
	for _, k := range keys {
		var got []string
		for {
			e, ok, err := s.Head(ctx, k.String())
			if err != nil {
				t.Fatal(err)
			}
			if !ok {
				break
			}
			if e.Target != k {
				t.Fatalf("head of %s is %s", k, e.ID)
			}
			got = append(got, e.ID)
			if err := s.Delivered(ctx, e.ID, Receipt{}, t0); err != nil {
				t.Fatal(err)
			}
		}
		var want []string
		for _, e := range append(entries(KindReply, "first", k, 3), entries(KindReply, "second", k, 2)...) {
			want = append(want, e.ID)
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("order of %s: %q, want %q", k, got, want)
		}
	}
	if page, _ := s.PendingTargets(ctx, "", 10); len(page) != 0 {
		t.Errorf("targets left: %q", page)
	}
}

func TestBoltStatesAndCounts(t *testing.T) {
	ctx := context.Background()
	s := newBolt(t)
	es := append(entries(KindReply, "t", tg("1"), 3), entries(KindPMA, "t", chat.LocalKey("x.jsonl"), 1)...)
	es[0].Attachment = &chat.Attachment{Name: "a.txt", MIME: "text/plain", Data: []byte{0, 1, 2}}
	es[0].Meta = map[string]string{"k": "v"}
	if _, err := s.Enqueue(ctx, es); err != nil {
		t.Fatal(err)
	}
	next := t0.Add(time.Minute)
	if err := s.Defer(ctx, es[0].ID, Retry{Attempts: 1, NextAttemptAt: next, LastError: "503"}); err != nil {
		t.Fatal(err)
	}
	e := mustGet(t, s, es[0].ID)
	if e.Attempts != 1 || !e.NextAttemptAt.Equal(next) || e.LastError != "503" || e.State != StatePending {
		t.Fatalf("after Defer: %+v", e)
	}
	if e.Attachment == nil || string(e.Attachment.Data) != "\x00\x01\x02" || e.Meta["k"] != "v" {
		t.Fatalf("attachment or meta lost: %+v", e)
	}
	if err := s.Dead(ctx, es[0].ID, Retry{Attempts: 2, LastError: "403 blocked"}, t0); err != nil {
		t.Fatal(err)
	}
	if err := s.Delivered(ctx, es[1].ID, Receipt{MessageID: "m1"}, t0); err != nil {
		t.Fatal(err)
	}
	// Marking twice is a no-op; marking a dead letter delivered is refused.
	if err := s.Delivered(ctx, es[1].ID, Receipt{MessageID: "m1"}, t0); err != nil {
		t.Fatalf("second Delivered: %v", err)
	}
	if err := s.Delivered(ctx, es[0].ID, Receipt{}, t0); !errors.Is(err, ErrWrongState) {
		t.Fatalf("Delivered on a dead letter: %v", err)
	}
	if err := s.Defer(ctx, "reply:t:web:0", Retry{}); !errors.Is(err, ErrNotFound) {
		t.Fatalf("Defer of an unknown id: %v", err)
	}

	dead := mustGet(t, s, es[0].ID)
	if dead.State != StateDead || dead.Attempts != 2 || dead.LastError != "403 blocked" || dead.Text != es[0].Text ||
		dead.Attachment == nil || !dead.DeliveredAt.Equal(t0) {
		t.Fatalf("dead letter: %+v", dead)
	}
	del := mustGet(t, s, es[1].ID)
	if del.State != StateDelivered || del.PlatformMessageID != "m1" || !del.DeliveredAt.Equal(t0) ||
		del.Kind != KindReply || del.TurnID != "t" || del.Index != 1 || del.Target != tg("1") {
		t.Fatalf("delivered: %+v", del)
	}
	if _, err := s.Get(ctx, "reply:nope:web:0"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("Get unknown: %v", err)
	}

	counts, err := s.Counts(ctx)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]Counts{
		"telegram": {Pending: 1, Delivered: 1, Dead: 1, Retried: 1},
		"local":    {Pending: 1},
	}
	if !reflect.DeepEqual(counts, want) {
		t.Fatalf("counts = %+v, want %+v", counts, want)
	}

	for _, tt := range []struct {
		state State
		want  []string
	}{
		{StatePending, []string{es[2].ID, es[3].ID}},
		{StateDead, []string{es[0].ID}},
		{StateDelivered, []string{es[1].ID}},
	} {
		got, err := s.List(ctx, Filter{State: tt.state})
		if err != nil {
			t.Fatal(err)
		}
		var ids []string
		for _, e := range got {
			ids = append(ids, e.ID)
		}
		if !reflect.DeepEqual(ids, tt.want) {
			t.Errorf("List(%s) = %q, want %q", tt.state, ids, tt.want)
		}
	}
	if _, err := s.List(ctx, Filter{State: "lost"}); err == nil {
		t.Error("List with an unknown state succeeded")
	}

	// Requeue: the dead letter goes to the tail with attempts reset.
	r, err := s.Requeue(ctx, es[0].ID)
	if err != nil {
		t.Fatal(err)
	}
	if r.Attempts != 0 || r.LastError != "" || r.State != StatePending {
		t.Fatalf("requeued: %+v", r)
	}
	if _, err := s.Requeue(ctx, es[1].ID); !errors.Is(err, ErrWrongState) {
		t.Fatalf("Requeue of a delivered id: %v", err)
	}
	h, _, _ := s.Head(ctx, "chat:telegram:1")
	if h.ID != es[2].ID {
		t.Fatalf("head after requeue = %s, want %s (requeue goes to the tail)", h.ID, es[2].ID)
	}
	counts, _ = s.Counts(ctx)
	if c := counts["telegram"]; c.Pending != 2 || c.Dead != 0 {
		t.Fatalf("counts after requeue: %+v", c)
	}
}

func TestBoltPruneAndPurge(t *testing.T) {
	ctx := context.Background()
	s := newBolt(t)
	es := entries(KindReply, "t", tg("5"), 4)
	es = append(es, entries(KindReply, "t", dc("6"), 2)...)
	if _, err := s.Enqueue(ctx, es); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 3; i++ {
		if err := s.Delivered(ctx, es[i].ID, Receipt{}, t0.Add(time.Duration(i)*time.Hour)); err != nil {
			t.Fatal(err)
		}
	}
	n, err := s.Prune(ctx, t0.Add(90*time.Minute))
	if err != nil || n != 2 {
		t.Fatalf("Prune = %d, %v; want 2", n, err)
	}
	for i, want := range []bool{false, false, true} {
		_, err := s.Get(ctx, es[i].ID)
		if found := err == nil; found != want {
			t.Errorf("entry %d known after prune: %v, want %v", i, found, want)
		}
	}
	if n, _ := s.Prune(ctx, t0.Add(90*time.Minute)); n != 0 {
		t.Errorf("second prune forgot %d", n)
	}
	// A pruned id is forgotten: it may be enqueued again.
	added, _ := s.Enqueue(ctx, es[:3])
	if !reflect.DeepEqual(added, []string{es[0].ID, es[1].ID}) {
		t.Errorf("re-enqueue after prune added %q", added)
	}

	// Dead letters: purge by target, then all.
	for _, e := range []Entry{es[3], es[4], es[5]} {
		if err := s.Dead(ctx, e.ID, Retry{Attempts: 1, LastError: "x"}, t0); err != nil {
			t.Fatal(err)
		}
	}
	n, err = s.Purge(ctx, Filter{Target: "chat:discord:6"})
	if err != nil || n != 2 {
		t.Fatalf("Purge(discord) = %d, %v; want 2", n, err)
	}
	left, _ := s.List(ctx, Filter{State: StateDead})
	if len(left) != 1 || left[0].ID != es[3].ID {
		t.Fatalf("dead letters left: %+v", left)
	}
	counts, _ := s.Counts(ctx)
	if counts["discord"].Dead != 0 || counts["telegram"].Dead != 1 {
		t.Fatalf("counts after purge: %+v", counts)
	}
	if n, _ := s.Purge(ctx, Filter{}); n != 1 {
		t.Fatalf("Purge(all) = %d", n)
	}
	if _, err := s.Get(ctx, es[3].ID); !errors.Is(err, ErrNotFound) {
		t.Fatalf("purged id still known: %v", err)
	}
}

func TestBoltSchemaTooNew(t *testing.T) {
	dir := t.TempDir()
	st, _ := openBolt(t, dir)
	// Pretend a newer hub wrote the queue bucket.
	err := st.DB().Update(func(tx *bolt.Tx) error {
		return tx.Bucket([]byte("meta")).Put([]byte("schema/"+queueBucket), []byte{0, 0, 0, 0, 0, 0, 0, 9})
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := NewBoltStore(st.DB()); err == nil {
		t.Fatal("NewBoltStore accepted a newer schema")
	}
	st.Close()
}

func TestCommitterIsolatesFailures(t *testing.T) {
	s := newBolt(t)
	c := s.commit
	const n = 50
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i := range n {
		wg.Go(func() {
			errs[i] = c.Update(func(tx *bolt.Tx) error {
				b := tx.Bucket([]byte(countsBucket))
				if err := b.Put(fmt.Appendf(nil, "k%02d", i), []byte("v")); err != nil {
					return err
				}
				if i%7 == 0 {
					return fmt.Errorf("op %d fails", i)
				}
				return nil
			})
		})
	}
	wg.Wait()
	err := s.db.View(func(tx *bolt.Tx) error {
		b := tx.Bucket([]byte(countsBucket))
		for i := range n {
			got := b.Get(fmt.Appendf(nil, "k%02d", i)) != nil
			if fails := i%7 == 0; got == fails || (errs[i] != nil) != fails {
				t.Errorf("op %d: stored %v, err %v", i, got, errs[i])
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestBoltEnqueueFinishesTurnWithReply: a turn's finish carried by the
// context (store.Ledger.FinishWith) is made in the transaction that
// enqueues its reply, on a store sharing the ledger's database, also when
// the reply was enqueued before; a finish the ledger refuses leaves the
// reply enqueued; a store on another database does not make it; a failed
// enqueue makes neither.
func TestBoltEnqueueFinishesTurnWithReply(t *testing.T) {
	ctx := context.Background()
	at := t0.Add(time.Minute)
	st, err := store.Open(t.TempDir(), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	l, err := store.OpenSharedLedger(st.Database())
	if err != nil {
		t.Fatal(err)
	}
	shared, err := NewSharedBoltStore(st.Database())
	if err != nil {
		t.Fatal(err)
	}
	other := newBolt(t)
	begin := func(turn string) {
		t.Helper()
		if _, began, _, err := l.Begin(store.TurnRecord{TurnID: turn, Reply: tg("1").String()}); err != nil || !began {
			t.Fatalf("begin %s: %v %v", turn, began, err)
		}
	}
	ids := func(es []Entry) []string {
		var out []string
		for _, e := range es {
			out = append(out, e.ID)
		}
		return out
	}
	for _, tc := range []struct {
		name       string
		s          *BoltStore
		begin      bool
		twice      bool // the reply was enqueued once before
		invalid    bool // the enqueue fails
		wantFinish bool
		wantState  string // "" for no ledger record
		wantQueued bool
	}{
		{name: "shared", s: shared, begin: true, wantFinish: true, wantState: store.TurnDone, wantQueued: true},
		{name: "shared, reply known", s: shared, begin: true, twice: true, wantFinish: true, wantState: store.TurnDone, wantQueued: true},
		{name: "shared, turn unknown", s: shared, wantQueued: true},
		{name: "other database", s: other, begin: true, wantState: store.TurnStarted, wantQueued: true},
		{name: "enqueue fails", s: shared, begin: true, invalid: true, wantState: store.TurnStarted},
	} {
		t.Run(tc.name, func(t *testing.T) {
			turn := "turn-" + strings.ReplaceAll(tc.name, " ", "")
			turn = strings.Map(func(r rune) rune {
				if r == ',' {
					return '-'
				}
				return r
			}, turn)
			if tc.begin {
				begin(turn)
			}
			es := entries(KindReply, turn, tg("1"), 2)
			if tc.invalid {
				es[1].ID = "not an id"
			}
			if tc.twice {
				if _, err := tc.s.Enqueue(ctx, es); err != nil {
					t.Fatal(err)
				}
			}
			fctx, finished := l.FinishWith(ctx, turn, store.TurnDone, "code", ids(es), at)
			_, err := tc.s.Enqueue(fctx, es)
			if (err != nil) != tc.invalid {
				t.Fatalf("enqueue: %v", err)
			}
			if err == nil && finished() != tc.wantFinish {
				t.Errorf("finished = %v, want %v", finished(), tc.wantFinish)
			}
			rec, err := l.Get(turn)
			if err != nil {
				t.Fatal(err)
			}
			switch {
			case tc.wantState == "" && rec != nil:
				t.Errorf("ledger record %+v, want none", rec)
			case tc.wantState != "" && (rec == nil || rec.State != tc.wantState):
				t.Errorf("ledger record %+v, want state %s", rec, tc.wantState)
			case tc.wantFinish && (rec.Code != "code" || !rec.Finished.Equal(at) || !reflect.DeepEqual(rec.Outbox, ids(es))):
				t.Errorf("ledger record %+v, want the finish's code, time and ids", rec)
			}
			_, err = tc.s.Get(ctx, es[0].ID)
			if queued := err == nil; queued != tc.wantQueued {
				t.Errorf("reply queued = %v (%v), want %v", queued, err, tc.wantQueued)
			}
		})
	}
}
