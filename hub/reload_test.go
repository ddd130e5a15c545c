package hub_test

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/a6afc2ce/hermes-hub/config"
	"github.com/a6afc2ce/hermes-hub/hub"
)

// TestReload: a reload applies a new grant to the next turn, refuses a
// broken file (with its line) and keeps serving with the running
// configuration, reports what needs a restart, and applies every
// registered part whose keys changed.
func TestReload(t *testing.T) {
	ws := t.TempDir()
	state := filepath.Join(ws, ".hub")
	file := filepath.Join(ws, "hub.yml")
	write := func(s string) {
		t.Helper()
		if err := os.WriteFile(file, []byte(s), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	base := "access:\n  roles:\n    admin: {verbs: ['*']}\n  grants:\n    \"telegram:1\": [reader]\n"
	write(base)
	load := func() (*config.Config, error) {
		cfg, err := config.Load(file)
		if err != nil {
			return nil, err
		}
		cfg.Workspace, cfg.StateDir = ws, state
		return cfg, nil
	}
	cfg, err := load()
	if err != nil {
		t.Fatal(err)
	}
	e := openEnvConfig(t, cfg, nil)
	r := e.rt.EnableReload(load)
	var level string
	r.Register(hub.Reloadable{Name: "log", Keys: []string{"log.level"}, Apply: func(c *config.Config) { level = c.Log.Level }})
	ctx := context.Background()
	if res, _ := e.rt.Hub.Handle(ctx, tgMsg(1, 1, "/fs.writeFile a.txt hi")); res.Status != hub.StatusForbidden {
		t.Fatalf("before the reload: %+v", res)
	}

	write(strings.Replace(base, "[reader]", "[admin]", 1) + "log:\n  level: debug\n")
	rep, err := e.rt.Reload()
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(rep.Applied, []string{"access", "log"}) || !slices.Equal(rep.Changed, []string{"access.grants", "log.level"}) || len(rep.Restart) != 0 || level != "debug" {
		t.Fatalf("report %+v, level %q", rep, level)
	}
	if res, _ := e.rt.Hub.Handle(ctx, tgMsg(1, 2, "/fs.writeFile a.txt hi")); res.Status != hub.StatusExecuted {
		t.Fatalf("after the reload: %+v", res)
	}

	write(base + "  bogus: 1\n")
	if _, err := e.rt.Reload(); err == nil || !strings.Contains(err.Error(), "line 6") || !strings.Contains(err.Error(), `unknown key "bogus"`) || !strings.Contains(err.Error(), "running configuration is kept") {
		t.Fatalf("broken file: %v", err)
	}
	if res, _ := e.rt.Hub.Handle(ctx, tgMsg(1, 3, "/fs.writeFile b.txt hi")); res.Status != hub.StatusExecuted {
		t.Fatalf("after a refused reload the running configuration must stay: %+v", res)
	}

	write(strings.Replace(base, "[reader]", "[admin]", 1) + "log:\n  level: debug\nweb:\n  listen: 127.0.0.1:9999\ntelegram:\n  poll_timeout: 3s\n")
	rep, err = e.rt.Reload()
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Applied) != 0 || !slices.Equal(rep.Restart, []string{"telegram.poll_timeout", "web.listen"}) || !strings.Contains(rep.String(), "needs a restart: telegram.poll_timeout, web.listen") {
		t.Fatalf("restart-only changes: %+v\n%s", rep, rep)
	}
}

// TestReloadNeedsEnable: a runtime without EnableReload (the CLI's own,
// while no hub runs) says so.
func TestReloadNeedsEnable(t *testing.T) {
	e := newEnv(t, nil)
	if _, err := e.rt.Reload(); err != hub.ErrNoReload {
		t.Fatalf("%v", err)
	}
}

// TestConfigDiffNamesSecretsNotValues: a changed token is reported by its
// key, never its value.
func TestConfigDiffNamesSecretsNotValues(t *testing.T) {
	a, b := config.Default(), config.Default()
	b.Discord.Token = config.NewSecret("s3cr3t-value")
	b.Web.Enabled = new(bool)
	got := hub.ConfigDiff(a, b)
	if !slices.Equal(got, []string{"discord.token", "web.enabled"}) {
		t.Fatalf("%v", got)
	}
}
