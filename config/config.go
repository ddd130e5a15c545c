package config

import (
	"fmt"
	"os"
)

// Config is the whole configuration. YAML keys are snake_case. Each
// section lives in a file of its own with its defaults and its checks
// (web.go, telegram.go, …; docs/configuration.md).
type Config struct {
	// Workspace is the root directory of the fs verbs and proc.run: the
	// path of the default workspace (workspaces.default.path).
	Workspace string `yaml:"workspace"`
	// StateDir holds hub.db, mirrors and the other files of docs/state.md.
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
	// NATS and Nodes configure remote nodes (see nats.go, nodes.go).
	NATS  NATS                 `yaml:"nats"`
	Nodes map[string]NodeEntry `yaml:"nodes"`
	// Uploads configures the files sent with messages (uploads.go).
	Uploads Uploads `yaml:"uploads"`
	// Schedules are the calls the hub makes on its own (see schedules.go).
	Schedules Schedules `yaml:"schedules"`
	// Commands are the named commands, verbs cmd.<name> (see commands.go).
	Commands Commands `yaml:"commands"`

	// Path is the file the configuration came from; empty for defaults.
	Path string `yaml:"-"`
	// src is where the keys were written, for the errors of Validate.
	src *source
}

// section is one part of the configuration: it fills in its defaults and
// checks its values, reporting each problem with its key. c is the whole
// configuration, for the checks that look across sections (mcp needs the
// web listener, a workspace names a node).
type section interface {
	applyDefaults(c *Config)
	validate(c *Config, v *validator)
}

// sections lists every section in the order their defaults are applied:
// the named workspaces before the top-level workspace they may set.
func (c *Config) sections() []section {
	return []section{
		&c.Workspaces, topLevel{}, &c.Log, &c.Web, &c.Telegram, &c.Discord, &c.MCP, &c.Metrics,
		&c.Access, &c.Verbs, &c.Sessions, &c.Outbox, &c.Mirror, &c.NATS, nodesSection{}, &c.Commands, &c.Schedules, &c.Uploads,
	}
}

// Getenv looks up environment variables; tests replace it.
type Getenv func(string) (string, bool)

// Load reads the configuration at path (strict), expands ${VAR} from the
// environment, applies defaults and validates. An empty path means no file:
// defaults only.
func Load(path string, overrides ...Override) (*Config, error) {
	return LoadWith(path, os.LookupEnv, overrides...)
}

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

// Override changes a configuration read from its file before its token
// files are read, its defaults apply and it is checked: what a command
// changes of it (StdioOnly) or a value the command line gives (Listen).
type Override func(*Config)

// LoadWith is Load with an explicit environment. Its errors name the file,
// and each problem its line and key path (Error). The environment's
// ListenEnv, then each override, in order, apply over the file.
func LoadWith(path string, env Getenv, overrides ...Override) (*Config, error) {
	cfg := &Config{}
	if path != "" {
		data, err := os.ReadFile(path)
		if err != nil {
			return nil, fmt.Errorf("config: %w", err)
		}
		if err := parse(data, path, env, cfg); err != nil {
			return nil, err
		}
	}
	cfg.Web.listenFromEnv(env)
	for _, o := range overrides {
		o(cfg)
	}
	if path != "" {
		if err := cfg.readTokenFiles(); err != nil {
			return nil, err
		}
		cfg.Path = path
	}
	cfg.ApplyDefaults()
	if err := cfg.Validate(); err != nil {
		if path == "" {
			return nil, fmt.Errorf("config: %w", err)
		}
		return nil, err
	}
	return cfg, nil
}

// ApplyDefaults fills every unset value.
func (c *Config) ApplyDefaults() {
	for _, s := range c.sections() {
		s.applyDefaults(c)
	}
}

// Validate checks every value. Each problem is an *Error naming its key
// (and, for a configuration read from a file, the file and the line);
// several are joined in the order of their lines.
func (c *Config) Validate() error {
	v := &validator{src: c.src}
	for _, s := range c.sections() {
		s.validate(c, v)
	}
	return v.err()
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

// setDefault sets *v to d when it is unset (zero).
func setDefault[T comparable](v *T, d T) {
	var zero T
	if *v == zero {
		*v = d
	}
}

// defaultTrue sets an unset *bool to true.
func defaultTrue(p **bool) {
	if *p == nil {
		t := true
		*p = &t
	}
}
