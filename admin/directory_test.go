package admin_test

import (
	"context"
	"github.com/a6afc2ce/hermes-hub/admin"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/a6afc2ce/hermes-hub/chat"
	"github.com/a6afc2ce/hermes-hub/clock"
	"github.com/a6afc2ce/hermes-hub/store"
)

// TestEveryAdminSeesARebuiltDirectory: a running hub serves the admin API
// twice (the admin socket, the web panel), each built over its runtime. A channel directory rebuilt
// through one of them is the one both list from.
func TestEveryAdminSeesARebuiltDirectory(t *testing.T) {
	ws := t.TempDir()
	state := filepath.Join(ws, ".hub")
	if err := os.MkdirAll(filepath.Join(state, "chat"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(state, store.ChannelDirectory), []byte("not json"), 0o600); err != nil {
		t.Fatal(err)
	}
	clk := clock.Real{}
	rt := openRuntime(t, ws, state, clk)
	in := &chat.Inbound{
		TurnID: "telegram.100.1", Platform: chat.Telegram, ChatID: "100", MessageID: "1",
		UserID: "1", UserName: "u", ChatType: "private", Text: "/whoami", Time: clk.Now(),
	}
	if _, err := rt.Hub.Handle(context.Background(), in); err != nil {
		t.Fatal(err)
	}
	socket, panel := admin.ForRuntime(rt).HandlerAs(admin.Operator), admin.ForRuntime(rt).HandlerAs(admin.Operator)
	do := func(h http.Handler, method, path string) (int, string) {
		var body *strings.Reader
		if method == http.MethodPost {
			body = strings.NewReader("{}")
		} else {
			body = strings.NewReader("")
		}
		w := httptest.NewRecorder()
		h.ServeHTTP(w, httptest.NewRequest(method, path, body))
		return w.Code, w.Body.String()
	}
	if code, body := do(panel, http.MethodGet, "/api/channels"); code != http.StatusServiceUnavailable {
		t.Fatalf("with the directory file damaged: %d %s", code, body)
	}
	if code, body := do(socket, http.MethodPost, "/api/channels/rebuild"); code != http.StatusOK {
		t.Fatalf("rebuild through the socket: %d %s", code, body)
	}
	code, body := do(panel, http.MethodGet, "/api/channels")
	if code != http.StatusOK || !strings.Contains(body, `"chat_id":"100"`) {
		t.Fatalf("the panel after a rebuild through the socket: %d %s", code, body)
	}
	if code, body := do(panel, http.MethodPost, "/api/channels/rebuild"); code != http.StatusOK {
		t.Fatalf("rebuild through the panel: %d %s", code, body)
	}
	if code, body := do(socket, http.MethodGet, "/api/channels"); code != http.StatusOK || !strings.Contains(body, `"chat_id":"100"`) {
		t.Fatalf("the socket after a rebuild through the panel: %d %s", code, body)
	}
}
