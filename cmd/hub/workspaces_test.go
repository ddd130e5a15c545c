package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const wsYAML = `
workspaces:
  alpha:
    path: ./a
  by_chat:
    "chat:telegram:7": alpha
access:
  roles:
    ops: {verbs: ["*"], workspaces: ["*"]}
  grants:
    web: [ops]
`

func wsDir(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	for _, d := range []string{"a"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "hub.yml"), []byte(wsYAML), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "a", "x.txt"), []byte("alpha file"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "x.txt"), []byte("default file"), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

func TestWorkspacesCommands(t *testing.T) {
	dir := wsDir(t)
	out, errs, code := runHub(t, dir, "", "workspaces", "list", "--config", "hub.yml")
	if code != 0 || !strings.Contains(out, "alpha") || !strings.Contains(out, "used by: ops") || !strings.Contains(out, "destination: local (host processes in "+filepath.Join(dir, "a")) {
		t.Fatalf("list: %d %q %q", code, out, errs)
	}
	out, _, code = runHub(t, dir, "", "workspaces", "list", "--config", "hub.yml", "--json")
	if code != 0 || !strings.Contains(out, `"name": "alpha"`) || !strings.Contains(out, `"roles": [`) {
		t.Fatalf("list --json: %d %q", code, out)
	}
	out, _, code = runHub(t, dir, "", "workspaces", "show", "--config", "hub.yml", "--chat", "chat:telegram:7")
	if code != 0 || !strings.Contains(out, "workspace:   alpha") || !strings.Contains(out, `why:         workspaces.by_chat["chat:telegram:7"]`) {
		t.Fatalf("show --chat: %d %q", code, out)
	}
	out, _, code = runHub(t, dir, "", "workspaces", "show", "--config", "hub.yml")
	if code != 0 || !strings.Contains(out, "workspace:   default") {
		t.Fatalf("show: %d %q", code, out)
	}
	_, errs, code = runHub(t, dir, "", "workspaces", "reset", "alpha", "--config", "hub.yml")
	if code == 0 || !strings.Contains(errs, "workspace alpha runs locally: there is no container to reset") {
		t.Fatalf("reset local: %d %q", code, errs)
	}
}

func TestExecWorkspaceFlag(t *testing.T) {
	dir := wsDir(t)
	env := `{"verb":"fs.readFile","arguments":{"path":"x.txt"}}`
	for _, c := range []struct {
		args []string
		env  string
		want string
	}{
		{nil, env, `"content":"default file"`},
		{[]string{"--workspace", "alpha"}, env, `"content":"alpha file"`},
		{[]string{"--workspace", "a"}, env, `"content":"alpha file"`}, // a directory, as before
		{nil, `{"verb":"fs.readFile","arguments":{"path":"x.txt"},"workspace":"alpha"}`, `"content":"alpha file"`},
		{[]string{"--workspace", "default"}, `{"verb":"fs.readFile","arguments":{"path":"x.txt"},"workspace":"alpha"}`, `names workspace \"alpha\" and --workspace \"default\"`},
	} {
		args := append([]string{"exec", "--config", "hub.yml"}, c.args...)
		out, errs, _ := runHub(t, dir, c.env, args...)
		if !strings.Contains(out, c.want) {
			t.Errorf("hub %v: %q %q, want %s", args, out, errs, c.want)
		}
	}
}
