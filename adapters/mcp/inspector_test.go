package mcp_test

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/a6afc2ce/hermes-hub/internal/testkit"
)

// inspectorTools finds the Node.js 22 and the official MCP Inspector that
// adapters/mcp/conformance pins, or skips (only outside CI).
func inspectorTools(t *testing.T) (node, inspector string) {
	t.Helper()
	if testing.Short() {
		t.Skip("the MCP Inspector test is skipped in -short mode")
	}
	dir := testkit.NPMPackages(t, "conformance")
	node = filepath.Join(dir, "node_modules", "node", "bin", "node")
	inspector = filepath.Join(dir, "node_modules", "@modelcontextprotocol", "inspector", "clients", "launcher", "build", "index.js")
	for _, f := range []string{node, inspector} {
		if _, err := os.Stat(f); err != nil {
			testkit.Unavailable(t, "the MCP Inspector is not installed in "+dir+" ("+filepath.Base(f)+" missing): run make e2e-deps")
		}
	}
	return node, inspector
}

// inspectorRun is one run of the Inspector's CLI.
type inspectorRun struct {
	code           int
	stdout, stderr string
}

// inspect runs the Inspector's CLI with args, with no terminal and a
// home of its own (its secrets kept in memory).
func inspect(t *testing.T, node, inspector, home string, args ...string) inspectorRun {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, append([]string{inspector, "--cli"}, args...)...)
	cmd.Env = []string{"HOME=" + home, "PATH=" + filepath.Dir(node) + ":/usr/bin:/bin", "MCP_INSPECTOR_SECRET_STORE=memory"}
	var out, errOut strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	r := inspectorRun{stdout: out.String(), stderr: errOut.String()}
	if ee, ok := err.(*exec.ExitError); ok {
		r.code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("inspector %v: %v", args, err)
	}
	return r
}

// toolNames are the tools of a tools/list result the Inspector printed as
// JSON.
func toolNames(t *testing.T, r inspectorRun) []string {
	t.Helper()
	var res struct {
		Result struct {
			Tools []struct {
				Name string `json:"name"`
			} `json:"tools"`
		} `json:"result"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &res); err != nil {
		t.Fatalf("tools/list: %v\nstdout %s\nstderr %s", err, r.stdout, r.stderr)
	}
	var names []string
	for _, tool := range res.Result.Tools {
		names = append(names, tool.Name)
	}
	return names
}

// schemaProblems are what --strict reported of the tools' schemas.
func schemaProblems(r inspectorRun) string {
	var out []string
	for _, line := range strings.Split(r.stderr, "\n") {
		if strings.HasPrefix(line, "Warning: tool") || strings.HasPrefix(line, "Error: tool") || strings.Contains(line, "Issue:") {
			out = append(out, line)
		}
	}
	return strings.Join(out, "\n")
}

// TestInspector drives the hub with the official MCP Inspector's CLI,
// over both transports, as docs/mcp.md shows it: /mcp of `hub serve`
// with an agent's token, and `hub mcp` over stdio, started by the
// Inspector with its minimal environment, in which the /mcp agents'
// tokens of the configuration are unset. Both list the tools with no
// schema problem under --strict and call one; a wrong or missing token on
// /mcp is a clean error naming what /mcp takes (RFC 6750's challenge, no
// OAuth metadata), and the hub's OAuth paths say it does no OAuth.
func TestInspector(t *testing.T) {
	node, inspector := inspectorTools(t)
	bin := buildHub(t)
	dir := t.TempDir()
	home := filepath.Join(dir, "home")
	ws := filepath.Join(dir, "ws")
	for _, d := range []string{home, ws} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(ws, "notes.txt"), []byte("hello from the workspace\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(dir, "hub.yml")
	const agentToken = "claude-0123456789abcdef"
	yml := "workspace: " + ws + "\nstate_dir: " + filepath.Join(dir, "state") + "\n" +
		"web:\n  listen: 127.0.0.1:0\n  token: web-0123456789abcdef\n" +
		"mcp:\n  enabled: true\n  agents:\n    claude:\n      token: ${HUB_MCP_CLAUDE_TOKEN}\n" +
		"access:\n  roles:\n    agent: {verbs: [\"fs.*\", \"sys.machineInfo\"]}\n  grants:\n    \"agent:claude\": [agent]\n    \"agent:local\": [agent]\n"
	if err := os.WriteFile(cfg, []byte(yml), 0o600); err != nil {
		t.Fatal(err)
	}
	url := serveHub(t, bin, cfg, "HUB_MCP_CLAUDE_TOKEN="+agentToken)

	t.Run("http", func(t *testing.T) {
		r := inspect(t, node, inspector, home, url, "--method", "tools/list", "--strict", "--format", "json", "--header", "Authorization: Bearer "+agentToken)
		if names := toolNames(t, r); r.code != 0 || !containsAll(names, "fs_readFile", "sys_machineInfo") {
			t.Fatalf("tools/list: exit %d, tools %v\n%s", r.code, names, r.stderr)
		}
		if p := schemaProblems(r); p != "" {
			t.Errorf("--strict found schema problems:\n%s", p)
		}
		r = inspect(t, node, inspector, home, url, "--method", "tools/call", "--tool-name", "fs_readFile", "--tool-arg", "path=notes.txt", "--format", "json", "--header", "Authorization: Bearer "+agentToken)
		if r.code != 0 || !strings.Contains(r.stdout, "hello from the workspace") {
			t.Fatalf("tools/call: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
		}
		for _, c := range []struct{ name, header, says string }{
			{"wrong token", "Authorization: Bearer wrong-0123456789abcdef", "wrong token: send Authorization: Bearer"},
			{"no token", "X-Nothing: 1", "authentication required: send Authorization: Bearer"},
		} {
			r := inspect(t, node, inspector, home, url, "--method", "tools/list", "--stored-auth-only", "--format", "json", "--header", c.header)
			var res struct {
				Error struct{ Code, Message string } `json:"error"`
			}
			_ = json.Unmarshal([]byte(lastLine(r.stderr+r.stdout)), &res)
			if r.code == 0 || res.Error.Code != "auth_required" || !strings.Contains(res.Error.Message, c.says) || !strings.Contains(res.Error.Message, "mcp.agents") {
				t.Errorf("%s: exit %d, error %+v\n%s", c.name, r.code, res.Error, r.stderr)
			}
			if strings.Contains(r.stderr+r.stdout, "Interactive OAuth") || strings.Contains(r.stderr+r.stdout, "Client Registration") {
				t.Errorf("%s: an OAuth flow started:\n%s", c.name, r.stderr)
			}
		}
	})

	t.Run("no OAuth", func(t *testing.T) {
		base := strings.TrimSuffix(url, "/mcp")
		for _, p := range []string{"/.well-known/oauth-protected-resource/mcp", "/.well-known/oauth-authorization-server", "/register"} {
			resp, err := http.Post(base+p, "application/json", strings.NewReader("{}"))
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusNotFound || !strings.Contains(string(b), "this hub has no OAuth authorization server") {
				t.Errorf("POST %s: %d %s", p, resp.StatusCode, b)
			}
		}
	})

	t.Run("stdio", func(t *testing.T) {
		state := filepath.Join(dir, "stdio-state") // hub serve holds the other
		r := inspect(t, node, inspector, home, "--method", "tools/list", "--strict", "--format", "json", bin, "--", "mcp", "--config", cfg, "--state", state)
		if names := toolNames(t, r); r.code != 0 || !containsAll(names, "fs_readFile", "sys_machineInfo") {
			t.Fatalf("tools/list: exit %d, tools %v\n%s", r.code, names, r.stderr)
		}
		if p := schemaProblems(r); p != "" {
			t.Errorf("--strict found schema problems:\n%s", p)
		}
		r = inspect(t, node, inspector, home, "--method", "tools/call", "--tool-name", "fs_readFile", "--tool-arg", "path=notes.txt", "--format", "json", bin, "--", "mcp", "--config", cfg, "--state", state)
		if r.code != 0 || !strings.Contains(r.stdout, "hello from the workspace") {
			t.Fatalf("tools/call: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
		}
	})
}

// serveHub starts `hub serve --config cfg` with env added and returns its
// /mcp URL, read from what it prints.
func serveHub(t *testing.T, bin, cfg string, env ...string) string {
	t.Helper()
	cmd := exec.Command(bin, "serve", "--config", cfg)
	cmd.Env = append(os.Environ(), env...)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var logs strings.Builder
	cmd.Stderr = &logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Signal(os.Interrupt); cmd.Wait() })
	urls := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if m := regexp.MustCompile(`http://[^/\s]+/`).FindString(sc.Text()); m != "" {
				urls <- m + "mcp"
			}
		}
	}()
	select {
	case u := <-urls:
		return u
	case <-time.After(60 * time.Second):
		t.Fatal("hub serve printed no URL")
	}
	return ""
}

func containsAll(have []string, want ...string) bool {
	for _, w := range want {
		found := false
		for _, h := range have {
			found = found || h == w
		}
		if !found {
			return false
		}
	}
	return true
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return lines[len(lines)-1]
}
