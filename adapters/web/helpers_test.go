package web

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/a6afc2ce/hermes-hub/admin"
	"github.com/a6afc2ce/hermes-hub/chat"
	"github.com/a6afc2ce/hermes-hub/clock"
	"github.com/a6afc2ce/hermes-hub/config"
	"github.com/a6afc2ce/hermes-hub/hub"
	"github.com/a6afc2ce/hermes-hub/hub/hubtest"
	"github.com/a6afc2ce/hermes-hub/internal/testkit"
	"github.com/a6afc2ce/hermes-hub/outbox"
)

// testEnv is a real hub runtime on temp directories with a web Server in
// front of it, served by an httptest server on 127.0.0.1.
type testEnv struct {
	t     testing.TB
	cfg   *config.Config
	rt    *hub.Runtime
	srv   *Server
	ts    *httptest.Server
	he    *hubtest.Env
	token string
	once  sync.Once
}

type envConfig struct {
	workspace, state string
	mod              func(*config.Config)
	opts             func(*Options)
	noServer         bool // do not start the httptest server
	hub              hubtest.Options
	// beforeStart runs after the web sender is registered and before the
	// runtime starts (to register fake platform senders).
	beforeStart func(*hub.Runtime)
}

// serverOptions are the options cmd/hub gives the web server over rt.
func serverOptions(rt *hub.Runtime, cfg config.Web) Options {
	return Options{
		Intake: rt.Hub, Conversation: rt.Conversations.For(chat.Web), Admin: admin.ForRuntime(rt),
		Status: rt.Board.Reporter("web"), Config: cfg, Logger: testkit.Discard(),
		Files: rt.Hub, MaxUploadBytes: 1 << 20,
	}
}

// testConfig is the default configuration with temp dirs and the web
// identity granted every verb and every admin permission.
func testConfig(t testing.TB, workspace, state string) *config.Config {
	t.Helper()
	if state == "" {
		state = t.TempDir()
	}
	cfg := hubtest.Config(t, workspace, state)
	cfg.Web.Listen = "127.0.0.1:0"
	cfg.Access.Roles = map[string]config.Role{"admin": {Verbs: []string{"*", "admin.*"}}}
	cfg.Access.Grants = map[string][]string{"web": {"admin"}}
	return cfg
}

func newEnv(t testing.TB, ec envConfig) *testEnv {
	t.Helper()
	cfg := testConfig(t, ec.workspace, ec.state)
	if ec.mod != nil {
		ec.mod(cfg)
	}
	he := hubtest.Open(t, cfg, ec.hub)
	rt := he.Runtime
	opts := serverOptions(rt, cfg.Web)
	if ec.opts != nil {
		ec.opts(&opts)
	}
	if opts.Sessions == nil {
		opts.Sessions = he.State.Sessions(opts.Clock) // as cmd/hub serve does
	}
	srv, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	if err := rt.Attach(srv.Platform()); err != nil { // as cmd/hub serve does
		t.Fatal(err)
	}
	if ec.beforeStart != nil {
		ec.beforeStart(rt)
	}
	he.Start(t)
	e := &testEnv{t: t, cfg: cfg, he: he, rt: rt, srv: srv, token: srv.Token()}
	if !ec.noServer {
		e.ts = httptest.NewServer(srv.Handler())
	}
	t.Cleanup(e.close)
	return e
}

// close stops the test server, the runtime and the workspace; it may be
// called early (to restart on the same directories) and again at cleanup.
func (e *testEnv) close() {
	e.once.Do(func() {
		e.srv.stopStreams()
		if e.ts != nil {
			e.ts.Close()
		}
		// hub.Runtime reports outbox.ErrClosed when it is closed before its
		// dispatcher goroutine got to run; a test that is over in
		// microseconds can see that, and nothing is lost by it.
		if err := e.he.Close(); err != nil && !errors.Is(err, outbox.ErrClosed) {
			e.t.Errorf("close runtime: %v", err)
		}
	})
}

// writeFile creates a file in the workspace.
func (e *testEnv) writeFile(name, content string) {
	e.t.Helper()
	p := filepath.Join(e.cfg.Workspace, filepath.FromSlash(name))
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		e.t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		e.t.Fatal(err)
	}
}

func (e *testEnv) readFile(name string) string {
	e.t.Helper()
	b, err := os.ReadFile(filepath.Join(e.cfg.Workspace, filepath.FromSlash(name)))
	if err != nil {
		e.t.Fatal(err)
	}
	return string(b)
}

// response is a finished HTTP exchange.
type response struct {
	status int
	header http.Header
	body   []byte
}

func (r response) json(t testing.TB, v any) {
	t.Helper()
	if err := json.Unmarshal(r.body, v); err != nil {
		t.Fatalf("response %d is not JSON (%v): %s", r.status, err, r.body)
	}
}

// errorText returns the "error" of a JSON error body, failing the test when
// the body is not one.
func (r response) errorText(t testing.TB) string {
	t.Helper()
	var e admin.APIError
	r.json(t, &e)
	if e.Error == "" {
		t.Fatalf("response %d has no error message: %s", r.status, r.body)
	}
	return e.Error
}

// req describes one request.
type req struct {
	method, path string
	body         string
	ctype        string
	bearer       string // "" none
	cookie       *http.Cookie
	origin       string
	header       map[string]string
}

// do sends r to the httptest server, or to the listener of a running
// Server when the env has none.
func (e *testEnv) do(r req) response {
	e.t.Helper()
	if e.ts == nil {
		return doHTTP(e.t, &http.Client{Timeout: testkit.Wait}, "http://"+e.srv.Addr(), r)
	}
	return doHTTP(e.t, e.ts.Client(), e.ts.URL, r)
}

func doHTTP(t testing.TB, c *http.Client, base string, r req) response {
	t.Helper()
	var body io.Reader
	if r.body != "" {
		body = strings.NewReader(r.body)
	}
	hr, err := http.NewRequest(r.method, base+r.path, body)
	if err != nil {
		t.Fatal(err)
	}
	if r.ctype != "" {
		hr.Header.Set("Content-Type", r.ctype)
	}
	if r.bearer != "" {
		hr.Header.Set("Authorization", "Bearer "+r.bearer)
	}
	if r.cookie != nil {
		hr.AddCookie(r.cookie)
	}
	if r.origin != "" {
		hr.Header.Set("Origin", r.origin)
	}
	for k, v := range r.header {
		hr.Header.Set(k, v)
	}
	res, err := c.Do(hr)
	if err != nil {
		t.Fatalf("%s %s: %v", r.method, r.path, err)
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatalf("%s %s: read body: %v", r.method, r.path, err)
	}
	return response{status: res.StatusCode, header: res.Header, body: b}
}

// authed is a request with the bearer token.
func (e *testEnv) authed(method, path, body string) response {
	e.t.Helper()
	ct := ""
	if body != "" {
		ct = "application/json"
	}
	return e.do(req{method: method, path: path, body: body, ctype: ct, bearer: e.token})
}

// message posts chat text and returns the decoded 202 answer.
func (e *testEnv) message(text, clientTurnID string) MessageResponse {
	e.t.Helper()
	b, _ := json.Marshal(MessageRequest{Text: text, ClientTurnID: clientTurnID})
	r := e.authed("POST", "/api/messages", string(b))
	if r.status != http.StatusAccepted {
		e.t.Fatalf("POST /api/messages %q: status %d: %s", text, r.status, r.body)
	}
	var m MessageResponse
	r.json(e.t, &m)
	return m
}

// sseClient reads one SSE connection in the background.
type sseClient struct {
	t      testing.TB
	res    *http.Response
	events chan Event
	lines  chan string // comment lines (heartbeats)
	done   chan struct{}
	cancel context.CancelFunc
}

// openSSE connects to GET /api/events with an optional Last-Event-ID.
func (e *testEnv) openSSE(lastID string) *sseClient {
	e.t.Helper()
	return openSSEAt(e.t, e.ts.Client(), e.ts.URL, e.token, lastID)
}

func openSSEAt(t testing.TB, c *http.Client, base, token, lastID string) *sseClient {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	hr, _ := http.NewRequestWithContext(ctx, "GET", base+"/api/events", nil)
	hr.Header.Set("Authorization", "Bearer "+token)
	if lastID != "" {
		hr.Header.Set("Last-Event-ID", lastID)
	}
	res, err := c.Do(hr)
	if err != nil {
		cancel()
		t.Fatalf("open SSE: %v", err)
	}
	if res.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(res.Body)
		res.Body.Close()
		cancel()
		t.Fatalf("open SSE: status %d: %s", res.StatusCode, b)
	}
	if ct := res.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/event-stream") {
		t.Errorf("SSE Content-Type = %q", ct)
	}
	s := &sseClient{t: t, res: res, events: make(chan Event, 10000), lines: make(chan string, 100), done: make(chan struct{}), cancel: cancel}
	go s.read()
	t.Cleanup(s.close)
	return s
}

func (s *sseClient) read() {
	defer close(s.done)
	sc := bufio.NewScanner(s.res.Body)
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	var id string
	var data bytes.Buffer
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "":
			if data.Len() > 0 {
				var ev Event
				if err := json.Unmarshal(data.Bytes(), &ev); err != nil {
					s.t.Errorf("SSE data is not an event: %v: %s", err, data.Bytes())
				} else {
					if ev.ID != id {
						s.t.Errorf("SSE id line %q differs from the event's id %q", id, ev.ID)
					}
					s.events <- ev
				}
			}
			id = ""
			data.Reset()
		case strings.HasPrefix(line, ":"):
			select {
			case s.lines <- line:
			default:
			}
		case strings.HasPrefix(line, "id: "):
			id = strings.TrimPrefix(line, "id: ")
		case strings.HasPrefix(line, "data: "):
			data.WriteString(strings.TrimPrefix(line, "data: "))
		}
	}
}

// next returns the next event, failing the test if none comes.
func (s *sseClient) next() Event {
	s.t.Helper()
	select {
	case ev := <-s.events:
		return ev
	case <-s.done:
		// Drain what was read before the stream ended.
		select {
		case ev := <-s.events:
			return ev
		default:
		}
		s.t.Fatal("SSE stream ended while an event was expected")
	case <-time.After(testkit.Wait):
		s.t.Fatal("no SSE event arrived")
	}
	return Event{}
}

// until reads events until fn says stop, returning them all.
func (s *sseClient) until(fn func(Event) bool) []Event {
	s.t.Helper()
	var out []Event
	for {
		ev := s.next()
		out = append(out, ev)
		if fn(ev) {
			return out
		}
	}
}

func (s *sseClient) close() {
	s.cancel()
	s.res.Body.Close()
	<-s.done
}

// fakeClock returns a fake clock at a fixed instant.
func fakeClock() *clock.Fake { return clock.NewFake(time.Date(2026, 11, 21, 23, 46, 40, 0, time.UTC)) }

// waitUntil polls cond (a state the code under test reaches on its own,
// such as a goroutine arming a timer) until it holds.
func waitUntil(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(testkit.Wait)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(2 * time.Millisecond)
	}
}
