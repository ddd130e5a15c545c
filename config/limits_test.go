package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestWebLimitsAndAdminPermissions: the listener's limits have defaults and
// ranges, and a role's admin permissions are known names; each error names
// the key and what is accepted.
func TestWebLimitsAndAdminPermissions(t *testing.T) {
	d := Default()
	if d.Web.MaxConnections != 1024 || d.Web.MaxConnectionsPerClient != 64 || d.Web.HeaderTimeout.D().Seconds() != 10 ||
		d.Web.BodyTimeout.D().Seconds() != 60 || d.Web.WriteTimeout.D().Seconds() != 60 || d.Web.IdleTimeout.D().Seconds() != 120 {
		t.Fatalf("web limit defaults: %+v", d.Web)
	}
	if got := d.Access.Grants["web"]; len(got) != 1 || got[0] != OperatorRole {
		t.Fatalf("the default grant changed: %v", d.Access.Grants)
	}
	cases := []struct {
		name, yml, want string
	}{
		{"no connections", "web:\n  max_connections: -1\n", "web.max_connections: -1 is out of range (accepted: 1 to 1048576"},
		{"too many connections", "web:\n  max_connections: 2000000\n", "web.max_connections: 2000000 is out of range"},
		{"per client over the total", "web:\n  max_connections: 10\n  max_connections_per_client: 11\n", "web.max_connections_per_client: 11 is out of range (accepted: 1 to web.max_connections, 10)"},
		{"per client negative", "web:\n  max_connections_per_client: -3\n", "web.max_connections_per_client: -3 is out of range"},
		{"history", "web:\n  history: 1000000000\n", "web.history: 1000000000 is out of range (accepted: 1 to 100000 events)"},
		{"body timeout", "web:\n  body_timeout: 2h\n", "web.body_timeout: 2h0m0s is out of range (accepted: 100ms to 1h)"},
		{"header timeout", "web:\n  header_timeout: 1ms\n", "web.header_timeout: 1ms is out of range"},
		{"write timeout", "web:\n  write_timeout: -1s\n", "web.write_timeout: -1s is out of range"},
		{"idle timeout", "web:\n  idle_timeout: 3h\n", "web.idle_timeout: 3h0m0s is out of range"},
		{"unknown permission", "access:\n  roles:\n    ops: {verbs: [admin.write]}\n", `access.roles.ops.verbs: "admin.write" is not an admin permission (accepted: admin.read, admin.targets, admin.deliver, admin.outbox, admin.channels, admin.access, admin.workspaces, admin.cancel, admin.schedules, or admin.* for all of them)`},
		{"permission glob matching none", "access:\n  roles:\n    ops: {verbs: ['admin.x*']}\n", `"admin.x*" is not an admin permission`},
		{"permissions", "web:\n  max_connections: 10\n  max_connections_per_client: 10\n  body_timeout: 100ms\naccess:\n  roles:\n    ops: {verbs: ['*', admin.read, 'admin.t*', ADMIN.DELIVER, 'admin.*']}\n  grants:\n    web: [ops]\n", ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := filepath.Join(t.TempDir(), "hub.yml")
			if err := os.WriteFile(p, []byte(tc.yml), 0o600); err != nil {
				t.Fatal(err)
			}
			_, err := LoadWith(p, env(nil))
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Fatalf("error %v, want %q", err, tc.want)
			}
		})
	}
}
