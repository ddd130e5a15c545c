package config

import (
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

// TestDefaultAccess: without an access section, the panel whose token is
// generated on a loopback listener is the operator's (every verb, every
// admin permission, every workspace); a configured token, a token file,
// a listener others reach or any access key keeps deny by default (the
// panel reads, nothing more).
func TestDefaultAccess(t *testing.T) {
	operator := Access{
		Roles:     map[string]Role{OperatorRole: {Verbs: []string{"*", "admin.*"}, Workspaces: []string{"*"}}},
		Grants:    map[string][]string{"web": {OperatorRole}},
		Defaulted: true,
	}
	reader := Access{Grants: map[string][]string{"web": {"reader"}}, Defaulted: true}
	token := "0123456789abcdef0123"
	cases := []struct {
		name, yml string
		env       map[string]string
		want      Access
	}{
		{"no configuration", "", nil, operator},
		{"loopback, no token", "web:\n  listen: 127.0.0.1:9000\n", nil, operator},
		{"localhost, no token", "web:\n  listen: localhost:9000\n", nil, operator},
		{"ipv6 loopback, no token", "web:\n  listen: \"[::1]:9000\"\n", nil, operator},
		{"token from an unset variable", "web:\n  token: ${HUB_WEB_TOKEN:-}\n", nil, operator},
		{"configured token", "web:\n  token: ${T}\n", map[string]string{"T": token}, reader},
		{"all addresses", "web:\n  listen: 0.0.0.0:8080\n  token: ${T}\n", map[string]string{"T": token}, reader},
		{"web off", "web:\n  enabled: false\n", nil, reader},
		{"an access section", "access:\n  grants:\n    \"telegram:1\": [reader]\n", nil, Access{Grants: map[string][]string{"telegram:1": {"reader"}}}},
		{"default roles only", "access:\n  default_roles: [reader]\n", nil, Access{DefaultRoles: []string{"reader"}}},
	}
	tokenFile := writeTokenFile(t, t.TempDir(), "web-token", token+"\n", 0o600)
	cases = append(cases, struct {
		name, yml string
		env       map[string]string
		want      Access
	}{"token file", "web:\n  token_file: " + tokenFile + "\n", nil, reader})
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			path := ""
			if c.yml != "" {
				path = filepath.Join(t.TempDir(), "hub.yml")
				if err := os.WriteFile(path, []byte(c.yml), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			cfg, err := LoadWith(path, env(c.env))
			if err != nil {
				t.Fatal(err)
			}
			c.want.ConfirmTTL = DefaultConfirmTTL
			if !reflect.DeepEqual(cfg.Access, c.want) {
				t.Fatalf("access = %+v, want %+v", cfg.Access, c.want)
			}
		})
	}
}

// TestStdioOnlyLeavesTheMCPEndpointOut: `hub mcp` loads a configuration
// whose /mcp agents have no token in its environment (an MCP client
// starts it with a minimal one) or a token file it cannot read: the mcp
// section is off, nothing of it is read or checked, and the token file is
// still protected. Without the override the same file is refused.
func TestStdioOnlyLeavesTheMCPEndpointOut(t *testing.T) {
	dir := t.TempDir()
	missing := filepath.Join(dir, "ci-token")
	yml := "mcp:\n  enabled: true\n  agents:\n    claude:\n      token: ${HUB_MCP_CLAUDE_TOKEN}\n    ci:\n      token_file: " + missing + "\n"
	path := filepath.Join(dir, "hub.yml")
	if err := os.WriteFile(path, []byte(yml), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadWith(path, env(nil)); err == nil {
		t.Fatal("the /mcp endpoint's missing tokens were accepted")
	}
	cfg, err := LoadWith(path, env(nil), StdioOnly)
	if err != nil {
		t.Fatalf("hub mcp's load: %v", err)
	}
	if cfg.MCP.Enabled || cfg.MCP.Agents["ci"].Token.IsSet() {
		t.Fatalf("mcp section %+v", cfg.MCP)
	}
	found := false
	for _, p := range cfg.ProtectedPaths() {
		found = found || p == missing
	}
	if !found {
		t.Fatalf("the agent's token file is not protected: %v", cfg.ProtectedPaths())
	}
}
