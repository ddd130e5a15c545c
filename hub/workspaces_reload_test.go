package hub_test

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/a6afc2ce/hermes-hub/config"
	"github.com/a6afc2ce/hermes-hub/hub"
)

// TestReloadWorkspaces: who may use a workspace and by_chat/by_role apply
// on the next turn after a reload; adding a workspace or changing its path
// or destination is reported as needing a restart and changes nothing.
func TestReloadWorkspaces(t *testing.T) {
	root := t.TempDir()
	for _, d := range []string{"main", "a", "b"} {
		if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(root, d, "where.txt"), []byte("in "+d), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	file := filepath.Join(root, "hub.yml")
	write := func(s string) {
		t.Helper()
		if err := os.WriteFile(file, []byte(s), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	const base = `workspace: ROOT/main
workspaces:
  alpha:
    path: ROOT/a
%s
access:
  roles:
    dev: {verbs: ["*"]%s}
  grants:
    "telegram:2": [dev]
`
	yml := func(byChat, devWorkspaces string) string {
		s := strings.Replace(strings.Replace(base, "%s", byChat, 1), "%s", devWorkspaces, 1)
		return strings.ReplaceAll(s, "ROOT", root)
	}
	write(yml("", ""))
	load := func() (*config.Config, error) {
		cfg, err := config.Load(file)
		if err != nil {
			return nil, err
		}
		cfg.StateDir = filepath.Join(root, ".hub")
		return cfg, nil
	}
	cfg, err := load()
	if err != nil {
		t.Fatal(err)
	}
	w := openWS(t, cfg, &wsRunner{})
	r := w.env.Runtime.EnableReload(load)

	// Before: dev may use only default, and chat 200 works in default.
	if _, got := w.say(t, "2", "200", "/use alpha"); !strings.Contains(got, `Workspace "alpha" (asked with /use) is not open to your roles (dev)`) {
		t.Fatalf("/use alpha before the reload: %q", got)
	}
	if _, got := w.say(t, "2", "200", "/where"); !strings.Contains(got, "Workspace: default") {
		t.Fatalf("/where before the reload: %q", got)
	}

	// dev may use alpha, and chat 200 is put in alpha by configuration.
	write(yml(`  by_chat:
    "chat:telegram:200": alpha`, `, workspaces: [default, alpha]`))
	rep, err := r.Reload()
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(rep.Applied, []string{"access", "workspaces"}) || !slices.Equal(rep.Changed, []string{"access.roles", "workspaces.by_chat"}) || len(rep.Restart) != 0 {
		t.Fatalf("report: %+v", rep)
	}
	if _, got := w.say(t, "2", "200", "/where"); !strings.Contains(got, "Workspace: alpha") || !strings.Contains(got, `Why: workspaces.by_chat["chat:telegram:200"]`) {
		t.Fatalf("/where after the reload: %q", got)
	}
	if st, got := w.say(t, "2", "200", "/fs.readFile where.txt"); st != hub.StatusExecuted || !strings.Contains(got, "in a") {
		t.Fatalf("a turn after the reload: %s %q", st, got)
	}
	if res, err := w.env.Runtime.Hub.EffectiveWorkspace("chat:telegram:200"); err != nil || res.Name != "alpha" {
		t.Fatalf("effective: %+v %v", res, err)
	}

	// A new workspace and a moved one need a restart; the running ones stay.
	moved := yml(`  beta:
    path: ROOT/b
  by_chat:
    "chat:telegram:200": alpha`, `, workspaces: [default, alpha]`)
	moved = strings.Replace(strings.ReplaceAll(moved, "ROOT", root), root+"/a", root+"/b", 1)
	write(moved)
	rep, err = r.Reload()
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Applied) != 0 || !slices.Equal(rep.Restart, []string{"workspaces.alpha", "workspaces.beta"}) || !strings.Contains(rep.String(), "needs a restart: workspaces.alpha, workspaces.beta") {
		t.Fatalf("restart-only workspace changes: %+v", rep)
	}
	if st, got := w.say(t, "2", "200", "/fs.readFile where.txt"); st != hub.StatusExecuted || !strings.Contains(got, "in a") {
		t.Fatalf("alpha must keep its directory until a restart: %s %q", st, got)
	}

	// Taking alpha away applies on the next turn: refused, never swapped.
	write(yml("", ""))
	if _, err := r.Reload(); err != nil {
		t.Fatal(err)
	}
	if st, got := w.say(t, "2", "200", `{"verb":"fs.readFile","arguments":{"path":"where.txt"},"workspace":"alpha"}`); st != hub.StatusForbidden || !strings.Contains(got, `Workspace "alpha" (chosen for this call) is not open to your roles (dev)`) {
		t.Fatalf("alpha taken away: %s %q", st, got)
	}
	if _, got := w.say(t, "2", "200", "/where"); !strings.Contains(got, "Workspace: default") {
		t.Fatalf("/where after by_chat was removed: %q", got)
	}
}
