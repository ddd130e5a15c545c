package web

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/a6afc2ce/hermes-hub/admin"
	"github.com/a6afc2ce/hermes-hub/clock"
	"github.com/a6afc2ce/hermes-hub/hub"
	"github.com/a6afc2ce/hermes-hub/outbox"
)

// stream serves GET /api/events: Server-Sent Events of the web
// conversation. A client that sends Last-Event-ID (or ?last_event_id=)
// gets every event after it, then live ones; an id from another run or
// older than the ring gets a "reset" event and the whole ring. Without an
// id the whole ring is replayed, which is the panel's initial view.
func (s *Server) stream(w http.ResponseWriter, r *http.Request) {
	rc := http.NewResponseController(w)
	last := r.Header.Get("Last-Event-ID")
	if last == "" {
		last = r.URL.Query().Get("last_event_id")
	}
	if len(last) > 128 {
		admin.WriteError(w, http.StatusBadRequest, "Last-Event-ID is longer than 128 bytes")
		return
	}
	sub, replay, reset := s.events.subscribe(last)
	defer s.events.unsubscribe(sub)

	h := w.Header()
	h.Set("Content-Type", "text/event-stream; charset=utf-8")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	bw := bufio.NewWriterSize(w, 16<<10)
	write := func() error {
		_ = rc.SetWriteDeadline(time.Now().Add(sseWriteTimeout))
		if err := bw.Flush(); err != nil {
			return err
		}
		return rc.Flush()
	}
	fmt.Fprintf(bw, "retry: 2000\n\n")
	if reset {
		writeEvent(bw, Event{Type: EventReset, Text: "The event id is unknown here (the hub restarted, or it is older than the history kept): the whole history follows.", TS: s.clk.Now().UTC()})
	}
	for _, ev := range replay {
		writeEvent(bw, ev)
	}
	if write() != nil {
		return
	}

	beat := make(chan struct{}, 1)
	arm := func() clock.Timer {
		return s.clk.AfterFunc(s.heartbeat, func() {
			select {
			case beat <- struct{}{}:
			default:
			}
		})
	}
	timer := arm()
	defer func() { timer.Stop() }()
	for {
		select {
		case <-r.Context().Done():
			return
		case <-s.closing:
			return
		case <-sub.gone:
			// Dropped for falling behind; the client resumes with its id.
			return
		case ev := <-sub.ch:
			writeEvent(bw, ev)
			// Send whatever else is queued in the same write.
			for n := len(sub.ch); n > 0; n-- {
				writeEvent(bw, <-sub.ch)
			}
			if write() != nil {
				return
			}
		case <-beat:
			fmt.Fprintf(bw, ": heartbeat\n\n")
			if write() != nil {
				return
			}
			timer = arm()
		}
	}
}

// writeEvent writes one SSE event; JSON never contains a raw newline, so
// one data line carries it.
func writeEvent(bw *bufio.Writer, ev Event) {
	data, _ := json.Marshal(ev)
	if ev.ID != "" {
		fmt.Fprintf(bw, "id: %s\n", ev.ID)
	}
	fmt.Fprintf(bw, "data: %s\n\n", data)
}

// follow fills the ring with the last exchanges of the web conversation
// and keeps it up to date with every new one: the panel's one source of
// truth is what the hub recorded. Inbound messages show once (a
// resubmission is not recorded as new) and a chunk sent again after a crash
// keeps its first event.
func (s *Server) follow(c Conversation) error {
	if c == nil {
		return nil
	}
	// Listen first, so nothing recorded while the history is read is lost;
	// what is both read and heard is published once.
	var mu sync.Mutex
	var early []hub.Exchange
	seeded := false
	stop := c.Listen(func(x hub.Exchange) {
		mu.Lock()
		defer mu.Unlock()
		if !seeded {
			early = append(early, x)
			return
		}
		s.publishExchange(x)
	})
	s.stopFeed = stop
	recent, err := c.Recent(cap(s.events.ring))
	mu.Lock()
	defer mu.Unlock()
	for _, x := range recent {
		s.publishExchange(x)
	}
	for _, x := range early {
		s.publishExchange(x)
	}
	seeded = true
	return err
}

// publishExchange turns a recorded exchange into an event of the ring and
// returns it (for a chunk already there, its first event).
func (s *Server) publishExchange(x hub.Exchange) Event {
	ev := Event{TurnID: x.TurnID, Text: x.Text, TS: x.TS, OutboxID: x.OutboxID, Confirm: x.Confirm, ConfirmStage: x.ConfirmStage}
	switch {
	case x.Inbound:
		ev.Type = EventInbound
		s.events.publishInbound(ev)
		return ev
	case x.OutboxID != "":
		ev.Type = EventNotice
		if x.Kind == string(outbox.KindReply) {
			ev.Type = EventReply
		}
		ev.File = fileLink(x)
		return s.events.publishChunk(ev)
	default:
		ev.Type = EventNotice
		return s.events.publish(ev)
	}
}
