package web

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/a6afc2ce/hermes-hub/executor"
	"github.com/a6afc2ce/hermes-hub/outbox"
)

// Event types of the web conversation stream.
const (
	EventInbound = "inbound" // a message sent from the panel or the API
	EventReply   = "reply"   // a chunk of the hub's answer to a web turn
	EventNotice  = "notice"  // a notice from the hub, or hub-level output fanned out to "web"
	EventReset   = "reset"   // the client's Last-Event-ID is unknown: the whole ring follows
)

// Event is one entry of the web conversation, as sent on GET /api/events
// and listed by GET /api/history.
type Event struct {
	// ID is "<epoch>-<seq>": the epoch names this process run, seq counts
	// from 1. A reset event has no id.
	ID       string    `json:"id,omitempty"`
	Type     string    `json:"type"`
	TurnID   string    `json:"turn_id,omitempty"`
	Text     string    `json:"text"`
	TS       time.Time `json:"ts"`
	OutboxID string    `json:"outbox_id,omitempty"`

	seq uint64
}

// Defaults of the event stream.
const (
	DefaultHistory      = 1000
	DefaultClientBuffer = 256
)

// broker keeps the last events in a ring and fans new ones out to the
// connected clients. A client whose buffer is full is disconnected rather
// than allowed to block publishing; it resumes from its Last-Event-ID.
type broker struct {
	epoch  string
	bufLen int

	mu       sync.Mutex
	seq      uint64
	ring     []Event // circular; len(ring) == capacity once full
	head     int     // index of the oldest event when full
	byOutbox map[string]string
	inbound  map[string]bool // turn ids with an inbound event in the ring
	subs     map[*subscriber]struct{}
	dropped  int64
}

// subscriber is one connected client.
type subscriber struct {
	ch   chan Event
	gone chan struct{} // closed when the broker dropped the client
}

func newBroker(history, bufLen int) *broker {
	if history <= 0 {
		history = DefaultHistory
	}
	if bufLen <= 0 {
		bufLen = DefaultClientBuffer
	}
	var b [6]byte
	_, _ = rand.Read(b[:])
	return &broker{
		epoch:    hex.EncodeToString(b[:]),
		bufLen:   bufLen,
		ring:     make([]Event, 0, history),
		byOutbox: map[string]string{},
		inbound:  map[string]bool{},
		subs:     map[*subscriber]struct{}{},
	}
}

// publish assigns ev the next id, keeps it in the ring and sends it to
// every client. It returns the event as published.
func (b *broker) publish(ev Event) Event {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.publishLocked(ev)
}

func (b *broker) publishLocked(ev Event) Event {
	b.seq++
	ev.seq = b.seq
	ev.ID = b.epoch + "-" + strconv.FormatUint(b.seq, 10)
	if ev.TS.IsZero() {
		ev.TS = time.Now().UTC()
	}
	if len(b.ring) < cap(b.ring) {
		b.ring = append(b.ring, ev)
	} else {
		b.forget(b.ring[b.head])
		b.ring[b.head] = ev
		b.head = (b.head + 1) % len(b.ring)
	}
	if ev.OutboxID != "" {
		b.byOutbox[ev.OutboxID] = ev.ID
	}
	if ev.Type == EventInbound && ev.TurnID != "" {
		b.inbound[ev.TurnID] = true
	}
	for s := range b.subs {
		select {
		case s.ch <- ev:
		default:
			// Too slow: drop the client instead of blocking the sender.
			close(s.gone)
			delete(b.subs, s)
			b.dropped++
		}
	}
	return ev
}

// forget removes an evicted event from the dedupe indexes.
func (b *broker) forget(old Event) {
	if old.OutboxID != "" && b.byOutbox[old.OutboxID] == old.ID {
		delete(b.byOutbox, old.OutboxID)
	}
	if old.Type == EventInbound {
		delete(b.inbound, old.TurnID)
	}
}

// publishChunk publishes an outbox chunk once: a chunk already in the ring
// (a resend after a crash between send and mark) returns its first event.
func (b *broker) publishChunk(ev Event) Event {
	b.mu.Lock()
	defer b.mu.Unlock()
	if id, ok := b.byOutbox[ev.OutboxID]; ok {
		return Event{ID: id, OutboxID: ev.OutboxID, Type: ev.Type}
	}
	return b.publishLocked(ev)
}

// publishInbound publishes a web message unless its turn is already in
// the ring (a resubmission). It reports whether it published.
func (b *broker) publishInbound(ev Event) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.inbound[ev.TurnID] {
		return false
	}
	b.publishLocked(ev)
	return true
}

// snapshot returns the ring, oldest first.
func (b *broker) snapshot() []Event {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.snapshotLocked()
}

func (b *broker) snapshotLocked() []Event {
	out := make([]Event, 0, len(b.ring))
	if len(b.ring) < cap(b.ring) {
		return append(out, b.ring...)
	}
	out = append(out, b.ring[b.head:]...)
	return append(out, b.ring[:b.head]...)
}

// parseEventID splits "<epoch>-<seq>".
func parseEventID(id string) (epoch string, seq uint64, err error) {
	i := strings.LastIndexByte(id, '-')
	if i <= 0 {
		return "", 0, fmt.Errorf("event id %q is not <epoch>-<seq>", id)
	}
	digits := id[i+1:]
	seq, err = strconv.ParseUint(digits, 10, 64)
	if err != nil || seq == 0 || digits[0] == '0' || digits[0] == '+' {
		return "", 0, fmt.Errorf("event id %q is not <epoch>-<seq>", id)
	}
	return id[:i], seq, nil
}

// subscribe registers a client that has seen every event up to lastID
// ("" for a new client). It returns the events to replay before the live
// ones, and reset when lastID is unknown (another run, or older than the
// ring), in which case replay is the whole ring. Replay and subscription
// happen under one lock, so no event is missed or sent twice.
func (b *broker) subscribe(lastID string) (s *subscriber, replay []Event, reset bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	s = &subscriber{ch: make(chan Event, b.bufLen), gone: make(chan struct{})}
	b.subs[s] = struct{}{}
	all := b.snapshotLocked()
	if lastID == "" {
		return s, all, false
	}
	epoch, seq, err := parseEventID(lastID)
	if err != nil || epoch != b.epoch || seq > b.seq {
		return s, all, true
	}
	first := b.seq + 1 // the seq of the oldest event in the ring
	if len(all) > 0 {
		first = all[0].seq
	}
	if seq+1 < first {
		return s, all, true // events after lastID were evicted
	}
	for i, ev := range all {
		if ev.seq > seq {
			return s, all[i:], false
		}
	}
	return s, nil, false
}

// unsubscribe removes a client; it is safe after the broker dropped it.
func (b *broker) unsubscribe(s *subscriber) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if _, ok := b.subs[s]; ok {
		delete(b.subs, s)
		close(s.gone)
	}
}

// brokerStats is the web part of GET /api/status.
type brokerStats struct {
	Clients int    `json:"clients"`
	Events  int    `json:"events"`
	LastID  string `json:"last_event_id,omitempty"`
	Dropped int64  `json:"dropped_clients"`
	Epoch   string `json:"epoch"`
}

func (b *broker) stats() brokerStats {
	b.mu.Lock()
	defer b.mu.Unlock()
	st := brokerStats{Clients: len(b.subs), Events: len(b.ring), Dropped: b.dropped, Epoch: b.epoch}
	if b.seq > 0 {
		st.LastID = b.epoch + "-" + strconv.FormatUint(b.seq, 10)
	}
	return st
}

// sender is the outbox.Sender of the "web" target: a chunk is delivered
// once it is an event in the ring.
type sender struct{ b *broker }

var _ outbox.Sender = sender{}

// Send publishes the chunk; the receipt's MessageID is the event id.
func (s sender) Send(ctx context.Context, e *outbox.Entry) (outbox.Receipt, error) {
	if err := ctx.Err(); err != nil {
		return outbox.Receipt{}, err
	}
	if e.Target != "web" {
		return outbox.Receipt{}, outbox.Permanent(fmt.Errorf("web sender: target %q is not web", e.Target))
	}
	ev := s.b.publishChunk(Event{Type: eventTypeOf(e.Kind), TurnID: e.TurnID, Text: chunkText(e), OutboxID: e.ID})
	return outbox.Receipt{MessageID: ev.ID}, nil
}

// chunkText is the text shown for a chunk; an overflow attachment (which
// web replies do not produce, as they are never split) is shown inline.
func chunkText(e *outbox.Entry) string {
	if e.Attachment == nil {
		return e.Text
	}
	return e.Text + "\n" + executor.Fence(string(e.Attachment.Data), "")
}

func eventTypeOf(k outbox.Kind) string {
	if k == outbox.KindReply {
		return EventReply
	}
	return EventNotice
}
