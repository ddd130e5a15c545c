package web

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/a6afc2ce/hermes-hub/chat"
	"github.com/a6afc2ce/hermes-hub/clock"
	"github.com/a6afc2ce/hermes-hub/hub"
	"github.com/a6afc2ce/hermes-hub/outbox"
)

// Event types of the web conversation stream.
const (
	EventInbound = "inbound" // a message sent from the panel or the API
	EventReply   = "reply"   // a chunk of the hub's answer to a web turn
	EventNotice  = "notice"  // a notice from the hub, or hub-level output fanned out to "web"
	EventReset   = "reset"   // the client's Last-Event-ID is unknown: the whole ring follows
	// EventProgress is the progress of a call from the panel: running
	// updates carry no id and are not kept in the ring (only the latest of
	// each running call is, for clients that connect later); the final one
	// (done, failed, cancelled, interrupted) has an id like any event.
	EventProgress = "progress"
	// EventRunning lists, on a resumed stream, the calls still running, so a
	// client finalises a progress element whose final event it missed.
	EventRunning = "running"
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
	// Progress is the state of the call of a progress event.
	Progress *Progress `json:"progress,omitempty"`
	// Running lists the turns whose calls run, in a running event.
	Running []string `json:"running,omitempty"`
	// File is the file a reply carries, with its download link (files.go).
	File *FileLink `json:"file,omitempty"`
	// Confirm names the held call a reply is the prompt of, ConfirmStage
	// its buttons (run: Run and Cancel; approve: Approve and Reject).
	Confirm      string `json:"confirm,omitempty"`
	ConfirmStage string `json:"confirm_stage,omitempty"`

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
	clk    clock.Clock

	mu       sync.Mutex
	seq      uint64
	ring     []Event // circular; len(ring) == capacity once full
	head     int     // index of the oldest event when full
	byOutbox map[string]string
	files    map[string]*FileLink // outbox id → the file of its event (files.go)
	inbound  map[string]bool      // turn ids with an inbound event in the ring
	running  map[string]Event     // turn id → the latest progress of a running call
	progress bool                 // some progress was published in this run
	subs     map[*subscriber]struct{}
	dropped  int64
}

// subscriber is one connected client.
type subscriber struct {
	ch   chan Event
	gone chan struct{} // closed when the broker dropped the client
}

func newBroker(history, bufLen int, clk clock.Clock) *broker {
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
		clk:      clk,
		ring:     make([]Event, 0, history),
		byOutbox: map[string]string{},
		files:    map[string]*FileLink{},
		inbound:  map[string]bool{},
		running:  map[string]Event{},
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
		ev.TS = b.clk.Now().UTC()
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
		if ev.File != nil {
			b.files[ev.OutboxID] = ev.File
		}
	}
	if ev.Type == EventInbound && ev.TurnID != "" {
		b.inbound[ev.TurnID] = true
	}
	b.fanOut(ev)
	return ev
}

// fanOut sends ev to every client.
func (b *broker) fanOut(ev Event) {
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
}

// publishProgress publishes the progress of a call: a running update goes
// to the connected clients and replaces the call's previous one (without
// an id, outside the ring); a final one ends the call's entry and is kept
// in the ring like any event.
func (b *broker) publishProgress(ev Event) Event {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.progress = true
	if ev.TS.IsZero() {
		ev.TS = b.clk.Now().UTC()
	}
	if ev.Progress != nil && ev.Progress.State == string(hub.ProgressRunning) {
		ev.ID = ""
		b.running[ev.TurnID] = ev
		b.fanOut(ev)
		return ev
	}
	delete(b.running, ev.TurnID)
	return b.publishLocked(ev)
}

// runningLocked returns the latest progress of every running call, by turn.
func (b *broker) runningLocked() []Event {
	out := make([]Event, 0, len(b.running))
	for _, ev := range b.running {
		out = append(out, ev)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].TurnID < out[j].TurnID })
	return out
}

// forget removes an evicted event from the dedupe indexes.
func (b *broker) forget(old Event) {
	if old.OutboxID != "" && b.byOutbox[old.OutboxID] == old.ID {
		delete(b.byOutbox, old.OutboxID)
		delete(b.files, old.OutboxID)
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
//
// Once this run has shown progress, the latest progress of every running
// call follows the replay, then a running event listing them, so a client
// finalises any call it still shows as running.
func (b *broker) subscribe(lastID string) (s *subscriber, replay []Event, reset bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	s = &subscriber{ch: make(chan Event, b.bufLen), gone: make(chan struct{})}
	b.subs[s] = struct{}{}
	replay, reset = b.replayLocked(lastID)
	if b.progress {
		running := b.runningLocked()
		replay = append(replay, running...)
		ids := make([]string, len(running))
		for i, ev := range running {
			ids[i] = ev.TurnID
		}
		replay = append(replay, Event{Type: EventRunning, Running: ids, TS: b.clk.Now().UTC()})
	}
	return s, replay, reset
}

// replayLocked returns the ring's events after lastID (see subscribe).
func (b *broker) replayLocked(lastID string) (replay []Event, reset bool) {
	all := b.snapshotLocked()
	if lastID == "" {
		return all, false
	}
	epoch, seq, err := parseEventID(lastID)
	if err != nil || epoch != b.epoch || seq > b.seq {
		return all, true
	}
	first := b.seq + 1 // the seq of the oldest event in the ring
	if len(all) > 0 {
		first = all[0].seq
	}
	if seq+1 < first {
		return all, true // events after lastID were evicted
	}
	for i, ev := range all {
		if ev.seq > seq {
			return all[i:], false
		}
	}
	return nil, false
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

// sender is the outbox.Sender of the "web" target. The panel's view is
// built from what the hub records (Server.follow), so delivering a chunk
// only checks it: the chunk shows once the hub has recorded it delivered,
// and once only (the ring knows chunks by outbox id). It is an
// outbox.RecordedSender: the outbox takes several of the target's pending
// chunks at once.
type sender struct{}

var _ outbox.RecordedSender = sender{}

// DeliveryIsRecord marks sender as an outbox.RecordedSender.
func (sender) DeliveryIsRecord() {}

// Send accepts a chunk for the web conversation.
func (sender) Send(ctx context.Context, e *outbox.Entry) (outbox.Receipt, error) {
	if err := ctx.Err(); err != nil {
		return outbox.Receipt{}, err
	}
	if e.Target != chat.WebKey {
		return outbox.Receipt{}, outbox.Permanent(fmt.Errorf("web sender: target %q is not web", e.Target))
	}
	return outbox.Receipt{}, nil
}
