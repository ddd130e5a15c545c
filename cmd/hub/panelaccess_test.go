//go:build unix

package main

import (
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"
)

// servePrinted starts `hub serve` with the configuration yml in a
// workspace and returns what it printed once it said what the panel may
// do, and the panel's base URL.
func servePrinted(t *testing.T, yml string) (printed, base string) {
	t.Helper()
	dir := workspace(t)
	cfg := filepath.Join(dir, "hub.yml")
	if err := os.WriteFile(cfg, []byte(yml), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(hubBin, "serve", "--config", cfg)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "HUB_CONFIG=")
	out, logs := &syncWriter{}, &syncWriter{}
	cmd.Stdout, cmd.Stderr = out, logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Signal(syscall.SIGTERM); cmd.Wait() })
	deadline := time.Now().Add(30 * time.Second)
	for !strings.Contains(out.String(), "The panel (identity web") {
		if time.Now().After(deadline) {
			t.Fatalf("no word of what the panel may do; stdout %q, logs:\n%s", out.String(), logs.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	printed = out.String()
	return printed, strings.TrimSuffix(regexp.MustCompile(`http://[^/\s]+/`).FindString(printed), "/")
}

// execute posts an envelope to /api/execute with token and returns the
// result's error message ("" when it succeeded).
func execute(t *testing.T, base, token, envelope string) string {
	t.Helper()
	req, _ := http.NewRequest("POST", base+"/api/execute", strings.NewReader(envelope))
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var res struct {
		Succeeded    bool   `json:"succeeded"`
		ErrorMessage string `json:"errorMessage"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&res); err != nil {
		t.Fatalf("%s: %d %v", envelope, resp.StatusCode, err)
	}
	if !res.Succeeded && res.ErrorMessage == "" {
		t.Fatalf("%s failed without a message", envelope)
	}
	return res.ErrorMessage
}

// TestServePanelIsTheOperatorsWithNoAccessSection: with no access section,
// the generated-token panel on loopback runs every verb (proc.run too)
// and says so at start; a configured token stays a reader, says so, and
// its refusals give the configuration that allows the verb.
func TestServePanelIsTheOperatorsWithNoAccessSection(t *testing.T) {
	printed, base := servePrinted(t, "web:\n  listen: 127.0.0.1:0\n")
	if !strings.Contains(printed, "The panel (identity web, roles: operator) may run every verb and use every admin view: with no access section, whoever holds this generated token on a loopback listener is the operator") {
		t.Fatalf("stdout: %q", printed)
	}
	token := regexp.MustCompile(`#token=(\S+)`).FindStringSubmatch(printed)[1]
	if msg := execute(t, base, token, `{"verb":"proc.run","arguments":{"executable":"true","arguments":[]}}`); msg != "" {
		t.Fatalf("proc.run from the operator's panel: %s", msg)
	}

	const configured = "configured-token-0123456789"
	printed, base = servePrinted(t, "web:\n  listen: 127.0.0.1:0\n  token: "+configured+"\n")
	if !strings.Contains(printed, "The panel (identity web, roles: reader) may run ") || !strings.Contains(printed, "and use no admin view: with no access section, a configured token or a listener others reach may only read") {
		t.Fatalf("stdout: %q", printed)
	}
	msg := execute(t, base, configured, `{"verb":"proc.run","arguments":{"executable":"true","arguments":[]}}`)
	if !strings.Contains(msg, "web may not run proc.run (forbidden; roles: reader)") || !strings.Contains(msg, "proc-run: {verbs: [\"proc.run\"]}") || !strings.Contains(msg, "\"web\": [reader, proc-run]") {
		t.Fatalf("proc.run with a configured token: %q", msg)
	}
}
