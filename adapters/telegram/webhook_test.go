package telegram

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/a6afc2ce/hermes-hub/internal/testkit"

	"github.com/a6afc2ce/hermes-hub/adapters/telegram/telegramtest"
)

// webListener stands in for the web adapter's listener: Mount registers
// on its mux.
type webListener struct {
	mux *http.ServeMux
	srv *httptest.Server
}

func newWebListener(t testing.TB) *webListener {
	w := &webListener{mux: http.NewServeMux()}
	w.srv = httptest.NewServer(w.mux)
	t.Cleanup(w.srv.Close)
	return w
}

func (w *webListener) mount(pattern string, h http.Handler) { w.mux.Handle(pattern, h) }

func postRaw(t testing.TB, url, secret string, body []byte) int {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, url, bytes.NewReader(body))
	if secret != "" {
		req.Header.Set(SecretHeader, secret)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

func TestWebhookMode(t *testing.T) {
	f := newFakeBot(t)
	web := newWebListener(t)
	h := startHarness(t, f, hopts{mode: ModeWebhook, mount: web.mount, public: web.srv.URL + "/"})
	h.waitRunning()
	sets := f.CallsOf("setWebhook")
	if len(sets) != 1 {
		t.Fatalf("%d setWebhook calls", len(sets))
	}
	hook, secret := sets[0].Params.Get("url"), sets[0].Params.Get("secret_token")
	if hook != web.srv.URL+"/telegram/webhook" || secret != "s3cret_token-1" || sets[0].Params.Get("allowed_updates") == "" {
		t.Fatalf("setWebhook %v", sets[0].Params)
	}
	if len(f.CallsOf("getUpdates")) != 0 {
		t.Fatal("webhook mode must not poll")
	}

	// Telegram posts with the secret: the turn runs and is answered.
	u := telegramtest.TextUpdate(telegramtest.NextUpdateID(), 1, 1, 70, "/test_count hook")
	if codes := f.Push(u); len(codes) != 1 || codes[0] != http.StatusOK {
		t.Fatalf("webhook answered %v", codes)
	}
	testkit.WaitFor(t, "the reply", func() bool { return len(f.MessagesTo("1")) == 1 })
	// A repeat of the same update is acknowledged and not run again.
	if codes := f.Push(u); codes[0] != http.StatusOK {
		t.Fatalf("repeat answered %v", codes)
	}

	// Wrong or missing secret: 401 and nothing is processed.
	forged, _ := json.Marshal(telegramtest.TextUpdate(telegramtest.NextUpdateID(), 1, 1, 71, "/test_count forged"))
	for _, s := range []string{"", "wrong", "s3cret_token-", "s3cret_token-1x", strings.ToUpper("s3cret_token-1")} {
		if code := postRaw(t, hook, s, forged); code != http.StatusUnauthorized {
			t.Fatalf("secret %q: status %d, want 401", s, code)
		}
	}
	if code := postRaw(t, hook, "s3cret_token-1", []byte("{not json")); code != http.StatusBadRequest {
		t.Fatalf("a body that is not an update: %d", code)
	}
	resp, err := http.Get(hook)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusMethodNotAllowed {
		t.Fatalf("GET: %d", resp.StatusCode)
	}
	if h.tv.count("hook") != 1 || h.tv.count("forged") != 0 {
		t.Fatalf("runs: hook %d forged %d", h.tv.count("hook"), h.tv.count("forged"))
	}
	if rec, _ := h.rt.Ledger.Get("telegram.1.71"); rec != nil {
		t.Fatalf("a forged update reached the hub: %+v", rec)
	}

	// Once stopped, the endpoint answers 503 so that Telegram retries.
	h.stop()
	if code := postRaw(t, hook, "s3cret_token-1", forged); code != http.StatusServiceUnavailable {
		t.Fatalf("after stop: %d, want 503", code)
	}

	// Switching back to polling deletes the webhook; polling then works.
	h2 := startHarness(t, f, hopts{ws: h.ws, tv: h.tv})
	h2.waitRunning()
	f.Push(telegramtest.TextUpdate(telegramtest.NextUpdateID(), 1, 1, 72, "/test_count polled"))
	testkit.WaitFor(t, "the polled reply", func() bool { return h2.tv.count("polled") == 1 && len(f.MessagesTo("1")) == 2 })
	if len(f.CallsOf("deleteWebhook")) == 0 {
		t.Fatal("polling mode did not delete the webhook")
	}
}

func TestWebhookNeedsMountAndSecret(t *testing.T) {
	f := newFakeBot(t)
	cfg := testTelegramConfig(t, f, hopts{mode: ModeWebhook}, t.TempDir(), t.TempDir())
	if _, err := New(Options{Config: cfg.Telegram, PublicURL: "https://hub.invalid"}); err == nil || !strings.Contains(err.Error(), "web listener") {
		t.Fatalf("no Mount: %v", err)
	}
	mount := func(string, http.Handler) {}
	if _, err := New(Options{Config: cfg.Telegram, Mount: mount}); err == nil || !strings.Contains(err.Error(), "public_url") {
		t.Fatalf("no public URL: %v", err)
	}
	bad := cfg.Telegram
	bad.Webhook.SecretToken = cfgSecret("has spaces")
	if _, err := New(Options{Config: bad, PublicURL: "https://hub.invalid", Mount: mount}); err == nil || !strings.Contains(err.Error(), "secret_token") {
		t.Fatalf("bad secret: %v", err)
	}
}
