package discordtest

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/gorilla/websocket"
)

// writeTimeout bounds one gateway write, so a client that stopped reading
// cannot hang the fake.
const writeTimeout = 5 * time.Second

type gatewayEvent struct {
	Seq  int64
	Type string
	Data json.RawMessage
}

type gatewayConn struct {
	ws *websocket.Conn
	mu sync.Mutex // serialises writes
}

func (c *gatewayConn) writeLocked(v any) error {
	_ = c.ws.SetWriteDeadline(time.Now().Add(writeTimeout))
	return c.ws.WriteJSON(v)
}

func (c *gatewayConn) write(v any) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.writeLocked(v)
}

type gatewayFrame struct {
	Op int             `json:"op"`
	D  json.RawMessage `json:"d"`
	S  *int64          `json:"s,omitempty"`
	T  string          `json:"t,omitempty"`
}

func frame(op int, t string, s int64, d any) map[string]any {
	m := map[string]any{"op": op, "d": d}
	if t != "" {
		m["t"], m["s"] = t, s
	}
	return m
}

func (s *Server) gateway(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	interval := s.interval
	s.mu.Unlock()
	if s.faults.Mode() == Unavailable {
		http.Error(w, "503 Service Unavailable", http.StatusServiceUnavailable)
		return
	}
	ws, err := s.upgrader.Upgrade(w, r, nil)
	if err != nil {
		return
	}
	c := &gatewayConn{ws: ws}
	defer ws.Close()
	if c.write(frame(10, "", 0, map[string]any{"heartbeat_interval": interval})) != nil {
		return
	}
	var first gatewayFrame
	_ = ws.SetReadDeadline(time.Now().Add(30 * time.Second))
	if ws.ReadJSON(&first) != nil {
		return
	}
	_ = ws.SetReadDeadline(time.Time{})
	switch first.Op {
	case 2:
		if !s.identify(c, first.D) {
			return
		}
	case 6:
		if !s.resume(c, first.D) {
			return
		}
	default:
		return
	}
	for {
		var fr gatewayFrame
		if err := ws.ReadJSON(&fr); err != nil {
			s.mu.Lock()
			if s.conn == c {
				s.conn = nil
			}
			s.bump()
			s.mu.Unlock()
			return
		}
		if fr.Op == 1 {
			s.mu.Lock()
			s.heartbeats++
			s.bump()
			s.mu.Unlock()
			if c.write(frame(11, "", 0, nil)) == nil {
				s.mu.Lock()
				s.acks++
				s.bump()
				s.mu.Unlock()
			}
		}
	}
}

// identify starts a new session: READY and the guild, then the connection
// is the one Dispatch writes to. The connection's write lock is held until
// both are written, so that no event overtakes READY.
func (s *Server) identify(c *gatewayConn, d json.RawMessage) bool {
	var id struct {
		Token string `json:"token"`
	}
	_ = json.Unmarshal(d, &id)
	if id.Token != "Bot "+s.Token() {
		_ = c.ws.WriteMessage(websocket.CloseMessage, websocket.FormatCloseMessage(4004, "Authentication failed."))
		return false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	s.mu.Lock()
	old := s.conn
	s.identifies = append(s.identifies, d)
	s.seq = 0
	s.events = nil
	s.seq++
	wsURL := "ws" + strings.TrimPrefix(s.URL(), "http") + "/ws"
	ready := frame(0, "READY", s.seq, map[string]any{
		"v": 10, "session_id": s.SessionID, "resume_gateway_url": wsURL,
		"user":        map[string]any{"id": s.BotID, "username": BotUsername, "bot": true},
		"application": map[string]any{"id": s.AppID, "flags": 0},
		"guilds":      []any{map[string]any{"id": s.GuildID, "unavailable": true}},
	})
	s.seq++
	guild := frame(0, "GUILD_CREATE", s.seq, map[string]any{
		"id": s.GuildID, "name": "Ops Guild",
		"channels": []any{map[string]any{"id": s.ChannelID, "name": "ops", "type": 0, "guild_id": s.GuildID}},
		"roles":    []any{}, "members": []any{},
	})
	s.conn = c
	s.bump()
	s.mu.Unlock()
	if old != nil && old != c {
		// A new session replaces the old connection, as Discord does.
		_ = old.ws.UnderlyingConn().Close()
	}
	return c.writeLocked(ready) == nil && c.writeLocked(guild) == nil
}

// resume continues the session and replays the events after the client's
// sequence number.
func (s *Server) resume(c *gatewayConn, d json.RawMessage) bool {
	var rp struct {
		SessionID string `json:"session_id"`
		Seq       int64  `json:"seq"`
	}
	_ = json.Unmarshal(d, &rp)
	c.mu.Lock()
	defer c.mu.Unlock()
	s.mu.Lock()
	if rp.SessionID != s.SessionID {
		s.mu.Unlock()
		_ = c.writeLocked(frame(9, "", 0, false)) // invalid session
		return false
	}
	s.resumes++
	s.seq++
	resumed := frame(0, "RESUMED", s.seq, map[string]any{})
	var replay []map[string]any
	for _, e := range s.events {
		if e.Seq > rp.Seq {
			replay = append(replay, frame(0, e.Type, e.Seq, e.Data))
		}
	}
	s.conn = c
	s.bump()
	s.mu.Unlock()
	if c.writeLocked(resumed) != nil {
		return false
	}
	for _, e := range replay {
		if c.writeLocked(e) != nil {
			return false
		}
	}
	return true
}

// Dispatch sends an event (INTERACTION_CREATE, MESSAGE_CREATE, …) to the
// connected client, or keeps it for the client's resume when none is
// connected. It returns the event's sequence number and whether it was
// written to a connection.
func (s *Server) Dispatch(t string, data any) (seq int64, written bool) {
	raw, err := json.Marshal(data)
	if err != nil {
		panic(fmt.Sprintf("discordtest: event %s does not encode: %v", t, err))
	}
	s.mu.Lock()
	s.seq++
	e := gatewayEvent{Seq: s.seq, Type: t, Data: raw}
	s.events = append(s.events, e)
	c := s.conn
	s.mu.Unlock()
	if c == nil {
		return e.Seq, false
	}
	return e.Seq, c.write(frame(0, t, e.Seq, e.Data)) == nil
}

// DropConnection closes the gateway connection abruptly, as a network
// failure would; the client may resume.
func (s *Server) DropConnection() {
	s.mu.Lock()
	c := s.conn
	s.conn = nil
	s.bump()
	s.mu.Unlock()
	if c != nil {
		_ = c.ws.UnderlyingConn().Close()
	}
}

// Connected reports whether a client has identified (or resumed) and is
// still connected.
func (s *Server) Connected() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.conn != nil
}

// Identifies returns the payloads of every Identify received, in order.
func (s *Server) Identifies() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]string, len(s.identifies))
	for i, r := range s.identifies {
		out[i] = string(r)
	}
	return out
}

// Resumes is how many sessions were resumed.
func (s *Server) Resumes() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.resumes
}

// Heartbeats is how many heartbeats the fake received; Acks how many it
// acknowledged.
func (s *Server) Heartbeats() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.heartbeats
}

// Acks is how many heartbeats the fake acknowledged.
func (s *Server) Acks() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.acks
}
