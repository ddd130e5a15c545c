//go:build unix

package main

import (
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestExampleConfigServes: config.example.yml, as shipped, starts `hub
// serve` in an empty directory and the hub answers /healthz and /readyz
// (the panel moved off 8080 by HUB_WEB_LISTEN, which leaves the file as
// it is).
func TestExampleConfigServes(t *testing.T) {
	dir := t.TempDir()
	example, err := os.ReadFile(filepath.Join("..", "..", "config.example.yml"))
	if err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(dir, "hub.yml")
	if err := os.WriteFile(cfg, example, 0o600); err != nil {
		t.Fatal(err)
	}
	cmd, url, logs := startServeEnv(t, dir, []string{"HUB_WEB_LISTEN=127.0.0.1:0"}, "--config", cfg)
	base := url[:strings.Index(url, "/#")]
	for _, path := range []string{"/healthz", "/readyz"} {
		resp, err := http.Get(base + path)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("%s: %d %s\n%s", path, resp.StatusCode, b, logs.String())
		}
	}
	cmd.Process.Signal(os.Interrupt)
	if err := cmd.Wait(); err != nil {
		t.Fatalf("exit: %v\n%s", err, logs.String())
	}
}

// TestReloadFindsTheHubThroughVariables: `hub reload` expands ${VAR} in
// state_dir as the hub does, so it reaches the running hub even when the
// edited file has a mistake, and prints the hub's refusal with the line;
// with no hub running it prints the file's own problem, not only that no
// hub answers.
func TestReloadFindsTheHubThroughVariables(t *testing.T) {
	dir := workspace(t)
	scratch := t.TempDir()
	env := []string{"SCRATCH=" + scratch}
	cfg := filepath.Join(dir, "hub.yml")
	good := "state_dir: ${SCRATCH}/state\nweb:\n  listen: 127.0.0.1:0\n"
	os.WriteFile(cfg, []byte(good), 0o600)
	cmd, _, logs := startServeEnv(t, dir, env, "--config", cfg)
	os.WriteFile(cfg, []byte(good+"access:\n  grantz: {}\n"), 0o600)
	const typo = `line 5: unknown key "grantz" in access: did you mean grants?`
	_, errOut, code := runHubEnv(t, dir, "", env, "reload", "--config", cfg)
	if code != 1 || !strings.Contains(errOut, "reload refused, the running configuration is kept") || !strings.Contains(errOut, typo) {
		t.Fatalf("reload of a broken file with the hub running: exit %d\n%s\nhub:\n%s", code, errOut, logs.String())
	}
	// The same when state_dir is quoted and commented.
	os.WriteFile(cfg, []byte("state_dir: \"${SCRATCH}/state\" # the state\n"+good[strings.Index(good, "\n")+1:]+"access:\n  grantz: {}\n"), 0o600)
	if _, errOut, code = runHubEnv(t, dir, "", env, "reload", "--config", cfg); code != 1 || !strings.Contains(errOut, "reload refused") {
		t.Fatalf("quoted state_dir: exit %d\n%s", code, errOut)
	}
	cmd.Process.Signal(os.Interrupt)
	cmd.Wait()
	deadline := time.Now().Add(10 * time.Second)
	for _, err := os.Stat(filepath.Join(scratch, "state", "hub.sock")); err == nil; _, err = os.Stat(filepath.Join(scratch, "state", "hub.sock")) {
		if time.Now().After(deadline) {
			t.Fatal("the socket stayed")
		}
		time.Sleep(20 * time.Millisecond)
	}
	_, errOut, code = runHubEnv(t, dir, "", env, "reload", "--config", cfg)
	sock := filepath.Join(scratch, "state", "hub.sock")
	if code != 1 || !strings.Contains(errOut, typo) || !strings.Contains(errOut, "no running hub answers on "+sock) || strings.Contains(errOut, "${SCRATCH}") {
		t.Fatalf("reload of a broken file with no hub: exit %d\n%s", code, errOut)
	}
}

// TestHelpNeedsNoConfig: every command's --help works beside a broken
// configuration, and `hub help` lists the commands in one column.
func TestHelpNeedsNoConfig(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "hub.yml"), []byte("web:\n  lisen: x\n"), 0o600)
	for _, c := range commands() {
		out, errOut, code := runHub(t, dir, "", c.name, "--help")
		if code != 0 || !strings.HasPrefix(out, "Usage: hub "+c.name) || errOut != "" {
			t.Errorf("hub %s --help: exit %d\n%s%s", c.name, code, out, errOut)
		}
	}
	out, _, code := runHub(t, dir, "", "help")
	if code != 0 {
		t.Fatalf("hub help: %d", code)
	}
	col := -1
	for _, c := range commands() {
		i := strings.Index(out, "\n  "+c.name+" ")
		if i < 0 {
			t.Fatalf("hub help lacks %s:\n%s", c.name, out)
		}
		line := out[i+1:]
		line = line[:strings.IndexByte(line, '\n')]
		at := strings.Index(line, c.summary)
		if col == -1 {
			col = at
		}
		if at != col || at < len("  "+c.name+"  ") {
			t.Errorf("the summary of %s starts at column %d, others at %d:\n%s", c.name, at, col, out)
		}
	}
}
