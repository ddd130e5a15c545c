package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestListenPrecedence: web.listen is the command line's, else
// HUB_WEB_LISTEN's (whatever the file says), else the file's, else the
// default; a value from outside the file is checked like the file's, and
// its error says where it came from and names no line of the file.
func TestListenPrecedence(t *testing.T) {
	path := filepath.Join(t.TempDir(), "hub.yml")
	os.WriteFile(path, []byte("log:\n  level: info\nweb:\n  listen: 127.0.0.1:7001\n"), 0o600)
	for _, tc := range []struct {
		name, file string
		env        map[string]string
		flag       string
		want, from string
	}{
		{"default", "", nil, "", "127.0.0.1:8080", ""},
		{"file", path, nil, "", "127.0.0.1:7001", ""},
		{"environment over the default", "", map[string]string{"HUB_WEB_LISTEN": "127.0.0.1:7002"}, "", "127.0.0.1:7002", ListenEnv},
		{"environment over the file", path, map[string]string{"HUB_WEB_LISTEN": "127.0.0.1:7002"}, "", "127.0.0.1:7002", ListenEnv},
		{"an empty environment variable is unset", path, map[string]string{"HUB_WEB_LISTEN": ""}, "", "127.0.0.1:7001", ""},
		{"flag over both", path, map[string]string{"HUB_WEB_LISTEN": "127.0.0.1:7002"}, "127.0.0.1:7003", "127.0.0.1:7003", ListenFlag},
	} {
		cfg, err := LoadWith(tc.file, env(tc.env), Listen(tc.flag))
		if err != nil || cfg.Web.Listen != tc.want || cfg.Web.ListenFrom != tc.from {
			t.Errorf("%s: %v %+v", tc.name, err, cfg)
		}
	}
	_, err := LoadWith(path, env(map[string]string{"HUB_WEB_LISTEN": "0.0.0.0:8080"}))
	if err == nil || err.Error() != "config "+path+": web.listen (from HUB_WEB_LISTEN): 0.0.0.0:8080 is not a loopback address, so web.token must be set (for example token: ${HUB_WEB_TOKEN}); without a token the panel only binds to 127.0.0.1" {
		t.Errorf("HUB_WEB_LISTEN not on loopback: %v", err)
	}
	_, err = LoadWith(path, env(nil), Listen("nope"))
	if err == nil || !strings.Contains(err.Error(), `web.listen (from --listen): "nope" is not host:port`) || strings.Contains(err.Error(), "line") {
		t.Errorf("--listen not host:port: %v", err)
	}
	// With a token, any address goes.
	os.WriteFile(path, []byte("web:\n  token: 0123456789abcdef0123\n"), 0o600)
	if cfg, err := LoadWith(path, env(map[string]string{"HUB_WEB_LISTEN": "0.0.0.0:8080"})); err != nil || cfg.Web.Listen != "0.0.0.0:8080" {
		t.Errorf("HUB_WEB_LISTEN with a token: %v", err)
	}
	// The panel off: the environment is ignored, the flag refused.
	os.WriteFile(path, []byte("web:\n  enabled: false\n"), 0o600)
	if _, err := LoadWith(path, env(map[string]string{"HUB_WEB_LISTEN": "bad"})); err != nil {
		t.Errorf("HUB_WEB_LISTEN with the panel off: %v", err)
	}
	if _, err := LoadWith(path, env(nil), Listen("127.0.0.1:1")); err == nil || !strings.Contains(err.Error(), "web.listen (from --listen) moves the web panel, which is off (web.enabled: false)") {
		t.Errorf("--listen with the panel off: %v", err)
	}
}

// TestStateDirOf: state_dir read from a file that does not load as a
// whole, expanded as Load expands it.
func TestStateDirOf(t *testing.T) {
	path := filepath.Join(t.TempDir(), "hub.yml")
	e := env(map[string]string{"SCRATCH": "/tmp/s"})
	for yml, want := range map[string]string{
		"state_dir: ${SCRATCH}/state\nweb:\n  lisen: typo\n":            "/tmp/s/state",
		"state_dir: \"${SCRATCH}/st\" # comment\n":                      "/tmp/s/st",
		"state_dir: ${NOPE:-/var/lib/hub}\n":                            "/var/lib/hub",
		"web: [unclosed\nstate_dir: '${SCRATCH}/x' # not YAML at all\n": "/tmp/s/x",
		"web:\n  listen: 127.0.0.1:1\n":                                 "",
		"web:\n  state_dir: nested\n":                                   "",
	} {
		os.WriteFile(path, []byte(yml), 0o600)
		if got := StateDirOf(path, e); got != want {
			t.Errorf("%q: %q, want %q", yml, got, want)
		}
	}
	if got := StateDirOf(path+".missing", e); got != "" {
		t.Errorf("missing file: %q", got)
	}
}
