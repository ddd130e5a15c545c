package config

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	"gopkg.in/yaml.v3"
)

func env(m map[string]string) Getenv {
	return func(k string) (string, bool) { v, ok := m[k]; return v, ok }
}

func TestNoConfigIsValid(t *testing.T) {
	cfg, err := LoadWith("", env(nil))
	if err != nil {
		t.Fatal(err)
	}
	if g := cfg.Access.Grants["web"]; len(g) != 1 || g[0] != OperatorRole || len(cfg.Access.Grants) != 1 {
		t.Fatalf("default access: %v", cfg.Access.Grants)
	}
	if cfg.Web.Listen != "127.0.0.1:8080" || !*cfg.Web.Enabled || cfg.Workspace != "." || cfg.StateDir != ".hub" || cfg.Telegram.Enabled || cfg.Discord.Enabled {
		t.Fatalf("defaults %+v", cfg)
	}
}

func TestExampleLoadsAndIsComplete(t *testing.T) {
	path := filepath.Join("..", "config.example.yml")
	cfg, err := LoadWith(path, env(map[string]string{"HUB_WEB_TOKEN": "0123456789abcdef0123"}))
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Web.Token.Reveal() != "0123456789abcdef0123" || cfg.Verbs.MaxReadBytes != 4<<20 || cfg.Outbox.Retention.D().Hours() != 168 {
		t.Fatalf("example values: %+v", cfg)
	}
	// Every key the Config type knows appears in the example (documented there).
	data, _ := os.ReadFile(path)
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		t.Fatal(err)
	}
	have := map[string]bool{}
	collectKeys(doc.Content[0], "", have)
	var missing []string
	for _, k := range typeKeys(reflect.TypeOf(Config{}), "") {
		if !have[k] {
			missing = append(missing, k)
		}
	}
	sort.Strings(missing)
	if len(missing) > 0 {
		t.Fatalf("config.example.yml does not document: %s", strings.Join(missing, ", "))
	}
	// Every key is preceded by a comment somewhere in its section: spot-check
	// that the file is commented at all.
	if strings.Count(string(data), "#") < 60 {
		t.Fatalf("config.example.yml is barely documented")
	}
}

func collectKeys(n *yaml.Node, prefix string, out map[string]bool) {
	if n.Kind != yaml.MappingNode {
		return
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k := prefix + n.Content[i].Value
		out[k] = true
		collectKeys(n.Content[i+1], k+".", out)
	}
}

func typeKeys(t reflect.Type, prefix string) []string {
	var out []string
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
		if name == "" || name == "-" {
			continue
		}
		out = append(out, prefix+name)
		ft := f.Type
		for ft.Kind() == reflect.Pointer {
			ft = ft.Elem()
		}
		if ft.Kind() == reflect.Struct && ft.NumField() > 0 && ft.Field(0).IsExported() && ft != reflect.TypeOf(Secret{}) {
			out = append(out, typeKeys(ft, prefix+name+".")...)
		}
	}
	return out
}

func TestStrictErrors(t *testing.T) {
	tests := []struct{ name, yaml, want string }{
		{"unknown top key", "workspace: .\nwebb:\n  listen: x\n", `line 2: unknown key "webb" in the top level: did you mean web? (accepted: workspace, state_dir, log, web,`},
		{"unknown nested key", "web:\n  listen: 127.0.0.1:1\n  lisen: x\n", `line 3: unknown key "lisen" in web: did you mean listen? (accepted: enabled, listen,`},
		{"unknown role key", "access:\n  roles:\n    admin:\n      verb: ['*']\n", `line 4: unknown key "verb" in access.roles.admin: did you mean verbs? (accepted: verbs, workspaces, confirm, approvers)`},
		{"bad type", "outbox:\n  concurrency: lots\n", `line 2: outbox.concurrency: "lots" is not a whole number (accepted: a whole number such as 64, without quotes)`},
		{"bad duration", "outbox:\n  retention: 7 days\n", `line 2: outbox.retention: "7 days" is not a duration`},
		{"bad size", "verbs:\n  max_read_bytes: 4 megs\n", `"4 megs" is not a size`},
		{"not yaml", "web: [\n", "not valid YAML"},
		{"not mapping", "- a\n- b\n", "must be a mapping"},
		{"bad listen", "web:\n  listen: nowhere\n", `web.listen: "nowhere" is not host:port`},
		{"public without token", "web:\n  listen: 0.0.0.0:8080\n", "web.listen: 0.0.0.0:8080 is not a loopback address, so web.token must be set"},
		{"short token", "web:\n  token: abc\n", "web.token is too short"},
		{"telegram without token", "telegram:\n  enabled: true\n", "telegram.token is empty but telegram.enabled is true"},
		{"telegram bad mode", "telegram:\n  enabled: true\n  token: x\n  mode: push\n", `telegram.mode: "push" is not accepted (accepted: polling, webhook)`},
		{"webhook needs url", "telegram:\n  enabled: true\n  token: x\n  mode: webhook\n", "web.public_url must be set"},
		{"bad identity", "access:\n  grants:\n    bob: [admin]\n  roles:\n    admin:\n      verbs: ['*']\n", `"bob" is not an identity (accepted: telegram:<user_id>, discord:<user_id>, discord-role:<role_id>, agent:<name>, schedule:<name>, web)`},
		{"unknown role", "access:\n  grants:\n    telegram:1: [root]\n", `role "root" is not defined`},
		{"bad glob", "access:\n  roles:\n    x:\n      verbs: ['fs.[']\n", `access.roles.x.verbs: "fs.[" is not a valid pattern`},
		{"bad level", "log:\n  level: loud\n", `log.level: "loud" is not accepted`},
		{"bad discord id", "discord:\n  enabled: true\n  token: x\n  command_guilds: [abc]\n", `"abc" is not a Discord id`},
		{"bad var", "web:\n  token: ${1BAD}\n", "bad variable name"},
		{"unterminated var", "web:\n  token: ${OOPS\n", "unterminated ${"},
		{"bad session mode", "sessions:\n  mode: sandbox\n", `sessions.mode: "sandbox" is not accepted (accepted: host, session)`},
		{"bad session root", "sessions:\n  root: ram\n", `sessions.root: "ram" is not accepted (accepted: state, temp)`},
		{"bad by_chat key", "sessions:\n  by_chat:\n    telegram:1: session\n", `sessions.by_chat: "telegram:1" is not a chat key`},
		{"by_chat key with a capital", "sessions:\n  by_chat:\n    \"chat:Telegram:1\": session\n", `sessions.by_chat: "chat:Telegram:1" is not a chat key`},
		{"by_chat key with a discord thread", "sessions:\n  by_chat:\n    \"chat:discord:1:2\": session\n", `sessions.by_chat: "chat:discord:1:2" is not a chat key`},
		{"by_chat local key", "sessions:\n  by_chat:\n    \"local:x.jsonl\": session\n", `sessions.by_chat: "local:x.jsonl" is not a chat key`},
		{"by_role unknown role", "sessions:\n  by_role:\n    agent: session\n", `sessions.by_role: role "agent" is not defined`},
		{"bad by_role mode", "sessions:\n  by_role:\n    reader: yes\n", `sessions.by_role.reader: "yes" is not accepted`},
		{"mounts without roots", "sessions:\n  mounts:\n    - host_path: docs\n", "sessions.mounts need sessions.mount_roots"},
		{"mount without host path", "sessions:\n  mount_roots: [/srv]\n  mounts:\n    - mount_path: docs\n", "sessions.mounts[0].host_path is empty"},
		{"non-ASCII host path", "sessions:\n  mount_roots: [/srv]\n  mounts:\n    - host_path: d\u00f6cs\n", "must be printable ASCII"},
		{"unknown mount key", "sessions:\n  mounts:\n    - host_path: docs\n      glob: x\n", `unknown key "glob" in sessions.mounts[0] (accepted: host_path, mount_path, include, exclude, max_bytes, follow_symlinks)`},
		{"negative ttl", "sessions:\n  idle_ttl: -1h\n", "sessions.idle_ttl, sessions.snapshot_ttl and sessions.sweep_interval must be positive"},
		{"no snapshots", "sessions:\n  max_snapshots: -1\n", "sessions.max_snapshots must be at least 1"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := filepath.Join(t.TempDir(), "hub.yml")
			os.WriteFile(p, []byte(tc.yaml), 0o600)
			_, err := LoadWith(p, env(nil))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want %q", err, tc.want)
			}
			if !strings.Contains(err.Error(), p) {
				t.Fatalf("error does not name the file: %v", err)
			}
		})
	}
}

func TestExpand(t *testing.T) {
	e := env(map[string]string{"A": "alpha", "EMPTY": "", "INJECT": "x\nweb:\n  listen: 0.0.0.0:1"})
	tests := []struct{ in, want string }{
		{"${A}", "alpha"}, {"pre-${A}-post", "pre-alpha-post"}, {"${MISSING}", ""},
		{"${MISSING:-d}", "d"}, {"${EMPTY:-d}", "d"}, {"${A:-d}", "alpha"}, {"$$A", "$A"}, {"cost $5", "cost $5"},
	}
	for _, tc := range tests {
		got, err := Expand(tc.in, e)
		if err != nil || got != tc.want {
			t.Errorf("Expand(%q) = %q, %v; want %q", tc.in, got, err, tc.want)
		}
	}
	// An environment value cannot inject structure: it stays one string value.
	var cfg Config
	if err := Parse([]byte("web:\n  public_url: ${INJECT}\n"), e, &cfg); err != nil {
		t.Fatal(err)
	}
	if cfg.Web.Listen != "" || !strings.Contains(cfg.Web.PublicURL, "listen: 0.0.0.0:1") {
		t.Fatalf("injection: %+v", cfg.Web)
	}
	// Keys are never expanded.
	if err := Parse([]byte("${A}: 1\n"), e, &cfg); err == nil || !strings.Contains(err.Error(), `unknown key "${A}"`) {
		t.Fatalf("key expansion: %v", err)
	}
}

func TestSecretNeverPrints(t *testing.T) {
	var cfg Config
	if err := Parse([]byte("telegram:\n  token: ${T}\n"), env(map[string]string{"T": "123:SECRET"}), &cfg); err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{cfg.Telegram.Token.String(), strings.ReplaceAll(strings.ReplaceAll(fmtAll(cfg), "\n", ""), " ", "")} {
		if strings.Contains(s, "SECRET") {
			t.Fatalf("secret printed: %s", s)
		}
	}
	if cfg.Telegram.Token.Reveal() != "123:SECRET" {
		t.Fatal("reveal")
	}
}

func TestSizes(t *testing.T) {
	for in, want := range map[string]int64{"1": 1, "64KiB": 64 << 10, "4MiB": 4 << 20, "1GiB": 1 << 30, "10MB": 10_000_000, "5 KB": 5000, "12B": 12} {
		got, err := ParseSize(in)
		if err != nil || got != want {
			t.Errorf("ParseSize(%q) = %d, %v", in, got, err)
		}
	}
	for _, bad := range []string{"", "-1", "1TiB", "x", "1.5MiB", "99999999999999999999"} {
		if _, err := ParseSize(bad); err == nil {
			t.Errorf("ParseSize(%q) accepted", bad)
		}
	}
}

func TestSessionsDefaultsAndDir(t *testing.T) {
	cfg, err := LoadWith("", env(nil))
	if err != nil {
		t.Fatal(err)
	}
	s := cfg.Sessions
	if s.Mode != "host" || s.Root != "state" || s.IdleTTL.D().Hours() != 24 || s.SnapTTL.D().Hours() != 168 || s.MaxSnapshots != 20 || s.SweepInterval.D().Minutes() != 5 || s.AllowProc {
		t.Fatalf("session defaults %+v", s)
	}
	cfg.StateDir = "/var/lib/hub"
	if got := cfg.SessionsDir(); got != "/var/lib/hub/sessions" {
		t.Fatalf("state root: %s", got)
	}
	cfg.Sessions.Root = "temp"
	if got, want := cfg.SessionsDir(), filepath.Join(os.TempDir(), fmt.Sprintf("hermes-hub-sessions-%d", os.Getuid())); got != want {
		t.Fatalf("temp root: %s, want %s", got, want)
	}
}

// TestDocumentedConfigurationsLoad loads every YAML block of the README and
// docs/ as a configuration, so that an example a reader copies never fails
// with an unknown key or a validation error.
func TestDocumentedConfigurationsLoad(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("..", "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	files = append(files, filepath.Join("..", "README.md"))
	block := regexp.MustCompile("(?s)```ya?ml\n(.*?)```")
	environ := env(map[string]string{
		"TELEGRAM_BOT_TOKEN": "123456:test", "DISCORD_BOT_TOKEN": "test-token",
		"HUB_WEB_TOKEN": "0123456789abcdef0123", "TELEGRAM_WEBHOOK_SECRET": "abcdefghijklmnop0123",
		"HUB_MCP_CLAUDE_TOKEN": "claude-0123456789abcdef", "HUB_MCP_CI_TOKEN": "ci-0123456789abcdef",
	})
	n := 0
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for i, m := range block.FindAllSubmatch(data, -1) {
			n++
			cfg := &Config{}
			if err := Parse(m[1], environ, cfg); err != nil {
				t.Errorf("%s, YAML block %d: %v", f, i+1, err)
				continue
			}
			cfg.ApplyDefaults()
			if err := cfg.Validate(); err != nil {
				t.Errorf("%s, YAML block %d: %v", f, i+1, err)
			}
		}
	}
	if n == 0 {
		t.Fatal("no YAML blocks found in the README and docs/")
	}
}

// TestStateDirPlacement: a state directory that is the workspace or holds
// it is refused, by its spelling and through symbolic links; one inside the
// workspace (the default) or beside it is accepted.
func TestStateDirPlacement(t *testing.T) {
	base := t.TempDir()
	ws := filepath.Join(base, "ws")
	if err := os.MkdirAll(filepath.Join(ws, ".hub"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(ws, filepath.Join(base, "link")); err != nil {
		t.Fatal(err)
	}
	up := filepath.Join(t.TempDir(), "up")
	if err := os.Symlink(base, up); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, workspace, state string
		ok                     bool
	}{
		{"default inside", ws, filepath.Join(ws, ".hub"), true},
		{"relative inside", ".", ".hub", true},
		{"beside", ws, filepath.Join(base, "state"), true},
		{"not yet created inside", ws, filepath.Join(ws, "var", "hub"), true},
		{"equal", ws, ws, false},
		{"equal with a trailing slash", ws, ws + "/", false},
		{"relative equal", ".", ".", false},
		{"parent", ws, base, false},
		{"root", ws, "/", false},
		{"equal through a link", filepath.Join(base, "link"), ws, false},
		{"parent of the link's target", filepath.Join(base, "link"), base, false},
		{"parent through a link", ws, up, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := filepath.Join(t.TempDir(), "hub.yml")
			os.WriteFile(p, []byte(fmt.Sprintf("workspace: %q\nstate_dir: %q\n", tc.workspace, tc.state)), 0o600)
			_, err := LoadWith(p, env(nil))
			if tc.ok {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			for _, want := range []string{"state_dir: ", "is the workspace", "or contains it", "accepted: a directory inside the workspace"} {
				if err == nil || !strings.Contains(err.Error(), want) {
					t.Fatalf("got %v, want a message with %q", err, want)
				}
			}
		})
	}
}

// TestMCPLimits: the caps and timeouts of /mcp have defaults (idle
// sessions expire, the web token is refused) and ranges, each error naming
// the key and what is accepted; /mcp needs an agent unless the web token is
// let in.
func TestMCPLimits(t *testing.T) {
	d := Default().MCP
	if d.SessionTimeout.D() != time.Hour || d.StreamIdleTimeout.D() != 5*time.Minute || d.MaxSessions != 256 ||
		d.MaxSessionsPerAgent != 32 || d.MaxStreamsPerAgent != 64 || d.AcceptWebToken {
		t.Fatalf("mcp defaults: %+v", d)
	}
	const agent = "mcp:\n  enabled: true\n  agents:\n    claude:\n      token: 0123456789abcdef00\n"
	for _, tc := range []struct{ name, yml, want string }{
		{"no agent", "mcp:\n  enabled: true\n", "mcp.enabled is true but mcp.agents is empty: give each agent its own token under mcp.agents (docs/mcp.md), or set mcp.accept_web_token: true"},
		{"the web token let in", "web:\n  token: 0123456789abcdef00\nmcp:\n  enabled: true\n  accept_web_token: true\n", ""},
		{"session timeout", agent + "  session_timeout: 500ms\n", "mcp.session_timeout: 500ms is out of range (accepted: 1s to 24h)"},
		{"stream idle timeout", agent + "  stream_idle_timeout: 48h\n", "mcp.stream_idle_timeout: 48h0m0s is out of range (accepted: 1s to 24h)"},
		{"sessions", agent + "  max_sessions: 70000\n", "mcp.max_sessions: 70000 is out of range (accepted: 1 to 65536 sessions)"},
		{"per agent over all", agent + "  max_sessions: 10\n  max_sessions_per_agent: 11\n", "mcp.max_sessions_per_agent: 11 is out of range (accepted: 1 to mcp.max_sessions, 10)"},
		{"streams not over sessions", agent + "  max_sessions_per_agent: 8\n  max_streams_per_agent: 8\n", "mcp.max_streams_per_agent: 8 is out of range (accepted: more than mcp.max_sessions_per_agent, 8,"},
		{"all set", agent + "  session_timeout: 10m\n  stream_idle_timeout: 1s\n  max_sessions: 4\n  max_sessions_per_agent: 2\n  max_streams_per_agent: 3\n", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := filepath.Join(t.TempDir(), "hub.yml")
			if err := os.WriteFile(p, []byte(tc.yml), 0o600); err != nil {
				t.Fatal(err)
			}
			_, err := LoadWith(p, env(nil))
			if tc.want == "" && err != nil || tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)) {
				t.Fatalf("error %v, want %q", err, tc.want)
			}
		})
	}
}

func TestMCPSection(t *testing.T) {
	dir := t.TempDir()
	tokFile := writeTokenFile(t, dir, "mcp-claude", "0123456789abcdefXYZ\n", 0o600)
	tests := []struct{ name, yaml, want string }{
		{"agent grant", "mcp:\n  enabled: true\n  agents:\n    claude:\n      token: 0123456789abcdef00\naccess:\n  grants:\n    agent:claude: [admin]\n  roles:\n    admin:\n      verbs: ['*']\n", ""},
		{"token file", "mcp:\n  enabled: true\n  agents:\n    claude:\n      token_file: " + tokFile + "\n", ""},
		{"both token and file", "mcp:\n  agents:\n    claude:\n      token: 0123456789abcdef00\n      token_file: " + tokFile + "\n", "mcp.agents.claude.token and mcp.agents.claude.token_file are both set"},
		{"empty token", "mcp:\n  enabled: true\n  agents:\n    claude: {}\n", "mcp.agents.claude.token is empty"},
		{"short token", "mcp:\n  enabled: true\n  agents:\n    claude:\n      token: short\n", "mcp.agents.claude.token is too short"},
		{"bad name", "mcp:\n  enabled: true\n  agents:\n    Claude:\n      token: 0123456789abcdef00\n", `"Claude" is not an agent name`},
		{"same tokens", "mcp:\n  enabled: true\n  agents:\n    a:\n      token: 0123456789abcdef00\n    b:\n      token: 0123456789abcdef00\n", "mcp.agents.a and mcp.agents.b have the same token"},
		{"web token reused", "web:\n  token: 0123456789abcdef00\nmcp:\n  enabled: true\n  agents:\n    a:\n      token: 0123456789abcdef00\n", "mcp.agents.a.token is the web token"},
		{"without web", "web:\n  enabled: false\nmcp:\n  enabled: true\n", "web.enabled is false"},
		{"bad agent identity", "access:\n  grants:\n    agent:-x: [reader]\n", `"agent:-x" is not an identity`},
		{"unknown key", "mcp:\n  agents:\n    a:\n      secret: x\n", `unknown key "secret" in mcp.agents.a (accepted: token, token_file)`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := filepath.Join(t.TempDir(), "hub.yml")
			if err := os.WriteFile(p, []byte(tt.yaml), 0o600); err != nil {
				t.Fatal(err)
			}
			cfg, err := LoadWith(p, env(nil))
			switch {
			case tt.want == "" && err != nil:
				t.Fatalf("unexpected error: %v", err)
			case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
				t.Fatalf("error %v, want it to contain %q", err, tt.want)
			case tt.want == "" && cfg.MCP.Agents["claude"].Token.Reveal() == "":
				t.Fatalf("claude's token was not read: %+v", cfg.MCP)
			}
		})
	}
}
