//go:build linux

package main

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/a6afc2ce/hermes-hub/internal/testkit"
	"github.com/a6afc2ce/hermes-hub/nodes"
)

// asRoot skips t (fails it under CI=true) unless the test runs as root,
// the case where the hub changes the user of its programs.
func asRoot(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		testkit.Unavailable(t, "the hub changes the user of its programs only when it runs as root")
	}
}

// whoAmIEnvelope is a proc.run that prints the program's uid, its
// supplementary groups, and tries to read the environment of the process
// pid (0: its supervisor's parent, the hub).
func whoAmIEnvelope(pid int) string {
	target := `$(cut -d" " -f4 /proc/$PPID/stat)`
	if pid != 0 {
		target = strconv.Itoa(pid)
	}
	script := `id -u; grep '^Groups:' /proc/self/status; cat /proc/` + target + `/environ && echo "read the hub's environ"; exit 0`
	b, _ := json.Marshal(map[string]any{"verb": "proc.run", "arguments": map[string]any{"executable": "/bin/busybox", "arguments": []string{"sh", "-c", script}}})
	return string(b)
}

// procResult is the part of a proc.run result the tests read.
type procResult struct {
	Succeeded  bool   `json:"succeeded"`
	ExitCode   int    `json:"exitCode"`
	StdoutTail string `json:"stdoutTail"`
	StderrTail string `json:"stderrTail"`
}

// checkUnprivileged checks what whoAmIEnvelope printed: uid 65534, no
// supplementary group, the hub's environment refused.
func checkUnprivileged(t *testing.T, r procResult, secret string) {
	t.Helper()
	if !r.Succeeded || !strings.HasPrefix(r.StdoutTail, "65534\n") {
		t.Errorf("the program does not run as 65534: %+v", r)
	}
	if !regexp.MustCompile(`(?m)^Groups:\s*$`).MatchString(r.StdoutTail) {
		t.Errorf("the program has supplementary groups: %q", r.StdoutTail)
	}
	if strings.Contains(r.StdoutTail, secret) || strings.Contains(r.StdoutTail, "read the hub's environ") || !strings.Contains(r.StderrTail, "Permission denied") {
		t.Errorf("the program read the hub's environment: %+v", r)
	}
}

// A hub running as root (hub exec here) runs programs as nobody by
// default: uid 65534, no supplementary group, and the hub's environment,
// with its token, out of reach.
func TestExecRunsProgramsAsNobodyWhenRoot(t *testing.T) {
	asRoot(t)
	const secret = "tok-5e1f-do-not-leak"
	testkit.WithGroups(t, 4242, 4343) // the hub's, which the program must not keep
	dir := workspace(t)
	out, errOut, code := runHubEnv(t, dir, "", []string{"HUB_WEB_TOKEN=" + secret}, "exec", whoAmIEnvelope(0))
	var r procResult
	if err := json.Unmarshal([]byte(out), &r); err != nil || code != 0 {
		t.Fatalf("hub exec: %d %q %s", code, out, errOut)
	}
	checkUnprivileged(t, r, secret)
}

// hubAPI starts `hub serve` in dir with config and returns a function that
// runs an envelope through POST /api/execute, the hub's pid and its logs.
func hubAPI(t *testing.T, dir, config string) (func(string) procResult, int, *syncWriter) {
	t.Helper()
	cfg := filepath.Join(dir, "hub.yml")
	if err := os.WriteFile(cfg, []byte("web:\n  listen: 127.0.0.1:0\naccess:\n  roles:\n    admin: {verbs: ['*']}\n  grants:\n    web: [admin]\n"+config), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd, url, logs := startServe(t, dir, "--config", cfg)
	base := url[:strings.Index(url, "/#")]
	token := url[strings.Index(url, "#token=")+len("#token="):]
	run := func(env string) procResult {
		t.Helper()
		req, _ := http.NewRequest("POST", base+"/api/execute", strings.NewReader(env))
		req.Header.Set("Authorization", "Bearer "+token)
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var r procResult
		if err := json.NewDecoder(resp.Body).Decode(&r); err != nil {
			t.Fatalf("execute: %s: %v", resp.Status, err)
		}
		return r
	}
	return run, cmd.Process.Pid, logs
}

// `hub serve` as root says at start whom programs run as and why, and
// runs them so: nobody by default (the serve process's environment out of
// their reach), root when verbs.proc.user names it.
func TestServeSaysWhomProgramsRunAs(t *testing.T) {
	asRoot(t)
	t.Run("default", func(t *testing.T) {
		run, pid, logs := hubAPI(t, workspace(t), "")
		if !strings.Contains(logs.String(), "proc.run runs programs as nobody (uid 65534, gid 65534): the hub runs as root, and verbs.proc.user does not name another user") {
			t.Errorf("start log:\n%s", logs)
		}
		checkUnprivileged(t, run(whoAmIEnvelope(pid)), "do-not-leak")
	})
	t.Run("root", func(t *testing.T) {
		run, pid, logs := hubAPI(t, workspace(t), "verbs:\n  proc:\n    user: root\n")
		if !strings.Contains(logs.String(), `level=WARN msg="proc.run runs programs as root (verbs.proc.user names it): they can read the hub's tokens`) {
			t.Errorf("start log:\n%s", logs)
		}
		if r := run(whoAmIEnvelope(pid)); !strings.HasPrefix(r.StdoutTail, "0\n") {
			t.Fatalf("with verbs.proc.user: root, the program does not run as root: %+v", r)
		}
	})
}

// `hub node` running as root runs programs as nobody too.
func TestNodeRunsProgramsAsNobodyWhenRoot(t *testing.T) {
	asRoot(t)
	t.Setenv("HUB_TEST_NODE_SECRET", "n0de-secret")
	r := newNodeRig(t, "db-1", nodes.HubOptions{})
	r.startNodeProcess(t)
	testkit.WaitFor(t, "the node online", func() bool { return r.online("db-1") })
	ctx, cancel := context.WithTimeout(context.Background(), testkit.Wait)
	defer cancel()
	resp, err := r.hub.Call(ctx, "db-1", nodes.Request{TurnID: "t.who", Identity: "web", Envelope: []byte(whoAmIEnvelope(0))})
	if err != nil {
		t.Fatal(err)
	}
	var res procResult
	if err := json.Unmarshal(resp.Result, &res); err != nil {
		t.Fatalf("node result %s: %v", resp.Result, err)
	}
	checkUnprivileged(t, res, "n0de-secret")
}

// `hub doctor` as root says whom programs run as and why: nobody by
// default, with a warning while nobody cannot write the workspace; root,
// as a warning, when verbs.proc.user names it; a user that does not
// exist is a problem.
func TestDoctorSaysWhomProgramsRunAs(t *testing.T) {
	asRoot(t)
	dir := workspace(t)
	cfg := filepath.Join(dir, "hub.yml")
	for _, tc := range []struct {
		name, config string
		code         int
		want         []string
	}{
		{"default, workspace root's", "", 0, []string{
			"warn  proc user      programs run as nobody (uid 65534, gid 65534): the hub runs as root, and verbs.proc.user does not name another user; that user cannot write the workspace " + dir,
			"fix: make the workspace the user's",
		}},
		{"default, workspace nobody's", "", 0, []string{
			"ok    proc user      programs run as nobody (uid 65534, gid 65534): the hub runs as root, and verbs.proc.user does not name another user\n",
		}},
		{"root", "verbs:\n  proc:\n    user: root\n", 0, []string{
			"warn  proc user      programs run as root (verbs.proc.user names it): they can read the hub's tokens",
		}},
		{"unknown user", "verbs:\n  proc:\n    user: no-such-user-here\n", 1, []string{
			`FAIL  proc user      verbs.proc.user: there is no user "no-such-user-here" on this machine`,
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.name == "default, workspace nobody's" {
				programsMayWrite(t, dir)
			}
			if err := os.WriteFile(cfg, []byte("web:\n  listen: 127.0.0.1:0\n"+tc.config), 0o600); err != nil {
				t.Fatal(err)
			}
			out, _, code := runHub(t, dir, "", "doctor", "--config", cfg)
			if code != tc.code {
				t.Errorf("exit %d, want %d:\n%s", code, tc.code, out)
			}
			for _, w := range tc.want {
				if !strings.Contains(out, w) {
					t.Errorf("doctor does not say %q:\n%s", w, out)
				}
			}
		})
	}
}
