//go:build unix

package main

import (
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/a6afc2ce/hermes-hub/config"
	"github.com/a6afc2ce/hermes-hub/internal/testkit"
)

// TestConfigInWorkspaceEndToEnd runs `hub serve` in the README's layout
// (hub.yml in the workspace ".", the state in ./.hub) with the web token in
// a file there too. The web identity may run fs.* only. It tries to rewrite
// hub.yml to grant itself proc.run (directly, by replacing it, by deleting
// it first) and to read the token file: every call is refused and nothing
// changes. The operator's reload then changes nothing, and proc.run stays
// forbidden.
func TestConfigInWorkspaceEndToEnd(t *testing.T) {
	dir := workspace(t)
	const token = "web-token-in-a-file-0123456789"
	if err := os.WriteFile(filepath.Join(dir, "web.token"), []byte(token+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cfgFile := filepath.Join(dir, "hub.yml")
	original := "web:\n  listen: 127.0.0.1:0\n  token_file: web.token\naccess:\n  roles:\n    editor: {verbs: ['fs.*']}\n  grants:\n    web: [editor]\n"
	if err := os.WriteFile(cfgFile, []byte(original), 0o600); err != nil {
		t.Fatal(err)
	}
	_, url, logs := startServe(t, dir, "--config", cfgFile)
	base := strings.TrimSuffix(url, "/")
	call := func(verb string, args map[string]any) (succeeded bool, code, body string) {
		t.Helper()
		in, _ := json.Marshal(map[string]any{"verb": verb, "arguments": args})
		req, _ := http.NewRequest("POST", base+"/api/execute", strings.NewReader(string(in)))
		req.Header.Set("Authorization", "Bearer "+token)
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		var res struct {
			Succeeded bool   `json:"succeeded"`
			ErrorCode string `json:"errorCode"`
		}
		if resp.StatusCode != http.StatusOK || json.Unmarshal(b, &res) != nil {
			t.Fatalf("%s: %d %s", verb, resp.StatusCode, b)
		}
		return res.Succeeded, res.ErrorCode, string(b)
	}
	evil := strings.Replace(original, "verbs: ['fs.*']", "verbs: ['fs.*', 'proc.run']", 1)
	if ok, _, _ := call("fs.writeFile", map[string]any{"path": "evil.yml", "content": evil}); !ok {
		t.Fatal("the editor cannot write an ordinary file")
	}
	for _, c := range []struct {
		verb string
		args map[string]any
	}{
		{"fs.writeFile", map[string]any{"path": "hub.yml", "content": evil}},
		{"fs.writeFile", map[string]any{"path": "./hub.yml", "content": evil, "mode": "overwrite"}},
		{"fs.writeRange", map[string]any{"path": "hub.yml", "startLine": 5, "endLine": 5, "content": "    editor: {verbs: ['*']}"}},
		{"fs.deleteFile", map[string]any{"path": "hub.yml"}},
		{"fs.moveFile", map[string]any{"sourcePath": "hub.yml", "destinationPath": "old.yml"}},
		{"fs.moveFile", map[string]any{"sourcePath": "evil.yml", "destinationPath": "hub.yml"}},
		{"fs.copyFile", map[string]any{"sourcePath": "evil.yml", "destinationPath": "hub.yml"}},
		{"fs.readFile", map[string]any{"path": "hub.yml"}},
		{"fs.readFile", map[string]any{"path": "web.token"}},
		{"fs.copyFile", map[string]any{"sourcePath": "web.token", "destinationPath": "stolen.txt"}},
		{"fs.edit", map[string]any{"path": "hub.yml", "oldText": "verbs: ['fs.*']", "newText": "verbs: ['*']"}},
		{"fs.edit", map[string]any{"path": "hub.yml", "oldText": "web", "newText": "x", "dryRun": true}},
		{"fs.stat", map[string]any{"path": "web.token", "sha256": true}},
		{"fs.readRange", map[string]any{"path": "web.token", "lastLines": 1}},
	} {
		ok, code, body := call(c.verb, c.args)
		if ok || code != "forbidden_path" {
			t.Errorf("%s %v: %s, want forbidden_path", c.verb, c.args, body)
		}
		if strings.Contains(body, token) {
			t.Errorf("%s %v shows the token: %s", c.verb, c.args, body)
		}
	}
	if _, _, body := call("fs.readMany", map[string]any{"paths": []string{"hub.yml", "web.token", "evil.yml"}}); strings.Count(body, `"errorCode":"forbidden_path"`) != 2 || strings.Contains(body, token) {
		t.Errorf("fs.readMany of the protected files: %s", body)
	}
	if b, _ := os.ReadFile(cfgFile); string(b) != original {
		t.Fatalf("hub.yml changed:\n%s", b)
	}
	_, _, listing := call("fs.listDir", map[string]any{"path": "."})
	if strings.Contains(listing, "hub.yml") || strings.Contains(listing, "web.token") || !strings.Contains(listing, "evil.yml") {
		t.Errorf("listing: %s", listing)
	}

	// The operator reloads: nothing changed, so proc.run stays forbidden.
	out, errOut, code := runHub(t, dir, "", "reload", "--config", cfgFile)
	if code != 0 || !strings.Contains(out, "no reloadable setting changed") || strings.Contains(out, "WARNING") {
		t.Fatalf("reload: %d %s %s", code, out, errOut)
	}
	if ok, code, body := call("proc.run", map[string]any{"executable": "true", "arguments": []string{}}); ok || code != "forbidden" {
		t.Fatalf("proc.run after the reload: %s", body)
	}

	// The operator's editor replaces hub.yml by renaming a new file over
	// it; the reload resolves it again and it stays out of reach.
	if err := os.WriteFile(cfgFile+".tmp", []byte(original+"log:\n  level: debug\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(cfgFile+".tmp", cfgFile); err != nil {
		t.Fatal(err)
	}
	if out, errOut, code = runHub(t, dir, "", "reload", "--config", cfgFile); code != 0 || !strings.Contains(out, "applied: log") {
		t.Fatalf("reload after the edit: %d %s %s", code, out, errOut)
	}
	if err := os.Link(cfgFile, filepath.Join(dir, "config-link")); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"hub.yml", "config-link"} {
		if ok, code, body := call("fs.writeFile", map[string]any{"path": p, "content": evil}); ok || code != "forbidden_path" {
			t.Errorf("write %s after the edit: %s", p, body)
		}
	}
	if strings.Contains(logs.String(), token) {
		t.Fatal("the token reached the logs")
	}
	testkit.WaitFor(t, "the log of the reloads", func() bool { return strings.Count(logs.String(), "configuration reloaded") == 2 })
}

// TestNodeProtectsItsConfigAndSeed: `hub node`'s workspaces (built as the
// node builds them) refuse the node's configuration file, its seed and
// its CA file when they lie in the workspace, by name and by hard link.
func TestNodeProtectsItsConfigAndSeed(t *testing.T) {
	ws := t.TempDir()
	seed := filepath.Join(ws, "db-1.nk")
	if err := os.WriteFile(seed, []byte("SUACANARYSEED\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(ws, "ca.pem"), []byte("CANARY-CA\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(ws, "node.yml")
	yml := "node: {name: db-1, nats_url: nats://127.0.0.1:1, nkey_file: " + seed + ", ca_file: " + filepath.Join(ws, "ca.pem") + "}\n" +
		"state_dir: " + filepath.Join(ws, ".hub-node") + "\nworkspaces: {logs: {path: " + ws + "}}\n"
	if err := os.WriteFile(file, []byte(yml), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Link(seed, filepath.Join(ws, "seed-link")); err != nil {
		t.Fatal(err)
	}
	nf, err := config.LoadNode(file, func(string) (string, bool) { return "", false })
	if err != nil {
		t.Fatal(err)
	}
	execs, closeAll, err := buildNodeWorkspaces(nf, testkit.Discard())
	if err != nil {
		t.Fatal(err)
	}
	defer closeAll()
	x := execs["logs"]
	for _, c := range []string{
		`{"verb":"fs.readFile","arguments":{"path":"db-1.nk"}}`,
		`{"verb":"fs.readFile","arguments":{"path":"seed-link"}}`,
		`{"verb":"fs.readFile","arguments":{"path":"ca.pem"}}`,
		`{"verb":"fs.readFile","arguments":{"path":"node.yml"}}`,
		`{"verb":"fs.writeFile","arguments":{"path":"node.yml","content":"workspaces: {root: {path: /}}"}}`,
		`{"verb":"fs.deleteFile","arguments":{"path":"db-1.nk"}}`,
		`{"verb":"fs.readFile","arguments":{"path":".hub-node/node.db"}}`,
	} {
		out := x.ExecuteInput(t.Context(), []byte(c))
		if out.Err == nil || out.Err.Code != "forbidden_path" || strings.Contains(string(out.JSON()), "CANARY") {
			t.Errorf("%s: %s", c, out.JSON())
		}
	}
	if b, _ := os.ReadFile(file); string(b) != yml {
		t.Fatal("node.yml changed")
	}
	if out := x.ExecuteInput(t.Context(), []byte(`{"verb":"fs.writeFile","arguments":{"path":"other.txt","content":"fine"}}`)); out.Err != nil {
		t.Fatalf("an ordinary write: %s", out.Err.Message)
	}
}

// TestDoctorReportsProtectedFiles: hub doctor names each configuration or
// secret file that lies in a workspace and says how it is protected, warns
// about those others may read (a certificate may be), fails on one that
// cannot be protected, and says when none lies in a workspace.
func TestDoctorReportsProtectedFiles(t *testing.T) {
	dir := workspace(t)
	for name, mode := range map[string]os.FileMode{"web.token": 0o600, "cert.pem": 0o644, "key.pem": 0o644} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte("tok-0123456789abcdef0123\n"), mode); err != nil {
			t.Fatal(err)
		}
		os.Chmod(filepath.Join(dir, name), mode)
	}
	cfgFile := filepath.Join(dir, "hub.yml")
	yml := "web:\n  listen: 127.0.0.1:0\n  token_file: web.token\n  tls_cert: cert.pem\n  tls_key: key.pem\n"
	os.WriteFile(cfgFile, []byte(yml), 0o644)
	os.Chmod(cfgFile, 0o644)
	out, _, code := runHub(t, dir, "", "doctor", "--config", cfgFile)
	for _, want := range []string{
		"ok    protected      " + filepath.Join(dir, "hub.yml") + " (the configuration file) in workspace default: the verbs refuse it by identity and by place",
		"ok    protected      " + filepath.Join(dir, "web.token") + " (web.token_file) in workspace default",
		"ok    protected      " + filepath.Join(dir, "key.pem") + " (web.tls_key) in workspace default",
		"warn  protected      " + filepath.Join(dir, "hub.yml") + " (the configuration file) is readable by other users (mode 0644)",
		"warn  protected      " + filepath.Join(dir, "key.pem") + " (web.tls_key) is readable by other users (mode 0644)",
		"fix: chmod 600 " + filepath.Join(dir, "key.pem"),
	} {
		if !strings.Contains(out, want) {
			t.Errorf("doctor output lacks %q:\n%s", want, out)
		}
	}
	if code != 0 || strings.Contains(out, "cert.pem (web.tls_cert) is readable") || strings.Contains(out, "tok-") {
		t.Fatalf("doctor: %d\n%s", code, out)
	}

	os.Mkdir(filepath.Join(dir, "keydir"), 0o700)
	os.WriteFile(cfgFile, []byte(strings.Replace(yml, "key.pem", "keydir", 1)), 0o600)
	out, _, code = runHub(t, dir, "", "doctor", "--config", cfgFile)
	if code != 1 || !strings.Contains(out, "FAIL  protected      workspace default holds protected files that cannot be protected") || !strings.Contains(out, "is a directory") {
		t.Fatalf("doctor with a directory as a key file: %d\n%s", code, out)
	}
	// hub serve refuses to start the same way, saying what to fix.
	if _, errOut, code := runHub(t, dir, "", "exec", "--config", cfgFile, `{"verb":"fs.exists","arguments":{"path":"docs"}}`); code == 0 || !strings.Contains(errOut, "keydir (web.tls_key) is a directory") || !strings.Contains(errOut, "fix the key named") {
		t.Fatalf("exec with a directory as a key file: %d %s", code, errOut)
	}

	os.WriteFile(cfgFile, []byte("workspace: docs\nweb:\n  listen: 127.0.0.1:0\n"), 0o600)
	if out, _, code = runHub(t, dir, "", "doctor", "--config", cfgFile); code != 0 || !strings.Contains(out, "ok    protected      1 file, none inside a workspace") {
		t.Fatalf("doctor with the configuration outside the workspace: %d\n%s", code, out)
	}
}
