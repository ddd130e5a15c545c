package discordtest

import (
	"encoding/json"
	"fmt"
	"io"
	"mime"
	"mime/multipart"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf16"

	"github.com/gorilla/websocket"

	"github.com/a6afc2ce/hermes-hub/internal/loopback"
)

// Defaults of a new Server.
const (
	DefaultToken     = "fake-bot-token-0123456789"
	DefaultBotID     = "900000000000000001"
	DefaultAppID     = "900000000000000002"
	DefaultGuildID   = "900000000000000003"
	DefaultChannelID = "900000000000000004"
	DefaultSessionID = "fake-session-1"
	// BotUsername is the bot user's name (READY, GET /users/@me).
	BotUsername = "hermes"
)

// Server is a fake Discord (REST and gateway) on a loopback port. Its
// methods are safe for concurrent use. The id fields are fixed when
// NewServer returns and must not be changed.
type Server struct {
	net    *loopback.Server
	faults *loopback.Faults[Fault, request]

	// BotID is the bot user's id, AppID the application's, GuildID the one
	// guild the bot is in (announced by GUILD_CREATE), ChannelID that
	// guild's one text channel, SessionID the gateway session id.
	BotID, AppID, GuildID, ChannelID, SessionID string

	mu        sync.Mutex
	token     string
	changed   chan struct{}
	requests  []Request
	receipts  []Receipt
	nextID    int64
	messages  map[string][]*Message          // channel → messages
	nonces    map[string]map[string]*Message // channel → nonce → message
	callbacks map[string]*Callback           // interaction id → callback
	byToken   map[string]*Callback           // interaction token → callback
	followups map[string][]*Message          // interaction token → follow-ups
	commands  map[string]json.RawMessage     // PUT path → body
	expired   map[string]bool                // interaction tokens no longer accepted
	unknown   map[string]bool                // channels that do not exist
	noAccess  map[string]bool                // channels the bot cannot see
	cdn       cdn                            // attachments (files.go)

	// gateway
	upgrader   websocket.Upgrader
	conn       *gatewayConn
	seq        int64
	events     []gatewayEvent // dispatched since READY, replayed on resume
	identifies []json.RawMessage
	resumes    int
	heartbeats int
	acks       int
	interval   int // heartbeat interval, ms
}

// Request is one REST request the fake received.
type Request struct {
	Method, Path, Query string // Path is below /api/v10
	Header              http.Header
	Body                []byte // the JSON body, or payload_json of a multipart body
	Files               map[string][]byte
	At                  time.Time
	// Fault describes the fault the request was answered with, if any.
	Fault string
}

// Message is a message the fake holds: a channel message, an original
// interaction response or a follow-up.
type Message struct {
	ID, ChannelID, Content, Nonce string
	Flags                         int
	Reference                     string // the message it replies to
	Files                         map[string][]byte
	Deleted                       bool
	// Buttons are the custom_ids of the message's buttons, in order.
	Buttons []string
	// Edits counts the edits of a channel message.
	Edits int
}

// Callback is an interaction's acknowledgement and its original response.
type Callback struct {
	ID, Token string
	Type      int
	Flags     int
	At        time.Time
	Original  *Message // the response, once edited (or sent with type 4)
}

// Receipt kinds.
const (
	ReceiptChannel  = "channel"  // POST /channels/{id}/messages
	ReceiptOriginal = "original" // PATCH of an interaction's original response (or a type 4 callback)
	ReceiptFollowup = "followup" // POST /webhooks/{app}/{token}
	ReceiptEdit     = "edit"     // PATCH /channels/{id}/messages/{message}
)

// Receipt is one accepted call that created or changed a message, in the
// order accepted: what a user of the channel saw arrive.
type Receipt struct {
	Kind      string
	ChannelID string // channel messages
	Token     string // interaction responses and follow-ups
	MessageID string
	Content   string
	Nonce     string
	Flags     int
	Files     []string // attachment names
	// Repeat is true for a channel message answered from an earlier one
	// with the same nonce: nothing new appeared in the channel.
	Repeat bool
	At     time.Time
}

// NewServer starts a fake Discord on 127.0.0.1 with DefaultToken and the
// default ids. Close it when done.
func NewServer() *Server {
	s := &Server{
		BotID: DefaultBotID, AppID: DefaultAppID, GuildID: DefaultGuildID, ChannelID: DefaultChannelID, SessionID: DefaultSessionID,
		token: DefaultToken, changed: make(chan struct{}), nextID: 910000000000000000,
		messages: map[string][]*Message{}, nonces: map[string]map[string]*Message{},
		callbacks: map[string]*Callback{}, byToken: map[string]*Callback{}, followups: map[string][]*Message{},
		commands: map[string]json.RawMessage{}, expired: map[string]bool{}, unknown: map[string]bool{}, noAccess: map[string]bool{},
		interval: 1000,
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/ws", s.gateway)
	mux.HandleFunc("/ws/", s.gateway)
	mux.HandleFunc("/api/v10/", s.rest)
	n, err := loopback.New(mux)
	if err != nil {
		panic(err) // as httptest.NewServer does: a test cannot go on without it
	}
	s.net = n
	s.faults = loopback.NewFaults[Fault, request](n)
	c, err := loopback.New(http.HandlerFunc(s.serveCDN))
	if err != nil {
		panic(err)
	}
	s.cdn = cdn{net: c, files: map[string]*File{}}
	return s
}

// URL is the server's root, http://127.0.0.1:<port>.
func (s *Server) URL() string { return "http://" + s.net.Addr() }

// APIBase is the REST base to configure (discord.api_base).
func (s *Server) APIBase() string { return s.URL() + "/api/v10" }

// Close shuts the server down, dropping the gateway connection first.
func (s *Server) Close() {
	s.DropConnection()
	s.net.Close()
	s.cdn.net.Close()
}

// Token is the bot token the gateway and GET /users/@me accept.
func (s *Server) Token() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.token
}

// SetToken changes the token the gateway and GET /users/@me accept.
func (s *Server) SetToken(token string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.token = token
}

// bump wakes every waiter; call with s.mu held.
func (s *Server) bump() {
	close(s.changed)
	s.changed = make(chan struct{})
}

// WaitFor blocks until cond is true, looking again after every change the
// fake sees. cond is called without the fake's lock (it may call the
// Server's methods). The deadline only turns a hang into a failure; it
// measures nothing.
func (s *Server) WaitFor(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.NewTimer(30 * time.Second)
	defer deadline.Stop()
	for {
		s.mu.Lock()
		ch := s.changed
		s.mu.Unlock()
		if cond() {
			return
		}
		select {
		case <-ch:
		case <-deadline.C:
			t.Fatalf("fake discord: timed out waiting for %s; requests:\n%s", what, s.RequestLog())
		}
	}
}

// Changed returns a channel closed at the fake's next change.
func (s *Server) Changed() <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.changed
}

// RequestLog lists every request, one a line, for failure messages.
func (s *Server) RequestLog() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var b strings.Builder
	for _, r := range s.requests {
		fmt.Fprintf(&b, "  %s %s %s", r.Method, r.Path, truncateForLog(string(r.Body)))
		if r.Fault != "" {
			fmt.Fprintf(&b, " [fault: %s]", r.Fault)
		}
		b.WriteByte('\n')
	}
	return b.String()
}

func truncateForLog(s string) string {
	if len(s) > 200 {
		return s[:200] + "…"
	}
	return s
}

func (s *Server) newID() string {
	s.nextID++
	return strconv.FormatInt(s.nextID, 10)
}

// Requests returns every REST request, in order.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.requests...)
}

// RequestsTo returns the recorded requests of method ("" for any) whose
// path starts with prefix.
func (s *Server) RequestsTo(method, prefix string) []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []Request
	for _, r := range s.requests {
		if (method == "" || r.Method == method) && strings.HasPrefix(r.Path, prefix) {
			out = append(out, r)
		}
	}
	return out
}

// Receipts returns every accepted message-producing call, in order.
func (s *Server) Receipts() []Receipt {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Receipt(nil), s.receipts...)
}

// ChannelMessages returns the messages of a channel, oldest first.
func (s *Server) ChannelMessages(channelID string) []Message {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []Message
	for _, m := range s.messages[channelID] {
		out = append(out, *m)
	}
	return out
}

// Callback returns an interaction's acknowledgement, if it was made.
func (s *Server) Callback(interactionID string) (Callback, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	c, ok := s.callbacks[interactionID]
	if !ok {
		return Callback{}, false
	}
	cp := *c
	if c.Original != nil {
		o := *c.Original
		cp.Original = &o
	}
	return cp, true
}

// Followups returns the follow-ups of an interaction token, oldest first.
func (s *Server) Followups(token string) []Message {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []Message
	for _, m := range s.followups[token] {
		out = append(out, *m)
	}
	return out
}

// Commands returns the bodies of the bulk overwrites by path.
func (s *Server) Commands() map[string]json.RawMessage {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make(map[string]json.RawMessage, len(s.commands))
	for k, v := range s.commands {
		out[k] = v
	}
	return out
}

// Expire makes Discord refuse an interaction token (Unknown Webhook), as
// after its fifteen minutes.
func (s *Server) Expire(token string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.expired[token] = true
}

// SetUnknownChannel makes messages to channelID fail with Unknown Channel
// (404).
func (s *Server) SetUnknownChannel(channelID string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.unknown[channelID] = true
}

// SetNoAccess makes messages to channelID fail with Missing Access (403).
func (s *Server) SetNoAccess(channelID string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.noAccess[channelID] = true
}

// ---- REST ----

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

func apiErr(w http.ResponseWriter, status, code int, msg string) {
	writeJSON(w, status, map[string]any{"code": code, "message": msg})
}

// MaxContent is the most a message's content may hold, in UTF-16 units,
// the unit the hub measures chunks in.
const MaxContent = 2000

// tooLong refuses content over MaxContent as Discord does, and reports
// whether it did.
func tooLong(w http.ResponseWriter, content string) bool {
	if n := len(utf16.Encode([]rune(content))); n > MaxContent {
		writeJSON(w, http.StatusBadRequest, map[string]any{
			"code": 50035, "message": "Invalid Form Body",
			"errors": map[string]any{"content": map[string]any{"_errors": []map[string]string{{"code": "BASE_TYPE_MAX_LENGTH", "message": fmt.Sprintf("Must be %d or fewer in length.", MaxContent)}}}},
		})
		return true
	}
	return false
}

func (s *Server) rest(w http.ResponseWriter, r *http.Request) {
	if s.faults.Mode() == Unavailable {
		w.Header().Set("Content-Type", "text/html")
		w.WriteHeader(http.StatusServiceUnavailable)
		_, _ = io.WriteString(w, "<html><body>503 Service Unavailable</body></html>")
		return
	}
	path := strings.TrimPrefix(r.URL.Path, "/api/v10")
	req := Request{Method: r.Method, Path: path, Query: r.URL.RawQuery, Header: r.Header.Clone(), At: time.Now()}
	ct, params, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if ct == "multipart/form-data" {
		req.Files = map[string][]byte{}
		mr := multipart.NewReader(r.Body, params["boundary"])
		for {
			p, err := mr.NextPart()
			if err != nil {
				break
			}
			data, _ := io.ReadAll(p)
			if p.FormName() == "payload_json" {
				req.Body = data
			} else {
				req.Files[p.FileName()] = data
			}
		}
	} else {
		req.Body, _ = io.ReadAll(r.Body)
	}

	s.mu.Lock()
	ft, faulty := s.faults.Take(request{r.Method, path})
	if faulty {
		req.Fault = ft.String()
	}
	s.requests = append(s.requests, req)
	s.bump()
	s.mu.Unlock()

	if faulty && !s.applyFault(w, r, ft) {
		return
	}
	if faulty && ft.Lost {
		answer, lost := s.net.Lose(w)
		defer lost()
		w = answer
	}
	h := w.Header()
	h.Set("X-RateLimit-Limit", "50")
	h.Set("X-RateLimit-Remaining", "49")
	h.Set("X-RateLimit-Reset-After", "1")
	h.Set("X-RateLimit-Bucket", "fake-bucket")

	seg := strings.Split(strings.Trim(path, "/"), "/")
	switch {
	case r.Method == http.MethodGet && (path == "/gateway" || path == "/gateway/bot"):
		writeJSON(w, 200, map[string]any{"url": "ws" + strings.TrimPrefix(s.URL(), "http") + "/ws", "shards": 1})
	case r.Method == http.MethodGet && path == "/users/@me":
		s.me(w, r.Header.Get("Authorization"))
	case r.Method == http.MethodPost && len(seg) == 4 && seg[0] == "interactions" && seg[3] == "callback":
		s.interactionCallback(w, seg[1], seg[2], req.Body)
	case len(seg) == 5 && seg[0] == "webhooks" && seg[3] == "messages" && seg[4] == "@original":
		s.original(w, r.Method, seg[2], req)
	case r.Method == http.MethodPost && len(seg) == 3 && seg[0] == "webhooks":
		s.followup(w, seg[2], req)
	case r.Method == http.MethodPost && len(seg) == 3 && seg[0] == "channels" && seg[2] == "messages":
		s.createMessage(w, seg[1], req)
	case r.Method == http.MethodPatch && len(seg) == 4 && seg[0] == "channels" && seg[2] == "messages":
		s.editMessage(w, seg[1], seg[3], req)
	case r.Method == http.MethodPut && len(seg) >= 3 && seg[0] == "applications" && seg[len(seg)-1] == "commands":
		s.mu.Lock()
		s.commands[path] = json.RawMessage(req.Body)
		s.bump()
		s.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(req.Body)
	default:
		apiErr(w, 404, 0, "404: Not Found")
	}
}

// me answers GET /users/@me: the bot user for the token the fake accepts
// (Authorization: Bot <token>), else 401 as Discord answers a bad token.
func (s *Server) me(w http.ResponseWriter, auth string) {
	if auth != "Bot "+s.Token() {
		apiErr(w, http.StatusUnauthorized, 0, "401: Unauthorized")
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"id": s.BotID, "username": BotUsername, "discriminator": "0", "bot": true})
}

func fileNames(files map[string][]byte) []string {
	var out []string
	for name := range files {
		out = append(out, name)
	}
	return out
}

func (s *Server) interactionCallback(w http.ResponseWriter, id, token string, body []byte) {
	var cb struct {
		Type int `json:"type"`
		Data struct {
			Content string `json:"content"`
			Flags   int    `json:"flags"`
		} `json:"data"`
	}
	if err := json.Unmarshal(body, &cb); err != nil {
		apiErr(w, 400, 50035, "Invalid Form Body")
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.callbacks[id]; ok {
		apiErr(w, 400, 40060, "Interaction has already been acknowledged.")
		return
	}
	c := &Callback{ID: id, Token: token, Type: cb.Type, Flags: cb.Data.Flags, At: time.Now()}
	if cb.Type == 4 {
		c.Original = &Message{ID: s.newID(), Content: cb.Data.Content, Flags: cb.Data.Flags}
		s.receipts = append(s.receipts, Receipt{Kind: ReceiptOriginal, Token: token, MessageID: c.Original.ID, Content: cb.Data.Content, Flags: cb.Data.Flags, At: c.At})
	}
	s.callbacks[id] = c
	s.byToken[token] = c
	s.bump()
	w.WriteHeader(http.StatusNoContent)
}

type webhookPayload struct {
	Content         string           `json:"content"`
	Flags           int              `json:"flags"`
	AllowedMentions *json.RawMessage `json:"allowed_mentions"`
	Components      json.RawMessage  `json:"components"`
}

// buttons reads the custom_ids of the buttons in a components array; ok is
// false when the body has no components (which leaves them unchanged).
func buttons(raw json.RawMessage) (ids []string, ok bool) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, false
	}
	var rows []struct {
		Components []struct {
			Type     int    `json:"type"`
			CustomID string `json:"custom_id"`
		} `json:"components"`
	}
	if json.Unmarshal(raw, &rows) != nil {
		return nil, true
	}
	for _, r := range rows {
		for _, c := range r.Components {
			if c.Type == 2 && c.CustomID != "" {
				ids = append(ids, c.CustomID)
			}
		}
	}
	return ids, true
}

func (s *Server) original(w http.ResponseWriter, method, token string, req Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	c, ok := s.byToken[token]
	if s.expired[token] || !ok {
		apiErr(w, 404, 10015, "Unknown Webhook")
		return
	}
	switch method {
	case http.MethodPatch:
		var p webhookPayload
		if err := json.Unmarshal(req.Body, &p); err != nil {
			apiErr(w, 400, 50035, "Invalid Form Body")
			return
		}
		if tooLong(w, p.Content) {
			return
		}
		if c.Original == nil {
			c.Original = &Message{ID: s.newID(), Flags: c.Flags}
		}
		c.Original.Content = p.Content
		c.Original.Files = req.Files
		if ids, ok := buttons(p.Components); ok {
			c.Original.Buttons = ids
		}
		c.Original.Deleted = false
		s.receipts = append(s.receipts, Receipt{Kind: ReceiptOriginal, Token: token, MessageID: c.Original.ID, Content: p.Content, Flags: c.Original.Flags, Files: fileNames(req.Files), At: time.Now()})
		s.bump()
		writeJSON(w, 200, map[string]any{"id": c.Original.ID, "content": p.Content})
	case http.MethodDelete:
		if c.Original == nil {
			c.Original = &Message{ID: s.newID()}
		}
		c.Original.Deleted = true
		s.bump()
		w.WriteHeader(http.StatusNoContent)
	default:
		apiErr(w, 405, 0, "405: Method Not Allowed")
	}
}

func (s *Server) followup(w http.ResponseWriter, token string, req Request) {
	var p webhookPayload
	if err := json.Unmarshal(req.Body, &p); err != nil {
		apiErr(w, 400, 50035, "Invalid Form Body")
		return
	}
	if tooLong(w, p.Content) {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.byToken[token]; s.expired[token] || !ok {
		apiErr(w, 404, 10015, "Unknown Webhook")
		return
	}
	m := &Message{ID: s.newID(), Content: p.Content, Flags: p.Flags, Files: req.Files}
	s.followups[token] = append(s.followups[token], m)
	s.receipts = append(s.receipts, Receipt{Kind: ReceiptFollowup, Token: token, MessageID: m.ID, Content: p.Content, Flags: p.Flags, Files: fileNames(req.Files), At: time.Now()})
	s.bump()
	writeJSON(w, 200, map[string]any{"id": m.ID, "content": m.Content})
}

func (s *Server) createMessage(w http.ResponseWriter, ch string, req Request) {
	var p struct {
		Content      string          `json:"content"`
		Components   json.RawMessage `json:"components"`
		Nonce        json.RawMessage `json:"nonce"`
		EnforceNonce bool            `json:"enforce_nonce"`
		Reference    *struct {
			MessageID string `json:"message_id"`
		} `json:"message_reference"`
	}
	if err := json.Unmarshal(req.Body, &p); err != nil {
		apiErr(w, 400, 50035, "Invalid Form Body")
		return
	}
	if tooLong(w, p.Content) {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case s.unknown[ch]:
		apiErr(w, 404, 10003, "Unknown Channel")
		return
	case s.noAccess[ch]:
		apiErr(w, 403, 50001, "Missing Access")
		return
	}
	var nonce string
	_ = json.Unmarshal(p.Nonce, &nonce)
	if len(nonce) > 25 {
		apiErr(w, 400, 50035, "Invalid Form Body: nonce longer than 25")
		return
	}
	if nonce != "" && p.EnforceNonce {
		if m, ok := s.nonces[ch][nonce]; ok {
			s.receipts = append(s.receipts, Receipt{Kind: ReceiptChannel, ChannelID: ch, MessageID: m.ID, Content: m.Content, Nonce: nonce, Repeat: true, At: time.Now()})
			s.bump()
			writeJSON(w, 200, map[string]any{"id": m.ID, "channel_id": ch, "content": m.Content, "nonce": nonce})
			return
		}
	}
	m := &Message{ID: s.newID(), ChannelID: ch, Content: p.Content, Nonce: nonce, Files: req.Files}
	m.Buttons, _ = buttons(p.Components)
	if p.Reference != nil {
		m.Reference = p.Reference.MessageID
	}
	s.messages[ch] = append(s.messages[ch], m)
	if nonce != "" {
		if s.nonces[ch] == nil {
			s.nonces[ch] = map[string]*Message{}
		}
		s.nonces[ch][nonce] = m
	}
	s.receipts = append(s.receipts, Receipt{Kind: ReceiptChannel, ChannelID: ch, MessageID: m.ID, Content: p.Content, Nonce: nonce, Files: fileNames(req.Files), At: time.Now()})
	s.bump()
	writeJSON(w, 200, map[string]any{"id": m.ID, "channel_id": ch, "content": m.Content, "nonce": nonce})
}

// editMessage edits a channel message the bot posted.
func (s *Server) editMessage(w http.ResponseWriter, ch, id string, req Request) {
	var p webhookPayload
	if err := json.Unmarshal(req.Body, &p); err != nil {
		apiErr(w, 400, 50035, "Invalid Form Body")
		return
	}
	if tooLong(w, p.Content) {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	var m *Message
	for _, x := range s.messages[ch] {
		if x.ID == id && !x.Deleted {
			m = x
		}
	}
	if m == nil {
		apiErr(w, 404, 10008, "Unknown Message")
		return
	}
	m.Content = p.Content
	m.Edits++
	if ids, ok := buttons(p.Components); ok {
		m.Buttons = ids
	}
	s.receipts = append(s.receipts, Receipt{Kind: ReceiptEdit, ChannelID: ch, MessageID: id, Content: p.Content, At: time.Now()})
	s.bump()
	writeJSON(w, 200, map[string]any{"id": m.ID, "channel_id": ch, "content": m.Content})
}
