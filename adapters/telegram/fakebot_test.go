package telegram

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// fakeBot is an in-process Bot API server for tests: getMe, getUpdates
// (long polling over a queue the test pushes updates into), sendMessage,
// sendDocument (multipart), sendChatAction, setMyCommands, setWebhook and
// deleteWebhook, with per-method fault injection, a record of every call,
// and a strict mode that answers 429 like Telegram when a chat gets more
// than one message a second or the bot more than thirty a second.
type fakeBot struct {
	srv      *httptest.Server
	token    string
	botID    int64
	username string

	mu        sync.Mutex
	queue     []queuedUpdate
	confirmed int64         // getUpdates offset seen: ids below are forgotten
	pushed    chan struct{} // closed and replaced on every push
	calls     []fakeCall
	faults    map[string][]fault
	blocked   map[string]string // chat id → description (403)
	badChats  map[string]string // chat id → description (400)
	migrated  map[string]int64  // chat id → new supergroup id
	slowPoll  time.Duration     // getUpdates answers only after this
	dupNext   bool              // the next getUpdates answer repeats every update
	webhook   string
	secret    string
	nextMsgID int64
	sent      []sentMessage
	onSend    func(sentMessage) // called for every accepted message

	strict     bool
	tolerance  time.Duration
	lastByChat map[string]time.Time
	accepted   []time.Time // strict mode: accepted sends, oldest first
	rejected   int         // strict mode: 429s answered
	rejectLog  []string    // strict mode: why each 429 was answered
}

type queuedUpdate struct {
	id  int64
	raw json.RawMessage
}

// fakeCall is one request the fake received.
type fakeCall struct {
	Method string
	Params url.Values
	At     time.Time
}

// fault is an injected failure of one call.
type fault struct {
	code        int    // Bot API error_code (and HTTP status)
	description string // Bot API description
	retryAfter  int    // parameters.retry_after
	migrateTo   int64  // parameters.migrate_to_chat_id
	htmlStatus  int    // answer this HTTP status with an HTML page instead
}

// sentMessage is a message or document the fake accepted.
type sentMessage struct {
	Method    string
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
}

func newFakeBot(t testing.TB) *fakeBot {
	f := &fakeBot{
		token: "123456:TEST-secret-token-value", botID: 123456, username: "HermesTestBot",
		pushed: make(chan struct{}), faults: map[string][]fault{},
		blocked: map[string]string{}, badChats: map[string]string{}, migrated: map[string]int64{},
		lastByChat: map[string]time.Time{}, nextMsgID: 1000,
	}
	f.srv = httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(f.srv.Close)
	return f
}

// URL is the API endpoint to configure.
func (f *fakeBot) URL() string { return f.srv.URL }

// push queues updates (each a JSON object with an update_id) and wakes long
// polls; in webhook mode it posts them to the webhook instead and returns
// the webhook's status codes.
func (f *fakeBot) push(updates ...map[string]any) []int {
	var codes []int
	for _, u := range updates {
		raw, err := json.Marshal(u)
		if err != nil {
			panic(err)
		}
		id := int64(u["update_id"].(int))
		f.mu.Lock()
		hook, secret := f.webhook, f.secret
		if hook == "" {
			f.queue = append(f.queue, queuedUpdate{id: id, raw: raw})
			close(f.pushed)
			f.pushed = make(chan struct{})
		}
		f.mu.Unlock()
		if hook != "" {
			codes = append(codes, postUpdate(hook, secret, raw))
		}
	}
	return codes
}

func postUpdate(hook, secret string, raw []byte) int {
	req, _ := http.NewRequest(http.MethodPost, hook, bytes.NewReader(raw))
	req.Header.Set("Content-Type", "application/json")
	if secret != "" {
		req.Header.Set(SecretHeader, secret)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode
}

// inject queues faults for the next calls of method, one per call.
func (f *fakeBot) inject(method string, fs ...fault) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.faults[method] = append(f.faults[method], fs...)
}

func (f *fakeBot) setStrict(tolerance time.Duration) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.strict, f.tolerance = true, tolerance
}

func (f *fakeBot) callsOf(method string) []fakeCall {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []fakeCall
	for _, c := range f.calls {
		if c.Method == method {
			out = append(out, c)
		}
	}
	return out
}

func (f *fakeBot) messages() []sentMessage {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]sentMessage(nil), f.sent...)
}

// messagesTo returns what chat chatID received.
func (f *fakeBot) messagesTo(chatID string) []sentMessage {
	var out []sentMessage
	for _, m := range f.messages() {
		if m.ChatID == chatID {
			out = append(out, m)
		}
	}
	return out
}

func (f *fakeBot) rejections() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.rejected
}

func (f *fakeBot) serve(w http.ResponseWriter, r *http.Request) {
	rest, ok := strings.CutPrefix(r.URL.Path, "/bot"+f.token+"/")
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
	f.mu.Lock()
	f.calls = append(f.calls, fakeCall{Method: method, Params: params, At: time.Now()})
	var ft *fault
	if q := f.faults[method]; len(q) > 0 {
		ft = &q[0]
		f.faults[method] = q[1:]
	}
	f.mu.Unlock()
	if ft != nil {
		writeFault(w, *ft)
		return
	}
	switch method {
	case "getMe":
		writeOK(w, map[string]any{"id": f.botID, "is_bot": true, "first_name": "Hermes", "username": f.username})
	case "getUpdates":
		f.getUpdates(w, r, params)
	case "sendMessage", "sendDocument":
		f.sendMessage(w, r, method, params)
	case "sendChatAction", "setMyCommands":
		writeOK(w, true)
	case "setWebhook":
		f.mu.Lock()
		f.webhook, f.secret = params.Get("url"), params.Get("secret_token")
		f.mu.Unlock()
		writeOK(w, true)
	case "deleteWebhook":
		f.mu.Lock()
		f.webhook, f.secret = "", ""
		f.mu.Unlock()
		writeOK(w, true)
	default:
		writeAPI(w, 404, map[string]any{"ok": false, "error_code": 404, "description": "Not Found: method not found"})
	}
}

func (f *fakeBot) getUpdates(w http.ResponseWriter, r *http.Request, params url.Values) {
	offset, _ := strconv.ParseInt(params.Get("offset"), 10, 64)
	timeout, _ := strconv.Atoi(params.Get("timeout"))
	f.mu.Lock()
	slow, hook := f.slowPoll, f.webhook
	f.mu.Unlock()
	if hook != "" {
		writeAPI(w, 409, map[string]any{"ok": false, "error_code": 409, "description": "Conflict: can't use getUpdates method while webhook is active; use deleteWebhook to delete the webhook first"})
		return
	}
	if slow > 0 {
		select {
		case <-time.After(slow):
		case <-r.Context().Done():
			return
		}
	}
	deadline := time.After(time.Duration(timeout) * time.Second)
	for {
		f.mu.Lock()
		if offset > f.confirmed {
			f.confirmed = offset
		}
		kept := f.queue[:0]
		for _, u := range f.queue {
			if u.id >= f.confirmed {
				kept = append(kept, u)
			}
		}
		f.queue = kept
		out := make([]json.RawMessage, 0, len(f.queue))
		for _, u := range f.queue {
			if len(out) == 100 {
				break
			}
			out = append(out, u.raw)
		}
		if f.dupNext && len(out) > 0 {
			f.dupNext = false
			out = append(out, out...)
		}
		wake := f.pushed
		f.mu.Unlock()
		if len(out) > 0 || timeout == 0 {
			writeOK(w, out)
			return
		}
		select {
		case <-wake:
		case <-deadline:
			writeOK(w, out)
			return
		case <-r.Context().Done():
			return
		}
	}
}

func (f *fakeBot) sendMessage(w http.ResponseWriter, r *http.Request, method string, params url.Values) {
	chatID := params.Get("chat_id")
	now := time.Now()
	f.mu.Lock()
	defer f.mu.Unlock()
	if d, ok := f.blocked[chatID]; ok {
		writeAPI(w, 403, map[string]any{"ok": false, "error_code": 403, "description": d})
		return
	}
	if d, ok := f.badChats[chatID]; ok {
		writeAPI(w, 400, map[string]any{"ok": false, "error_code": 400, "description": d})
		return
	}
	if to, ok := f.migrated[chatID]; ok {
		writeAPI(w, 400, map[string]any{"ok": false, "error_code": 400,
			"description": "Bad Request: group chat was upgraded to a supergroup chat", "parameters": map[string]any{"migrate_to_chat_id": to}})
		return
	}
	if f.strict {
		window := time.Second - f.tolerance
		last, seen := f.lastByChat[chatID]
		n := 0
		for i := len(f.accepted) - 1; i >= 0 && now.Sub(f.accepted[i]) < window; i-- {
			n++
		}
		if (seen && now.Sub(last) < window) || n >= 30 {
			f.rejected++
			if seen && now.Sub(last) < window {
				f.rejectLog = append(f.rejectLog, fmt.Sprintf("chat %s: %s after the previous message", chatID, now.Sub(last)))
			} else {
				f.rejectLog = append(f.rejectLog, fmt.Sprintf("%d messages within %s", n+1, now.Sub(f.accepted[len(f.accepted)-n])))
			}
			writeAPI(w, 429, map[string]any{"ok": false, "error_code": 429, "description": "Too Many Requests: retry after 1", "parameters": map[string]any{"retry_after": 1}})
			return
		}
		f.lastByChat[chatID] = now
		f.accepted = append(f.accepted, now)
		if len(f.accepted) > 4096 {
			f.accepted = append([]time.Time(nil), f.accepted[len(f.accepted)-64:]...)
		}
	}
	f.nextMsgID++
	m := sentMessage{
		Method: method, ChatID: chatID, ThreadID: params.Get("message_thread_id"), Text: params.Get("text"),
		ParseMode: params.Get("parse_mode"), ReplyTo: params.Get("reply_to_message_id"), Caption: params.Get("caption"),
		MessageID: f.nextMsgID, At: now,
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
	f.sent = append(f.sent, m)
	if f.onSend != nil {
		f.onSend(m)
	}
	id, _ := strconv.ParseInt(chatID, 10, 64)
	writeOK(w, map[string]any{"message_id": m.MessageID, "date": now.Unix(), "chat": map[string]any{"id": id, "type": "private"}, "text": m.Text})
}

func writeOK(w http.ResponseWriter, result any) {
	writeAPI(w, http.StatusOK, map[string]any{"ok": true, "result": result})
}

func writeAPI(w http.ResponseWriter, status int, body any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(body)
}

func writeFault(w http.ResponseWriter, ft fault) {
	if ft.htmlStatus != 0 {
		w.Header().Set("Content-Type", "text/html")
		w.WriteHeader(ft.htmlStatus)
		fmt.Fprintf(w, "<html><body><h1>%d</h1></body></html>", ft.htmlStatus)
		return
	}
	body := map[string]any{"ok": false, "error_code": ft.code, "description": ft.description}
	params := map[string]any{}
	if ft.retryAfter > 0 {
		params["retry_after"] = ft.retryAfter
	}
	if ft.migrateTo != 0 {
		params["migrate_to_chat_id"] = ft.migrateTo
	}
	if len(params) > 0 {
		body["parameters"] = params
	}
	writeAPI(w, ft.code, body)
}

// Update builders.

var updateSeq struct {
	sync.Mutex
	n int
}

func nextUpdateID() int {
	updateSeq.Lock()
	defer updateSeq.Unlock()
	updateSeq.n++
	return 1000 + updateSeq.n
}

type msgOpt func(m map[string]any)

// textUpdate is a message update from user in chat.
func textUpdate(id int, chatID int64, user int64, msgID int, text string, opts ...msgOpt) map[string]any {
	typ := "private"
	if chatID < 0 {
		typ = "supergroup"
	}
	m := map[string]any{
		"message_id": msgID,
		"from":       map[string]any{"id": user, "is_bot": false, "first_name": "User", "username": "user" + strconv.FormatInt(user, 10)},
		"chat":       map[string]any{"id": chatID, "type": typ, "title": "Ops"},
		"date":       time.Now().Unix(),
		"text":       text,
	}
	for _, o := range opts {
		o(m)
	}
	return map[string]any{"update_id": id, "message": m}
}

// inTopic makes a message a forum topic message under the topic created by
// message thread (whose creation message names it).
func inTopic(thread int, name string) msgOpt {
	return func(m map[string]any) {
		m["message_thread_id"] = thread
		m["is_topic_message"] = true
		m["reply_to_message"] = map[string]any{
			"message_id": thread, "date": 1, "chat": m["chat"],
			"forum_topic_created": map[string]any{"name": name, "icon_color": 7322096},
		}
	}
}

// waitFor polls cond until it holds; it fails the test after a generous
// deadline (a hang detector, not a timing assertion).
func waitFor(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// withTimeout is a context for one direct call in a test.
func withTimeout(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}
