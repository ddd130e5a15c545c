//go:build unix

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

// TestExecWorkspaceAmbiguity: a path is always a directory; a configured
// name that is also a directory here (not its own) is refused with how to
// say which; a name whose directory here is its own is the workspace.
func TestExecWorkspaceAmbiguity(t *testing.T) {
	dir := wsDir(t)
	yml := strings.Replace(wsYAML, "  by_chat:", "  beta:\n    path: ./beta\n  by_chat:", 1)
	if err := os.WriteFile(filepath.Join(dir, "hub.yml"), []byte(yml), 0o600); err != nil {
		t.Fatal(err)
	}
	for d, content := range map[string]string{"alpha": "alpha directory", "beta": "beta workspace"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, d, "x.txt"), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	env := `{"verb":"fs.readFile","arguments":{"path":"x.txt"}}`
	for _, c := range []struct {
		flag       string
		want, errs string
		code       int
	}{
		{"alpha", "", "--workspace alpha is ambiguous: it names the configured workspace alpha and the directory ./alpha here; say --workspace ./alpha for the directory", 2},
		{"./alpha", `"content":"alpha directory"`, "", 0},
		{filepath.Join(dir, "alpha"), `"content":"alpha directory"`, "", 0},
		{"a", `"content":"alpha file"`, "", 0},        // not a workspace name: a directory
		{"beta", `"content":"beta workspace"`, "", 0}, // its own directory: the workspace
		{".", `"content":"default file"`, "", 0},
		{"default", `"content":"default file"`, "", 0},
	} {
		out, errs, code := runHub(t, dir, env, "exec", "--config", "hub.yml", "--workspace", c.flag)
		if code != c.code || !strings.Contains(out, c.want) || !strings.Contains(errs, c.errs) {
			t.Errorf("--workspace %s: %d %q %q; want %d %s %s", c.flag, code, out, errs, c.code, c.want, c.errs)
		}
	}
	// Elsewhere, alpha is the workspace.
	other := t.TempDir()
	abs := "workspace: " + dir + "\nworkspaces:\n  alpha:\n    path: " + filepath.Join(dir, "a") + "\n"
	if err := os.WriteFile(filepath.Join(other, "hub.yml"), []byte(abs), 0o600); err != nil {
		t.Fatal(err)
	}
	out, errs, code := runHub(t, other, env, "exec", "--config", "hub.yml", "--workspace", "alpha")
	if code != 0 || !strings.Contains(out, `"content":"alpha file"`) {
		t.Errorf("--workspace alpha elsewhere: %d %q %q", code, out, errs)
	}
}

// TestWorkspacesCommandsOnline: while the hub runs, hub workspaces answers
// through its admin socket with what the hub runs, reloads included.
func TestWorkspacesCommandsOnline(t *testing.T) {
	dir := wsDir(t)
	yml := wsYAML + "web:\n  listen: 127.0.0.1:0\n"
	if err := os.WriteFile(filepath.Join(dir, "hub.yml"), []byte(yml), 0o600); err != nil {
		t.Fatal(err)
	}
	startServe(t, dir, "--config", "hub.yml")
	out, errs, code := runHub(t, dir, "", "workspaces", "show", "--config", "hub.yml", "--chat", "chat:telegram:7")
	if code != 0 || !strings.Contains(out, "workspace:   alpha") || !strings.Contains(out, `why:         workspaces.by_chat["chat:telegram:7"]`) {
		t.Fatalf("show --chat through the hub: %d %q %q", code, out, errs)
	}
	out, _, code = runHub(t, dir, "", "workspaces", "show", "alpha", "--config", "hub.yml", "--json")
	if code != 0 || !strings.Contains(out, `"name": "alpha"`) || !strings.Contains(out, `"roles": [`) {
		t.Fatalf("show alpha through the hub: %d %q", code, out)
	}
	if _, errs, code := runHub(t, dir, "", "workspaces", "show", "nope", "--config", "hub.yml"); code == 0 || !strings.Contains(errs, `workspace "nope" is not configured (accepted: default, alpha)`) {
		t.Fatalf("show nope through the hub: %d %q", code, errs)
	}
	if _, errs, code := runHub(t, dir, "", "workspaces", "reset", "alpha", "--config", "hub.yml"); code == 0 || !strings.Contains(errs, "workspace alpha runs locally: there is no container to reset") {
		t.Fatalf("reset a local workspace through the hub: %d %q", code, errs)
	}
	// The running hub's rules change with a reload, not with the file alone.
	if err := os.WriteFile(filepath.Join(dir, "hub.yml"), []byte(strings.Replace(yml, `    "chat:telegram:7": alpha`, `    "chat:telegram:8": alpha`, 1)), 0o600); err != nil {
		t.Fatal(err)
	}
	if out, _, _ := runHub(t, dir, "", "workspaces", "show", "--config", "hub.yml", "--chat", "chat:telegram:7"); !strings.Contains(out, "workspace:   alpha") {
		t.Fatalf("before the reload the hub keeps its rules: %q", out)
	}
	if out, errs, code := runHub(t, dir, "", "reload", "--config", "hub.yml"); code != 0 || !strings.Contains(out, "applied: workspaces (changed: workspaces.by_chat)") {
		t.Fatalf("reload: %d %q %q", code, out, errs)
	}
	if out, _, _ := runHub(t, dir, "", "workspaces", "show", "--config", "hub.yml", "--chat", "chat:telegram:7"); !strings.Contains(out, "workspace:   default") {
		t.Fatalf("after the reload: %q", out)
	}
}
