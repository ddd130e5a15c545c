package telegramtest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"html"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf16"

	"github.com/a6afc2ce/hermes-hub/internal/loopback"
)

// Defaults of a new Server.
const (
	DefaultToken    = "123456:TEST-secret-token-value"
	DefaultBotID    = 123456
	DefaultUsername = "HermesTestBot"
)

// SecretHeader carries the webhook secret token on every webhook post.
const SecretHeader = "X-Telegram-Bot-Api-Secret-Token"

// maxUpdatesPerAnswer is how many updates one getUpdates answer holds.
const maxUpdatesPerAnswer = 100

// Server is a fake Bot API on a loopback port. Its methods are safe for
// concurrent use.
type Server struct {
	net      *loopback.Server
	faults   *loopback.Faults[Fault, string] // by method
	botID    int64
	username string

	mu         sync.Mutex
	token      string
	queue      []queuedUpdate
	confirmed  int64         // getUpdates offset seen: ids below are forgotten
	pushed     chan struct{} // closed and replaced on every push
	delivered  []int64       // update ids returned by getUpdates, first time each
	seenUpd    map[int64]bool
	calls      []Call
	blocked    map[string]string // chat id → description (403)
	badChats   map[string]string // chat id → description (400)
	migrated   map[string]int64  // chat id → new supergroup id
	pollDelay  time.Duration     // getUpdates answers only after this
	dupAnswers int               // the next answers with updates repeat every update
	webhook    string
	secret     string
	nextMsgID  int64
	sent       []Message
	onSend     func(Message) // called for every accepted message
	edits      []Edit

	strict     bool
	tolerance  time.Duration
	lastByChat map[string]time.Time
	accepted   []time.Time // strict mode: accepted sends, oldest first
	rejected   int         // strict mode: 429s answered
	rejectLog  []string    // strict mode: why each 429 was answered

	files     map[string]*File // by file_id (files.go)
	downloads int
}

type queuedUpdate struct {
	id  int64
	raw json.RawMessage
}

// Call is one request the fake received.
type Call struct {
	Method string
	Params url.Values
	At     time.Time
	// Fault describes the fault the call was answered with, if any.
	Fault string
}

// Message is a message or document the fake accepted.
type Message struct {
	Method    string // sendMessage or sendDocument
	ChatID    string
	ThreadID  string
	Text      string
	ParseMode string
	ReplyTo   string
	Caption   string
	DocName   string
	Doc       []byte
	MessageID int64
	At        time.Time
	// ReplyMarkup is the message's inline keyboard (JSON), as last set.
	ReplyMarkup string
}

// Edit is one editMessageText the fake accepted.
type Edit struct {
	ChatID      string
	MessageID   int64
	Text        string
	ParseMode   string
	ReplyMarkup string // "" removes the keyboard
	At          time.Time
}

// NewServer starts a fake Bot API on 127.0.0.1 with DefaultToken. Close it
// when done.
func NewServer() *Server {
	s := &Server{
		token: DefaultToken, botID: DefaultBotID, username: DefaultUsername,
		pushed: make(chan struct{}), seenUpd: map[int64]bool{},
		blocked: map[string]string{}, badChats: map[string]string{}, migrated: map[string]int64{},
		lastByChat: map[string]time.Time{}, nextMsgID: 1000,
	}
	n, err := loopback.New(http.HandlerFunc(s.serve))
	if err != nil {
		panic(err) // as httptest.NewServer does: a test cannot go on without it
	}
	s.net = n
	s.faults = loopback.NewFaults[Fault, string](n)
	return s
}

// URL is the API endpoint to configure (telegram.api_endpoint).
func (s *Server) URL() string { return "http://" + s.net.Addr() }

// Close shuts the server down: connections are closed and held requests
// released.
func (s *Server) Close() { s.net.Close() }

// Token is the bot token the fake accepts.
func (s *Server) Token() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.token
}

// SetToken changes the accepted token; requests with another get 401.
func (s *Server) SetToken(token string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.token = token
}

// BotID is the bot's user id (getMe).
func (s *Server) BotID() int64 { return s.botID }

// Username is the bot's username (getMe).
func (s *Server) Username() string { return s.username }

// Push queues updates (each a JSON object with an update_id) and wakes the
// long polls. The queue is kept in update_id order, as Telegram hands
// updates out; an update below the offset already confirmed is forgotten
// at the next getUpdates, as Telegram never sends it. In webhook mode Push
// posts the updates to the webhook instead and returns the webhook's
// status codes (0 when the post failed).
func (s *Server) Push(updates ...map[string]any) []int {
	var codes []int
	for _, u := range updates {
		raw, err := json.Marshal(u)
		if err != nil {
			panic(fmt.Sprintf("telegramtest: update does not encode: %v", err))
		}
		id := updateID(u)
		s.mu.Lock()
		hook, secret := s.webhook, s.secret
		if hook == "" {
			i := len(s.queue)
			for i > 0 && s.queue[i-1].id > id {
				i--
			}
			s.queue = slices.Insert(s.queue, i, queuedUpdate{id: id, raw: raw})
			close(s.pushed)
			s.pushed = make(chan struct{})
		}
		s.mu.Unlock()
		if hook != "" {
			codes = append(codes, postUpdate(hook, secret, raw))
		}
	}
	return codes
}

func updateID(u map[string]any) int64 {
	switch v := u["update_id"].(type) {
	case int:
		return int64(v)
	case int64:
		return v
	case float64:
		return int64(v)
	}
	panic(fmt.Sprintf("telegramtest: update without an integer update_id: %v", u))
}

func postUpdate(hook, secret string, raw []byte) int {
	req, _ := http.NewRequest(http.MethodPost, hook, bytes.NewReader(raw))
	req.Header.Set("Content-Type", "application/json")
	if secret != "" {
		req.Header.Set(SecretHeader, secret)
	}
	c := &http.Client{Timeout: 30 * time.Second}
	resp, err := c.Do(req)
	if err != nil {
		return 0
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode
}

// DuplicateNextUpdates makes the next getUpdates answer that holds updates
// repeat every one of them.
func (s *Server) DuplicateNextUpdates() { s.DuplicateUpdates(1) }

// DuplicateUpdates makes the next n getUpdates answers that hold updates
// repeat every one of them.
func (s *Server) DuplicateUpdates(n int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.dupAnswers += n
}

// SetPollDelay makes every getUpdates wait d before it looks at the queue
// (bounded by the request's context).
func (s *Server) SetPollDelay(d time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.pollDelay = d
}

// SetStrict turns on Telegram's limits: a chat's second message within a
// second (less tolerance), or the 31st message within a second, gets 429
// with retry_after 1.
func (s *Server) SetStrict(tolerance time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.strict, s.tolerance = true, tolerance
}

// Rejections is how many 429s strict mode answered.
func (s *Server) Rejections() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.rejected
}

// RejectLog says why strict mode answered each 429.
func (s *Server) RejectLog() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.rejectLog...)
}

// Block makes sends to chatID fail with 403 and description.
func (s *Server) Block(chatID, description string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.blocked[chatID] = description
}

// RefuseChat makes sends to chatID fail with 400 and description (chat not
// found, not enough rights).
func (s *Server) RefuseChat(chatID, description string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.badChats[chatID] = description
}

// Migrate makes sends to the group chatID fail as Telegram does for a group
// that became the supergroup to.
func (s *Server) Migrate(chatID string, to int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.migrated[chatID] = to
}

// OnSend calls fn (outside the fake's lock is not guaranteed: keep it
// quick and do not call the Server from it) for every accepted message.
func (s *Server) OnSend(fn func(Message)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.onSend = fn
}

// Calls returns every request received, in order.
func (s *Server) Calls() []Call {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Call(nil), s.calls...)
}

// CallsOf returns the requests of one method, in order.
func (s *Server) CallsOf(method string) []Call {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []Call
	for _, c := range s.calls {
		if c.Method == method {
			out = append(out, c)
		}
	}
	return out
}

// Messages returns every accepted message, in the order accepted.
func (s *Server) Messages() []Message {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Message(nil), s.sent...)
}

// MessagesTo returns what chat chatID received.
func (s *Server) MessagesTo(chatID string) []Message {
	var out []Message
	for _, m := range s.Messages() {
		if m.ChatID == chatID {
			out = append(out, m)
		}
	}
	return out
}

// Delivered returns the update ids getUpdates has handed out, each once,
// in the order first handed out.
func (s *Server) Delivered() []int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]int64(nil), s.delivered...)
}

// Offset is the highest getUpdates offset received: every update below it
// is confirmed, and forgotten.
func (s *Server) Offset() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.confirmed
}

// Queued is how many pushed updates are not yet confirmed.
func (s *Server) Queued() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, u := range s.queue {
		if u.id >= s.confirmed {
			n++
		}
	}
	return n
}

// Webhook is the URL set by setWebhook, or "".
func (s *Server) Webhook() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.webhook
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	down := s.faults.Mode()
	s.mu.Lock()
	token := s.token
	s.mu.Unlock()
	if down == Unavailable {
		writeHTML(w, http.StatusServiceUnavailable)
		return
	}
	if file, ok := strings.CutPrefix(r.URL.Path, "/file/bot"+token+"/"); ok {
		s.download(w, r, file)
		return
	}
	rest, ok := strings.CutPrefix(r.URL.Path, "/bot"+token+"/")
	if !ok {
		writeAPI(w, http.StatusUnauthorized, map[string]any{"ok": false, "error_code": 401, "description": "Unauthorized"})
		return
	}
	method := rest
	if strings.HasPrefix(r.Header.Get("Content-Type"), "multipart/") {
		if err := r.ParseMultipartForm(32 << 20); err != nil {
			writeAPI(w, 400, map[string]any{"ok": false, "error_code": 400, "description": "Bad Request: " + err.Error()})
			return
		}
	} else if err := r.ParseForm(); err != nil {
		writeAPI(w, 400, map[string]any{"ok": false, "error_code": 400, "description": "Bad Request: " + err.Error()})
		return
	}
	params := r.Form
	if r.MultipartForm != nil {
		params = url.Values(r.MultipartForm.Value)
	}
	s.mu.Lock()
	ft, faulty := s.faults.Take(method)
	call := Call{Method: method, Params: params, At: time.Now()}
	if faulty {
		call.Fault = ft.String()
	}
	s.calls = append(s.calls, call)
	s.mu.Unlock()
	if faulty && !s.applyFault(w, r, ft) {
		return
	}
	if faulty && ft.Lost {
		answer, lost := s.net.Lose(w)
		defer lost()
		w = answer
	}
	switch method {
	case "getMe":
		writeOK(w, map[string]any{"id": s.botID, "is_bot": true, "first_name": "Hermes", "username": s.username})
	case "getUpdates":
		s.getUpdates(w, r, params)
	case "sendMessage", "sendDocument":
		s.sendMessage(w, r, method, params)
	case "editMessageText":
		s.editMessage(w, params)
	case "getFile":
		s.getFile(w, params)
	case "sendChatAction", "setMyCommands", "answerCallbackQuery":
		writeOK(w, true)
	case "setWebhook":
		s.mu.Lock()
		s.webhook, s.secret = params.Get("url"), params.Get("secret_token")
		s.mu.Unlock()
		writeOK(w, true)
	case "deleteWebhook":
		s.mu.Lock()
		s.webhook, s.secret = "", ""
		s.mu.Unlock()
		writeOK(w, true)
	default:
		writeAPI(w, 404, map[string]any{"ok": false, "error_code": 404, "description": "Not Found: method not found"})
	}
}

func (s *Server) getUpdates(w http.ResponseWriter, r *http.Request, params url.Values) {
	offset, _ := strconv.ParseInt(params.Get("offset"), 10, 64)
	timeout, _ := strconv.Atoi(params.Get("timeout"))
	s.mu.Lock()
	delay, hook := s.pollDelay, s.webhook
	s.mu.Unlock()
	if hook != "" {
		writeAPI(w, 409, map[string]any{"ok": false, "error_code": 409, "description": "Conflict: can't use getUpdates method while webhook is active; use deleteWebhook to delete the webhook first"})
		return
	}
	if delay > 0 && !s.net.Hold(r.Context(), delay) {
		return
	}
	deadline := time.NewTimer(time.Duration(timeout) * time.Second)
	defer deadline.Stop()
	for {
		s.mu.Lock()
		if offset > s.confirmed {
			s.confirmed = offset
		}
		kept := s.queue[:0]
		for _, u := range s.queue {
			if u.id >= s.confirmed {
				kept = append(kept, u)
			}
		}
		s.queue = kept
		out := make([]json.RawMessage, 0, len(s.queue))
		for _, u := range s.queue {
			if len(out) == maxUpdatesPerAnswer {
				break
			}
			out = append(out, u.raw)
			if !s.seenUpd[u.id] {
				s.seenUpd[u.id] = true
				s.delivered = append(s.delivered, u.id)
			}
		}
		if s.dupAnswers > 0 && len(out) > 0 {
			s.dupAnswers--
			out = append(out, out...)
		}
		wake := s.pushed
		s.mu.Unlock()
		if len(out) > 0 || timeout == 0 {
			writeOK(w, out)
			return
		}
		select {
		case <-wake:
		case <-deadline.C:
			writeOK(w, out)
			return
		case <-r.Context().Done():
			return
		case <-s.net.Closed():
			return
		}
	}
}

func (s *Server) sendMessage(w http.ResponseWriter, r *http.Request, method string, params url.Values) {
	chatID := params.Get("chat_id")
	now := time.Now()
	s.mu.Lock()
	defer s.mu.Unlock()
	if d, ok := s.blocked[chatID]; ok {
		writeAPI(w, 403, map[string]any{"ok": false, "error_code": 403, "description": d})
		return
	}
	if d, ok := s.badChats[chatID]; ok {
		writeAPI(w, 400, map[string]any{"ok": false, "error_code": 400, "description": d})
		return
	}
	if to, ok := s.migrated[chatID]; ok {
		writeAPI(w, 400, map[string]any{"ok": false, "error_code": 400,
			"description": "Bad Request: group chat was upgraded to a supergroup chat", "parameters": map[string]any{"migrate_to_chat_id": to}})
		return
	}
	if s.strict {
		window := time.Second - s.tolerance
		last, seen := s.lastByChat[chatID]
		n := 0
		for i := len(s.accepted) - 1; i >= 0 && now.Sub(s.accepted[i]) < window; i-- {
			n++
		}
		if (seen && now.Sub(last) < window) || n >= 30 {
			s.rejected++
			if seen && now.Sub(last) < window {
				s.rejectLog = append(s.rejectLog, fmt.Sprintf("chat %s: %s after the previous message", chatID, now.Sub(last)))
			} else {
				s.rejectLog = append(s.rejectLog, fmt.Sprintf("%d messages within %s", n+1, now.Sub(s.accepted[len(s.accepted)-n])))
			}
			writeAPI(w, 429, map[string]any{"ok": false, "error_code": 429, "description": "Too Many Requests: retry after 1", "parameters": map[string]any{"retry_after": 1}})
			return
		}
		s.lastByChat[chatID] = now
		s.accepted = append(s.accepted, now)
		if len(s.accepted) > 4096 {
			s.accepted = append([]time.Time(nil), s.accepted[len(s.accepted)-64:]...)
		}
	}
	m := Message{
		Method: method, ChatID: chatID, ThreadID: params.Get("message_thread_id"), Text: params.Get("text"),
		ParseMode: params.Get("parse_mode"), ReplyTo: params.Get("reply_to_message_id"), Caption: params.Get("caption"),
		At: now, ReplyMarkup: params.Get("reply_markup"),
	}
	if method == "sendDocument" {
		file, hdr, err := r.FormFile("document")
		if err != nil {
			writeAPI(w, 400, map[string]any{"ok": false, "error_code": 400, "description": "Bad Request: there is no document in the request"})
			return
		}
		m.DocName = hdr.Filename
		m.Doc, _ = io.ReadAll(file)
		file.Close()
	} else if m.Text == "" {
		writeAPI(w, 400, map[string]any{"ok": false, "error_code": 400, "description": "Bad Request: message text is empty"})
		return
	}
	if why := overLimit(m.Text, m.Caption, m.ParseMode); why != "" {
		writeAPI(w, 400, map[string]any{"ok": false, "error_code": 400, "description": why})
		return
	}
	s.nextMsgID++
	m.MessageID = s.nextMsgID
	s.sent = append(s.sent, m)
	if s.onSend != nil {
		s.onSend(m)
	}
	id, _ := strconv.ParseInt(chatID, 10, 64)
	writeOK(w, map[string]any{"message_id": m.MessageID, "date": now.Unix(), "chat": map[string]any{"id": id, "type": "private"}, "text": m.Text})
}

// Telegram's limits on one message, in UTF-16 units of the text as shown
// (after the entities of parse_mode are parsed).
const (
	MaxText    = 4096
	MaxCaption = 1024
)

// overLimit says why Telegram refuses a text or caption that is too long,
// or "".
func overLimit(text, caption, parseMode string) string {
	switch {
	case shownUnits(text, parseMode) > MaxText:
		return "Bad Request: message is too long"
	case shownUnits(caption, parseMode) > MaxCaption:
		return "Bad Request: message caption is too long"
	}
	return ""
}

// tag is an HTML tag of the Bot API's HTML parse mode.
var tag = regexp.MustCompile(`<[^>]*>`)

// shownUnits is the length of s as Telegram shows it: in HTML parse mode
// without its tags and with its entities as the characters they stand for.
func shownUnits(s, parseMode string) int {
	if parseMode == "HTML" {
		s = html.UnescapeString(tag.ReplaceAllString(s, ""))
	}
	return len(utf16.Encode([]rune(s)))
}

func writeOK(w http.ResponseWriter, result any) {
	writeAPI(w, http.StatusOK, map[string]any{"ok": true, "result": result})
}

func writeAPI(w http.ResponseWriter, status int, body any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(body)
}

func writeHTML(w http.ResponseWriter, status int) {
	w.Header().Set("Content-Type", "text/html")
	w.WriteHeader(status)
	fmt.Fprintf(w, "<html><body><h1>%d</h1></body></html>", status)
}

// editMessage answers editMessageText: the message must exist in that chat
// and the text must change, as Telegram requires.
func (s *Server) editMessage(w http.ResponseWriter, params url.Values) {
	chatID := params.Get("chat_id")
	id, _ := strconv.ParseInt(params.Get("message_id"), 10, 64)
	s.mu.Lock()
	defer s.mu.Unlock()
	for i := range s.sent {
		m := &s.sent[i]
		if m.ChatID != chatID || m.MessageID != id {
			continue
		}
		text, markup := params.Get("text"), params.Get("reply_markup")
		if why := overLimit(text, "", params.Get("parse_mode")); why != "" {
			writeAPI(w, 400, map[string]any{"ok": false, "error_code": 400, "description": why})
			return
		}
		if text == m.Text && markup == m.ReplyMarkup {
			writeAPI(w, 400, map[string]any{"ok": false, "error_code": 400, "description": "Bad Request: message is not modified: specified new message content and reply markup are exactly the same as a current content and reply markup of the message"})
			return
		}
		m.Text, m.ReplyMarkup = text, markup
		s.edits = append(s.edits, Edit{ChatID: chatID, MessageID: id, Text: text, ParseMode: params.Get("parse_mode"), ReplyMarkup: markup, At: time.Now()})
		n, _ := strconv.ParseInt(chatID, 10, 64)
		writeOK(w, map[string]any{"message_id": id, "chat": map[string]any{"id": n, "type": "private"}, "text": text})
		return
	}
	writeAPI(w, 400, map[string]any{"ok": false, "error_code": 400, "description": "Bad Request: message to edit not found"})
}

// Edits returns every editMessageText accepted, in order.
func (s *Server) Edits() []Edit {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Edit(nil), s.edits...)
}
