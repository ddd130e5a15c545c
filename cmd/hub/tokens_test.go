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

	"github.com/a6afc2ce/hermes-hub/adapters/discord/discordtest"
	"github.com/a6afc2ce/hermes-hub/adapters/telegram/telegramtest"
)

// A Discord token of the portal's shape, for the fake to accept.
const shapedDiscordToken = "MTAwMDAwMDAwMDAwMDAwMDAx.GhUb-x.fake0123456789abcdefghijklmnopqrstuv"

// fakePlatforms are a fake Telegram and a fake Discord, and the
// configuration of a hub that uses them with tokens they accept.
type fakePlatforms struct {
	tg *telegramtest.Server
	dc *discordtest.Server
}

func newFakePlatforms(t *testing.T) fakePlatforms {
	t.Helper()
	tg, dc := telegramtest.NewServer(), discordtest.NewServer()
	t.Cleanup(tg.Close)
	t.Cleanup(dc.Close)
	dc.SetToken(shapedDiscordToken)
	return fakePlatforms{tg: tg, dc: dc}
}

// config is a hub configuration enabling both platforms with the tokens
// from ${TG_TOKEN} and ${DC_TOKEN}.
func (f fakePlatforms) config() string {
	return `web:
  listen: 127.0.0.1:0
telegram:
  enabled: true
  token: ${TG_TOKEN}
  api_endpoint: ` + f.tg.URL() + `
discord:
  enabled: true
  token: ${DC_TOKEN}
  application_id: "` + f.dc.AppID + `"
  api_base: ` + f.dc.APIBase() + `
access:
  grants:
    web: [reader]
`
}

// TestDoctorChecksTokens: hub doctor asks each enabled platform whose its
// token is and says what it found: the bot's name, a token the platform
// rejects, a value that is not a token at all, a platform it cannot reach.
// No token is printed.
func TestDoctorChecksTokens(t *testing.T) {
	f := newFakePlatforms(t)
	dir := workspace(t)
	cfg := filepath.Join(dir, "hub.yml")
	os.WriteFile(cfg, []byte(f.config()), 0o600)
	doctor := func(tg, dc string) (string, int) {
		t.Helper()
		out, _, code := runHubEnv(t, dir, "", []string{"TG_TOKEN=" + tg, "DC_TOKEN=" + dc}, "doctor", "--config", cfg)
		for _, secret := range []string{tg, dc, "WRONG-secret"} {
			if strings.Contains(out, secret) {
				t.Fatalf("doctor printed a token:\n%s", out)
			}
		}
		return out, code
	}
	out, code := doctor(f.tg.Token(), f.dc.Token())
	if code != 0 || !strings.Contains(out, "ok    telegram       enabled, the token is accepted: the bot "+telegramtest.DefaultUsername) ||
		!strings.Contains(out, "ok    discord        enabled, the token is accepted: the bot "+discordtest.BotUsername) {
		t.Fatalf("accepted tokens: exit %d\n%s", code, out)
	}
	out, code = doctor("123456:WRONG-secret-value", "MTAw.WRONG-secret.value0123456789")
	if code != 1 || !strings.Contains(out, "FAIL  telegram       telegram.token: token rejected by the Bot API (401 Unauthorized), at "+f.tg.URL()) ||
		!strings.Contains(out, "FAIL  discord        discord.token: token rejected by Discord (401: Unauthorized), at "+f.dc.APIBase()) ||
		!strings.Contains(out, "fix: the token was revoked, reset or mistyped: ask @BotFather") || !strings.Contains(out, "2 problems to fix") {
		t.Fatalf("rejected tokens: exit %d\n%s", code, out)
	}
	out, code = doctor("not a token", "Bot "+f.dc.Token())
	if code != 1 || !strings.Contains(out, "FAIL  telegram       telegram.token is not a Bot API token: a token is <bot id>:<secret>") ||
		!strings.Contains(out, `FAIL  discord        discord.token is not a bot token: it starts with "Bot "`) {
		t.Fatalf("tokens of the wrong shape: exit %d\n%s", code, out)
	}
	// Platforms that cannot be reached: a warning (the hub retries), not
	// a problem, said within the deadline.
	f.tg.Close()
	f.dc.Close()
	start := time.Now()
	out, code = doctor(f.tg.Token(), f.dc.Token())
	if code != 0 || !strings.Contains(out, "warn  telegram       enabled; the token could not be checked, "+f.tg.URL()+" is unreachable") ||
		!strings.Contains(out, "warn  discord        enabled; the token could not be checked, "+f.dc.APIBase()+" is unreachable") ||
		!strings.Contains(out, "fix: check this machine's network and telegram.api_endpoint") {
		t.Fatalf("unreachable platforms: exit %d\n%s", code, out)
	}
	t.Logf("doctor with both platforms unreachable took %s", time.Since(start))
}

// TestServeStaysUpWhenATokenIsRejected: a token its platform rejects stops
// that adapter, not the hub: the panel and the probes stay up, /readyz
// answers 503 naming the stopped adapters, GET /api/status gives the
// reason, and SIGTERM still stops the hub gracefully.
func TestServeStaysUpWhenATokenIsRejected(t *testing.T) {
	f := newFakePlatforms(t)
	dir := workspace(t)
	cfg := filepath.Join(dir, "hub.yml")
	os.WriteFile(cfg, []byte(f.config()), 0o600)
	cmd, url, logs := startServeEnv(t, dir, []string{"TG_TOKEN=123456:WRONG-secret-value", "DC_TOKEN=MTAw.WRONG-secret.value0123456789"}, "--config", cfg)
	base := url[:strings.Index(url, "/#")]
	token := url[strings.Index(url, "#token=")+len("#token="):]
	get := func(path string, auth bool) (int, string) {
		t.Helper()
		req, _ := http.NewRequest("GET", base+path, nil)
		if auth {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatalf("GET %s: %v (the hub exited?)\n%s", path, err, logs.String())
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	const want = "not ready: adapters not running: discord stopped, telegram stopped"
	deadline := time.Now().Add(30 * time.Second)
	for {
		code, body := get("/readyz", false)
		if code == http.StatusServiceUnavailable && strings.Contains(body, want) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("/readyz: %d %q\n%s", code, body, logs.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
	if code, body := get("/healthz", false); code != http.StatusOK {
		t.Fatalf("/healthz: %d %s", code, body)
	}
	_, status := get("/api/status", true)
	for _, w := range []string{
		`"name":"telegram","state":"stopped","detail":"telegram: the Bot API refused the token (401 Unauthorized)`,
		`"name":"discord","state":"stopped","detail":"discord gateway: authentication failed: check discord.token`,
		`"name":"web","state":"running"`,
	} {
		if !strings.Contains(status, w) {
			t.Errorf("/api/status lacks %s:\n%s", w, status)
		}
	}
	if strings.Contains(status, "WRONG-secret") || strings.Contains(logs.String(), "WRONG-secret") {
		t.Fatal("a token reached the status or the logs")
	}
	cmd.Process.Signal(os.Interrupt)
	if err := cmd.Wait(); err != nil {
		t.Fatalf("exit after SIGINT: %v\n%s", err, logs.String())
	}
}

// TestDoctorMCP: hub doctor says whether /mcp is served, to which agents,
// whether the web token is let in, and warns of an agent no role lets
// call anything.
func TestDoctorMCP(t *testing.T) {
	dir := workspace(t)
	cfg := filepath.Join(dir, "hub.yml")
	os.WriteFile(cfg, []byte("web:\n  listen: 127.0.0.1:0\n"), 0o600)
	out, _, code := runHub(t, dir, "", "doctor", "--config", cfg)
	if code != 0 || !strings.Contains(out, "ok    mcp            /mcp is off (mcp.enabled); `hub mcp` serves the verbs over stdio") {
		t.Fatalf("mcp off: exit %d\n%s", code, out)
	}
	os.WriteFile(cfg, []byte(`web:
  listen: 127.0.0.1:0
mcp:
  enabled: true
  accept_web_token: true
  agents:
    claude:
      token: ${CLAUDE_TOKEN}
    cursor:
      token: ${CURSOR_TOKEN}
access:
  grants:
    web: [reader]
    "agent:claude": [reader]
`), 0o600)
	out, _, code = runHubEnv(t, dir, "", []string{"CLAUDE_TOKEN=claude-0123456789abcdef", "CURSOR_TOKEN=cursor-0123456789abcdef"}, "doctor", "--config", cfg)
	for _, want := range []string{
		"ok    mcp            /mcp on 127.0.0.1:0: 2 agents (claude, cursor), each with its own token; the web token is accepted there, as the identity web",
		"warn  mcp            agent:cursor has no role: every tool it calls is refused",
		`fix: grant it one under access.grants, e.g. "agent:cursor": [reader]`,
	} {
		if !strings.Contains(out, want) {
			t.Errorf("doctor lacks %q", want)
		}
	}
	if code != 0 || strings.Contains(out, "agent:claude has no role") || strings.Contains(out, "0123456789abcdef") {
		t.Fatalf("mcp on: exit %d\n%s", code, out)
	}
}
