package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestOneDocument: a second YAML document in the hub's or a node's
// configuration is refused with its line, where it used to be ignored
// along with what it set; a leading "---" and a "..." end stay accepted.
func TestOneDocument(t *testing.T) {
	hubEnv := env(nil)
	for _, tc := range []struct{ name, yaml, want string }{
		{"second document", "web:\n  listen: 127.0.0.1:1\n---\naccess:\n  default_roles: [reader]\n", "line 3: a second YAML document starts here"},
		{"empty second document", "web:\n  listen: 127.0.0.1:1\n---\n", "line 3: a second YAML document starts here"},
		{"broken second document", "web:\n  listen: 127.0.0.1:1\n---\naccess: [\n", "not valid YAML"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := filepath.Join(t.TempDir(), "hub.yml")
			os.WriteFile(p, []byte(tc.yaml), 0o600)
			_, err := LoadWith(p, hubEnv)
			if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), p) {
				t.Fatalf("got %v, want %q and the file", err, tc.want)
			}
			if tc.name == "second document" && !strings.Contains(err.Error(), "the file must hold one document") {
				t.Fatalf("the error does not say what is accepted: %v", err)
			}
		})
	}
	for _, ok := range []string{"---\nweb:\n  listen: 127.0.0.1:1\n", "web:\n  listen: 127.0.0.1:1\n...\n", "# only a comment\n"} {
		p := filepath.Join(t.TempDir(), "hub.yml")
		os.WriteFile(p, []byte(ok), 0o600)
		if _, err := LoadWith(p, hubEnv); err != nil {
			t.Errorf("%q: %v", ok, err)
		}
	}
	p := filepath.Join(t.TempDir(), "node.yml")
	os.WriteFile(p, []byte("node: {name: db-1, nats_url: nats://h:4222, nkey_file: k}\nworkspaces: {logs: {path: /var/log}}\n---\nworkspaces: {root: {path: /}}\n"), 0o600)
	if _, err := LoadNode(p, hubEnv); err == nil || !strings.Contains(err.Error(), "line 3: a second YAML document starts here") {
		t.Fatalf("node config with two documents: %v", err)
	}
}
