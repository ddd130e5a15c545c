package web

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/a6afc2ce/hermes-hub/admin"
	"github.com/a6afc2ce/hermes-hub/clock"
	"github.com/a6afc2ce/hermes-hub/store"
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

// seed fills the ring with the last web records of the mirrors: inbound
// messages and delivered reply and notice chunks, newest runs first until
// the ring is full.
func (s *Server) seed() error {
	if s.rt.State == nil {
		return nil
	}
	flows := s.rt.State.Path(store.FlowsDir)
	want := cap(s.events.ring)
	var picked [][]store.MirrorRecord // per run, newest run first
	n := 0
	runs := store.ListRuns(flows)
	var errs []error
	for i := len(runs) - 1; i >= 0 && n < want; i-- {
		var recs []store.MirrorRecord
		err := store.ReadMirror(flows, store.MirrorFilter{RunID: runs[i]}, func(rec store.MirrorRecord) error {
			if webRecord(rec) {
				recs = append(recs, rec)
			}
			return nil
		})
		if err != nil {
			errs = append(errs, fmt.Errorf("run %s: %w", runs[i], err))
			continue
		}
		if len(recs) > want-n {
			recs = recs[len(recs)-(want-n):]
		}
		n += len(recs)
		picked = append(picked, recs)
	}
	for i := len(picked) - 1; i >= 0; i-- {
		for _, rec := range picked[i] {
			ev := Event{TurnID: rec.Meta["turn_id"], Text: rec.Text, TS: rec.TS}
			switch rec.Direction {
			case store.DirectionInbound:
				ev.Type = EventInbound
				s.events.publishInbound(ev)
			default:
				ev.Type, ev.OutboxID = EventNotice, rec.Meta[store.MetaOutboxID]
				if rec.Kind == store.KindReply {
					ev.Type = EventReply
				}
				if ev.OutboxID != "" {
					s.events.publishChunk(ev)
				} else {
					s.events.publish(ev)
				}
			}
		}
	}
	return errors.Join(errs...)
}

// webRecord selects the mirror records that belong in the web history.
func webRecord(rec store.MirrorRecord) bool {
	if rec.Platform != "web" {
		return false
	}
	if rec.Direction == store.DirectionInbound {
		return rec.Meta["duplicate"] == "" && strings.TrimSpace(rec.Text) != ""
	}
	return rec.Kind != store.KindDead
}
