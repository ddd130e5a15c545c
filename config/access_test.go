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
			if !reflect.DeepEqual(cfg.Access, c.want) {
				t.Fatalf("access = %+v, want %+v", cfg.Access, c.want)
			}
		})
	}
}
