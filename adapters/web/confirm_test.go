package web

import (
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/a6afc2ce/hermes-hub/config"
)

// TestConfirmFromThePanel: a verb the web identity's role holds for
// confirmation is answered with a reply event naming the held call
// (confirm, confirm_stage), which the panel turns into its dialog; POST
// /api/confirm with Run runs it once, a second Run is answered that it
// was decided; a bad id or action is a 400.
func TestConfirmFromThePanel(t *testing.T) {
	e := newEnv(t, envConfig{mod: func(c *config.Config) {
		c.Access.Roles["admin"] = config.Role{Verbs: []string{"*", "admin.*"}, Confirm: []string{"fs.deleteFile"}}
	}})
	e.writeFile("old.log", "x")
	sse := e.openSSE("")
	defer sse.close()
	e.message("/fs.deleteFile old.log", "c1")
	var prompt Event
	sse.until(func(ev Event) bool {
		if ev.Confirm != "" {
			prompt = ev
			return true
		}
		return false
	})
	if prompt.ConfirmStage != "run" || prompt.Type != EventReply || !strings.Contains(prompt.Text, `"verb":"fs.deleteFile"`) {
		t.Fatalf("prompt %+v", prompt)
	}
	ws := e.cfg.Workspace
	if _, err := os.Stat(filepath.Join(ws, "old.log")); err != nil {
		t.Fatal("the held call ran before its Run")
	}
	pressed := func(body string) (int, string) {
		r := e.authed("POST", "/api/confirm", body)
		var m map[string]string
		json.Unmarshal([]byte(r.body), &m)
		return r.status, m["text"] + m["error"]
	}
	body, _ := json.Marshal(ConfirmRequest{ID: prompt.Confirm, Action: "run"})
	if st, txt := pressed(string(body)); st != http.StatusOK || txt != "Running it." {
		t.Fatalf("Run: %d %q", st, txt)
	}
	if _, err := os.Stat(filepath.Join(ws, "old.log")); err == nil {
		t.Fatal("Run did not run the call")
	}
	if st, txt := pressed(string(body)); st != http.StatusOK || !strings.Contains(txt, "already decided") {
		t.Fatalf("Run twice: %d %q", st, txt)
	}
	for _, bad := range []string{`{"id":"../x","action":"run"}`, `{"id":"` + prompt.Confirm + `","action":"explode"}`} {
		if st, txt := pressed(bad); st != http.StatusBadRequest || !strings.Contains(txt, "accepted") {
			t.Fatalf("%s: %d %q", bad, st, txt)
		}
	}
}
