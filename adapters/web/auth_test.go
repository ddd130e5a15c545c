package web

import (
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/a6afc2ce/hermes-hub/config"
)

// login posts the token and returns the cookie set.
func (e *testEnv) login(t *testing.T) *http.Cookie {
	t.Helper()
	r := e.do(req{method: "POST", path: "/api/login", body: `{"token":"` + e.token + `"}`, ctype: "application/json"})
	if r.status != http.StatusOK {
		t.Fatalf("login: status %d: %s", r.status, r.body)
	}
	for _, c := range (&http.Response{Header: r.header}).Cookies() {
		if c.Name == CookieName {
			return c
		}
	}
	t.Fatalf("login set no %s cookie; Set-Cookie: %q", CookieName, r.header.Values("Set-Cookie"))
	return nil
}

func TestAuthRequired(t *testing.T) {
	clk := fakeClock() // each path starts with a fresh throttle window
	e := newEnv(t, envConfig{opts: func(o *Options) { o.Clock = clk }})
	paths := []struct{ method, path, body string }{
		{"GET", "/api/status", ""},
		{"GET", "/api/verbs", ""},
		{"GET", "/api/history", ""},
		{"GET", "/api/events", ""},
		{"POST", "/api/execute", `{"verb":"fs.exists","arguments":{"path":"."}}`},
		{"POST", "/api/messages", `{"text":"/fs.exists ."}`},
		{"GET", "/api/targets", ""},
		{"POST", "/api/targets", `{"target":"web"}`},
		{"DELETE", "/api/targets?target=web", ""},
		{"GET", "/api/channels", ""},
		{"GET", "/api/outbox", ""},
		{"POST", "/api/outbox/retry", `{"id":"x"}`},
		{"GET", "/api/mirror", ""},
		{"POST", "/api/deliver", `{"text":"hi"}`},
		{"GET", "/api/nonexistent", ""},
	}
	creds := []struct {
		name   string
		bearer string
		header map[string]string
		cookie *http.Cookie
	}{
		{name: "none"},
		{name: "wrong token", bearer: strings.Repeat("0", 64)},
		{name: "token prefix", bearer: e.token[:10]},
		{name: "basic scheme", header: map[string]string{"Authorization": "Basic " + e.token}},
		{name: "forged cookie", cookie: &http.Cookie{Name: CookieName, Value: "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA.AAAA"}},
		{name: "token as cookie", cookie: &http.Cookie{Name: CookieName, Value: e.token}},
	}
	for _, p := range paths {
		clk.Advance(LoginWindow)
		for _, c := range creds {
			r := e.do(req{method: p.method, path: p.path, body: p.body, ctype: "application/json", bearer: c.bearer, cookie: c.cookie, header: c.header})
			if r.status != http.StatusUnauthorized {
				t.Errorf("%s %s with %s: status %d, want 401: %s", p.method, p.path, c.name, r.status, r.body)
				continue
			}
			if msg := r.errorText(t); !strings.Contains(msg, "Bearer") {
				t.Errorf("%s %s: 401 message %q does not say how to authenticate", p.method, p.path, msg)
			}
		}
		if p.path == "/api/events" {
			continue // a stream: TestEvents* cover it
		}
		if r := e.do(req{method: p.method, path: p.path, body: p.body, ctype: "application/json", bearer: e.token}); r.status == http.StatusUnauthorized {
			t.Errorf("%s %s with the right token: 401: %s", p.method, p.path, r.body)
		}
	}
	// The panel's files are public: they hold no data.
	for _, p := range []string{"/", "/app.js", "/app.css"} {
		if r := e.do(req{method: "GET", path: p}); r.status != http.StatusOK {
			t.Errorf("GET %s without auth: %d", p, r.status)
		}
	}
}

func TestLoginCookie(t *testing.T) {
	clk := fakeClock()
	e := newEnv(t, envConfig{opts: func(o *Options) { o.Clock = clk }})
	own := e.ts.URL

	if r := e.do(req{method: "POST", path: "/api/login", body: `{"token":"nope"}`, ctype: "application/json"}); r.status != http.StatusUnauthorized {
		t.Fatalf("login with a wrong token: %d: %s", r.status, r.body)
	} else if len(r.header.Values("Set-Cookie")) != 0 {
		t.Fatalf("a failed login set a cookie: %q", r.header.Values("Set-Cookie"))
	}
	if r := e.do(req{method: "POST", path: "/api/login", body: `{"token":"` + e.token + `","extra":1}`, ctype: "application/json"}); r.status != http.StatusBadRequest {
		t.Errorf("login with an unknown field: %d, want 400", r.status)
	}

	c := e.login(t)
	if !c.HttpOnly {
		t.Error("login cookie is not HttpOnly")
	}
	if c.SameSite != http.SameSiteStrictMode {
		t.Errorf("login cookie SameSite = %v, want Strict", c.SameSite)
	}
	if c.Path != "/" {
		t.Errorf("login cookie Path = %q, want /", c.Path)
	}
	if c.Secure {
		t.Error("login cookie is Secure on a plain-HTTP listener without an https public_url")
	}
	if strings.Contains(c.Value, e.token) {
		t.Error("login cookie carries the token")
	}

	if r := e.do(req{method: "GET", path: "/api/status", cookie: c}); r.status != http.StatusOK {
		t.Fatalf("GET /api/status with the cookie: %d: %s", r.status, r.body)
	}
	// Cookie-authenticated state changes need the listener's own Origin.
	msg := `{"text":"/fs.exists .","client_turn_id":"cookie-1"}`
	if r := e.do(req{method: "POST", path: "/api/messages", body: msg, ctype: "application/json", cookie: c}); r.status != http.StatusForbidden {
		t.Errorf("cookie POST without Origin: %d, want 403: %s", r.status, r.body)
	}
	if r := e.do(req{method: "POST", path: "/api/messages", body: msg, ctype: "application/json", cookie: c, origin: own}); r.status != http.StatusAccepted {
		t.Errorf("cookie POST with its own Origin: %d, want 202: %s", r.status, r.body)
	}

	// A tampered cookie is refused.
	bad := *c
	bad.Value = c.Value[:len(c.Value)-2] + "xx"
	if r := e.do(req{method: "GET", path: "/api/status", cookie: &bad}); r.status != http.StatusUnauthorized {
		t.Errorf("tampered cookie: %d, want 401", r.status)
	}
	// It expires after SessionTTL.
	clk.Advance(SessionTTL - time.Minute)
	if r := e.do(req{method: "GET", path: "/api/status", cookie: c}); r.status != http.StatusOK {
		t.Errorf("cookie just before expiry: %d, want 200", r.status)
	}
	clk.Advance(2 * time.Minute)
	if r := e.do(req{method: "GET", path: "/api/status", cookie: c}); r.status != http.StatusUnauthorized {
		t.Errorf("expired cookie: %d, want 401", r.status)
	}

	// Logging out revokes the cookie, even if a copy is replayed.
	c2 := e.login(t)
	r := e.do(req{method: "POST", path: "/api/logout", cookie: c2, origin: own})
	if r.status != http.StatusOK {
		t.Fatalf("logout: %d: %s", r.status, r.body)
	}
	if !strings.Contains(strings.Join(r.header.Values("Set-Cookie"), "\n"), "Max-Age=0") {
		t.Errorf("logout does not clear the cookie: %q", r.header.Values("Set-Cookie"))
	}
	if r := e.do(req{method: "GET", path: "/api/status", cookie: c2}); r.status != http.StatusUnauthorized {
		t.Errorf("cookie after logout: %d, want 401", r.status)
	}
}

func TestSecureCookieBehindHTTPS(t *testing.T) {
	e := newEnv(t, envConfig{mod: func(c *config.Config) { c.Web.PublicURL = "https://hub.example.org/" }})
	if c := e.login(t); !c.Secure {
		t.Error("login cookie is not Secure although the public URL is https")
	}
}

func TestOriginCheck(t *testing.T) {
	e := newEnv(t, envConfig{mod: func(c *config.Config) {
		c.Web.AllowOrigins = []string{"https://tools.example.org"}
		c.Web.PublicURL = "https://hub.example.org"
	}})
	c := e.login(t)
	body := `{"target":"local:pma/out.jsonl"}`
	cases := []struct {
		name   string
		bearer string
		cookie *http.Cookie
		origin string
		want   int
	}{
		{"cookie, other origin", "", c, "https://evil.example.com", http.StatusForbidden},
		{"bearer, other origin", e.token, nil, "https://evil.example.com", http.StatusForbidden},
		{"cookie, null origin", "", c, "null", http.StatusForbidden},
		{"bearer, null origin", e.token, nil, "null", http.StatusForbidden},
		{"cookie, same host other scheme", "", c, strings.Replace(e.ts.URL, "http://", "https://", 1), http.StatusForbidden},
		{"unauthenticated, other origin", "", nil, "https://evil.example.com", http.StatusForbidden},
		{"cookie, no origin", "", c, "", http.StatusForbidden},
		{"bearer, no origin", e.token, nil, "", http.StatusOK},
		{"cookie, own origin", "", c, e.ts.URL, http.StatusOK},
		{"bearer, own origin", e.token, nil, e.ts.URL, http.StatusOK},
		{"cookie, public origin", "", c, "https://hub.example.org", http.StatusOK},
		{"cookie, allowed origin", "", c, "https://tools.example.org", http.StatusOK},
		{"bearer, allowed origin", e.token, nil, "https://TOOLS.example.org", http.StatusOK},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := e.do(req{method: "POST", path: "/api/targets", body: body, ctype: "application/json", bearer: tc.bearer, cookie: tc.cookie, origin: tc.origin})
			if r.status != tc.want {
				t.Fatalf("status %d, want %d: %s", r.status, tc.want, r.body)
			}
			if tc.want == http.StatusForbidden {
				r.errorText(t)
			}
		})
	}
	// Reads are not state-changing: a cross-origin GET with a cookie is
	// allowed (SameSite=Strict keeps the cookie off cross-site requests, and
	// CORS keeps the answer from the other origin).
	if r := e.do(req{method: "GET", path: "/api/targets", cookie: c, origin: "https://evil.example.com"}); r.status != http.StatusOK {
		t.Errorf("GET with another Origin: %d", r.status)
	}
	// No CORS headers are ever sent.
	r := e.do(req{method: "GET", path: "/api/targets", bearer: e.token, origin: "https://evil.example.com"})
	if v := r.header.Get("Access-Control-Allow-Origin"); v != "" {
		t.Errorf("Access-Control-Allow-Origin = %q", v)
	}
}

func TestSecurityHeaders(t *testing.T) {
	e := newEnv(t, envConfig{})
	cases := []req{
		{method: "GET", path: "/"},
		{method: "GET", path: "/app.js"},
		{method: "GET", path: "/app.css"},
		{method: "GET", path: "/missing.html"},
		{method: "GET", path: "/api/status"},
		{method: "GET", path: "/api/status", bearer: e.token},
		{method: "POST", path: "/api/execute", bearer: e.token, body: `{"verb":"fs.exists","arguments":{"path":"."}}`},
		{method: "GET", path: "/api/nope", bearer: e.token},
	}
	for _, rq := range cases {
		r := e.do(rq)
		want := map[string]string{
			"Content-Security-Policy": contentSecurityPol,
			"X-Content-Type-Options":  "nosniff",
			"Referrer-Policy":         "no-referrer",
			"X-Frame-Options":         "DENY",
		}
		if strings.HasPrefix(rq.path, "/api/") {
			want["Cache-Control"] = "no-store"
		}
		for k, v := range want {
			if got := r.header.Get(k); got != v {
				t.Errorf("%s %s: %s = %q, want %q", rq.method, rq.path, k, got, v)
			}
		}
	}
	csp := e.do(req{method: "GET", path: "/"}).header.Get("Content-Security-Policy")
	for _, d := range []string{"default-src 'self'", "script-src 'self'", "frame-ancestors 'none'", "base-uri 'none'"} {
		if !strings.Contains(csp, d) {
			t.Errorf("CSP lacks %q", d)
		}
	}
	if strings.Contains(csp, "unsafe-inline") || strings.Contains(csp, "unsafe-eval") {
		t.Errorf("CSP allows inline code: %s", csp)
	}
}

// The panel must run under its own CSP: no inline scripts, styles or event
// handlers, and nothing loaded from elsewhere.
func TestPanelHasNoInlineCode(t *testing.T) {
	e := newEnv(t, envConfig{})
	html := string(e.do(req{method: "GET", path: "/"}).body)
	for _, bad := range []string{"<script>", "<style", " style=", " onclick=", " onload=", "javascript:", "http://", "https://", "//cdn"} {
		if strings.Contains(html, bad) {
			t.Errorf("index.html contains %q", bad)
		}
	}
	js := string(e.do(req{method: "GET", path: "/app.js"}).body)
	for _, bad := range []string{"innerHTML", "outerHTML", "insertAdjacentHTML", "document.write", "eval(", "new Function", "http://", "https://"} {
		if strings.Contains(js, bad) {
			t.Errorf("app.js contains %q", bad)
		}
	}
	css := string(e.do(req{method: "GET", path: "/app.css"}).body)
	if strings.Contains(css, "@import") || strings.Contains(css, "url(http") {
		t.Error("app.css loads external resources")
	}
}

func TestBodyLimit(t *testing.T) {
	e := newEnv(t, envConfig{mod: func(c *config.Config) { c.Web.MaxBodyBytes = 1024 }})
	big := `{"verb":"fs.writeFile","arguments":{"path":"big.txt","content":"` + strings.Repeat("x", 2000) + `"}}`
	for _, p := range []string{"/api/execute", "/api/messages", "/api/targets", "/api/login", "/api/deliver"} {
		r := e.do(req{method: "POST", path: p, body: big, ctype: "application/json", bearer: e.token})
		if r.status != http.StatusRequestEntityTooLarge {
			t.Errorf("POST %s with 2000 bytes over a 1024 cap: %d, want 413: %s", p, r.status, r.body)
			continue
		}
		if msg := r.errorText(t); !strings.Contains(msg, "1024") {
			t.Errorf("413 message %q does not name the limit", msg)
		}
	}
	// Without Content-Length (chunked), the cap still holds while reading.
	hr, _ := http.NewRequest("POST", e.ts.URL+"/api/execute", strings.NewReader(big))
	hr.ContentLength = -1
	hr.Header.Set("Authorization", "Bearer "+e.token)
	res, err := e.ts.Client().Do(hr)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusRequestEntityTooLarge {
		t.Errorf("chunked body over the cap: %d, want 413", res.StatusCode)
	}
	if _, err := os.Stat(filepath.Join(e.cfg.Workspace, "big.txt")); err == nil {
		t.Error("the verb ran although its request was over the cap")
	}
	// Just under the cap is fine.
	ok := `{"verb":"fs.exists","arguments":{"path":"` + strings.Repeat("a", 900) + `"}}`
	if r := e.do(req{method: "POST", path: "/api/execute", body: ok, ctype: "application/json", bearer: e.token}); r.status != http.StatusOK {
		t.Errorf("body under the cap: %d: %s", r.status, r.body)
	}
}

func TestNewRefusesBadConfig(t *testing.T) {
	e := newEnv(t, envConfig{})
	cases := []struct {
		name string
		web  config.Web
		want string
	}{
		{"public listener without token", config.Web{Listen: "0.0.0.0:8080"}, "token"},
		{"bad listen", config.Web{Listen: "8080"}, "host:port"},
		{"bad public url", config.Web{Listen: "127.0.0.1:0", PublicURL: "hub.example.org"}, "public_url"},
		{"bad origin", config.Web{Listen: "127.0.0.1:0", AllowOrigins: []string{"*"}}, "allowed_origins"},
		{"half TLS", config.Web{Listen: "127.0.0.1:0", TLSCert: "c.pem"}, "tls"},
	}
	for _, tc := range cases {
		_, err := New(serverOptions(e.rt, tc.web))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err = %v, want one mentioning %q", tc.name, err, tc.want)
		}
	}
	if _, err := New(Options{Config: config.Web{Listen: "127.0.0.1:0"}}); err == nil {
		t.Error("New without a runtime succeeded")
	}
	s, err := New(serverOptions(e.rt, config.Web{Listen: "10.1.2.3:8080", Token: config.NewSecret("a-configured-token-1234")}))
	if err != nil {
		t.Fatal(err)
	}
	if s.Token() != "a-configured-token-1234" {
		t.Error("the configured token is not used")
	}
	if g := e.srv.Token(); len(g) != 64 {
		t.Errorf("generated token %q is not 32 bytes of hex", g)
	}
}

func TestLoginThrottled(t *testing.T) {
	clk := fakeClock()
	e := newEnv(t, envConfig{opts: func(o *Options) { o.Clock = clk }})
	try := func(token string) response {
		return e.do(req{method: "POST", path: "/api/login", body: `{"token":"` + token + `"}`, ctype: "application/json"})
	}
	for i := 0; i < MaxLoginFailures; i++ {
		if r := try("guess"); r.status != http.StatusUnauthorized {
			t.Fatalf("wrong token %d: %d", i+1, r.status)
		}
		clk.Advance(time.Second)
	}
	r := try("guess")
	if r.status != http.StatusTooManyRequests {
		t.Fatalf("login after %d failures in a minute: %d, want 429", MaxLoginFailures, r.status)
	}
	if ra := r.header.Get("Retry-After"); ra != "50" {
		t.Errorf("Retry-After = %q, want 50 (the first failure leaves the window in 50 s)", ra)
	}
	// The right token is never refused by the throttle: it logs in, and the
	// bearer token keeps working for API clients meanwhile.
	if r := try(e.token); r.status != http.StatusOK {
		t.Fatalf("login with the right token during a lockout: %d: %s", r.status, r.body)
	}
	if r := e.authed("GET", "/api/status", ""); r.status != http.StatusOK {
		t.Errorf("bearer during a login lockout: %d", r.status)
	}
	clk.Advance(50 * time.Second)
	if r := try("guess"); r.status != http.StatusUnauthorized {
		t.Fatalf("wrong token once the window passed: %d: %s", r.status, r.body)
	}
}

func TestLoginLimiterBoundsMemory(t *testing.T) {
	clk := fakeClock()
	l := newLoginLimiter(clk.Now)
	for i := 0; i < 3*maxTrackedAddrs; i++ {
		l.fail(fmt.Sprintf("10.0.%d.%d", i/256, i%256))
	}
	if n := len(l.fails); n > maxTrackedAddrs {
		t.Errorf("%d addresses tracked, want at most %d", n, maxTrackedAddrs)
	}
	for i := 0; i < 3*MaxLoginFailures; i++ {
		l.fail("192.0.2.1")
	}
	if n := len(l.fails["192.0.2.1"]); n != MaxLoginFailures {
		t.Errorf("%d failures kept for one address, want %d", n, MaxLoginFailures)
	}
}
