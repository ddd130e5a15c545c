//go:build unix

package main

import (
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// prefix is a name followed by ": ", as errors wrap their causes.
var prefix = regexp.MustCompile(`[A-Za-z][A-Za-z0-9_.-]*: `)

// doubledPrefixes returns each prefix text says twice in a row, such as
// "web: web: " or "telegram: telegram: ": an error wrapped with the name
// its cause already gives.
func doubledPrefixes(text string) []string {
	var out []string
	ms := prefix.FindAllStringIndex(text, -1)
	for i := 1; i < len(ms); i++ {
		a, b := text[ms[i-1][0]:ms[i-1][1]], text[ms[i][0]:ms[i][1]]
		if ms[i-1][1] == ms[i][0] && a == b {
			out = append(out, a+b)
		}
	}
	return out
}

func checkNoDoubledPrefix(t *testing.T, what, text string) {
	t.Helper()
	if d := doubledPrefixes(text); len(d) > 0 {
		t.Errorf("%s: %q said twice:\n%s", what, d, text)
	}
}

// TestErrorsSayTheirSourceOnce runs the CLI into a set of failures and
// checks that no error names its source twice ("web: web: listen …"),
// whichever layer wrapped it.
func TestErrorsSayTheirSourceOnce(t *testing.T) {
	f := newFakePlatforms(t)
	dir := workspace(t)
	write := func(name, yml string) string {
		p := filepath.Join(dir, name)
		os.WriteFile(p, []byte(yml), 0o600)
		return p
	}
	taken := busyPort(t)
	platforms := write("platforms.yml", f.config())
	rejected := []string{"TG_TOKEN=123456:WRONG-secret-value", "DC_TOKEN=MTAw.WRONG-secret.value0123456789"}
	os.WriteFile(filepath.Join(dir, "afile"), []byte("x"), 0o600)
	for _, tc := range []struct {
		name string
		env  []string
		args []string
	}{
		{"port in use", nil, []string{"serve", "--config", write("taken.yml", "web:\n  listen: "+taken+"\n")}},
		{"TLS certificate missing", nil, []string{"serve", "--config", write("tls.yml", "web:\n  listen: 127.0.0.1:0\n  tls_cert: missing.pem\n  tls_key: missing.key\n")}},
		{"unknown key", nil, []string{"serve", "--config", write("typo.yml", "web:\n  lisen: 127.0.0.1:0\n")}},
		{"no configuration file", nil, []string{"exec", "--config", "missing.yml", `{"verb":"fs.exists","arguments":{"path":"."}}`}},
		{"no MCP configuration file", nil, []string{"mcp", "--config", "missing.yml"}},
		{"no node configuration file", nil, []string{"node", "--config", "missing.yml"}},
		{"reload without a hub", nil, []string{"reload"}},
		{"state directory is a file", nil, []string{"targets", "list", "--state", "afile"}},
		{"reset a local workspace", nil, []string{"workspaces", "reset", "default"}},
		{"bad target", nil, []string{"targets", "add", "bogus:1"}},
		{"doctor with rejected tokens", rejected, []string{"doctor", "--config", platforms}},
	} {
		var out, errOut string
		if tc.args[0] == "serve" {
			out, errOut, _ = runServeToExit(t, dir, tc.env, tc.args[1:]...)
		} else {
			out, errOut, _ = runHubEnv(t, dir, "", tc.env, tc.args...)
		}
		if out+errOut == "" {
			t.Errorf("%s: nothing said", tc.name)
		}
		checkNoDoubledPrefix(t, tc.name, out+errOut)
	}

	// A hub whose platforms reject their tokens logs why each stopped.
	cmd, url, logs := startServeEnv(t, dir, rejected, "--config", platforms)
	base := url[:strings.Index(url, "/#")]
	deadline := time.Now().Add(30 * time.Second)
	for {
		resp, err := http.Get(base + "/readyz")
		if err != nil {
			t.Fatalf("the hub stopped: %v\n%s", err, logs.String())
		}
		resp.Body.Close()
		if strings.Count(logs.String(), "adapter stopped") == 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the adapters did not stop:\n%s", logs.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
	cmd.Process.Signal(os.Interrupt)
	cmd.Wait()
	checkNoDoubledPrefix(t, "hub serve with rejected tokens", logs.String())
}

// TestDoubledPrefixes: the check itself finds what it is for.
func TestDoubledPrefixes(t *testing.T) {
	for text, want := range map[string]int{
		"hub serve: web: web: listen tcp 127.0.0.1:8080: bind: address already in use":  1,
		`msg="adapter stopped" err="telegram: telegram: the Bot API refused the token"`: 1,
		"hub serve: web: listen tcp 127.0.0.1:8080: bind: address already in use":       0,
		"config hub.yml: line 2: web.listen: x":                                         0,
	} {
		if got := doubledPrefixes(text); len(got) != want {
			t.Errorf("%q: found %q", text, got)
		}
	}
}
