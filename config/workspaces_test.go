package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func loadYAML(t *testing.T, yml string) (*Config, error) {
	t.Helper()
	p := filepath.Join(t.TempDir(), "hub.yml")
	if err := os.WriteFile(p, []byte(yml), 0o600); err != nil {
		t.Fatal(err)
	}
	return LoadWith(p, env(nil))
}

func TestWorkspacesValid(t *testing.T) {
	cfg, err := loadYAML(t, `
workspaces:
  default:
    path: ./main
  sandbox:
    path: ./sb
    destination:
      kind: docker
      image: debian:bookworm-slim
      memory: 512MiB
      cpus: 1.5
      pids: 256
      user: "1000:1000"
      env_allow: [PATH]
      idle_timeout: 1h
  by_chat:
    "chat:telegram:-100": sandbox
  by_role:
    ops: sandbox
access:
  roles:
    ops: {verbs: ["*"], workspaces: ["*"]}
`)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Workspace != "./main" {
		t.Errorf("workspaces.default.path does not set the top-level workspace: %q", cfg.Workspace)
	}
	if got := strings.Join(cfg.WorkspaceNames(), ","); got != "default,sandbox" {
		t.Errorf("names %s", got)
	}
	sb, ok := cfg.WorkspaceByName("sandbox")
	if !ok || sb.Destination.Kind != DestinationDocker || sb.Destination.Network != "none" || sb.Destination.Memory != 512<<20 || sb.Destination.CPUs != 1.5 {
		t.Errorf("sandbox %+v", sb)
	}
	if d, _ := cfg.WorkspaceByName("default"); d.Destination.Kind != DestinationLocal || d.Path != "./main" {
		t.Errorf("default %+v", d)
	}
	if cfg.Workspaces.ByChat["chat:telegram:-100"] != "sandbox" || cfg.Workspaces.ByRole["ops"] != "sandbox" {
		t.Errorf("by_chat %v by_role %v", cfg.Workspaces.ByChat, cfg.Workspaces.ByRole)
	}
	if got := cfg.Access.Roles["ops"].Workspaces; len(got) != 1 || got[0] != "*" {
		t.Errorf("role workspaces %v", got)
	}
	if a, b := cfg.WorkspaceSessionsDir("default"), cfg.WorkspaceSessionsDir("sandbox"); a != cfg.SessionsDir() || a == b || strings.HasPrefix(b, a+string(filepath.Separator)) {
		t.Errorf("sessions dirs %s and %s", a, b)
	}
}

func TestWorkspaceTopLevelCompat(t *testing.T) {
	cfg, err := loadYAML(t, "workspace: ./w\n")
	if err != nil {
		t.Fatal(err)
	}
	if d, ok := cfg.WorkspaceByName("default"); !ok || d.Path != "./w" || d.Destination.Kind != DestinationLocal {
		t.Fatalf("implicit default %+v", d)
	}
	if _, err := loadYAML(t, "workspace: ./w\nworkspaces:\n  default:\n    path: ./w/\n"); err != nil {
		t.Fatalf("the same directory twice: %v", err)
	}
	_, err = loadYAML(t, "workspace: ./w\nworkspaces:\n  default:\n    path: ./other\n")
	if err == nil || !strings.Contains(err.Error(), "line 4: workspaces.default.path (./other) and the top-level workspace (./w) are both set and differ") {
		t.Fatalf("conflict: %v", err)
	}
}

func TestWorkspacesInvalid(t *testing.T) {
	tests := []struct{ name, yaml, want string }{
		{"bad name", "workspaces:\n  Sand:\n    path: ./s\n", `line 2: workspaces: "Sand" is not a workspace name (accepted: 1 to 32 lower-case letters, digits, '-' and '_', starting with a letter, other than by_chat and by_role)`},
		{"unknown key", "workspaces:\n  s:\n    path: ./s\n    dest: {}\n", `line 4: unknown key "dest" in workspaces.s (accepted: path, destination)`},
		{"unknown destination key", "workspaces:\n  s:\n    path: ./s\n    destination:\n      kind: docker\n      image: x\n      privileged: true\n", `line 7: unknown key "privileged" in workspaces.s.destination (accepted: kind, image, network,`},
		{"bad kind", "workspaces:\n  s:\n    path: ./s\n    destination:\n      kind: vm\n", `line 5: workspaces.s.destination.kind: "vm" is not accepted (accepted: local, docker, remote)`},
		{"no path", "workspaces:\n  s:\n    destination: {kind: local}\n", `line 2: workspaces.s.path is empty`},
		{"docker without image", "workspaces:\n  s:\n    path: ./s\n    destination:\n      kind: docker\n", `line 5: workspaces.s.destination.image is empty`},
		{"docker settings on local", "workspaces:\n  s:\n    path: ./s\n    destination:\n      image: x\n      memory: 1GiB\n", `line 4: workspaces.s.destination: image, memory only apply to kind docker`},
		{"bad network", "workspaces:\n  s:\n    path: ./s\n    destination:\n      kind: docker\n      image: x\n      network: \"bad net\"\n", `line 7: workspaces.s.destination.network: "bad net" is not accepted (accepted: none, host, or the name of a network you created)`},
		{"bad user", "workspaces:\n  s:\n    path: ./s\n    destination:\n      kind: docker\n      image: x\n      user: root\n", `line 7: workspaces.s.destination.user: "root" is not accepted`},
		{"bad cpus", "workspaces:\n  s:\n    path: ./s\n    destination:\n      kind: docker\n      image: x\n      cpus: -1\n", `line 7: workspaces.s.destination.cpus: -1 is out of range`},
		{"bad memory type", "workspaces:\n  s:\n    path: ./s\n    destination:\n      kind: docker\n      image: x\n      memory: lots\n", `line 7:`},
		{"path is the state dir", "state_dir: ./st\nworkspaces:\n  s:\n    path: ./st\n", `line 4: workspaces.s.path: state_dir: ./st is the workspace`},
		{"by_chat bad key", "workspaces:\n  by_chat:\n    telegram: default\n", `line 3: workspaces.by_chat: "telegram" is not a chat key`},
		{"by_chat unknown workspace", "workspaces:\n  by_chat:\n    web: nope\n", `line 3: workspaces.by_chat["web"]: workspace "nope" is not configured (accepted: default)`},
		{"by_role unknown role", "workspaces:\n  by_role:\n    ops: default\n", `line 3: workspaces.by_role: role "ops" is not defined`},
		{"by_role not a map", "workspaces:\n  by_role: [a]\n", `line 2: workspaces.by_role must be a mapping of roles to workspace names`},
		{"not a mapping", "workspaces: [a]\n", `line 1: workspaces must be a mapping`},
		{"role names unknown workspace", "access:\n  roles:\n    ops:\n      verbs: ['*']\n      workspaces: [nope]\n", `access.roles.ops.workspaces: workspace "nope" is not configured (accepted: default, or a glob)`},
		{"remote without node", "workspaces:\n  r:\n    destination: {kind: remote}\n", `line 3: workspaces.r.destination.node is empty (accepted: a node under nodes:, none configured`},
		{"remote unknown node", "%sworkspaces:\n  r:\n    destination:\n      kind: remote\n      node: db-2\n", `line 8: workspaces.r.destination.node: "db-2" is not under nodes: (accepted: db-1)`},
		{"remote with path", "%sworkspaces:\n  r:\n    path: ./r\n    destination: {kind: remote, node: db-1}\n", `line 6: workspaces.r.path: a remote workspace has no path on the hub`},
		{"remote with docker settings", "%sworkspaces:\n  r:\n    destination: {kind: remote, node: db-1, image: x}\n", `line 6: workspaces.r.destination: image only apply to kind docker; this workspace runs on a remote node`},
		{"remote bad workspace", "%sworkspaces:\n  r:\n    destination:\n      kind: remote\n      node: db-1\n      workspace: Logs\n", `line 9: workspaces.r.destination.workspace: "Logs" is not a node workspace name`},
		{"remote default", "%sworkspaces:\n  default:\n    destination:\n      kind: remote\n      node: db-1\n", `line 7: workspaces.default.destination.kind: remote is not accepted for the default workspace`},
		{"node on local", "%sworkspaces:\n  s:\n    path: ./s\n    destination: {node: db-1}\n", `line 7: workspaces.s.destination: node and workspace only apply to kind remote`},
		{"role bad glob", "access:\n  roles:\n    ops:\n      verbs: ['*']\n      workspaces: ['[']\n", `access.roles.ops.workspaces: "[" is not a valid pattern`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := loadYAML(t, strings.Replace(tt.yaml, "%s", "nats: {embedded: true}\nnodes:\n  db-1: {nkey: UDXU4RCSJNZOIQHZNWXHXORDPRTGNJAHAHFRGZNEEJCPQTT2M7NLCNF4}\n", 1))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("got %v, want %q", err, tt.want)
			}
		})
	}
}

func TestWorkspacesRemote(t *testing.T) {
	cfg, err := loadYAML(t, `
nats: {embedded: true}
nodes:
  db-1: {nkey: UDXU4RCSJNZOIQHZNWXHXORDPRTGNJAHAHFRGZNEEJCPQTT2M7NLCNF4}
workspaces:
  db1-logs:
    destination: {kind: remote, node: db-1, workspace: logs}
access:
  roles:
    ops: {verbs: ["*"], workspaces: [db1-logs]}
`)
	if err != nil {
		t.Fatal(err)
	}
	wc, ok := cfg.WorkspaceByName("db1-logs")
	if !ok || !wc.IsRemote() || wc.Destination.Node != "db-1" || wc.Destination.Workspace != "logs" || wc.Path != "" {
		t.Fatalf("db1-logs = %+v", wc)
	}
}
