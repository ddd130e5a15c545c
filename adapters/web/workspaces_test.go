package web

import (
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/a6afc2ce/hermes-hub/config"
	"github.com/a6afc2ce/hermes-hub/hub/hubtest"
)

// TestExecuteWorkspaceParam: POST /api/execute?workspace=NAME runs in NAME;
// an unknown name, a name the web identity may not use, a malformed name
// and an envelope that names another workspace are refused, each clearly.
func TestExecuteWorkspaceParam(t *testing.T) {
	root := t.TempDir()
	for _, d := range []string{"main", "a", "s"} {
		if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(root, d, "where.txt"), []byte("in "+d), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	e := newEnv(t, envConfig{workspace: filepath.Join(root, "main"), hub: hubtest.Options{Workspaces: true}, mod: func(cfg *config.Config) {
		cfg.Workspaces.Named = map[string]config.WorkspaceConfig{
			"alpha":  {Path: filepath.Join(root, "a"), Destination: config.Destination{Kind: config.DestinationLocal}},
			"secret": {Path: filepath.Join(root, "s"), Destination: config.Destination{Kind: config.DestinationLocal}},
		}
		cfg.Access.Roles["admin"] = config.Role{Verbs: []string{"*", "admin.*"}, Workspaces: []string{"default", "alpha"}}
		cfg.Access.Roles["keeper"] = config.Role{Verbs: []string{"*"}, Workspaces: []string{"secret"}}
		if err := cfg.Validate(); err != nil {
			t.Fatal(err)
		}
	}})
	read := `{"verb":"fs.readFile","arguments":{"path":"where.txt"}}`
	for _, c := range []struct {
		name, query, body string
		code              int
		want              []string
	}{
		{"no choice: default", "", read, 200, []string{`"succeeded":true`, `"content":"in main"`}},
		{"accepted", "?workspace=alpha", read, 200, []string{`"succeeded":true`, `"content":"in a"`}},
		{"envelope agrees", "?workspace=alpha", `{"verb":"fs.readFile","arguments":{"path":"where.txt"},"workspace":"alpha"}`, 200, []string{`"content":"in a"`}},
		{"unknown", "?workspace=nope", read, 200, []string{`"succeeded":false`, `workspace \"nope\" is not configured (accepted: default, alpha, secret)`}},
		{"not open to web", "?workspace=secret", read, 200, []string{`"succeeded":false`, `workspace \"secret\" (chosen for this call) is not open to your roles (admin); roles that may use it: keeper`}},
		{"envelope disagrees", "?workspace=alpha", `{"verb":"fs.readFile","arguments":{"path":"where.txt"},"workspace":"secret"}`, 200, []string{`"succeeded":false`, `names workspace \"secret\" and the request \"alpha\"`}},
		{"malformed", "?workspace=Not%20A%20Name", read, 400, []string{`workspace: `, `is not a workspace name`}},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := e.do(req{method: "POST", path: "/api/execute" + c.query, body: c.body, ctype: "application/json", bearer: e.token})
			if r.status != c.code {
				t.Fatalf("status %d, want %d: %s", r.status, c.code, r.body)
			}
			for _, w := range c.want {
				if !strings.Contains(string(r.body), w) {
					t.Fatalf("body %s\nwant %s", r.body, w)
				}
			}
			if c.code == http.StatusOK && strings.Contains(string(r.body), `"succeeded":false`) && strings.Contains(string(r.body), "in s") {
				t.Fatalf("a refused call ran: %s", r.body)
			}
		})
	}
}
