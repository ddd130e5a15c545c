package mcp_test

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	mcpsurface "github.com/a6afc2ce/hermes-hub/adapters/mcp"
	"github.com/a6afc2ce/hermes-hub/adapters/web"
	"github.com/a6afc2ce/hermes-hub/clock"
	"github.com/a6afc2ce/hermes-hub/config"
	"github.com/a6afc2ce/hermes-hub/hub/hubtest"
	"github.com/a6afc2ce/hermes-hub/internal/testkit"
)

// The tokens of webHub.
const (
	webToken    = "web-token-0123456789abcdef"
	adminToken  = "admin-token-0123456789abcdef"
	readerToken = "reader-token-0123456789abcdef"
)

// webHub runs a hub runtime with the web listener on a loopback socket
// (httptest) and /mcp mounted as `hub serve` mounts it
// (mcpsurface.ConfigOptions, the web server as the throttle), from the
// default mcp section changed by mod. Two agents: admin (every verb) and
// reader (the reader role). Both servers run on clk.
func webHub(t testing.TB, clk clock.Clock, mod func(*config.Config)) (url string, env *hubtest.Env) {
	t.Helper()
	cfg := hubtest.Config(t, "", "")
	cfg.Web.Token = config.NewSecret(webToken)
	cfg.MCP.Enabled = true
	cfg.MCP.Agents = map[string]config.MCPAgent{
		"admin": {Token: config.NewSecret(adminToken)}, "reader": {Token: config.NewSecret(readerToken)},
	}
	cfg.Access = config.Access{
		Roles:  map[string]config.Role{"admin": {Verbs: []string{"*"}}},
		Grants: map[string][]string{"web": {"reader"}, "agent:admin": {"admin"}, "agent:reader": {"reader"}},
	}
	if mod != nil {
		mod(cfg)
	}
	env = hubtest.Open(t, cfg, hubtest.Options{})
	env.Start(t)
	webSrv, err := web.New(web.Options{Intake: env.Runtime.Hub, Config: cfg.Web, Clock: clk, Logger: testkit.Discard()})
	if err != nil {
		t.Fatal(err)
	}
	srv, err := mcpsurface.New(mcpsurface.Options{
		Intake: env.Runtime.Hub, Clock: clk,
		ProgressInterval: 300 * time.Millisecond, Logger: testkit.Discard(),
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Close)
	h, err := srv.Handler(mcpsurface.ConfigOptions(cfg.MCP, cfg.Web, web.Identity, webSrv.Token(), webSrv))
	if err != nil {
		t.Fatal(err)
	}
	webSrv.Mount("/mcp", h)
	ts := httptest.NewServer(webSrv.Handler())
	t.Cleanup(ts.Close)
	return ts.URL + "/mcp", env
}

// rpcAnswer is a JSON-RPC answer, from a JSON body or the first SSE event.
type rpcAnswer struct {
	Status  int
	Header  http.Header
	ID      json.RawMessage `json:"id"`
	Result  json.RawMessage `json:"result"`
	Error   *rpcError       `json:"error"`
	Session string
}

type rpcError struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
}

// call POSTs one JSON-RPC message to /mcp with token (none when empty)
// and session (none when empty) and reads its answer.
func call(t *testing.T, url, token, session, body string) rpcAnswer {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	if session != "" {
		req.Header.Set("Mcp-Session-Id", session)
		req.Header.Set("Mcp-Protocol-Version", "2025-06-18")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	a := rpcAnswer{Status: resp.StatusCode, Header: resp.Header, Session: resp.Header.Get("Mcp-Session-Id")}
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	var data []byte
	switch ct := resp.Header.Get("Content-Type"); {
	case strings.HasPrefix(ct, "application/json"):
		data = b
	case strings.HasPrefix(ct, "text/event-stream"):
		for _, line := range strings.Split(string(b), "\n") {
			if d, ok := strings.CutPrefix(line, "data: "); ok {
				data = []byte(d)
				break
			}
		}
	}
	if len(data) > 0 && json.Unmarshal(data, &a) != nil {
		t.Fatalf("answer %d is not JSON: %q", resp.StatusCode, b)
	}
	return a
}

const initBody = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`

// openSession initializes a session for token and returns its id.
func openSession(t *testing.T, url, token string) string {
	t.Helper()
	a := call(t, url, token, "", initBody)
	if a.Status != http.StatusOK || a.Session == "" || a.Error != nil {
		t.Fatalf("initialize: status %d, session %q, error %+v", a.Status, a.Session, a.Error)
	}
	if n := call(t, url, token, a.Session, `{"jsonrpc":"2.0","method":"notifications/initialized"}`); n.Status != http.StatusAccepted {
		t.Fatalf("notifications/initialized: status %d", n.Status)
	}
	return a.Session
}

// refused checks a refusal before the protocol: status, a JSON-RPC error
// body (code -32000) whose message holds want, with the request's id.
func refused(t *testing.T, a rpcAnswer, status int, id, want string) {
	t.Helper()
	if a.Status != status || a.Error == nil || a.Error.Code != -32000 || !strings.Contains(a.Error.Message, want) || string(a.ID) != id {
		t.Fatalf("status %d, id %s, error %+v; want status %d, id %s and an error saying %q", a.Status, a.ID, a.Error, status, id, want)
	}
}

// TestHTTPChecks: /mcp answers only a known token, refuses foreign
// origins, and serves an initialize with a session id.
func TestHTTPChecks(t *testing.T) {
	url, _ := webHub(t, clock.Real{}, func(c *config.Config) { c.Web.AllowOrigins = []string{"https://tools.example.org"} })
	own := strings.TrimSuffix(url, "/mcp")
	tests := []struct {
		name, token, origin string
		status              int
		challenge           string // WWW-Authenticate: RFC 6750's, no OAuth resource metadata
	}{
		{"no token", "", "", http.StatusUnauthorized, `Bearer realm="hub"`},
		{"wrong token", readerToken + "x", "", http.StatusUnauthorized, `Bearer realm="hub", error="invalid_token", error_description="the token is not an agent's token of mcp.agents"`},
		{"foreign origin", readerToken, "https://evil.example", http.StatusForbidden, ""},
		{"allowed origin", readerToken, "https://tools.example.org", http.StatusOK, ""},
		{"own origin", readerToken, own, http.StatusOK, ""},
		{"no origin", readerToken, "", http.StatusOK, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req, _ := http.NewRequest("POST", url, strings.NewReader(initBody))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Accept", "application/json, text/event-stream")
			if tt.token != "" {
				req.Header.Set("Authorization", "Bearer "+tt.token)
			}
			if tt.origin != "" {
				req.Header.Set("Origin", tt.origin)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != tt.status {
				t.Fatalf("status %d, want %d", resp.StatusCode, tt.status)
			}
			if got := resp.Header.Get("WWW-Authenticate"); got != tt.challenge {
				t.Errorf("WWW-Authenticate %q, want %q", got, tt.challenge)
			}
			if tt.status == http.StatusOK && resp.Header.Get("Mcp-Session-Id") == "" {
				t.Error("no Mcp-Session-Id on an initialize")
			}
		})
	}
	srv, err := mcpsurface.New(mcpsurface.Options{Intake: hubtest.Open(t, hubtest.Config(t, "", ""), hubtest.Options{}).Runtime.Hub, Logger: testkit.Discard()})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := srv.Handler(mcpsurface.HTTPOptions{Throttle: throttleFunc(nil)}); err == nil {
		t.Error("a handler without tokens was built")
	}
	if _, err := srv.Handler(mcpsurface.HTTPOptions{Tokens: []mcpsurface.Token{{Identity: "agent:a", Secret: adminToken}}}); err == nil {
		t.Error("a handler without a throttle was built")
	}
}

// TestNoOAuth: the paths where an OAuth client looks for an authorization
// server answer 404 with an OAuth error object that says the hub does no
// OAuth and what /mcp takes instead.
func TestNoOAuth(t *testing.T) {
	for _, p := range []string{"/.well-known/oauth-protected-resource/mcp", "/register"} {
		w := httptest.NewRecorder()
		mcpsurface.NoOAuth().ServeHTTP(w, httptest.NewRequest("POST", p, strings.NewReader("{}")))
		var body struct {
			Error            string `json:"error"`
			ErrorDescription string `json:"error_description"`
		}
		if err := json.Unmarshal(w.Body.Bytes(), &body); err != nil || w.Code != http.StatusNotFound || !strings.Contains(body.ErrorDescription, "no OAuth authorization server: /mcp takes an agent's own bearer token (mcp.agents)") {
			t.Fatalf("%s: %d %s", p, w.Code, w.Body)
		}
	}
}

type throttleFunc func(*http.Request) (string, int)

func (f throttleFunc) WrongCredentials(r *http.Request) (string, int) { return f(r) }

// TestWrongTokensThrottled: wrong tokens on /mcp count against the web
// listener's one budget: after 10 from one client within a minute its
// wrong tokens get 429 with Retry-After (on /mcp and on /api alike), after
// 100 from everyone every wrong token does; a token the hub knows is never
// refused, and a request without a token is not a guess.
func TestWrongTokensThrottled(t *testing.T) {
	clk := clock.NewFake(time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC))
	url, _ := webHub(t, clk, func(c *config.Config) { c.Web.TrustedProxies = []string{"127.0.0.1/32"} })
	guess := func(token, client string) rpcAnswer {
		req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(initBody))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Authorization", "Bearer "+token)
		req.Header.Set("X-Forwarded-For", client)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		a := rpcAnswer{Status: resp.StatusCode, Header: resp.Header}
		_ = json.NewDecoder(resp.Body).Decode(&a)
		return a
	}
	for i := range 10 {
		if a := guess(fmt.Sprintf("guess-%d-0123456789abcdef", i), "192.0.2.1"); a.Status != http.StatusUnauthorized {
			t.Fatalf("wrong token %d: status %d", i, a.Status)
		}
		if a := call(t, url, "", "", initBody); a.Status != http.StatusUnauthorized {
			t.Fatalf("no token: status %d", a.Status)
		}
	}
	a := guess("guess-10-0123456789abcdef", "192.0.2.1")
	refused(t, a, http.StatusTooManyRequests, "null", "too many wrong tokens from 192.0.2.1")
	if secs, err := strconv.Atoi(a.Header.Get("Retry-After")); err != nil || secs < 1 || secs > 60 {
		t.Errorf("Retry-After %q", a.Header.Get("Retry-After"))
	}
	// The same budget as the API's.
	req, _ := http.NewRequest(http.MethodGet, strings.TrimSuffix(url, "/mcp")+"/api/status", nil)
	req.Header.Set("Authorization", "Bearer nope-0123456789abcdef")
	req.Header.Set("X-Forwarded-For", "192.0.2.1")
	if resp, err := http.DefaultClient.Do(req); err != nil || resp.StatusCode != http.StatusTooManyRequests {
		t.Fatalf("/api after the guesses on /mcp: %v %v", resp.StatusCode, err)
	}
	// The right token, from the guesser's own address, is answered.
	if a := guess(readerToken, "192.0.2.1"); a.Status != http.StatusOK {
		t.Fatalf("the right token during the storm: status %d", a.Status)
	}
	// Another client is not blocked, until everyone together has sent 100.
	for i := 0; i < 90; i++ {
		client := fmt.Sprintf("198.51.100.%d", 1+i/9)
		if a := guess("guess-0123456789abcdef", client); a.Status != http.StatusUnauthorized {
			t.Fatalf("wrong token %d of everyone from %s: status %d", i, client, a.Status)
		}
	}
	refused(t, guess("guess-0123456789abcdef", "203.0.113.9"), http.StatusTooManyRequests, "null", "or from everyone")
	if a := guess(adminToken, "203.0.113.9"); a.Status != http.StatusOK {
		t.Fatalf("the right token after 100 guesses: status %d", a.Status)
	}
	// The minute passes.
	clk.Advance(time.Minute)
	if a := guess("guess-0123456789abcdef", "192.0.2.1"); a.Status != http.StatusUnauthorized {
		t.Fatalf("a wrong token a minute later: status %d", a.Status)
	}
}

// TestWebTokenRefused: the web token is not an agent's: /mcp refuses it
// with 401 saying why and what to do (and does not count it as a guess),
// unless mcp.accept_web_token lets it in as the identity web.
func TestWebTokenRefused(t *testing.T) {
	url, _ := webHub(t, clock.Real{}, nil)
	for range 12 {
		a := call(t, url, webToken, "", initBody)
		refused(t, a, http.StatusUnauthorized, "null", "mcp.accept_web_token")
	}
	if a := call(t, url, webToken, "", initBody); !strings.Contains(a.Error.Message, "its own token under mcp.agents") {
		t.Errorf("the refusal does not say what to do: %q", a.Error.Message)
	}

	url, _ = webHub(t, clock.Real{}, func(c *config.Config) { c.MCP.AcceptWebToken = true })
	s := openSession(t, url, webToken)
	a := call(t, url, webToken, s, `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`)
	if a.Status != http.StatusOK || !strings.Contains(string(a.Result), `"fs_readFile"`) || strings.Contains(string(a.Result), `"fs_writeFile"`) {
		t.Fatalf("tools/list as web (reader): %d %.300s", a.Status, a.Result)
	}
}

// TestSessionCaps: an agent opens at most mcp.max_sessions_per_agent
// sessions and the hub at most mcp.max_sessions; past either, an
// initialize gets 429 with a JSON-RPC error for its id saying which cap;
// another agent under its own cap is still served, and a session that ends
// frees its place.
func TestSessionCaps(t *testing.T) {
	url, _ := webHub(t, clock.Real{}, func(c *config.Config) {
		c.MCP.MaxSessions, c.MCP.MaxSessionsPerAgent, c.MCP.MaxStreamsPerAgent = 3, 2, 8
	})
	r1, _ := openSession(t, url, readerToken), openSession(t, url, readerToken)
	refused(t, call(t, url, readerToken, "", initBody), http.StatusTooManyRequests, "1", "agent:reader has 2 open, the most mcp.max_sessions_per_agent allows")
	openSession(t, url, adminToken)
	refused(t, call(t, url, adminToken, "", strings.Replace(initBody, `"id":1`, `"id":"x7"`, 1)), http.StatusTooManyRequests, `"x7"`, "the hub has 3 open, the most mcp.max_sessions allows")
	// The sessions open still work.
	if a := call(t, url, readerToken, r1, `{"jsonrpc":"2.0","id":5,"method":"ping"}`); a.Status != http.StatusOK || a.Error != nil {
		t.Fatalf("ping on a session: %d %+v", a.Status, a.Error)
	}
	// Ending one frees its place.
	req, _ := http.NewRequest(http.MethodDelete, url, nil)
	req.Header.Set("Authorization", "Bearer "+readerToken)
	req.Header.Set("Mcp-Session-Id", r1)
	resp, err := http.DefaultClient.Do(req)
	if err != nil || resp.StatusCode != http.StatusNoContent {
		t.Fatalf("DELETE: %v %v", resp.StatusCode, err)
	}
	resp.Body.Close()
	testkit.WaitFor(t, "the ended session's place to be free", func() bool {
		return call(t, url, readerToken, "", initBody).Status == http.StatusOK
	})
}

// TestIdleSessionExpires: a session that receives no request for
// mcp.session_timeout is closed, and its place is free for a new one (the
// agent may open one at a time here).
func TestIdleSessionExpires(t *testing.T) {
	url, _ := webHub(t, clock.Real{}, func(c *config.Config) {
		c.MCP.MaxSessionsPerAgent, c.MCP.SessionTimeout = 1, config.Duration(100*time.Millisecond)
	})
	s := openSession(t, url, readerToken)
	testkit.WaitFor(t, "a new session once the idle one expired", func() bool {
		return call(t, url, readerToken, "", initBody).Status == http.StatusOK
	})
	if a := call(t, url, readerToken, s, `{"jsonrpc":"2.0","id":5,"method":"ping"}`); a.Status != http.StatusNotFound {
		t.Fatalf("the idle session: status %d, want 404 (closed)", a.Status)
	}
}

// openStream opens the standalone SSE stream of a session and returns a
// channel closed when the hub ends it.
func openStream(t *testing.T, url, token, session string) (status int, ended <-chan struct{}) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, url, nil)
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Mcp-Session-Id", session)
	req.Header.Set("Mcp-Protocol-Version", "2025-06-18")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	if resp.StatusCode != http.StatusOK {
		resp.Body.Close()
		close(done)
		return resp.StatusCode, done
	}
	r := bufio.NewReader(resp.Body)
	if line, err := r.ReadString('\n'); err != nil || line != ": ok\n" {
		t.Fatalf("the stream's first line: %q %v", line, err)
	}
	go func() {
		defer close(done)
		defer resp.Body.Close()
		_, _ = io.Copy(io.Discard, r)
	}()
	t.Cleanup(func() { resp.Body.Close() })
	return resp.StatusCode, done
}

// TestIdleStreamClosed: a standalone SSE stream on which nothing is
// written for mcp.stream_idle_timeout (on the hub's clock) is closed; the
// session goes on and may open another.
func TestIdleStreamClosed(t *testing.T) {
	clk := clock.NewFake(time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC))
	url, _ := webHub(t, clk, func(c *config.Config) { c.MCP.StreamIdleTimeout = config.Duration(time.Minute) })
	s := openSession(t, url, readerToken)
	status, ended := openStream(t, url, readerToken, s)
	if status != http.StatusOK {
		t.Fatalf("GET: %d", status)
	}
	testkit.WaitFor(t, "the idle stream's timer", func() bool { return clk.Pending() > 0 })
	clk.Advance(time.Minute)
	testkit.WaitFor(t, "the idle stream to be closed", func() bool {
		select {
		case <-ended:
			return true
		default:
			return false
		}
	})
	if a := call(t, url, readerToken, s, `{"jsonrpc":"2.0","id":5,"method":"ping"}`); a.Status != http.StatusOK || a.Error != nil {
		t.Fatalf("the session after its stream was closed: %d %+v", a.Status, a.Error)
	}
	if status, _ := openStream(t, url, readerToken, s); status != http.StatusOK {
		t.Fatalf("a new stream: %d", status)
	}
}

// TestStreamsPerAgent: an agent holds at most mcp.max_streams_per_agent
// requests open at once (here two standalone streams); past it its
// requests get 429 saying so, and another agent is still served.
func TestStreamsPerAgent(t *testing.T) {
	url, _ := webHub(t, clock.Real{}, func(c *config.Config) {
		c.MCP.MaxSessionsPerAgent, c.MCP.MaxStreamsPerAgent = 4, 2
	})
	s1, s2, s3 := openSession(t, url, readerToken), openSession(t, url, readerToken), openSession(t, url, readerToken)
	for _, s := range []string{s1, s2} {
		if status, _ := openStream(t, url, readerToken, s); status != http.StatusOK {
			t.Fatalf("GET: %d", status)
		}
	}
	if status, _ := openStream(t, url, readerToken, s3); status != http.StatusTooManyRequests {
		t.Fatalf("a third stream: %d", status)
	}
	refused(t, call(t, url, readerToken, s3, `{"jsonrpc":"2.0","id":5,"method":"ping"}`), http.StatusTooManyRequests, "5", "agent:reader has 2 (standalone streams and calls still running), the most mcp.max_streams_per_agent allows")
	a := openSession(t, url, adminToken)
	if status, _ := openStream(t, url, adminToken, a); status != http.StatusOK {
		t.Fatalf("another agent's stream: %d", status)
	}
}
