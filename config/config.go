package config

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"path"
	"path/filepath"
	"reflect"
	"strings"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/a6afc2ce/hermes-hub/chat"
)

// Config is the whole configuration. YAML keys are snake_case.
type Config struct {
	// Workspace is the root directory of the fs verbs and proc.run: the
	// path of the default workspace (workspaces.default.path).
	Workspace string `yaml:"workspace"`
	// StateDir holds hub.db, mirrors and the other files of DESIGN §3.
	StateDir string   `yaml:"state_dir"`
	Log      Log      `yaml:"log"`
	Web      Web      `yaml:"web"`
	Telegram Telegram `yaml:"telegram"`
	Discord  Discord  `yaml:"discord"`
	Access   Access   `yaml:"access"`
	Verbs    Verbs    `yaml:"verbs"`
	Sessions Sessions `yaml:"sessions"`
	Outbox   Outbox   `yaml:"outbox"`
	Mirror   Mirror   `yaml:"mirror"`
	MCP      MCP      `yaml:"mcp"`
	Metrics  Metrics  `yaml:"metrics"`
	// Workspaces are the named workspaces and how chats and roles are
	// given one (see workspaces.go).
	Workspaces Workspaces `yaml:"workspaces"`
	// NATS and Nodes configure remote nodes (see nodes.go).
	NATS  NATS                 `yaml:"nats"`
	Nodes map[string]NodeEntry `yaml:"nodes"`

	// Path is the file the configuration came from; empty for defaults.
	Path string `yaml:"-"`
}

// Log configures logging.
type Log struct {
	Level  string `yaml:"level"`  // debug, info, warn, error
	Format string `yaml:"format"` // text or json
}

// Web configures the web panel and HTTP API.
type Web struct {
	Enabled *bool  `yaml:"enabled"`
	Listen  string `yaml:"listen"`
	// Token authenticates API clients and the panel login. Required when
	// Listen is not a loopback address; generated per start otherwise.
	Token Secret `yaml:"token"`
	// TokenFile names a file holding the token instead (see readTokenFiles).
	TokenFile string `yaml:"token_file"`
	// PublicURL is how the outside world reaches this listener (for the
	// Telegram webhook and printed login links).
	PublicURL    string   `yaml:"public_url"`
	TLSCert      string   `yaml:"tls_cert"`
	TLSKey       string   `yaml:"tls_key"`
	MaxBodyBytes Size     `yaml:"max_body_bytes"`
	History      int      `yaml:"history"`         // SSE events kept for replay
	AllowOrigins []string `yaml:"allowed_origins"` // extra origins for state-changing requests
	// TrustedProxies are the reverse proxies (CIDRs or addresses) whose
	// X-Forwarded-For names the client; from anyone else it is ignored.
	TrustedProxies []string `yaml:"trusted_proxies"`
	// AllowedHosts are extra Host header names the listener answers to,
	// besides loopback names, its own address and public_url's host.
	AllowedHosts []string `yaml:"allowed_hosts"`
	// MaxConnections caps the listener's open connections; one more is
	// closed as soon as it is accepted.
	MaxConnections int `yaml:"max_connections"`
	// MaxConnectionsPerClient caps the open connections of one client
	// address (behind a reverse proxy every client is the proxy's address).
	MaxConnectionsPerClient int `yaml:"max_connections_per_client"`
	// HeaderTimeout bounds reading a request's headers, BodyTimeout its
	// body, WriteTimeout writing a response (each write of a stream) and
	// IdleTimeout how long a kept-alive connection may wait for its next
	// request.
	HeaderTimeout Duration `yaml:"header_timeout"`
	BodyTimeout   Duration `yaml:"body_timeout"`
	WriteTimeout  Duration `yaml:"write_timeout"`
	IdleTimeout   Duration `yaml:"idle_timeout"`
}

// MCP configures the Model Context Protocol endpoint /mcp on the web
// listener (streamable HTTP). `hub mcp` (stdio) needs none of it.
type MCP struct {
	// Enabled mounts /mcp on the web listener.
	Enabled bool `yaml:"enabled"`
	// Agents are the callers, each with its own bearer token and the
	// identity agent:<name> for access grants.
	Agents map[string]MCPAgent `yaml:"agents"`
	// SessionTimeout closes MCP sessions that received no request for
	// this long (default 1h).
	SessionTimeout Duration `yaml:"session_timeout"`
	// AcceptWebToken lets the web token in on /mcp, as the identity web;
	// without it /mcp refuses the web token (an agent has its own).
	AcceptWebToken bool `yaml:"accept_web_token"`
	// MaxSessions and MaxSessionsPerAgent cap the sessions open at once,
	// in all and per identity (defaults 256 and 32).
	MaxSessions         int `yaml:"max_sessions"`
	MaxSessionsPerAgent int `yaml:"max_sessions_per_agent"`
	// MaxStreamsPerAgent caps the requests one identity has open at once
	// on /mcp: standalone SSE streams and POSTs whose answers are still
	// coming (default 64).
	MaxStreamsPerAgent int `yaml:"max_streams_per_agent"`
	// StreamIdleTimeout closes a standalone SSE stream on which nothing
	// was written for this long (default 5m).
	StreamIdleTimeout Duration `yaml:"stream_idle_timeout"`
}

// Metrics configures where the Prometheus metrics (docs/metrics.md) are
// served.
type Metrics struct {
	// Listen is a separate host:port for GET /metrics, without
	// authentication; empty serves /metrics on the web listener behind the
	// web token instead.
	Listen string `yaml:"listen"`
}

// MCPAgent is one MCP caller over HTTP.
type MCPAgent struct {
	Token Secret `yaml:"token"`
	// TokenFile names a file holding the token instead.
	TokenFile string `yaml:"token_file"`
}

// Telegram configures the Telegram adapter.
type Telegram struct {
	Enabled     bool     `yaml:"enabled"`
	Token       Secret   `yaml:"token"`
	TokenFile   string   `yaml:"token_file"`
	APIEndpoint string   `yaml:"api_endpoint"`
	Mode        string   `yaml:"mode"` // polling or webhook
	PollTimeout Duration `yaml:"poll_timeout"`
	Webhook     struct {
		Path            string `yaml:"path"`
		SecretToken     Secret `yaml:"secret_token"`
		SecretTokenFile string `yaml:"secret_token_file"`
	} `yaml:"webhook"`
	Rate struct {
		PerChat           float64 `yaml:"per_chat_per_second"`
		PerChatBurst      int     `yaml:"per_chat_burst"`
		PerGroupPerMinute int     `yaml:"per_group_per_minute"`
		GlobalPerSecond   int     `yaml:"global_per_second"`
	} `yaml:"rate"`
	SetCommands *bool `yaml:"set_commands"`
}

// Discord configures the Discord adapter.
type Discord struct {
	Enabled         bool     `yaml:"enabled"`
	Token           Secret   `yaml:"token"`
	TokenFile       string   `yaml:"token_file"`
	ApplicationID   string   `yaml:"application_id"`
	APIBase         string   `yaml:"api_base"`
	CommandGuilds   []string `yaml:"command_guilds"`
	Prefix          string   `yaml:"prefix"`
	Mention         *bool    `yaml:"mention"`
	AllowedGuilds   []string `yaml:"allowed_guilds"`
	AllowedChannels []string `yaml:"allowed_channels"`
}

// Access maps identities to roles and roles to verbs. Deny by default.
type Access struct {
	// Roles name the verbs they may run; globs such as "fs.read*" and "*".
	// The role "reader" is built in (read-only fs verbs and sys.machineInfo).
	Roles map[string]Role `yaml:"roles"`
	// Grants maps an identity (telegram:<user_id>, discord:<user_id>,
	// discord-role:<role_id>, web) to role names.
	Grants map[string][]string `yaml:"grants"`
	// DefaultRoles are granted to everyone; empty by default (deny).
	DefaultRoles []string `yaml:"default_roles"`
}

// Role is a named set of verb patterns and admin permissions.
type Role struct {
	// Verbs are verb names or globs ("fs.read*", "*"), and admin
	// permissions (AdminPermissions, or "admin.*" for all of them). A verb
	// glob never grants an admin permission: "*" is every verb, not the
	// admin API.
	Verbs []string `yaml:"verbs"`
	// Workspaces are the workspaces the role may act in: names or globs
	// ("dev-*", "*" for all). Without the key a role may use only the
	// default workspace.
	Workspaces []string `yaml:"workspaces"`
}

// The admin permissions: what a role must name for its identity (the web
// token holder) to use the admin API beyond GET /api/status.
const (
	// AdminRead reads other conversations and the hub's delivery state:
	// the mirrors, the outbox entries, the delivery targets and the
	// channel directory.
	AdminRead = "admin.read"
	// AdminTargets adds, removes and clears delivery targets.
	AdminTargets = "admin.targets"
	// AdminDeliver makes the hub post text to the delivery targets.
	AdminDeliver = "admin.deliver"
	// AdminOutbox retries and purges outbox entries.
	AdminOutbox = "admin.outbox"
	// AdminChannels rebuilds the channel directory.
	AdminChannels = "admin.channels"
	// AdminAccess lists, approves (pairing codes, also /approve from chat)
	// and revokes the grants kept in the state. Its holder may grant any
	// role, so it is as strong as the strongest role.
	AdminAccess = "admin.access"
	// AdminWorkspaces resets workspaces' sandboxes (their containers).
	AdminWorkspaces = "admin.workspaces"
	// AdminCancel stops anyone's running call in a conversation (/cancel,
	// the Cancel buttons); without it, only the caller may stop a call.
	AdminCancel = "admin.cancel"
)

// AdminPermissions lists every admin permission.
var AdminPermissions = []string{AdminRead, AdminTargets, AdminDeliver, AdminOutbox, AdminChannels, AdminAccess, AdminWorkspaces, AdminCancel}

// AdminPrefix starts every admin permission; only a pattern that starts
// with it grants one.
const AdminPrefix = "admin."

// Verbs tunes the verbs.
type Verbs struct {
	MaxWriteChars int  `yaml:"max_write_chars"`
	MaxReadBytes  Size `yaml:"max_read_bytes"`
	Proc          struct {
		DefaultTimeout Duration `yaml:"default_timeout"`
		MaxTimeout     Duration `yaml:"max_timeout"`
		MaxOutputBytes Size     `yaml:"max_output_bytes"`
		EnvAllow       []string `yaml:"env_allow"`
		// Per-call limits, applied by proc.run's supervisor.
		MaxProcs      int  `yaml:"max_procs"`       // processes at once
		MaxMemory     Size `yaml:"max_memory"`      // address space per process
		MaxCPUSeconds int  `yaml:"max_cpu_seconds"` // CPU time per process; 0: the call's timeout
		// KeepOutput: a call's stdout and stderr (proc.output) are removed this long after it started.
		KeepOutput Duration `yaml:"keep_output"`
		// User is whom a hub running as root runs programs as (a user name,
		// a uid, or uid:gid); empty means nobody, and root (or 0) keeps
		// root. A hub not running as root runs them as itself.
		User string `yaml:"user"`
	} `yaml:"proc"`
	Timeout Duration `yaml:"timeout"` // bound on any verb call from chat
	// Progress: a call from chat still running after ProgressAfter shows
	// its progress (elapsed time, last lines), refreshed every
	// ProgressEvery.
	ProgressAfter Duration `yaml:"progress_after"`
	ProgressEvery Duration `yaml:"progress_every"`
}

// Sessions configures per-conversation session workspaces.
type Sessions struct {
	Mode    string            `yaml:"mode"`     // host (default) or session
	ByChat  map[string]string `yaml:"by_chat"`  // chat key → host|session
	ByRole  map[string]string `yaml:"by_role"`  // role → host|session
	Root    string            `yaml:"root"`     // "state" (default) or "temp"
	IdleTTL Duration          `yaml:"idle_ttl"` // idle sessions expire
	SnapTTL Duration          `yaml:"snapshot_ttl"`
	// MaxSnapshots per session; taking one more removes the oldest.
	MaxSnapshots int `yaml:"max_snapshots"`
	// SweepInterval is how often expired sessions and snapshots are removed.
	SweepInterval Duration `yaml:"sweep_interval"`
	// AllowProc lets proc.run run in session workspaces (off: a process is
	// not confined to its directory).
	AllowProc bool     `yaml:"allow_proc"`
	Allowed   []string `yaml:"mount_roots"`
	Mounts    []Mount  `yaml:"mounts"`
}

// SessionsDir is the directory holding session workspaces: <state_dir>/sessions
// for root "state", or hermes-hub-sessions-<uid> in the system temporary
// directory for root "temp".
func (c *Config) SessionsDir() string {
	if c.Sessions.Root == "temp" {
		return filepath.Join(os.TempDir(), fmt.Sprintf("hermes-hub-sessions-%d", os.Getuid()))
	}
	return filepath.Join(c.StateDir, "sessions")
}

// Mount copies host files into every new session.
type Mount struct {
	HostPath       string   `yaml:"host_path"`
	MountPath      string   `yaml:"mount_path"`
	Include        []string `yaml:"include"`
	Exclude        []string `yaml:"exclude"`
	MaxBytes       Size     `yaml:"max_bytes"`
	FollowSymlinks bool     `yaml:"follow_symlinks"`
}

// Outbox tunes delivery.
type Outbox struct {
	Concurrency    int      `yaml:"concurrency"`
	MaxAttempts    int      `yaml:"max_attempts"`
	BackoffBase    Duration `yaml:"backoff_base"`
	BackoffMax     Duration `yaml:"backoff_max"`
	SendTimeout    Duration `yaml:"send_timeout"`
	Retention      Duration `yaml:"retention"`
	OverflowChunks int      `yaml:"overflow_chunks"`
	ChunkMarkers   bool     `yaml:"chunk_markers"`
	// LocalRoots are the absolute directories outside the state directory
	// that local:<path> targets may write in; empty by default, so local
	// targets stay in the state directory's pma/.
	LocalRoots []string `yaml:"local_roots"`
}

// Mirror tunes the JSONL mirrors.
type Mirror struct {
	RotateBytes Size `yaml:"rotate_bytes"`
	// KeepRuns and KeepAge are the older spelling of Retention: when set,
	// they give keep_runs and keep_age of every kind of run that does not
	// set its own (negative: no limit).
	KeepRuns int      `yaml:"keep_runs"`
	KeepAge  Duration `yaml:"keep_age"`
	// Retention is which runs pruning removes, per kind (mirror.go).
	Retention MirrorRetention `yaml:"retention"`
	// MaxTextBytes bounds the text kept in one mirror record; longer texts
	// keep their size, preview and SHA-256 and are marked truncated.
	MaxTextBytes Size `yaml:"max_text_bytes"`
	// CLI says which CLI calls are mirrored: "changes" (default: write
	// verbs, proc.run and deliveries) or "all" (read-only verbs too).
	CLI string `yaml:"cli"`
}

// Values of mirror.cli.
const (
	MirrorCLIChanges = "changes"
	MirrorCLIAll     = "all"
)

// Getenv looks up environment variables; tests replace it.
type Getenv func(string) (string, bool)

// Load reads the configuration at path (strict), expands ${VAR} from the
// environment, applies defaults and validates. An empty path means no file:
// defaults only.
func Load(path string) (*Config, error) { return LoadWith(path, os.LookupEnv) }

// Default is the configuration with no file and an empty environment: every
// default applied. It is what `hub serve` runs with no configuration, and
// what tests start from.
func Default() *Config {
	cfg, err := LoadWith("", func(string) (string, bool) { return "", false })
	if err != nil {
		panic("config: the defaults do not validate: " + err.Error())
	}
	return cfg
}

// LoadWith is Load with an explicit environment.
func LoadWith(path string, env Getenv) (*Config, error) {
	cfg := &Config{}
	if path != "" {
		data, err := os.ReadFile(path)
		if err != nil {
			return nil, fmt.Errorf("config: %w", err)
		}
		if err := Parse(data, env, cfg); err != nil {
			return nil, fmt.Errorf("config %s: %w", path, err)
		}
		if err := cfg.readTokenFiles(); err != nil {
			return nil, fmt.Errorf("config %s: %w", path, err)
		}
		cfg.Path = path
	}
	cfg.ApplyDefaults()
	if err := cfg.Validate(); err != nil {
		where := "config"
		if path != "" {
			where = "config " + path
		}
		return nil, fmt.Errorf("%s: %w", where, err)
	}
	return cfg, nil
}

// Parse decodes YAML into cfg strictly, expanding ${VAR} in scalar values.
func Parse(data []byte, env Getenv, cfg *Config) error {
	if len(bytes.TrimSpace(data)) == 0 {
		return nil
	}
	doc, err := oneDocument(data)
	if err != nil {
		return err
	}
	if len(doc.Content) == 0 {
		return nil
	}
	root := doc.Content[0]
	if root.Kind != yaml.MappingNode {
		return fmt.Errorf("line %d: the configuration must be a mapping of keys (workspace, web, telegram, …)", root.Line)
	}
	if err := expandNode(root, env); err != nil {
		return err
	}
	if err := checkKeys(root, reflect.TypeOf(cfg).Elem(), ""); err != nil {
		return err
	}
	if err := root.Decode(cfg); err != nil {
		var te *yaml.TypeError
		if errors.As(err, &te) {
			return fmt.Errorf("%s", strings.Join(te.Errors, "; "))
		}
		return err
	}
	return nil
}

// oneDocument parses data, which must hold one YAML document: a second one
// (after a "---" line) would otherwise be silently ignored, and with it
// whatever it was meant to set.
func oneDocument(data []byte) (*yaml.Node, error) {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var doc, next yaml.Node
	if err := dec.Decode(&doc); err != nil && !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("not valid YAML: %s", strings.TrimPrefix(err.Error(), "yaml: "))
	}
	switch err := dec.Decode(&next); {
	case errors.Is(err, io.EOF):
		return &doc, nil
	case err != nil:
		return nil, fmt.Errorf("not valid YAML: %s", strings.TrimPrefix(err.Error(), "yaml: "))
	}
	return nil, fmt.Errorf("line %d: a second YAML document starts here (\"---\"); the file must hold one document (accepted: one mapping of keys; remove the \"---\" line and put its keys in the first document)", next.Line)
}

// checkKeys reports the first mapping key that has no field in t, with its
// line number and the accepted keys.
func checkKeys(n *yaml.Node, t reflect.Type, prefix string) error {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.Struct:
		if n.Kind != yaml.MappingNode {
			if n.Kind == yaml.ScalarNode && n.ShortTag() == "!!null" {
				return nil
			}
			if reflect.PointerTo(t).Implements(reflect.TypeFor[yaml.Unmarshaler]()) {
				return nil
			}
			return fmt.Errorf("line %d: %s must be a mapping", n.Line, strings.TrimSuffix(prefix, "."))
		}
		fields := map[string]reflect.StructField{}
		var names []string
		for i := 0; i < t.NumField(); i++ {
			f := t.Field(i)
			name, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
			if name == "" || name == "-" {
				continue
			}
			fields[name] = f
			names = append(names, name)
		}
		if len(fields) == 0 { // a custom scalar type such as Secret
			return nil
		}
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			f, ok := fields[k.Value]
			if !ok {
				return fmt.Errorf("line %d: unknown key %q in %s (accepted: %s)", k.Line, k.Value, sectionName(prefix), strings.Join(names, ", "))
			}
			if err := checkKeys(v, f.Type, prefix+k.Value+"."); err != nil {
				return err
			}
		}
	case reflect.Map:
		if n.Kind == yaml.MappingNode {
			for i := 0; i+1 < len(n.Content); i += 2 {
				if err := checkKeys(n.Content[i+1], t.Elem(), prefix+n.Content[i].Value+"."); err != nil {
					return err
				}
			}
		}
	case reflect.Slice:
		if n.Kind == yaml.SequenceNode {
			for i, c := range n.Content {
				if err := checkKeys(c, t.Elem(), fmt.Sprintf("%s%d.", prefix, i)); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

func sectionName(prefix string) string {
	if prefix == "" {
		return "the top level"
	}
	return strings.TrimSuffix(prefix, ".")
}

// expandNode replaces ${VAR} and ${VAR:-default} in every scalar value (not
// in keys), so an environment value can never inject YAML structure. $$ is a
// literal $.
func expandNode(n *yaml.Node, env Getenv) error {
	switch n.Kind {
	case yaml.ScalarNode:
		if strings.Contains(n.Value, "$") {
			v, err := Expand(n.Value, env)
			if err != nil {
				return fmt.Errorf("line %d: %v", n.Line, err)
			}
			if v != n.Value {
				n.Value = v
				if n.Tag == "!!null" || n.Tag == "" {
					n.Tag = "!!str"
				}
			}
		}
	case yaml.MappingNode:
		for i := 1; i < len(n.Content); i += 2 {
			if err := expandNode(n.Content[i], env); err != nil {
				return err
			}
		}
	default:
		for _, c := range n.Content {
			if err := expandNode(c, env); err != nil {
				return err
			}
		}
	}
	return nil
}

// Expand substitutes ${VAR} (empty when unset) and ${VAR:-default} (default
// when unset or empty) in s; $$ is a literal $. A $ followed by anything
// else is kept as it is.
func Expand(s string, env Getenv) (string, error) {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c != '$' || i+1 >= len(s) {
			b.WriteByte(c)
			continue
		}
		switch s[i+1] {
		case '$':
			b.WriteByte('$')
			i++
		case '{':
			end := strings.IndexByte(s[i:], '}')
			if end < 0 {
				return "", fmt.Errorf("unterminated ${ in %q", s)
			}
			expr := s[i+2 : i+end]
			name, def, hasDef := strings.Cut(expr, ":-")
			if !validEnvName(name) {
				return "", fmt.Errorf("bad variable name %q in ${…} (accepted: letters, digits and _, as in ${TELEGRAM_BOT_TOKEN} or ${PORT:-8080})", name)
			}
			v, ok := env(name)
			if hasDef && (!ok || v == "") {
				v = def
			}
			b.WriteString(v)
			i += end
		default:
			b.WriteByte(c)
		}
	}
	return b.String(), nil
}

func validEnvName(s string) bool {
	if s == "" {
		return false
	}
	for i, c := range s {
		if !(c == '_' || c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || i > 0 && c >= '0' && c <= '9') {
			return false
		}
	}
	return true
}

// ApplyDefaults fills every unset value.
func (c *Config) ApplyDefaults() {
	def := func(s *string, v string) {
		if *s == "" {
			*s = v
		}
	}
	defI := func(p *int, v int) {
		if *p == 0 {
			*p = v
		}
	}
	defD := func(p *Duration, v string) {
		if *p == 0 {
			d := Duration(0)
			_ = d.UnmarshalYAML(&yaml.Node{Kind: yaml.ScalarNode, Value: v})
			*p = d
		}
	}
	defS := func(p *Size, v int64) {
		if *p == 0 {
			*p = Size(v)
		}
	}
	c.applyWorkspaceDefaults()
	def(&c.Workspace, ".")
	if c.Access.Roles == nil && c.Access.Grants == nil && c.Access.DefaultRoles == nil {
		// No access section at all: whoever holds the web token (printed on
		// the operator's terminal) may read, nothing more. Chat identities
		// stay denied until granted.
		c.Access.Grants = map[string][]string{"web": {"reader"}}
	}
	def(&c.StateDir, ".hub")
	def(&c.Log.Level, "info")
	def(&c.Log.Format, "text")
	if c.Web.Enabled == nil {
		t := true
		c.Web.Enabled = &t
	}
	def(&c.Web.Listen, "127.0.0.1:8080")
	defS(&c.Web.MaxBodyBytes, 1<<20)
	defI(&c.Web.History, 1000)
	defI(&c.Web.MaxConnections, 1024)
	defI(&c.Web.MaxConnectionsPerClient, 64)
	defD(&c.Web.HeaderTimeout, "10s")
	defD(&c.Web.BodyTimeout, "60s")
	defD(&c.Web.WriteTimeout, "60s")
	defD(&c.Web.IdleTimeout, "120s")
	defD(&c.MCP.SessionTimeout, "1h")
	defI(&c.MCP.MaxSessions, 256)
	defI(&c.MCP.MaxSessionsPerAgent, 32)
	defI(&c.MCP.MaxStreamsPerAgent, 64)
	defD(&c.MCP.StreamIdleTimeout, "5m")
	def(&c.Telegram.APIEndpoint, "https://api.telegram.org")
	def(&c.Telegram.Mode, "polling")
	defD(&c.Telegram.PollTimeout, "30s")
	def(&c.Telegram.Webhook.Path, "/telegram/webhook")
	if c.Telegram.Rate.PerChat == 0 {
		c.Telegram.Rate.PerChat = 1
	}
	defI(&c.Telegram.Rate.PerChatBurst, 3)
	defI(&c.Telegram.Rate.PerGroupPerMinute, 20)
	defI(&c.Telegram.Rate.GlobalPerSecond, 30)
	if c.Telegram.SetCommands == nil {
		t := true
		c.Telegram.SetCommands = &t
	}
	def(&c.Discord.APIBase, "https://discord.com/api/v10")
	if c.Discord.Mention == nil {
		t := true
		c.Discord.Mention = &t
	}
	defI(&c.Verbs.MaxWriteChars, 48000)
	defS(&c.Verbs.MaxReadBytes, 4<<20)
	defD(&c.Verbs.Proc.DefaultTimeout, "60s")
	defD(&c.Verbs.Proc.MaxTimeout, "10m")
	defS(&c.Verbs.Proc.MaxOutputBytes, 16<<20)
	if len(c.Verbs.Proc.EnvAllow) == 0 {
		c.Verbs.Proc.EnvAllow = []string{"PATH", "HOME", "LANG", "LC_ALL", "LC_CTYPE", "TZ", "TERM", "USER", "LOGNAME", "TMPDIR"}
	}
	defI(&c.Verbs.Proc.MaxProcs, 256)
	defS(&c.Verbs.Proc.MaxMemory, 4<<30)
	defD(&c.Verbs.Proc.KeepOutput, "168h")
	defD(&c.Verbs.Timeout, "15m")
	defD(&c.Verbs.ProgressAfter, "3s")
	defD(&c.Verbs.ProgressEvery, "3s")
	def(&c.Sessions.Mode, "host")
	def(&c.Sessions.Root, "state")
	defD(&c.Sessions.IdleTTL, "24h")
	defD(&c.Sessions.SnapTTL, "168h")
	defI(&c.Sessions.MaxSnapshots, 20)
	defD(&c.Sessions.SweepInterval, "5m")
	defI(&c.Outbox.Concurrency, 64)
	defI(&c.Outbox.MaxAttempts, 10)
	defD(&c.Outbox.BackoffBase, "1s")
	defD(&c.Outbox.BackoffMax, "5m")
	defD(&c.Outbox.SendTimeout, "30s")
	defD(&c.Outbox.Retention, "168h")
	defI(&c.Outbox.OverflowChunks, 4)
	defS(&c.Mirror.RotateBytes, 64<<20)
	c.Mirror.applyRetentionDefaults()
	defS(&c.Mirror.MaxTextBytes, 64<<10)
	if c.Mirror.CLI == "" {
		c.Mirror.CLI = MirrorCLIChanges
	}
}

// Validate checks every value and names the key of the first problem.
func (c *Config) Validate() error {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	oneOf := func(key, v string, allowed ...string) {
		for _, a := range allowed {
			if v == a {
				return
			}
		}
		bad("%s: %q is not accepted (accepted: %s)", key, v, strings.Join(allowed, ", "))
	}
	oneOf("log.level", c.Log.Level, "debug", "info", "warn", "error")
	oneOf("log.format", c.Log.Format, "text", "json")
	if *c.Web.Enabled {
		host, port, err := net.SplitHostPort(c.Web.Listen)
		if err != nil || port == "" {
			bad("web.listen: %q is not host:port (for example 127.0.0.1:8080)", c.Web.Listen)
		} else if !IsLoopback(host) && !c.Web.Token.IsSet() {
			bad("web.listen: %s is not a loopback address, so web.token must be set (for example token: ${HUB_WEB_TOKEN}); without a token the panel only binds to 127.0.0.1", c.Web.Listen)
		}
		if (c.Web.TLSCert == "") != (c.Web.TLSKey == "") {
			bad("web.tls_cert and web.tls_key must be set together")
		}
		if c.Web.Token.IsSet() && len(c.Web.Token.Reveal()) < 16 {
			bad("web.token is too short: use at least 16 characters (for example from `openssl rand -hex 24`)")
		}
		for _, p := range c.Web.TrustedProxies {
			if _, err := ParseCIDR(p); err != nil {
				bad("web.trusted_proxies: %v", err)
			}
		}
		for _, h := range c.Web.AllowedHosts {
			if h == "" || strings.ContainsAny(h, "/:@ \t") && net.ParseIP(strings.Trim(h, "[]")) == nil {
				bad("web.allowed_hosts: %q is not a host name such as hub.example.org (no scheme, port or path)", h)
			}
		}
		if n := c.Web.MaxConnections; n < 1 || n > MaxWebConnections {
			bad("web.max_connections: %d is out of range (accepted: 1 to %d connections at once)", n, MaxWebConnections)
		}
		if n := c.Web.MaxConnectionsPerClient; n < 1 || n > c.Web.MaxConnections {
			bad("web.max_connections_per_client: %d is out of range (accepted: 1 to web.max_connections, %d)", n, c.Web.MaxConnections)
		}
		if h := c.Web.History; h < 1 || h > MaxWebHistory {
			bad("web.history: %d is out of range (accepted: 1 to %d events)", h, MaxWebHistory)
		}
		for _, t := range []struct {
			key string
			d   Duration
		}{{"web.header_timeout", c.Web.HeaderTimeout}, {"web.body_timeout", c.Web.BodyTimeout}, {"web.write_timeout", c.Web.WriteTimeout}, {"web.idle_timeout", c.Web.IdleTimeout}} {
			if t.d.D() < 100*time.Millisecond || t.d.D() > time.Hour {
				bad("%s: %s is out of range (accepted: 100ms to 1h)", t.key, t.d)
			}
		}
	}
	c.validateMCP(bad)
	c.validateNodes(bad)
	if c.Metrics.Listen != "" {
		if _, _, err := net.SplitHostPort(c.Metrics.Listen); err != nil {
			bad("metrics.listen: %q is not host:port (for example 127.0.0.1:9090)", c.Metrics.Listen)
		}
	}
	if c.Telegram.Enabled {
		if !c.Telegram.Token.IsSet() {
			bad("telegram.token is empty but telegram.enabled is true: set it from the environment, e.g. token: ${TELEGRAM_BOT_TOKEN}")
		}
		oneOf("telegram.mode", c.Telegram.Mode, "polling", "webhook")
		if !strings.HasPrefix(c.Telegram.APIEndpoint, "http://") && !strings.HasPrefix(c.Telegram.APIEndpoint, "https://") {
			bad("telegram.api_endpoint: %q must start with http:// or https://", c.Telegram.APIEndpoint)
		}
		if c.Telegram.Mode == "webhook" {
			if c.Web.PublicURL == "" {
				bad("telegram.mode is webhook, so web.public_url must be set to the https address Telegram can reach")
			}
			if !c.Telegram.Webhook.SecretToken.IsSet() {
				bad("telegram.webhook.secret_token must be set in webhook mode (1-256 characters A-Z a-z 0-9 _ -)")
			}
			if !*c.Web.Enabled {
				bad("telegram.mode is webhook, which needs the web listener (web.enabled: true)")
			}
		}
		if c.Telegram.PollTimeout.D() < 0 || c.Telegram.PollTimeout.D() > 50*1e9 {
			bad("telegram.poll_timeout: %s is out of range (0s to 50s)", c.Telegram.PollTimeout)
		}
		if c.Telegram.Rate.PerChat < 0 || c.Telegram.Rate.GlobalPerSecond < 0 || c.Telegram.Rate.PerGroupPerMinute < 0 {
			bad("telegram.rate: values must not be negative")
		}
	}
	if c.Discord.Enabled {
		if !c.Discord.Token.IsSet() {
			bad("discord.token is empty but discord.enabled is true: set it from the environment, e.g. token: ${DISCORD_BOT_TOKEN}")
		}
		for _, id := range append(append(append([]string{}, c.Discord.CommandGuilds...), c.Discord.AllowedGuilds...), c.Discord.AllowedChannels...) {
			if !isSnowflake(id) {
				bad("discord: %q is not a Discord id (digits only)", id)
			}
		}
		if c.Discord.ApplicationID != "" && !isSnowflake(c.Discord.ApplicationID) {
			bad("discord.application_id: %q is not a Discord id (digits only)", c.Discord.ApplicationID)
		}
	}
	for name, r := range c.Access.Roles {
		if name == "" {
			bad("access.roles: a role has an empty name")
		}
		for _, p := range r.Verbs {
			if _, err := filepath.Match(strings.ToLower(p), "x"); err != nil || p == "" {
				bad("access.roles.%s.verbs: %q is not a valid pattern (accepted: a verb name, or a glob such as fs.read* or *)", name, p)
				continue
			}
			if strings.HasPrefix(strings.ToLower(p), AdminPrefix) && !matchesAdminPermission(p) {
				bad("access.roles.%s.verbs: %q is not an admin permission (accepted: %s, or admin.* for all of them)", name, p, strings.Join(AdminPermissions, ", "))
			}
		}
	}
	roleKnown := func(r string) bool {
		_, ok := c.Access.Roles[r]
		return ok || r == "reader"
	}
	for id, roles := range c.Access.Grants {
		if err := ValidIdentity(id); err != nil {
			bad("access.grants: %v", err)
		}
		for _, r := range roles {
			if !roleKnown(r) {
				bad("access.grants.%s: role %q is not defined (define it under access.roles, or use the built-in reader)", id, r)
			}
		}
	}
	for _, r := range c.Access.DefaultRoles {
		if !roleKnown(r) {
			bad("access.default_roles: role %q is not defined", r)
		}
	}
	c.validateWorkspaces(bad, roleKnown)
	if c.Verbs.MaxWriteChars <= 0 {
		bad("verbs.max_write_chars must be positive")
	}
	if c.Verbs.ProgressEvery < Duration(time.Second) {
		bad("verbs.progress_every: %s is too short (accepted: 1s or more; platforms limit how often a message may be edited)", c.Verbs.ProgressEvery)
	}
	if c.Verbs.Proc.DefaultTimeout > c.Verbs.Proc.MaxTimeout {
		bad("verbs.proc.default_timeout (%s) is above verbs.proc.max_timeout (%s)", c.Verbs.Proc.DefaultTimeout, c.Verbs.Proc.MaxTimeout)
	}
	if p := c.Verbs.Proc.MaxProcs; p < 1 || p > 1<<20 {
		bad("verbs.proc.max_procs: %d is out of range (accepted: 1 to 1048576 processes at once)", p)
	}
	if m := c.Verbs.Proc.MaxMemory; m < 16<<20 {
		bad("verbs.proc.max_memory: %s is too small (accepted: at least 16MiB, such as 512MiB or 4GiB; most programs cannot start below that)", m)
	}
	if k := c.Verbs.Proc.KeepOutput; k < c.Verbs.Proc.MaxTimeout || k < Duration(time.Minute) {
		bad("verbs.proc.keep_output: %s is too short (accepted: at least verbs.proc.max_timeout, %s, such as 24h or 168h)", k, c.Verbs.Proc.MaxTimeout)
	}
	if c.Verbs.Proc.MaxCPUSeconds < 0 {
		bad("verbs.proc.max_cpu_seconds: %d is negative (accepted: 0 for the call's timeout, or a number of seconds)", c.Verbs.Proc.MaxCPUSeconds)
	}
	if err := ValidProcUser(c.Verbs.Proc.User); err != nil {
		bad("verbs.proc.user: %v", err)
	}
	oneOf("sessions.mode", c.Sessions.Mode, "host", "session")
	oneOf("sessions.root", c.Sessions.Root, "state", "temp")
	for k, v := range c.Sessions.ByChat {
		oneOf("sessions.by_chat."+k, v, "host", "session")
		// Turns are matched by their canonical key, so only that form would
		// ever apply: anything else is refused rather than silently unused.
		if key, err := chat.ParseKey(k); err != nil || key.Kind == chat.KindLocal || key.String() != k {
			bad("sessions.by_chat: %q is not a chat key (accepted: web, chat:telegram:<chat_id>[:<thread_id>], chat:discord:<channel_id>)", k)
		}
	}
	for k, v := range c.Sessions.ByRole {
		oneOf("sessions.by_role."+k, v, "host", "session")
		if !roleKnown(k) {
			bad("sessions.by_role: role %q is not defined (define it under access.roles, or use reader)", k)
		}
	}
	if c.Sessions.IdleTTL <= 0 || c.Sessions.SnapTTL <= 0 || c.Sessions.SweepInterval <= 0 {
		bad("sessions.idle_ttl, sessions.snapshot_ttl and sessions.sweep_interval must be positive")
	}
	if c.Sessions.MaxSnapshots < 1 {
		bad("sessions.max_snapshots must be at least 1")
	}
	for i, r := range c.Sessions.Allowed {
		if r == "" {
			bad("sessions.mount_roots[%d] is empty", i)
		}
	}
	if len(c.Sessions.Mounts) > 0 && len(c.Sessions.Allowed) == 0 {
		bad("sessions.mounts need sessions.mount_roots: list the host directories mounts may come from")
	}
	for i, m := range c.Sessions.Mounts {
		if m.HostPath == "" {
			bad("sessions.mounts[%d].host_path is empty", i)
		}
		for _, ch := range m.HostPath {
			if ch < 0x20 || ch >= 0x7f {
				bad("sessions.mounts[%d].host_path %q must be printable ASCII", i, m.HostPath)
				break
			}
		}
	}
	if err := CheckStateDir(c.Workspace, c.StateDir); err != nil {
		errs = append(errs, err)
	}
	if c.Outbox.Concurrency < 1 || c.Outbox.Concurrency > 10000 {
		bad("outbox.concurrency: %d is out of range (1 to 10000)", c.Outbox.Concurrency)
	}
	if c.Outbox.MaxAttempts < 1 {
		bad("outbox.max_attempts must be at least 1")
	}
	if c.Outbox.BackoffBase > c.Outbox.BackoffMax {
		bad("outbox.backoff_base (%s) is above outbox.backoff_max (%s)", c.Outbox.BackoffBase, c.Outbox.BackoffMax)
	}
	if c.Outbox.OverflowChunks < 1 {
		bad("outbox.overflow_chunks must be at least 1")
	}
	for _, r := range c.Outbox.LocalRoots {
		if !filepath.IsAbs(r) || filepath.Clean(r) == string(filepath.Separator) {
			bad("outbox.local_roots: %q must be an absolute directory other than /", r)
		}
	}
	oneOf("mirror.cli", c.Mirror.CLI, MirrorCLIChanges, MirrorCLIAll)
	if c.Mirror.RotateBytes < 4096 {
		bad("mirror.rotate_bytes: %s is too small (at least 4KiB)", c.Mirror.RotateBytes)
	}
	if c.Mirror.MaxTextBytes < 1024 || c.Mirror.MaxTextBytes > 64<<20 {
		bad("mirror.max_text_bytes: %s is out of range (1KiB to 64MiB)", c.Mirror.MaxTextBytes)
	}
	if err := c.Mirror.validateRetention(); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// Bounds of the web limits.
const (
	MaxWebConnections = 1 << 20
	MaxWebHistory     = 100000
)

// matchesAdminPermission reports whether pattern names at least one admin
// permission.
func matchesAdminPermission(pattern string) bool {
	for _, perm := range AdminPermissions {
		if ok, _ := path.Match(strings.ToLower(pattern), perm); ok {
			return true
		}
	}
	return false
}

// CheckStateDir refuses a state directory that is the workspace or
// contains it: the verbs could then reach nothing but the hub's state, or the
// state's protection would cover the whole workspace. A state directory
// inside the workspace (the default, .hub) or outside it is accepted. Paths
// are compared absolute, and again with their symbolic links resolved when
// they exist.
func CheckStateDir(workspace, stateDir string) error {
	ws, err1 := filepath.Abs(workspace)
	st, err2 := filepath.Abs(stateDir)
	if err1 != nil || err2 != nil {
		return nil // reported when the directories are opened
	}
	holds := func(dir, p string) bool {
		rel, err := filepath.Rel(dir, p)
		return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator))
	}
	bad := holds(st, ws)
	if rws, err := filepath.EvalSymlinks(ws); err == nil {
		if rst, err := filepath.EvalSymlinks(st); err == nil {
			bad = bad || holds(rst, rws)
		}
	}
	if !bad {
		return nil
	}
	return fmt.Errorf("state_dir: %s is the workspace (%s) or contains it, so the verbs could reach the hub's own state (accepted: a directory inside the workspace, such as the default .hub, or one outside it)", stateDir, workspace)
}

// readTokenFiles reads every *_token_file setting into its token. A token
// file holds the token alone (a trailing newline is dropped), as systemd
// credentials do (${CREDENTIALS_DIRECTORY}/name), and must not be readable
// by its group or other users. Errors name the key and the file, never the
// token.
func (c *Config) readTokenFiles() error {
	for _, t := range []struct {
		key, tokenKey string
		file          string
		token         *Secret
	}{
		{"web.token_file", "web.token", c.Web.TokenFile, &c.Web.Token},
		{"telegram.token_file", "telegram.token", c.Telegram.TokenFile, &c.Telegram.Token},
		{"telegram.webhook.secret_token_file", "telegram.webhook.secret_token", c.Telegram.Webhook.SecretTokenFile, &c.Telegram.Webhook.SecretToken},
		{"discord.token_file", "discord.token", c.Discord.TokenFile, &c.Discord.Token},
	} {
		if t.file == "" {
			continue
		}
		if t.token.IsSet() {
			return fmt.Errorf("%s and %s are both set: keep one (accepted: the token itself, or a file holding it)", t.tokenKey, t.key)
		}
		v, err := readTokenFile(t.file)
		if err != nil {
			return fmt.Errorf("%s: %w", t.key, err)
		}
		*t.token = NewSecret(v)
	}
	return c.readMCPTokenFiles()
}

// readMCPTokenFiles reads mcp.agents.<name>.token_file like the other token
// files.
func (c *Config) readMCPTokenFiles() error {
	for name, a := range c.MCP.Agents {
		if a.TokenFile == "" {
			continue
		}
		key := "mcp.agents." + name
		if a.Token.IsSet() {
			return fmt.Errorf("%s.token and %s.token_file are both set: keep one (accepted: the token itself, or a file holding it)", key, key)
		}
		v, err := readTokenFile(a.TokenFile)
		if err != nil {
			return fmt.Errorf("%s.token_file: %w", key, err)
		}
		a.Token = NewSecret(v)
		c.MCP.Agents[name] = a
	}
	return nil
}

// validateMCP checks the mcp section: it needs the web listener, and every
// agent a valid name and a long enough token.
func (c *Config) validateMCP(bad func(format string, args ...any)) {
	if !c.MCP.Enabled {
		return
	}
	if !*c.Web.Enabled {
		bad("mcp.enabled is true but web.enabled is false: /mcp is served on the web listener")
	}
	if len(c.MCP.Agents) == 0 && !c.MCP.AcceptWebToken {
		bad("mcp.enabled is true but mcp.agents is empty: give each agent its own token under mcp.agents (docs/mcp.md), or set mcp.accept_web_token: true to let the web token in as the identity web")
	}
	c.validateMCPLimits(bad)
	for name, a := range c.MCP.Agents {
		if err := validAgentName(name); err != nil {
			bad("mcp.agents: %v", err)
		}
		switch {
		case !a.Token.IsSet():
			bad("mcp.agents.%s.token is empty: set it from the environment, e.g. token: ${HUB_MCP_%s_TOKEN}, or name a token_file", name, strings.ToUpper(name))
		case len(a.Token.Reveal()) < 16:
			bad("mcp.agents.%s.token is too short: use at least 16 characters (for example from `openssl rand -hex 24`)", name)
		case c.Web.Token.IsSet() && a.Token.Reveal() == c.Web.Token.Reveal():
			bad("mcp.agents.%s.token is the web token: give each agent its own", name)
		}
	}
	seen := map[string]string{}
	for name, a := range c.MCP.Agents {
		if !a.Token.IsSet() {
			continue
		}
		if other, dup := seen[a.Token.Reveal()]; dup {
			bad("mcp.agents.%s and mcp.agents.%s have the same token: give each agent its own", min(name, other), max(name, other))
		}
		seen[a.Token.Reveal()] = name
	}
}

// validateMCPLimits checks the caps and timeouts of /mcp.
func (c *Config) validateMCPLimits(bad func(format string, args ...any)) {
	m := c.MCP
	for _, t := range []struct {
		key string
		d   Duration
	}{{"mcp.session_timeout", m.SessionTimeout}, {"mcp.stream_idle_timeout", m.StreamIdleTimeout}} {
		if t.d.D() < time.Second || t.d.D() > 24*time.Hour {
			bad("%s: %s is out of range (accepted: 1s to 24h)", t.key, t.d)
		}
	}
	if m.MaxSessions < 1 || m.MaxSessions > MaxMCPSessions {
		bad("mcp.max_sessions: %d is out of range (accepted: 1 to %d sessions)", m.MaxSessions, MaxMCPSessions)
	}
	if m.MaxSessionsPerAgent < 1 || m.MaxSessionsPerAgent > m.MaxSessions {
		bad("mcp.max_sessions_per_agent: %d is out of range (accepted: 1 to mcp.max_sessions, %d)", m.MaxSessionsPerAgent, m.MaxSessions)
	}
	if m.MaxStreamsPerAgent <= m.MaxSessionsPerAgent || m.MaxStreamsPerAgent > MaxMCPSessions {
		bad("mcp.max_streams_per_agent: %d is out of range (accepted: more than mcp.max_sessions_per_agent, %d, so an agent whose every session holds a stream can still call, up to %d)", m.MaxStreamsPerAgent, m.MaxSessionsPerAgent, MaxMCPSessions)
	}
}

// MaxMCPSessions bounds mcp.max_sessions and mcp.max_streams_per_agent.
const MaxMCPSessions = 65536

// validAgentName checks the <name> of an agent:<name> identity.
func validAgentName(name string) error {
	ok := name != "" && len(name) <= 64
	for i := 0; i < len(name) && ok; i++ {
		c := name[i]
		ok = c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || (i > 0 && (c == '-' || c == '_'))
	}
	if !ok {
		return fmt.Errorf("%q is not an agent name (accepted: 1 to 64 lower-case letters, digits, '-' and '_', starting with a letter or digit)", name)
	}
	return nil
}

func readTokenFile(name string) (string, error) {
	f, err := os.Open(name)
	if err != nil {
		return "", err // *PathError: names the file, not its content
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return "", err
	}
	if !fi.Mode().IsRegular() {
		return "", fmt.Errorf("%s is not a regular file", name)
	}
	if perm := fi.Mode().Perm(); perm&0o044 != 0 {
		return "", fmt.Errorf("%s has mode %04o, readable by other users: chmod 600 (or 400) it (accepted: no group or world read)", name, perm)
	}
	b, err := io.ReadAll(io.LimitReader(f, 64<<10+1))
	if err != nil {
		return "", fmt.Errorf("read %s: %w", name, err)
	}
	if len(b) > 64<<10 {
		return "", fmt.Errorf("%s is over 64KiB: it should hold the token alone", name)
	}
	v := strings.TrimSuffix(strings.TrimSuffix(string(b), "\n"), "\r")
	if v == "" {
		return "", fmt.Errorf("%s is empty", name)
	}
	return v, nil
}

// IsLoopback reports whether host (a name or an IP) is a loopback address.
func IsLoopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// ParseCIDR parses a network (10.0.0.0/8, fd00::/8) or a single address
// (taken as its own /32 or /128).
func ParseCIDR(s string) (netip.Prefix, error) {
	if strings.Contains(s, "/") {
		p, err := netip.ParsePrefix(s)
		if err != nil {
			return netip.Prefix{}, fmt.Errorf("%q is not a network such as 10.0.0.0/8 or an address such as 10.0.0.1", s)
		}
		return p.Masked(), nil
	}
	a, err := netip.ParseAddr(s)
	if err != nil {
		return netip.Prefix{}, fmt.Errorf("%q is not a network such as 10.0.0.0/8 or an address such as 10.0.0.1", s)
	}
	a = a.Unmap()
	return netip.PrefixFrom(a, a.BitLen()), nil
}

// ValidIdentity checks an access-control identity.
func ValidIdentity(id string) error {
	if id == "web" {
		return nil
	}
	kind, rest, ok := strings.Cut(id, ":")
	switch {
	case ok && kind == "telegram" && isInt(rest):
		return nil
	case ok && (kind == "discord" || kind == "discord-role") && isSnowflake(rest):
		return nil
	case ok && kind == "agent" && validAgentName(rest) == nil:
		return nil
	}
	return fmt.Errorf("%q is not an identity (accepted: telegram:<user_id>, discord:<user_id>, discord-role:<role_id>, agent:<name>, web)", id)
}

func isInt(s string) bool {
	s = strings.TrimPrefix(s, "-")
	return isSnowflake(s)
}

func isSnowflake(s string) bool {
	if s == "" || len(s) > 20 {
		return false
	}
	for _, c := range s {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// Discover returns the configuration path to use: explicit, else $HUB_CONFIG,
// else ./hub.yml when it exists, else "" (defaults).
func Discover(explicit string) string {
	if explicit != "" {
		return explicit
	}
	if p := os.Getenv("HUB_CONFIG"); p != "" {
		return p
	}
	if _, err := os.Stat("hub.yml"); err == nil {
		return "hub.yml"
	}
	return ""
}
