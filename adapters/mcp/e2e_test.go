package mcp_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/a6afc2ce/hermes-hub/clock"
	"github.com/a6afc2ce/hermes-hub/hub/hubtest"
	"github.com/a6afc2ce/hermes-hub/internal/testkit"
)

// e2eTools finds node and e2e/e2e.mjs beside the pinned npm packages of
// e2e/ (testkit.NodeScript), or skips: only
// outside CI, and saying what is missing.
func e2eTools(t *testing.T) (node, script string) {
	t.Helper()
	skip := func(why string) { testkit.Unavailable(t, why) }
	if testing.Short() {
		t.Skip("end-to-end MCP tests skipped in -short mode")
	}
	node, err := exec.LookPath("node")
	if err != nil {
		skip("node not installed: the MCP end-to-end tests need node and npm")
	}
	if _, err := exec.LookPath("npm"); err != nil {
		skip("npm not installed: the MCP end-to-end tests need node and npm")
	}
	return node, testkit.NodeScript(t, "e2e", "e2e.mjs")
}

// buildHub builds the hub binary into a temporary directory.
func buildHub(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "hub")
	cmd := exec.Command("go", "build", "-o", bin, "github.com/a6afc2ce/hermes-hub/cmd/hub")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("build the hub: %v\n%s", err, out)
	}
	return bin
}

// sleepMarker is a unique duration for the sleep that the client cancels.
func sleepMarker() string {
	return fmt.Sprintf("30.%06d", time.Now().UnixNano()%1_000_000)
}

// sleepRunning reports whether a `sleep <marker>` process exists.
func sleepRunning(marker string) bool {
	procs, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, p := range procs {
		b, err := os.ReadFile(p)
		if err == nil && bytes.Equal(b, []byte("sleep\x00"+marker+"\x00")) {
			return true
		}
	}
	return false
}

func runScript(t *testing.T, node, script string, env []string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, append([]string{script}, args...)...)
	cmd.Dir = filepath.Dir(script)
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.CombinedOutput()
	t.Logf("e2e.mjs %s:\n%s", args[0], out)
	if err != nil || !strings.Contains(string(out), "ALL OK") {
		t.Fatalf("e2e.mjs %s failed: %v", args[0], err)
	}
	return string(out)
}

// TestMCPClientE2E drives the hub with the official TypeScript MCP client:
// over stdio against the built binary (`hub mcp`), and over streamable
// HTTP against the web listener with /mcp mounted.
func TestMCPClientE2E(t *testing.T) {
	node, script := e2eTools(t)

	t.Run("stdio", func(t *testing.T) {
		bin := buildHub(t)
		ws := t.TempDir()
		conf := filepath.Join(t.TempDir(), "hub.yml")
		yml := "state_dir: " + filepath.Join(ws, ".hub") + "\naccess:\n  roles:\n    admin:\n      verbs: ['*']\n  grants:\n    agent:local: [admin]\n"
		if err := os.WriteFile(conf, []byte(yml), 0o600); err != nil {
			t.Fatal(err)
		}
		marker := sleepMarker()
		runScript(t, node, script, []string{"HUB_E2E_VFS=1"}, "stdio", bin, conf, ws, marker)
		testkit.WaitFor(t, "the cancelled sleep to be gone", func() bool { return !sleepRunning(marker) })
		mirrored, _ := filepath.Glob(filepath.Join(ws, ".hub", "flows", "*", "chat", "inbound.jsonl"))
		if len(mirrored) != 1 {
			t.Fatalf("mirror files: %v", mirrored)
		}
		b, _ := os.ReadFile(mirrored[0])
		if !strings.Contains(string(b), `"turn_id":"mcp.stdio-`) || !strings.Contains(string(b), `"actor":"agent:local"`) || !strings.Contains(string(b), marker) {
			t.Errorf("the calls are not mirrored with their MCP turn ids and identity (the cancelled one included):\n%.2000s", b)
		}
	})

	t.Run("confirm", func(t *testing.T) {
		bin := buildHub(t)
		ws := t.TempDir()
		for _, f := range []string{"a.txt", "b.txt"} {
			if err := os.WriteFile(filepath.Join(ws, f), []byte("1\n2\n3\n"), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		conf := filepath.Join(t.TempDir(), "hub.yml")
		yml := "state_dir: " + filepath.Join(ws, ".hub") + `
commands:
  tally:
    params: {which: {type: enum, values: [a.txt, b.txt]}}
    run: {verb: fs.lineCount, arguments: {path: "{which}"}}
access:
  roles:
    admin: {verbs: ['*'], confirm: [fs.deleteFile]}
  grants:
    agent:local: [admin]
`
		if err := os.WriteFile(conf, []byte(yml), 0o600); err != nil {
			t.Fatal(err)
		}
		runScript(t, node, script, nil, "confirm", bin, conf, ws)
		if _, err := os.Stat(filepath.Join(ws, "a.txt")); err == nil {
			t.Error("a.txt was not deleted on a yes")
		}
		if _, err := os.Stat(filepath.Join(ws, "b.txt")); err != nil {
			t.Error("b.txt was deleted on a no")
		}
	})

	t.Run("http", func(t *testing.T) {
		env, url, token, limited := httpHub(t)
		marker := sleepMarker()
		runScript(t, node, script, nil, "http", url, token, limited, marker)
		testkit.WaitFor(t, "the cancelled sleep to be gone", func() bool { return !sleepRunning(marker) })
		mirrored, _ := filepath.Glob(filepath.Join(env.Config.StateDir, "flows", "*", "chat", "inbound.jsonl"))
		var all []byte
		for _, m := range mirrored {
			b, _ := os.ReadFile(m)
			all = append(all, b...)
		}
		if !strings.Contains(string(all), `"actor":"agent:reader"`) || !strings.Contains(string(all), `"turn_id":"mcp.`) {
			t.Errorf("the HTTP calls are not mirrored with their identities and MCP turn ids:\n%.2000s", all)
		}
	})
}

// httpHub runs a hub runtime with the web listener on httptest and /mcp
// mounted as `hub serve` mounts it (webHub): an agent with every verb
// (token) and one with the reader role (limited, agent:reader).
func httpHub(t *testing.T) (env *hubtest.Env, url, token, limited string) {
	t.Helper()
	url, env = webHub(t, clock.Real{}, nil)
	return env, url, adminToken, readerToken
}
