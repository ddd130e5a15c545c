package outbox

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"sync"
	"testing"

	"github.com/a6afc2ce/hermes-hub/internal/testkit"

	"github.com/a6afc2ce/hermes-hub/chat"
)

// fakeBook is an in-memory TargetBook.
type fakeBook struct {
	mu      sync.Mutex
	targets []chat.Key
	last    map[string]string
	fail    error
	records int
}

func (b *fakeBook) PendingFor(turnID string) []chat.Key {
	b.mu.Lock()
	defer b.mu.Unlock()
	var out []chat.Key
	for _, k := range b.targets {
		if b.last[k.String()] != turnID {
			out = append(out, k)
		}
	}
	return out
}

func (b *fakeBook) RecordDelivery(turnID string, keys []chat.Key) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.fail != nil {
		return b.fail
	}
	b.records++
	for _, k := range keys {
		b.last[k.String()] = turnID
	}
	return nil
}

func TestFanOut(t *testing.T) {
	ctx := context.Background()
	s := newBolt(t)
	o := New(s, nil, Options{Logger: testkit.Discard()}) // not running: only the queue is looked at
	local := chat.LocalKey("pma/deliveries.jsonl")
	book := &fakeBook{
		targets: []chat.Key{tg("1"), dc("2"), local},
		last:    map[string]string{"chat:discord:2": "turn.1"}, // already delivered there
	}
	long := strings.Repeat("word ", 1000) // 5000 bytes: 2 Telegram chunks
	ids, err := FanOut(ctx, o, book, "turn.1", long, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		ID(KindPMA, "turn.1", tg("1"), 0), ID(KindPMA, "turn.1", tg("1"), 1),
		ID(KindPMA, "turn.1", local, 0),
	}
	if !reflect.DeepEqual(ids, want) {
		t.Fatalf("enqueued %q, want %q", ids, want)
	}
	if book.last["chat:telegram:1"] != "turn.1" || book.last[local.String()] != "turn.1" {
		t.Fatalf("delivery not recorded: %v", book.last)
	}
	for _, id := range ids {
		e := mustGet(t, s, id)
		if e.Kind != KindPMA || e.State != StatePending {
			t.Errorf("%s: %+v", id, e)
		}
	}
	if e := mustGet(t, s, want[2]); e.Text != long {
		t.Errorf("the local target is not chunked: %d bytes", len(e.Text))
	}

	// Once recorded, the turn goes nowhere again.
	ids, err = FanOut(ctx, o, book, "turn.1", long, nil)
	if err != nil || len(ids) != 0 || book.records != 1 {
		t.Fatalf("second fan-out: %q %v, %d records", ids, err, book.records)
	}

	// A crash between enqueue and record: the retry enqueues nothing new
	// (the ids are known) and records the delivery.
	book.fail = errors.New("disk full")
	ids, err = FanOut(ctx, o, book, "turn.2", "short", func(chat.Key) chat.ChunkOptions { return chat.ChunkOptions{} })
	if err == nil || len(ids) != 3 {
		t.Fatalf("fan-out with a failing book: %q %v", ids, err)
	}
	book.fail = nil
	ids, err = FanOut(ctx, o, book, "turn.2", "short", func(chat.Key) chat.ChunkOptions { return chat.ChunkOptions{} })
	if err != nil || len(ids) != 0 || book.last["chat:discord:2"] != "turn.2" {
		t.Fatalf("retried fan-out: %q %v %v", ids, err, book.last)
	}
	counts, _ := s.Counts(ctx)
	if counts["telegram"].Pending != 3 || counts["discord"].Pending != 1 || counts["local"].Pending != 2 {
		t.Fatalf("counts: %+v", counts)
	}

	if _, err := FanOut(ctx, o, book, "bad:turn", "x", nil); err == nil {
		t.Fatal("a turn id with ':' was accepted")
	}
}
