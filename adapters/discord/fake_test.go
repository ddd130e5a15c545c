package discord

import (
	"encoding/json"
	"fmt"
	"io"
	"mime"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gorilla/websocket"
)

// fakeDiscord is an in-process Discord: REST on httptest (recording every
// request, with rate-limit headers, fault injection, nonces and interaction
// webhooks) and a gateway over websockets (Hello, Identify, Ready,
// heartbeats and their ACKs, dispatch on demand, a dropped connection and
// Resume with replay).
type fakeDiscord struct {
	t    testing.TB
	srv  *httptest.Server
	base string // REST base: <server>/api/v10

	botID, appID, guildID, channelID, sessionID string

	mu        sync.Mutex
	changed   chan struct{}
	requests  []fakeRequest
	nextID    int64
	messages  map[string][]*fakeMessage          // channel → messages
	nonces    map[string]map[string]*fakeMessage // channel → nonce → message
	callbacks map[string]*fakeCallback           // interaction id → callback
	byToken   map[string]*fakeCallback           // interaction token → callback
	followups map[string][]*fakeMessage          // interaction token → follow-ups
	commands  map[string]json.RawMessage         // PUT path → body
	expired   map[string]bool                    // interaction tokens no longer accepted
	unknown   map[string]bool                    // channels that do not exist
	noAccess  map[string]bool                    // channels the bot cannot see
	faults    []fault

	// gateway
	upgrader   websocket.Upgrader
	conn       *fakeConn
	seq        int64
	events     []gatewayEvent // dispatched after READY, replayed on resume
	identifies []json.RawMessage
	resumes    int
	heartbeats int
	acks       int
	interval   int // heartbeat interval, ms
}

type fakeRequest struct {
	Method, Path, Query string
	Header              http.Header
	Body                []byte // the JSON body, or payload_json of a multipart body
	Files               map[string][]byte
	At                  time.Time
}

type fakeMessage struct {
	ID, ChannelID, Content, Nonce string
	Flags                         int
	Reference                     string
	Files                         map[string][]byte
	Deleted                       bool
}

type fakeCallback struct {
	ID, Token string
	Type      int
	Flags     int
	At        time.Time
	Original  *fakeMessage // the response, once edited (or sent with type 4)
}

// fault answers the next request that matches Method and PathPrefix.
type fault struct {
	Method, PathPrefix string
	Status             int
	Body               string
	Header             map[string]string
	Hijack             bool // close the connection without an answer
}

type gatewayEvent struct {
	Seq  int64
	Type string
	Data json.RawMessage
}

type fakeConn struct {
	ws *websocket.Conn
	mu sync.Mutex
}

func (c *fakeConn) write(v any) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.ws.WriteJSON(v)
}

func newFakeDiscord(t testing.TB) *fakeDiscord {
	f := &fakeDiscord{
		t: t, botID: "900000000000000001", appID: "900000000000000002", guildID: "900000000000000003",
		channelID: "900000000000000004", sessionID: "fake-session-1",
		changed: make(chan struct{}), nextID: 910000000000000000,
		messages: map[string][]*fakeMessage{}, nonces: map[string]map[string]*fakeMessage{},
		callbacks: map[string]*fakeCallback{}, byToken: map[string]*fakeCallback{}, followups: map[string][]*fakeMessage{},
		commands: map[string]json.RawMessage{}, expired: map[string]bool{}, unknown: map[string]bool{}, noAccess: map[string]bool{},
		interval: 1000,
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/ws", f.gateway)
	mux.HandleFunc("/ws/", f.gateway)
	mux.HandleFunc("/api/v10/", f.rest)
	f.srv = httptest.NewServer(mux)
	f.base = f.srv.URL + "/api/v10"
	t.Cleanup(f.Close)
	return f
}

// Close shuts the servers down, dropping the gateway connection first.
func (f *fakeDiscord) Close() {
	f.mu.Lock()
	c := f.conn
	f.conn = nil
	f.mu.Unlock()
	if c != nil {
		c.ws.Close()
	}
	f.srv.CloseClientConnections()
	f.srv.Close()
}

// bump wakes every waiter; call with f.mu held.
func (f *fakeDiscord) bump() {
	close(f.changed)
	f.changed = make(chan struct{})
}

// waitFor blocks until cond (called with f.mu held) is true. The deadline
// only turns a hang into a failure; it measures nothing.
func (f *fakeDiscord) waitFor(what string, cond func() bool) {
	f.t.Helper()
	deadline := time.After(30 * time.Second)
	for {
		f.mu.Lock()
		if cond() {
			f.mu.Unlock()
			return
		}
		ch := f.changed
		f.mu.Unlock()
		select {
		case <-ch:
		case <-deadline:
			f.t.Fatalf("fake discord: timed out waiting for %s; requests:\n%s", what, f.requestLog())
		}
	}
}

func (f *fakeDiscord) requestLog() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	var b strings.Builder
	for _, r := range f.requests {
		fmt.Fprintf(&b, "  %s %s %s\n", r.Method, r.Path, truncateForLog(string(r.Body)))
	}
	return b.String()
}

func truncateForLog(s string) string {
	if len(s) > 200 {
		return s[:200] + "…"
	}
	return s
}

func (f *fakeDiscord) newID() string {
	f.nextID++
	return strconv.FormatInt(f.nextID, 10)
}

// failNext queues a fault for the next matching request.
func (f *fakeDiscord) failNext(ft fault) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.faults = append(f.faults, ft)
}

// rateLimit is a 429 fault with Discord's body and headers.
func rateLimit(method, prefix string, retryAfter float64) fault {
	s := strconv.FormatFloat(retryAfter, 'f', -1, 64)
	return fault{
		Method: method, PathPrefix: prefix, Status: http.StatusTooManyRequests,
		Body: fmt.Sprintf(`{"message": "You are being rate limited.", "retry_after": %s, "global": false}`, s),
		Header: map[string]string{
			"X-RateLimit-Limit": "5", "X-RateLimit-Remaining": "0", "X-RateLimit-Reset-After": s,
			"X-RateLimit-Bucket": "fake-bucket", "Retry-After": strconv.Itoa(int(retryAfter + 0.999)),
		},
	}
}

// requestsTo returns the recorded requests whose path starts with prefix.
func (f *fakeDiscord) requestsTo(method, prefix string) []fakeRequest {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []fakeRequest
	for _, r := range f.requests {
		if (method == "" || r.Method == method) && strings.HasPrefix(r.Path, prefix) {
			out = append(out, r)
		}
	}
	return out
}

func (f *fakeDiscord) channelMessages(ch string) []fakeMessage {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []fakeMessage
	for _, m := range f.messages[ch] {
		out = append(out, *m)
	}
	return out
}

func (f *fakeDiscord) callback(id string) (fakeCallback, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	c, ok := f.callbacks[id]
	if !ok {
		return fakeCallback{}, false
	}
	cp := *c
	if c.Original != nil {
		o := *c.Original
		cp.Original = &o
	}
	return cp, true
}

func (f *fakeDiscord) followupsOf(token string) []fakeMessage {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []fakeMessage
	for _, m := range f.followups[token] {
		out = append(out, *m)
	}
	return out
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

func (f *fakeDiscord) rest(w http.ResponseWriter, r *http.Request) {
	path := strings.TrimPrefix(r.URL.Path, "/api/v10")
	req := fakeRequest{Method: r.Method, Path: path, Query: r.URL.RawQuery, Header: r.Header.Clone(), At: time.Now()}
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

	f.mu.Lock()
	f.requests = append(f.requests, req)
	var ft *fault
	for i, x := range f.faults {
		if x.Method == r.Method && strings.HasPrefix(path, x.PathPrefix) {
			x := x
			ft = &x
			f.faults = append(f.faults[:i], f.faults[i+1:]...)
			break
		}
	}
	f.bump()
	f.mu.Unlock()

	if ft != nil {
		if ft.Hijack {
			if hj, ok := w.(http.Hijacker); ok {
				c, _, err := hj.Hijack()
				if err == nil {
					c.Close()
				}
				return
			}
		}
		for k, v := range ft.Header {
			w.Header().Set(k, v)
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(ft.Status)
		_, _ = io.WriteString(w, ft.Body)
		return
	}
	h := w.Header()
	h.Set("X-RateLimit-Limit", "50")
	h.Set("X-RateLimit-Remaining", "49")
	h.Set("X-RateLimit-Reset-After", "1")
	h.Set("X-RateLimit-Bucket", "fake-bucket")

	seg := strings.Split(strings.Trim(path, "/"), "/")
	switch {
	case r.Method == http.MethodGet && (path == "/gateway" || path == "/gateway/bot"):
		writeJSON(w, 200, map[string]any{"url": "ws" + strings.TrimPrefix(f.srv.URL, "http") + "/ws", "shards": 1})
	case r.Method == http.MethodPost && len(seg) == 4 && seg[0] == "interactions" && seg[3] == "callback":
		f.interactionCallback(w, seg[1], seg[2], req.Body)
	case len(seg) == 5 && seg[0] == "webhooks" && seg[3] == "messages" && seg[4] == "@original":
		f.original(w, r.Method, seg[2], req)
	case r.Method == http.MethodPost && len(seg) == 3 && seg[0] == "webhooks":
		f.followup(w, seg[2], req)
	case r.Method == http.MethodPost && len(seg) == 3 && seg[0] == "channels" && seg[2] == "messages":
		f.createMessage(w, seg[1], req)
	case r.Method == http.MethodPut && len(seg) >= 3 && seg[0] == "applications" && seg[len(seg)-1] == "commands":
		f.mu.Lock()
		f.commands[path] = json.RawMessage(req.Body)
		f.bump()
		f.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(req.Body)
	default:
		apiErr(w, 404, 0, "404: Not Found")
	}
}

func (f *fakeDiscord) interactionCallback(w http.ResponseWriter, id, token string, body []byte) {
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
	f.mu.Lock()
	defer f.mu.Unlock()
	if _, ok := f.callbacks[id]; ok {
		apiErr(w, 400, 40060, "Interaction has already been acknowledged.")
		return
	}
	c := &fakeCallback{ID: id, Token: token, Type: cb.Type, Flags: cb.Data.Flags, At: time.Now()}
	if cb.Type == 4 {
		c.Original = &fakeMessage{ID: f.newID(), Content: cb.Data.Content, Flags: cb.Data.Flags}
	}
	f.callbacks[id] = c
	f.byToken[token] = c
	f.bump()
	w.WriteHeader(http.StatusNoContent)
}

type webhookPayload struct {
	Content         string           `json:"content"`
	Flags           int              `json:"flags"`
	AllowedMentions *json.RawMessage `json:"allowed_mentions"`
}

func (f *fakeDiscord) original(w http.ResponseWriter, method, token string, req fakeRequest) {
	f.mu.Lock()
	defer f.mu.Unlock()
	c, ok := f.byToken[token]
	if f.expired[token] || !ok {
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
		if c.Original == nil {
			c.Original = &fakeMessage{ID: f.newID(), Flags: c.Flags}
		}
		c.Original.Content = p.Content
		c.Original.Files = req.Files
		c.Original.Deleted = false
		f.bump()
		writeJSON(w, 200, map[string]any{"id": c.Original.ID, "content": p.Content})
	case http.MethodDelete:
		if c.Original == nil {
			c.Original = &fakeMessage{ID: f.newID()}
		}
		c.Original.Deleted = true
		f.bump()
		w.WriteHeader(http.StatusNoContent)
	default:
		apiErr(w, 405, 0, "405: Method Not Allowed")
	}
}

func (f *fakeDiscord) followup(w http.ResponseWriter, token string, req fakeRequest) {
	var p webhookPayload
	if err := json.Unmarshal(req.Body, &p); err != nil {
		apiErr(w, 400, 50035, "Invalid Form Body")
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if _, ok := f.byToken[token]; f.expired[token] || !ok {
		apiErr(w, 404, 10015, "Unknown Webhook")
		return
	}
	m := &fakeMessage{ID: f.newID(), Content: p.Content, Flags: p.Flags, Files: req.Files}
	f.followups[token] = append(f.followups[token], m)
	f.bump()
	writeJSON(w, 200, map[string]any{"id": m.ID, "content": m.Content})
}

func (f *fakeDiscord) createMessage(w http.ResponseWriter, ch string, req fakeRequest) {
	var p struct {
		Content      string          `json:"content"`
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
	f.mu.Lock()
	defer f.mu.Unlock()
	switch {
	case f.unknown[ch]:
		apiErr(w, 404, 10003, "Unknown Channel")
		return
	case f.noAccess[ch]:
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
		if m, ok := f.nonces[ch][nonce]; ok {
			writeJSON(w, 200, map[string]any{"id": m.ID, "channel_id": ch, "content": m.Content, "nonce": nonce})
			return
		}
	}
	m := &fakeMessage{ID: f.newID(), ChannelID: ch, Content: p.Content, Nonce: nonce, Files: req.Files}
	if p.Reference != nil {
		m.Reference = p.Reference.MessageID
	}
	f.messages[ch] = append(f.messages[ch], m)
	if nonce != "" {
		if f.nonces[ch] == nil {
			f.nonces[ch] = map[string]*fakeMessage{}
		}
		f.nonces[ch][nonce] = m
	}
	f.bump()
	writeJSON(w, 200, map[string]any{"id": m.ID, "channel_id": ch, "content": m.Content, "nonce": nonce})
}

// ---- gateway ----

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

func (f *fakeDiscord) gateway(w http.ResponseWriter, r *http.Request) {
	ws, err := f.upgrader.Upgrade(w, r, nil)
	if err != nil {
		return
	}
	c := &fakeConn{ws: ws}
	defer ws.Close()
	f.mu.Lock()
	interval := f.interval
	f.mu.Unlock()
	if c.write(frame(10, "", 0, map[string]any{"heartbeat_interval": interval})) != nil {
		return
	}
	var first gatewayFrame
	if ws.ReadJSON(&first) != nil {
		return
	}
	switch first.Op {
	case 2:
		var id struct {
			Token string `json:"token"`
		}
		_ = json.Unmarshal(first.D, &id)
		if id.Token != "Bot "+botToken {
			_ = ws.WriteMessage(websocket.CloseMessage, websocket.FormatCloseMessage(4004, "Authentication failed."))
			return
		}
		f.mu.Lock()
		f.identifies = append(f.identifies, first.D)
		f.seq = 0
		f.events = nil
		f.seq++
		ready := frame(0, "READY", f.seq, map[string]any{
			"v": 10, "session_id": f.sessionID, "resume_gateway_url": "ws" + strings.TrimPrefix(f.srv.URL, "http") + "/ws",
			"user":        map[string]any{"id": f.botID, "username": "hermes", "bot": true},
			"application": map[string]any{"id": f.appID, "flags": 0},
			"guilds":      []any{map[string]any{"id": f.guildID, "unavailable": true}},
		})
		f.seq++
		guild := frame(0, "GUILD_CREATE", f.seq, map[string]any{
			"id": f.guildID, "name": "Ops Guild",
			"channels": []any{map[string]any{"id": f.channelID, "name": "ops", "type": 0, "guild_id": f.guildID}},
			"roles":    []any{}, "members": []any{},
		})
		f.conn = c
		f.bump()
		f.mu.Unlock()
		if c.write(ready) != nil || c.write(guild) != nil {
			return
		}
	case 6:
		var rp struct {
			SessionID string `json:"session_id"`
			Seq       int64  `json:"seq"`
		}
		_ = json.Unmarshal(first.D, &rp)
		f.mu.Lock()
		if rp.SessionID != f.sessionID {
			f.mu.Unlock()
			_ = c.write(frame(9, "", 0, false)) // invalid session
			return
		}
		f.resumes++
		f.seq++
		resumed := frame(0, "RESUMED", f.seq, map[string]any{})
		var replay []map[string]any
		for _, e := range f.events {
			if e.Seq > rp.Seq {
				replay = append(replay, frame(0, e.Type, e.Seq, e.Data))
			}
		}
		f.conn = c
		f.bump()
		f.mu.Unlock()
		if c.write(resumed) != nil {
			return
		}
		for _, e := range replay {
			if c.write(e) != nil {
				return
			}
		}
	default:
		return
	}
	for {
		var fr gatewayFrame
		if err := ws.ReadJSON(&fr); err != nil {
			f.mu.Lock()
			if f.conn == c {
				f.conn = nil
			}
			f.bump()
			f.mu.Unlock()
			return
		}
		if fr.Op == 1 {
			f.mu.Lock()
			f.heartbeats++
			f.bump()
			f.mu.Unlock()
			if c.write(frame(11, "", 0, nil)) == nil {
				f.mu.Lock()
				f.acks++
				f.bump()
				f.mu.Unlock()
			}
		}
	}
}

// dispatch sends an event to the connected client, or keeps it for the
// client's resume when none is connected.
func (f *fakeDiscord) dispatch(t string, data any) int64 {
	raw, err := json.Marshal(data)
	if err != nil {
		f.t.Fatal(err)
	}
	f.mu.Lock()
	f.seq++
	e := gatewayEvent{Seq: f.seq, Type: t, Data: raw}
	f.events = append(f.events, e)
	c := f.conn
	f.mu.Unlock()
	if c != nil {
		_ = c.write(frame(0, t, e.Seq, e.Data))
	}
	return e.Seq
}

// drop closes the gateway connection abruptly, as a network failure would.
func (f *fakeDiscord) drop() {
	f.mu.Lock()
	c := f.conn
	f.conn = nil
	f.bump()
	f.mu.Unlock()
	if c != nil {
		_ = c.ws.UnderlyingConn().Close()
	}
}

func (f *fakeDiscord) connected() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.conn != nil
}

// ---- payloads ----

// opt is one slash command option in an interaction payload.
type opt struct {
	Name  string
	Type  int
	Value any
	Sub   []opt
}

func (o opt) json() map[string]any {
	m := map[string]any{"name": o.Name, "type": o.Type}
	if o.Value != nil {
		m["value"] = o.Value
	}
	if len(o.Sub) > 0 {
		var subs []any
		for _, s := range o.Sub {
			subs = append(subs, s.json())
		}
		m["options"] = subs
	}
	return m
}

func sub(name string, opts ...opt) opt { return opt{Name: name, Type: 1, Sub: opts} }
func str(name, v string) opt           { return opt{Name: name, Type: 3, Value: v} }
func integer(name string, v int) opt   { return opt{Name: name, Type: 4, Value: v} }

type interaction struct {
	ID, Token, Channel, Guild, User string
	Roles                           []string
	Command                         string
	Options                         []opt
}

func (f *fakeDiscord) interactionPayload(i interaction) map[string]any {
	var opts []any
	for _, o := range i.Options {
		opts = append(opts, o.json())
	}
	p := map[string]any{
		"id": i.ID, "application_id": f.appID, "type": 2, "token": i.Token, "version": 1,
		"channel_id": i.Channel, "locale": "en-US",
		"data": map[string]any{"id": "800000000000000001", "name": i.Command, "type": 1, "options": opts},
	}
	user := map[string]any{"id": i.User, "username": "user" + i.User[len(i.User)-3:]}
	if i.Guild != "" {
		p["guild_id"] = i.Guild
		roles := i.Roles
		if roles == nil {
			roles = []string{}
		}
		p["member"] = map[string]any{"user": user, "roles": roles}
	} else {
		p["user"] = user
	}
	return p
}

type channelMsg struct {
	ID, Channel, Guild, User, Content string
	Roles                             []string
	Bot                               bool
}

func (f *fakeDiscord) messagePayload(m channelMsg) map[string]any {
	p := map[string]any{
		"id": m.ID, "channel_id": m.Channel, "content": m.Content, "type": 0,
		"timestamp": time.Now().UTC().Format(time.RFC3339Nano),
		"author":    map[string]any{"id": m.User, "username": "user" + m.User[len(m.User)-3:], "bot": m.Bot},
		"mentions":  []any{},
	}
	if m.Guild != "" {
		p["guild_id"] = m.Guild
		roles := m.Roles
		if roles == nil {
			roles = []string{}
		}
		p["member"] = map[string]any{"roles": roles}
	}
	return p
}
