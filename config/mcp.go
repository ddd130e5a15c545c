package config

import (
	"strings"
	"time"
)

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

// MCPAgent is one MCP caller over HTTP.
type MCPAgent struct {
	Token Secret `yaml:"token"`
	// TokenFile names a file holding the token instead.
	TokenFile string `yaml:"token_file"`
}

// StdioOnly is the Override of `hub mcp`, which serves MCP over stdio and
// no /mcp endpoint: the mcp section, which configures that endpoint, is
// off, so its agents' tokens are neither read nor checked (an MCP client
// starting `hub mcp` with a minimal environment has none of them). Their
// token files stay protected from the verbs.
func StdioOnly(c *Config) { c.MCP.Enabled = false }

// MaxMCPSessions bounds mcp.max_sessions and mcp.max_streams_per_agent.
const MaxMCPSessions = 65536

func (m *MCP) applyDefaults(*Config) {
	setDefault(&m.SessionTimeout, Duration(time.Hour))
	setDefault(&m.MaxSessions, 256)
	setDefault(&m.MaxSessionsPerAgent, 32)
	setDefault(&m.MaxStreamsPerAgent, 64)
	setDefault(&m.StreamIdleTimeout, Duration(5*time.Minute))
}

// validate checks the mcp section: it needs the web listener, and every
// agent a valid name and a long enough token of its own.
func (m *MCP) validate(c *Config, v *validator) {
	if !m.Enabled {
		return
	}
	if !*c.Web.Enabled {
		v.badAt("mcp.enabled", "mcp.enabled", " is true but web.enabled is false: /mcp is served on the web listener")
	}
	if len(m.Agents) == 0 && !m.AcceptWebToken {
		v.badAt("mcp.enabled", "mcp.enabled", " is true but mcp.agents is empty: give each agent its own token under mcp.agents (docs/mcp.md), or set mcp.accept_web_token: true to let the web token in as the identity web")
	}
	m.validateLimits(v)
	for _, name := range sortedKeys(m.Agents) {
		key, tok := "mcp.agents."+name, m.Agents[name].Token.Reveal()
		if err := validAgentName(name); err != nil {
			v.badAt(key, "mcp.agents", ": %v", err)
		}
		switch {
		case tok == "":
			v.bad(key+".token", " is empty: set it from the environment, e.g. token: ${HUB_MCP_%s_TOKEN}, or name a token_file", strings.ToUpper(name))
		case len(tok) < 16:
			v.bad(key+".token", " is too short: use at least 16 characters (for example from `openssl rand -hex 24`)")
		case c.Web.Token.IsSet() && tok == c.Web.Token.Reveal():
			v.bad(key+".token", " is the web token: give each agent its own")
		}
	}
	m.validateDistinctTokens(v)
}

// validateDistinctTokens refuses two agents with one token: each agent is
// an identity of its own.
func (m *MCP) validateDistinctTokens(v *validator) {
	seen := map[string]string{}
	for _, name := range sortedKeys(m.Agents) {
		tok := m.Agents[name].Token.Reveal()
		if tok == "" {
			continue
		}
		if other, dup := seen[tok]; dup {
			v.badAt("mcp.agents."+name+".token", "mcp.agents."+other, " and mcp.agents.%s have the same token: give each agent its own", name)
			continue
		}
		seen[tok] = name
	}
}

// validateLimits checks the caps and timeouts of /mcp.
func (m *MCP) validateLimits(v *validator) {
	for _, t := range []struct {
		key string
		d   Duration
	}{{"mcp.session_timeout", m.SessionTimeout}, {"mcp.stream_idle_timeout", m.StreamIdleTimeout}} {
		if t.d.D() < time.Second || t.d.D() > 24*time.Hour {
			v.bad(t.key, ": %s is out of range (accepted: 1s to 24h)", t.d)
		}
	}
	if m.MaxSessions < 1 || m.MaxSessions > MaxMCPSessions {
		v.bad("mcp.max_sessions", ": %d is out of range (accepted: 1 to %d sessions)", m.MaxSessions, MaxMCPSessions)
	}
	if m.MaxSessionsPerAgent < 1 || m.MaxSessionsPerAgent > m.MaxSessions {
		v.bad("mcp.max_sessions_per_agent", ": %d is out of range (accepted: 1 to mcp.max_sessions, %d)", m.MaxSessionsPerAgent, m.MaxSessions)
	}
	if m.MaxStreamsPerAgent <= m.MaxSessionsPerAgent || m.MaxStreamsPerAgent > MaxMCPSessions {
		v.bad("mcp.max_streams_per_agent", ": %d is out of range (accepted: more than mcp.max_sessions_per_agent, %d, so an agent whose every session holds a stream can still call, up to %d)", m.MaxStreamsPerAgent, m.MaxSessionsPerAgent, MaxMCPSessions)
	}
}

// secretFiles are the agents' token files, by agent name.
func (m *MCP) secretFiles() []secretFile {
	var out []secretFile
	for _, name := range sortedKeys(m.Agents) {
		key, a := "mcp.agents."+name, m.Agents[name]
		f := secretFile{key: key + ".token_file", path: a.TokenFile, tokenKey: key + ".token", token: a.Token}
		if m.Enabled {
			// Read only for the endpoint that uses it (StdioOnly).
			f.setToken = func(s Secret) {
				a.Token = s
				m.Agents[name] = a
			}
		}
		out = append(out, f)
	}
	return out
}

// validAgentName checks the <name> of an agent:<name> identity.
func validAgentName(name string) error { return checkName("an agent", name) }
