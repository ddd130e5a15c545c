//go:build unix

package main

import (
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/a6afc2ce/hermes-hub/config"
)

// TestCountFlagsAreBounded: the CLI's counts are whole numbers within the
// range the hub serves, refused (exit 2) with the range before anything is
// opened.
func TestCountFlagsAreBounded(t *testing.T) {
	dir := workspace(t)
	cases := []struct {
		args []string
		code int
		msg  string
	}{
		{[]string{"mirror", "tail", "-n", "1000000000"}, 2, "n must be a whole number from 0 to 10000"},
		{[]string{"mirror", "tail", "-n", "99999999999999999999999"}, 2, "n must be a whole number from 0 to 10000"},
		{[]string{"mirror", "tail", "-n", "-1"}, 2, "n must be a whole number from 0 to 10000"},
		{[]string{"mirror", "tail", "-n", "many"}, 2, "n must be a whole number from 0 to 10000"},
		{[]string{"mirror", "tail", "-n", "10000"}, 0, ""},
		{[]string{"mirror", "tail", "-n", "0"}, 0, ""},
		{[]string{"outbox", "list", "--limit", "1000000000"}, 2, "limit must be a whole number from 1 to 10000"},
		{[]string{"outbox", "list", "--limit", "0"}, 2, "limit must be a whole number from 1 to 10000"},
		{[]string{"outbox", "dead", "--limit", "-3"}, 2, "limit must be a whole number from 1 to 10000"},
		{[]string{"outbox", "list", "--limit", "x"}, 2, "limit must be a whole number from 1 to 10000"},
		{[]string{"outbox", "list", "--limit", "10000"}, 0, ""},
	}
	for _, tc := range cases {
		_, errOut, code := runHub(t, dir, "", tc.args...)
		if code != tc.code || !strings.Contains(errOut, tc.msg) {
			t.Errorf("hub %s: exit %d %q, want %d %q", strings.Join(tc.args, " "), code, errOut, tc.code, tc.msg)
		}
	}
}

// TestAdminSocketIsTheOperator: with the web identity granted reader only,
// the web token is refused the admin API's reads and changes, while the admin
// socket (owner-only) is the operator, who may do everything, within the
// same bounds on counts.
func TestAdminSocketIsTheOperator(t *testing.T) {
	dir := workspace(t)
	cfg := filepath.Join(dir, "hub.yml")
	// An access section: the web identity reads only (without one, the
	// generated-token panel on loopback is the operator's too).
	os.WriteFile(cfg, []byte("web:\n  listen: 127.0.0.1:0\naccess:\n  grants:\n    web: [reader]\n"), 0o600)
	_, url, _ := startServe(t, dir, "--config", cfg)
	base := url[:strings.Index(url, "/#")]
	token := url[strings.Index(url, "#token=")+len("#token="):]
	sock := filepath.Join(dir, ".hub", "hub.sock")
	if fi, err := os.Stat(sock); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("admin socket: %v %v", err, fi)
	}
	overWeb := func(method, path, body string) (int, string) {
		req, _ := http.NewRequest(method, base+path, strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+token)
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	tr := &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "unix", sock)
	}}
	defer tr.CloseIdleConnections()
	sc := &http.Client{Transport: tr, Timeout: 30 * time.Second}
	overSocket := func(method, path, body string) (int, string) {
		req, _ := http.NewRequest(method, "http://hub"+path, strings.NewReader(body))
		resp, err := sc.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	for _, c := range []struct{ method, path, body, perm string }{
		{"GET", "/api/mirror?n=1000000000", "", "admin.read"},
		{"GET", "/api/outbox", "", "admin.read"},
		{"GET", "/api/channels", "", "admin.read"},
		{"POST", "/api/targets", `{"target":"local:pma/x.jsonl"}`, "admin.targets"},
		{"POST", "/api/deliver", `{"text":"not from a reader"}`, "admin.deliver"},
		{"POST", "/api/outbox/purge", `{}`, "admin.outbox"},
		{"POST", "/api/channels/rebuild", "", "admin.channels"},
		{"GET", "/api/access", "", "admin.access"},
		{"POST", "/api/access/approve", `{"code":"ABCD-EFGH","role":"reader"}`, "admin.access"},
		{"POST", "/api/reload", `{}`, "only the operator"},
		{"POST", "/api/backup", "", "only the operator"},
		{"GET", "/api/mirror/prune", "", "only the operator"},
		{"POST", "/api/mirror/prune", "", "only the operator"},
	} {
		if code, body := overWeb(c.method, c.path, c.body); code != http.StatusForbidden || !strings.Contains(body, c.perm) {
			t.Errorf("web %s %s: %d %s, want 403 naming %s", c.method, c.path, code, body, c.perm)
		}
	}
	if code, body := overWeb("GET", "/api/status", ""); code != http.StatusOK {
		t.Errorf("web status: %d %s", code, body)
	}
	var who struct {
		Identity    string   `json:"identity"`
		Permissions []string `json:"permissions"`
	}
	_, body := overSocket("GET", "/api/whoami", "")
	if err := json.Unmarshal([]byte(body), &who); err != nil || who.Identity != "operator" || len(who.Permissions) != len(config.AdminPermissions) {
		t.Fatalf("socket whoami: %v %s", err, body)
	}
	if code, body := overSocket("GET", "/api/mirror?n=1000000000", ""); code != http.StatusBadRequest || !strings.Contains(body, "n must be a whole number from 0 to 10000") {
		t.Errorf("socket mirror n=1e9: %d %s", code, body)
	}
	for _, args := range [][]string{
		{"targets", "add", "local:pma/deliveries.jsonl"},
		{"send", "from the operator"},
		{"outbox", "list", "--limit", "10000"},
		{"channels", "rebuild"},
		{"mirror", "tail", "-n", "10000"},
	} {
		if out, errOut, code := runHub(t, dir, "", args...); code != 0 {
			t.Errorf("hub %s over the socket: %d %s %s", strings.Join(args, " "), code, out, errOut)
		}
	}
}
