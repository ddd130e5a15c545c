package web

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/a6afc2ce/hermes-hub/config"
)

// serve sends one request straight to the handler, as if from peer.
func (e *testEnv) serve(peer, host, path, bearer string, header map[string]string) *httptest.ResponseRecorder {
	e.t.Helper()
	r := httptest.NewRequest(http.MethodGet, "http://"+host+path, nil)
	r.RemoteAddr = peer + ":40000"
	if bearer != "" {
		r.Header.Set("Authorization", "Bearer "+bearer)
	}
	for k, v := range header {
		r.Header.Set(k, v)
	}
	w := httptest.NewRecorder()
	e.srv.Handler().ServeHTTP(w, r)
	return w
}

// TestWrongBearerThrottled: 500 wrong bearer tokens on /api/verbs end in
// 429s (per client, then the global budget for everyone guessing), while
// the right token keeps working from the same client and from another.
func TestWrongBearerThrottled(t *testing.T) {
	clk := fakeClock()
	e := newEnv(t, envConfig{noServer: true, opts: func(o *Options) { o.Clock = clk }})
	limited := 0
	for i := range 500 {
		peer := "198.51.100.7"
		if i%2 == 1 {
			peer = fmt.Sprintf("198.51.%d.%d", i/256, i%256) // other guessers
		}
		w := e.serve(peer, "127.0.0.1:8080", "/api/verbs", strings.Repeat("0", 64), nil)
		switch w.Code {
		case http.StatusTooManyRequests:
			limited++
			if w.Header().Get("Retry-After") == "" {
				t.Fatal("429 without Retry-After")
			}
		case http.StatusUnauthorized:
		default:
			t.Fatalf("wrong token %d: %d %s", i, w.Code, w.Body)
		}
		if i%50 == 0 {
			for _, p := range []string{"198.51.100.7", "203.0.113.5"} {
				if w := e.serve(p, "127.0.0.1:8080", "/api/verbs", e.token, nil); w.Code != http.StatusOK {
					t.Fatalf("the right token from %s after %d wrong ones: %d %s", p, i, w.Code, w.Body)
				}
			}
		}
	}
	if limited != 500-MaxGlobalFailures {
		t.Fatalf("%d of 500 wrong tokens got 429, want all but the global budget of %d", limited, MaxGlobalFailures)
	}
	// A client that never guessed is refused while the global budget is
	// spent, but only its wrong guesses.
	if w := e.serve("203.0.113.5", "127.0.0.1:8080", "/api/verbs", "wrong-token-from-elsewhere", nil); w.Code != http.StatusTooManyRequests {
		t.Fatalf("global budget: %d", w.Code)
	}
	clk.Advance(LoginWindow)
	if w := e.serve("203.0.113.5", "127.0.0.1:8080", "/api/verbs", "wrong-token-from-elsewhere", nil); w.Code != http.StatusUnauthorized {
		t.Fatalf("after the window: %d", w.Code)
	}
}

// TestForwardedForTrustedOnly: behind a trusted proxy, clients named by
// X-Forwarded-For are throttled separately; from an untrusted peer the
// header is ignored, so a forged one does not escape the peer's throttle.
func TestForwardedForTrustedOnly(t *testing.T) {
	e := newEnv(t, envConfig{noServer: true, mod: func(c *config.Config) {
		c.Web.TrustedProxies = []string{"10.0.0.0/8"}
	}})
	guess := func(peer, xff string) int {
		return e.serve(peer, "127.0.0.1:8080", "/api/verbs", "wrong-token-0000000", map[string]string{"X-Forwarded-For": xff}).Code
	}
	for range MaxLoginFailures {
		if c := guess("10.1.1.1", "192.0.2.1"); c != http.StatusUnauthorized {
			t.Fatalf("guess: %d", c)
		}
	}
	if c := guess("10.1.1.1", "192.0.2.1"); c != http.StatusTooManyRequests {
		t.Fatalf("client 192.0.2.1 behind the proxy: %d, want 429", c)
	}
	// Another client through the same proxy, with a spoofed first hop that
	// the proxy appended to: only the hop the proxy saw counts.
	if c := guess("10.1.1.1", "192.0.2.1, 192.0.2.2"); c != http.StatusUnauthorized {
		t.Fatalf("client 192.0.2.2 behind the proxy: %d, want 401", c)
	}
	if got := e.srv.clientAddr(&http.Request{RemoteAddr: "10.1.1.1:1", Header: http.Header{"X-Forwarded-For": {"192.0.2.9, 10.2.2.2"}}}); got != "192.0.2.9" {
		t.Errorf("client through two trusted proxies: %s", got)
	}
	// Untrusted peer: the header is ignored.
	for range MaxLoginFailures {
		guess("203.0.113.9", "192.0.2.50")
	}
	if c := guess("203.0.113.9", "192.0.2.51"); c != http.StatusTooManyRequests {
		t.Fatalf("forged X-Forwarded-For from an untrusted peer escaped the throttle: %d", c)
	}
	if got := e.srv.clientAddr(&http.Request{RemoteAddr: "203.0.113.9:1", Header: http.Header{"X-Forwarded-For": {"192.0.2.50"}}}); got != "203.0.113.9" {
		t.Errorf("untrusted peer counted as %s", got)
	}
}

// TestHostAllowList: the listener answers to loopback names, its own
// address, public_url's host and web.allowed_hosts; any other Host (a DNS
// rebinding page) gets 421 with a JSON error, before authentication.
func TestHostAllowList(t *testing.T) {
	e := newEnv(t, envConfig{noServer: true, mod: func(c *config.Config) {
		c.Web.Listen = "192.0.2.10:8080"
		c.Web.Token = config.NewSecret("a-configured-token-1234")
		c.Web.PublicURL = "https://hub.example.org/"
		c.Web.AllowedHosts = []string{"Hub.Internal"}
	}})
	for _, tc := range []struct {
		host string
		want int
	}{
		{"127.0.0.1:8080", http.StatusOK},
		{"localhost:8080", http.StatusOK},
		{"localhost", http.StatusOK},
		{"[::1]:8080", http.StatusOK},
		{"192.0.2.10:8080", http.StatusOK},
		{"hub.example.org", http.StatusOK},
		{"HUB.EXAMPLE.ORG:443", http.StatusOK},
		{"hub.internal:8080", http.StatusOK},
		{"attacker.example:8080", http.StatusMisdirectedRequest},
		{"hub.example.org.attacker.example", http.StatusMisdirectedRequest},
		{"192.0.2.11:8080", http.StatusMisdirectedRequest},
	} {
		w := e.serve("127.0.0.1", tc.host, "/api/status", "a-configured-token-1234", nil)
		if w.Code != tc.want {
			t.Errorf("Host %s: %d, want %d: %s", tc.host, w.Code, tc.want, w.Body)
		}
		if tc.want != http.StatusOK && (!strings.Contains(w.Body.String(), `"error"`) || !strings.Contains(w.Body.String(), "web.allowed_hosts")) {
			t.Errorf("Host %s: error body %s", tc.host, w.Body)
		}
	}
	// The panel and mounted handlers (the Telegram webhook) are behind the
	// same check; the webhook arrives with public_url's host.
	e.srv.Mount("POST /telegram/webhook", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusNoContent) }))
	for host, want := range map[string]int{"hub.example.org": http.StatusNoContent, "evil.example": http.StatusMisdirectedRequest} {
		r := httptest.NewRequest(http.MethodPost, "http://"+host+"/telegram/webhook", strings.NewReader("{}"))
		w := httptest.NewRecorder()
		e.srv.Handler().ServeHTTP(w, r)
		if w.Code != want {
			t.Errorf("webhook with Host %s: %d, want %d", host, w.Code, want)
		}
	}
	// A listener on every address answers to any IP address, never to
	// unknown names.
	wide := newEnv(t, envConfig{noServer: true, mod: func(c *config.Config) {
		c.Web.Listen = "0.0.0.0:8080"
		c.Web.Token = config.NewSecret("a-configured-token-1234")
	}})
	if w := wide.serve("127.0.0.1", "192.168.1.5:8080", "/api/status", "a-configured-token-1234", nil); w.Code != http.StatusOK {
		t.Errorf("IP Host on 0.0.0.0: %d", w.Code)
	}
	if w := wide.serve("127.0.0.1", "rebind.example:8080", "/api/status", "a-configured-token-1234", nil); w.Code != http.StatusMisdirectedRequest {
		t.Errorf("name Host on 0.0.0.0: %d", w.Code)
	}
}
