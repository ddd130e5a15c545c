package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/a6afc2ce/hermes-hub/internal/testkit"
)

func sha256Of(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}

// TestFileVerbsCLI runs fs.edit, the tail, fs.stat and fs.readMany with
// hub exec: results as JSON, exit 1 on a refusal, the state directory out
// of reach.
func TestFileVerbsCLI(t *testing.T) {
	dir := workspace(t)
	exec := func(envelope string) (map[string]any, int) {
		t.Helper()
		out, errOut, code := runHub(t, dir, envelope, "exec")
		var m map[string]any
		if err := json.Unmarshal([]byte(out), &m); err != nil {
			t.Fatalf("%s: %q %q: %v", envelope, out, errOut, err)
		}
		return m, code
	}
	old := "# Title\nline two\nline three\n"
	m, code := exec(`{"verb":"fs.edit","arguments":{"path":"README.md","oldText":"line two","newText":"line 2","dryRun":true}}`)
	if code != 0 || m["diff"] != "--- a/README.md\n+++ b/README.md\n@@ -1,3 +1,3 @@\n # Title\n-line two\n+line 2\n line three\n" || m["sha256"] != sha256Of(old) {
		t.Fatalf("dry run: %d %v", code, m)
	}
	m, code = exec(`{"verb":"fs.edit","arguments":{"path":"README.md","oldText":"line two","newText":"line 2","expectedSha256":"` + sha256Of(old) + `"}}`)
	edited := "# Title\nline 2\nline three\n"
	if b, _ := os.ReadFile(filepath.Join(dir, "README.md")); code != 0 || string(b) != edited || m["sha256"] != sha256Of(edited) {
		t.Fatalf("edit: %d %v, file %q", code, m, b)
	}
	// The version read before is stale now.
	m, code = exec(`{"verb":"fs.edit","arguments":{"path":"README.md","oldText":"line three","newText":"3","expectedSha256":"` + sha256Of(old) + `"}}`)
	if code != 1 || m["errorCode"] != "conflict" || !strings.Contains(m["errorMessage"].(string), sha256Of(edited)) {
		t.Fatalf("stale edit: %d %v", code, m)
	}
	m, code = exec("verb: fs.readRange\narguments: {path: README.md, lastLines: 2}\n")
	if code != 0 || m["content"] != "-2: line 2\n-1: line three" {
		t.Fatalf("tail: %d %v", code, m)
	}
	m, code = exec(`{"verb":"fs.stat","arguments":{"path":"README.md","sha256":true,"countLines":true}}`)
	if code != 0 || m["type"] != "file" || m["sha256"] != sha256Of(edited) || m["lineCount"] != 3.0 {
		t.Fatalf("stat: %d %v", code, m)
	}
	m, code = exec(`{"verb":"fs.readMany","arguments":{"paths":["README.md",".hub/hub.db","docs"]}}`)
	files, _ := m["files"].([]any)
	if code != 0 || len(files) != 3 || files[0].(map[string]any)["content"] != edited ||
		files[1].(map[string]any)["errorCode"] != "forbidden_path" || files[2].(map[string]any)["errorCode"] != "is_a_directory" {
		t.Fatalf("readMany: %d %v", code, m)
	}
	if m, code = exec(`{"verb":"fs.stat","arguments":{"path":".hub"}}`); code != 1 || m["errorCode"] != "forbidden_path" {
		t.Fatalf("stat of the state directory: %d %v", code, m)
	}
}

// TestFileVerbsOnARemoteNode: in a remote workspace the new verbs run on
// the node, on its files, confined there as everywhere: the node's state,
// `..` and a link leading out are refused.
func TestFileVerbsOnARemoteNode(t *testing.T) {
	r := newRemoteRig(t)
	r.startNode(t, "db-1")
	testkit.WaitFor(t, "db-1 online", func() bool {
		l, err := r.nodes.List(context.Background())
		return err == nil && l[0].Online
	})
	if err := os.WriteFile(filepath.Join(r.nodeDir, "app.log"), []byte("start\nwork\nstop\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	outside := filepath.Join(filepath.Dir(r.nodeDir), "outside.txt")
	if err := os.WriteFile(outside, []byte("outside secret\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(r.nodeDir, "out-link")); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(r.env.Config.Workspace, "app.log"), []byte("the hub's own file\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	r.say(t, "/use db1-logs")
	if _, reply := r.say(t, "/fs.edit app.log work done"); !strings.Contains(reply, "Edited") || !strings.Contains(reply, "-work\n+done") {
		t.Fatalf("edit on the node: %q", reply)
	}
	if b, _ := os.ReadFile(filepath.Join(r.nodeDir, "app.log")); string(b) != "start\ndone\nstop\n" {
		t.Fatalf("the node's file holds %q", b)
	}
	if b, _ := os.ReadFile(filepath.Join(r.env.Config.Workspace, "app.log")); string(b) != "the hub's own file\n" {
		t.Fatalf("the hub's file changed: %q", b)
	}
	if _, reply := r.say(t, "/fs.readRange app.log lastLines=2"); !strings.Contains(reply, "done\n") || !strings.Contains(reply, "stop") || strings.Contains(reply, "start") {
		t.Fatalf("tail on the node: %q", reply)
	}
	if _, reply := r.say(t, "/fs.stat app.log sha256=true"); !strings.Contains(reply, sha256Of("start\ndone\nstop\n")) {
		t.Fatalf("stat on the node: %q", reply)
	}
	if _, reply := r.say(t, "/fs.readMany app.log out-link ../outside.txt"); !strings.Contains(reply, "done") || strings.Count(reply, "forbidden_path") != 2 || strings.Contains(reply, "outside secret") {
		t.Fatalf("readMany on the node: %q", reply)
	}
	state := filepath.Join(filepath.Dir(r.nodeDir), "db-1-state")
	for _, cmd := range []string{"/fs.edit out-link secret public", "/fs.stat ../db-1-state", "/fs.readRange out-link lastLines=1", "/fs.edit a/../app.log stop go"} {
		if _, reply := r.say(t, cmd); !strings.Contains(reply, "forbidden_path") || strings.Contains(reply, "outside secret") || strings.Contains(reply, state) {
			t.Errorf("%s on the node: %q", cmd, reply)
		}
	}
	if b, _ := os.ReadFile(outside); string(b) != "outside secret\n" {
		t.Fatalf("the file outside changed: %q", b)
	}
}
