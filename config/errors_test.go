package config

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// load writes yml to a hub.yml of its own and loads it; it returns the
// file's path and the error.
func load(t *testing.T, yml string, environ map[string]string) (string, error) {
	t.Helper()
	p := filepath.Join(t.TempDir(), "hub.yml")
	if err := os.WriteFile(p, []byte(yml), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := LoadWith(p, env(environ))
	return p, err
}

// refusedWith fails unless yml is refused with an error that starts with
// want (the file's path left out).
func refusedWith(t *testing.T, yml, want string) {
	t.Helper()
	p, err := load(t, yml, nil)
	if err == nil {
		t.Fatal("accepted")
	}
	got := strings.ReplaceAll(err.Error(), "config "+p+": ", "")
	if !strings.HasPrefix(got, want) {
		t.Fatalf("got\n%s\nwant it to start with\n%s", got, want)
	}
}

// problems are the *Error values err joins, in order.
func problems(t *testing.T, err error) []*Error {
	t.Helper()
	if err == nil {
		t.Fatal("the configuration was accepted")
	}
	list := []error{err}
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		list = j.Unwrap()
	}
	var out []*Error
	for _, e := range list {
		var ce *Error
		if !errors.As(e, &ce) {
			t.Fatalf("%v is not a *config.Error", e)
		}
		out = append(out, ce)
	}
	return out
}

// TestErrorMessagesGolden pins whole messages: a value of the wrong type,
// an unknown key with its suggestion, missing required values, several
// problems at once, a number from the environment, a key written twice, a
// syntax error and a bad ${…}.
// Each names the file, the line and the key path, and what is accepted or
// how to fix it.
func TestErrorMessagesGolden(t *testing.T) {
	for _, tc := range []struct {
		name, yml string
		env       map[string]string
		want      string
	}{
		{"wrong type", "web:\n  listen: 127.0.0.1:8080\n  enabled: yes please\n", nil,
			`config FILE: line 3: web.enabled: "yes please" is not a boolean (accepted: true or false)`},
		{"unknown key", "web:\n  lisen: 127.0.0.1:8080\n", nil,
			`config FILE: line 2: unknown key "lisen" in web: did you mean listen? (accepted: enabled, listen, token, token_file, public_url, tls_cert, tls_key, max_body_bytes, history, allowed_origins, trusted_proxies, allowed_hosts, max_connections, max_connections_per_client, header_timeout, body_timeout, write_timeout, idle_timeout)`},
		{"telegram without token", "telegram:\n  enabled: true\n", nil,
			`config FILE: line 2: telegram.token is empty but telegram.enabled is true: set it from the environment, e.g. token: ${TELEGRAM_BOT_TOKEN}, or name a file holding it in telegram.token_file`},
		{"docker without image", "workspaces:\n  sandbox:\n    path: ./sb\n    destination:\n      kind: docker\n", nil,
			`config FILE: line 5: workspaces.sandbox.destination.image is empty (accepted: an image present on the Docker host, such as debian:bookworm-slim)`},
		{"agent without token", "mcp:\n  enabled: true\n  agents:\n    claude: {}\n", nil,
			`config FILE: line 4: mcp.agents.claude.token is empty: set it from the environment, e.g. token: ${HUB_MCP_CLAUDE_TOKEN}, or name a token_file`},
		{"several, in the order of their lines", "web:\n  listen: nowhere\ntelegram:\n  enabled: true\n  mode: push\n", nil,
			"config FILE: line 2: web.listen: \"nowhere\" is not host:port (for example 127.0.0.1:8080)\n" +
				"config FILE: line 4: telegram.token is empty but telegram.enabled is true: set it from the environment, e.g. token: ${TELEGRAM_BOT_TOKEN}, or name a file holding it in telegram.token_file\n" +
				`config FILE: line 5: telegram.mode: "push" is not accepted (accepted: polling, webhook)`},
		{"number from the environment", "outbox:\n  concurrency: ${CONCURRENCY}\n", map[string]string{"CONCURRENCY": "8"},
			`config FILE: line 2: outbox.concurrency: ${CONCURRENCY} gives "8": values from the environment are text, never a whole number (accepted: a whole number written in the file itself)`},
		{"unset variable for a boolean", "telegram:\n  enabled: ${TELEGRAM_ON}\n", nil,
			`config FILE: line 2: telegram.enabled: ${TELEGRAM_ON} gives "": values from the environment are text, never a boolean (accepted: a boolean written in the file itself)`},
		{"key written twice", "outbox:\n  retention: 24h\n  retention: 48h\n", nil,
			`config FILE: line 3: outbox.retention is written twice, on lines 2 and 3 (accepted: once; remove one)`},
		{"not YAML", "web:\n  listen: \"127.0.0.1:8080\n", nil,
			`config FILE: line 2: not valid YAML: found unexpected end of stream`},
		{"bad variable", "web:\n  token: ${1BAD}\n", nil,
			`config FILE: line 2: web.token: bad variable name "1BAD" in ${…} (accepted: letters, digits and _, as in ${TELEGRAM_BOT_TOKEN} or ${PORT:-8080})`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := load(t, tc.yml, tc.env)
			if err == nil {
				t.Fatal("accepted")
			}
			if got := strings.ReplaceAll(err.Error(), p, "FILE"); got != tc.want {
				t.Fatalf("got\n%s\nwant\n%s", got, tc.want)
			}
		})
	}
}

// TestWrongTypeEverySection: a value of the wrong kind, in every section,
// is refused with the file, its line, its key path and what is accepted,
// never yaml.v3's "cannot unmarshal".
func TestWrongTypeEverySection(t *testing.T) {
	const nats = "nats: {embedded: true}\n"
	for _, tc := range []struct {
		yml      string
		line     int
		key      string
		accepted string
	}{
		{"workspace: [a, b]\n", 1, "workspace", "not text (accepted: text"},
		{"state_dir: {a: b}\n", 1, "state_dir", "a mapping is not text"},
		{"log:\n  level: [debug]\n", 2, "log.level", "a list is not text"},
		{"log: debug\n", 1, "log", `log must be a mapping, not "debug" (accepted: its keys: level, format)`},
		{"web:\n  enabled: sure\n", 2, "web.enabled", `"sure" is not a boolean (accepted: true or false)`},
		{"web:\n  history: many\n", 2, "web.history", `"many" is not a whole number (accepted: a whole number such as 64`},
		{"web:\n  max_body_bytes: big\n", 2, "web.max_body_bytes", `"big" is not a size (accepted: 1048576, 64KiB, 4MiB, 1GiB, 10MB)`},
		{"web:\n  header_timeout: soon\n", 2, "web.header_timeout", `"soon" is not a duration (accepted: 500ms, 30s, 5m, 168h)`},
		{"web:\n  allowed_hosts: hub.example\n", 2, "web.allowed_hosts", `"hub.example" is not a list (accepted: a list, such as [a, b]`},
		{"web:\n  token: {a: b}\n", 2, "web.token", "a mapping is not a token (accepted: the token as text"},
		{"telegram:\n  rate:\n    per_chat_per_second: fast\n", 3, "telegram.rate.per_chat_per_second", `"fast" is not a number (accepted: a number such as 1 or 0.5`},
		{"telegram:\n  set_commands: 1\n", 2, "telegram.set_commands", `"1" is not a boolean`},
		{"discord:\n  command_guilds: 123\n", 2, "discord.command_guilds", `"123" is not a list`},
		{"discord:\n  mention: maybe\n", 2, "discord.mention", `"maybe" is not a boolean`},
		{"mcp:\n  agents: [claude]\n", 2, "mcp.agents", "mcp.agents must be a mapping, not a list (accepted: name: value entries)"},
		{"mcp:\n  max_sessions: lots\n", 2, "mcp.max_sessions", `"lots" is not a whole number`},
		{"metrics:\n  listen: [a]\n", 2, "metrics.listen", "a list is not text"},
		{"access:\n  grants:\n    web: reader\n", 3, "access.grants.web", `"reader" is not a list`},
		{"access:\n  roles:\n    ops:\n      verbs: '*'\n", 4, "access.roles.ops.verbs", `"*" is not a list`},
		{"workspaces: [a]\n", 1, "workspaces", "workspaces must be a mapping of workspace names (and by_chat, by_role), not a list"},
		{"workspaces:\n  s:\n    path: ./s\n    destination:\n      kind: docker\n      image: x\n      cpus: two\n", 7, "workspaces.s.destination.cpus", `"two" is not a number`},
		{"workspaces:\n  s:\n    path: ./s\n    destination:\n      kind: docker\n      image: x\n      memory: lots\n", 7, "workspaces.s.destination.memory", `"lots" is not a size`},
		{"workspaces:\n  by_role:\n    ops: [a]\n", 3, `workspaces.by_role["ops"]`, `workspaces.by_role["ops"] must be a workspace name, not a list`},
		{"workspaces:\n  by_chat: web\n", 2, "workspaces.by_chat", `workspaces.by_chat must be a mapping of chat keys to workspace names, not "web"`},
		{"nats:\n  embedded: yes please\n", 2, "nats.embedded", `"yes please" is not a boolean`},
		{"nats:\n  embedded: true\n  node_limits: {max_stream_messages: x}\n", 3, "nats.node_limits.max_stream_messages", `"x" is not a whole number`},
		{nats + "nodes:\n  db-1: UDXU\n", 3, "nodes.db-1", `nodes.db-1 must be a mapping, not "UDXU" (accepted: its keys: nkey)`},
		{"outbox:\n  chunk_markers: nope\n", 2, "outbox.chunk_markers", `"nope" is not a boolean`},
		{"outbox:\n  local_roots: /srv/out\n", 2, "outbox.local_roots", `"/srv/out" is not a list`},
		{"mirror:\n  retention:\n    serve: {keep_runs: all}\n", 3, "mirror.retention.serve.keep_runs", `"all" is not a whole number`},
		{"mirror:\n  keep_age: forever\n", 2, "mirror.keep_age", `"forever" is not a duration`},
		{"verbs:\n  proc:\n    max_procs: x\n", 3, "verbs.proc.max_procs", `"x" is not a whole number`},
		{"verbs:\n  proc:\n    env_allow: PATH\n", 3, "verbs.proc.env_allow", `"PATH" is not a list`},
		{"sessions:\n  allow_proc: x\n", 2, "sessions.allow_proc", `"x" is not a boolean`},
		{"sessions:\n  mounts:\n    - host_path: docs\n      max_bytes: big\n", 4, "sessions.mounts[0].max_bytes", `"big" is not a size`},
		{"sessions:\n  mounts: {a: b}\n", 2, "sessions.mounts", "a mapping is not a list"},
	} {
		t.Run(tc.key, func(t *testing.T) {
			p, err := load(t, tc.yml, nil)
			e := problems(t, err)[0]
			if e.File != p || e.Line != tc.line || e.Key != tc.key {
				t.Fatalf("%s: file %q line %d key %q, want %q %d %q", err, e.File, e.Line, e.Key, p, tc.line, tc.key)
			}
			if !strings.HasPrefix(e.Msg, tc.key) || !strings.Contains(e.Msg, tc.accepted) || !strings.Contains(e.Msg, "accepted: ") {
				t.Fatalf("message %q: want it to start with the key and contain %q", e.Msg, tc.accepted)
			}
			if strings.Contains(e.Msg, "cannot unmarshal") {
				t.Fatalf("raw decoder message: %s", e.Msg)
			}
		})
	}
}

// TestUnknownKeySuggestions: an unknown key names its line and section,
// lists what is accepted, and suggests the nearest accepted key when it is
// close: a typo, a swap, another case or separator. A key close to none
// suggests nothing.
func TestUnknownKeySuggestions(t *testing.T) {
	for _, tc := range []struct {
		yml, key, near string
		line           int
	}{
		{"worksapce: .\n", "worksapce", "workspace", 1},
		{"web:\n  maxConnections: 3\n", "web.maxConnections", "max_connections", 2},
		{"web:\n  max-body-bytes: 1KiB\n", "web.max-body-bytes", "max_body_bytes", 2},
		{"telegram:\n  tokn: x\n", "telegram.tokn", "token", 2},
		{"telegram:\n  webhook:\n    secret_tokn: x\n", "telegram.webhook.secret_tokn", "secret_token", 3},
		{"discord:\n  prefx: '!'\n", "discord.prefx", "prefix", 2},
		{"mcp:\n  agents:\n    claude:\n      tokenfile: /x\n", "mcp.agents.claude.tokenfile", "token_file", 4},
		{"access:\n  grant:\n    web: [reader]\n", "access.grant", "grants", 2},
		{"workspaces:\n  s:\n    path: ./s\n    destination:\n      imgae: x\n", "workspaces.s.destination.imgae", "image", 5},
		{"nats:\n  embeded: true\n", "nats.embeded", "embedded", 2},
		{"outbox:\n  max_attemps: 3\n", "outbox.max_attemps", "max_attempts", 2},
		{"mirror:\n  retention:\n    serve: {keep_run: 3}\n", "mirror.retention.serve.keep_run", "keep_runs", 3},
		{"verbs:\n  proc:\n    env_alow: [PATH]\n", "verbs.proc.env_alow", "env_allow", 3},
		{"sessions:\n  mod: session\n", "sessions.mod", "mode", 2},
		{"log:\n  levle: info\n", "log.levle", "level", 2},
		{"metrics:\n  listn: 127.0.0.1:9090\n", "metrics.listn", "listen", 2},
		{"web:\n  colour: blue\n", "web.colour", "", 2},
		{"mirror:\n  retention:\n    api: {keep_runs: 3}\n", "mirror.retention.api", "", 3},
	} {
		t.Run(tc.key, func(t *testing.T) {
			p, err := load(t, tc.yml, nil)
			e := problems(t, err)[0]
			if e.File != p || e.Line != tc.line || e.Key != tc.key {
				t.Fatalf("%s: file %q line %d key %q, want %d %q", err, e.File, e.Line, e.Key, tc.line, tc.key)
			}
			name := tc.key[strings.LastIndexByte("."+tc.key, '.'):]
			section := sectionName(parentKey(tc.key))
			if !strings.HasPrefix(e.Msg, `unknown key "`+name+`" in `+section) || !strings.Contains(e.Msg, "(accepted: ") {
				t.Fatalf("message %q", e.Msg)
			}
			if tc.near == "" && strings.Contains(e.Msg, "did you mean") {
				t.Fatalf("suggests a key far from %q: %s", name, e.Msg)
			}
			if tc.near != "" && !strings.Contains(e.Msg, ": did you mean "+tc.near+"? (accepted: ") {
				t.Fatalf("message %q does not suggest %s", e.Msg, tc.near)
			}
		})
	}
}

// TestMissingRequiredValues: a required value left out names the file,
// the line of the key that requires it (or of the section it belongs in),
// its key path and how to give it.
func TestMissingRequiredValues(t *testing.T) {
	const nodes = "nats: {embedded: true}\nnodes:\n  db-1: {nkey: " + testNKey + "}\n"
	for _, tc := range []struct {
		yml  string
		line int
		key  string
		fix  string
	}{
		{"telegram:\n  mode: polling\n  enabled: true\n", 3, "telegram.token", "token: ${TELEGRAM_BOT_TOKEN}"},
		{"discord:\n  enabled: true\n", 2, "discord.token", "token: ${DISCORD_BOT_TOKEN}"},
		{"telegram:\n  enabled: true\n  token: x\n  mode: webhook\nweb:\n  public_url: https://hub.example\n", 4, "telegram.webhook.secret_token", "must be set in webhook mode"},
		{"web:\n  listen: 0.0.0.0:8080\n", 2, "web.listen", "web.token must be set (for example token: ${HUB_WEB_TOKEN})"},
		{"mcp:\n  enabled: true\n  agents:\n    ci:\n      token_file: \"\"\n", 4, "mcp.agents.ci.token", "token: ${HUB_MCP_CI_TOKEN}, or name a token_file"},
		{"mcp:\n  enabled: true\n", 2, "mcp.enabled", "give each agent its own token under mcp.agents"},
		{"workspaces:\n  sandbox:\n    destination:\n      kind: docker\n      image: debian:bookworm-slim\n", 2, "workspaces.sandbox.path", "accepted: the directory the workspace's verbs act in, such as ./sandbox"},
		{"workspaces:\n  sandbox:\n    path: ./sb\n    destination: {kind: docker}\n", 4, "workspaces.sandbox.destination.image", "such as debian:bookworm-slim"},
		{nodes + "workspaces:\n  logs:\n    destination:\n      kind: remote\n", 6, "workspaces.logs.destination.node", "accepted: a node under nodes:, db-1"},
		{"sessions:\n  mounts:\n    - host_path: docs\n", 2, "sessions.mounts", "list the host directories mounts may come from"},
		{"nats:\n  embedded: true\n  cert_file: c.pem\n", 3, "nats.cert_file", "and nats.key_file must be set together"},
	} {
		t.Run(tc.key, func(t *testing.T) {
			p, err := load(t, tc.yml, nil)
			e := problems(t, err)[0]
			if e.File != p || e.Line != tc.line || e.Key != tc.key {
				t.Fatalf("%s: file %q line %d key %q, want %d %q", err, e.File, e.Line, e.Key, tc.line, tc.key)
			}
			if !strings.HasPrefix(e.Msg, tc.key) || !strings.Contains(e.Msg, tc.fix) {
				t.Fatalf("message %q: want the key first and %q", e.Msg, tc.fix)
			}
		})
	}
}

// TestNodeFileErrors: a node's configuration is checked the same way:
// file, line, key path, suggestion and what is accepted.
func TestNodeFileErrors(t *testing.T) {
	const head = "node:\n  name: db-1\n  nats_url: nats://h:4222\n"
	for _, tc := range []struct{ name, yml, want string }{
		{"wrong type", head + "  nkey_file: k\n  concurrency: four\nworkspaces: {logs: {path: /var/log}}\n",
			`node config FILE: line 5: node.concurrency: "four" is not a whole number (accepted: a whole number such as 64, without quotes)`},
		{"unknown key", head + "  nkey_fle: k\nworkspaces: {logs: {path: /var/log}}\n",
			`node config FILE: line 4: unknown key "nkey_fle" in node: did you mean nkey_file? (accepted: name, nats_url, nkey_file, ca_file, concurrency, heartbeat)`},
		{"missing", head + "workspaces: {logs: {path: /var/log}}\n",
			"node config FILE: line 1: node.nkey_file is empty: name the seed file `hub node init --name NAME --seed FILE` wrote"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := filepath.Join(t.TempDir(), "node.yml")
			if err := os.WriteFile(p, []byte(tc.yml), 0o600); err != nil {
				t.Fatal(err)
			}
			_, err := LoadNode(p, env(nil))
			if err == nil || strings.ReplaceAll(err.Error(), p, "FILE") != tc.want {
				t.Fatalf("got\n%v\nwant\n%s", err, tc.want)
			}
		})
	}
}

// TestValidationErrorsHaveLines: problems found after decoding (ranges,
// enumerations, cross-checks) carry the line of their key, including an
// item of a list, and token file problems too.
func TestValidationErrorsHaveLines(t *testing.T) {
	for _, tc := range []struct {
		yml  string
		line int
		key  string
	}{
		{"log:\n  format: text\n  level: loud\n", 3, "log.level"},
		{"web:\n  trusted_proxies:\n    - 10.0.0.0/8\n    - nowhere\n", 4, "web.trusted_proxies"},
		{"access:\n  roles:\n    ops:\n      verbs:\n        - fs.read\n        - admin.write\n", 6, "access.roles.ops.verbs"},
		{"access:\n  grants:\n    telegram:1:\n      - root\n", 4, "access.grants.telegram:1"},
		{"outbox:\n  backoff_base: 1h\n  backoff_max: 1m\n", 2, "outbox.backoff_base"},
		{"verbs:\n  proc:\n    user: 'a b'\n", 3, "verbs.proc.user"},
		{"mirror:\n  keep_runs: 2\n  retention:\n    serve: {min_runs: 5}\n", 4, "mirror.retention.serve.min_runs"},
		{"mirror:\n  keep_age: 30m\n", 2, "mirror.retention.serve.keep_age"},
		{"workspace: /tmp\nstate_dir: /\n", 2, "state_dir"},
		{"workspace: .hub/ws\n", 1, "state_dir"},
		{"web:\n  token_file: /nonexistent/hub-token\n", 2, "web.token_file"},
	} {
		t.Run(tc.key, func(t *testing.T) {
			p, err := load(t, tc.yml, nil)
			e := problems(t, err)[0]
			if e.File != p || e.Line != tc.line || e.Key != tc.key || !strings.HasPrefix(e.Msg, tc.key) {
				t.Fatalf("%s: line %d key %q, want %d %q", err, e.Line, e.Key, tc.line, tc.key)
			}
		})
	}
}

func TestNearestKey(t *testing.T) {
	accepted := []string{"enabled", "listen", "token", "token_file", "max_connections", "max_connections_per_client"}
	for in, want := range map[string]string{
		"lisen": "listen", "lsiten": "listen", "Listen": "listen", "listen_": "listen", "tokn": "token",
		"tokenFile": "token_file", "max-connections": "max_connections", "maxConnectionsPerClient": "max_connections_per_client",
		"enable": "enabled", "x": "", "colour": "", "tkn": "", "address": "",
	} {
		if got := nearestKey(in, accepted); got != want {
			t.Errorf("nearestKey(%q) = %q, want %q", in, got, want)
		}
	}
	if got := nearestKey("api", []string{"serve", "cli"}); got != "" {
		t.Errorf("api suggests %q", got)
	}
}

// TestAliases: a mapping given through an alias is checked like one
// written in place, and an alias to the node that holds it ends the walk
// with an error instead of looping.
func TestAliases(t *testing.T) {
	if _, err := load(t, "web: &w\n  listen: 127.0.0.1:9\nmetrics: *w\n", nil); err != nil {
		t.Fatal(err)
	}
	_, err := load(t, "web: &w\n  listen: 127.0.0.1:9\nlog: *w\n", nil)
	if e := problems(t, err)[0]; e.Line != 2 || e.Key != "log.listen" || !strings.HasPrefix(e.Msg, `unknown key "listen" in log`) {
		t.Fatalf("a mapping through an alias: %v", err)
	}
	if _, err := load(t, "access:\n  grants:\n    web: &r [reader]\n    telegram:1: *r\n", nil); err != nil {
		t.Fatal(err)
	}
	_, err = load(t, "web:\n  allowed_origins: &x [a, *x]\n", nil)
	if e := problems(t, err)[0]; e.Key != "web.allowed_origins[1]" || !strings.Contains(e.Msg, "a list is not text") {
		t.Fatalf("alias to itself: %v", err)
	}
}
