//go:build unix

package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestFileVerbsInADockerWorkspace: in a docker workspace the new verbs act
// on the host directory the container shares, confined as in a local one:
// an edit made with fs.edit is what a program in the container reads, and
// one made in the container is what the tail reads; the state directory,
// `..` and a link leading out are refused.
func TestFileVerbsInADockerWorkspace(t *testing.T) {
	r := newDockerRig(t, "")
	if err := os.Symlink(r.outside, filepath.Join(r.dir, "out-link")); err != nil {
		t.Fatal(err)
	}
	if res := r.run(t, "sh", "-c", "printf 'a = 1\\nb = 2\\n' > conf.txt"); res.ExitCode != 0 {
		t.Fatalf("box writes: %+v", res)
	}
	call := func(verb string, args map[string]any) map[string]any {
		t.Helper()
		in, _ := json.Marshal(map[string]any{"verb": verb, "arguments": args})
		out, errs, _ := r.hub(t, string(in), "exec", "--config", "../hub.yml", "--workspace", "box")
		var m map[string]any
		if err := json.Unmarshal([]byte(out), &m); err != nil {
			t.Fatalf("%s: %q %q: %v", verb, out, errs, err)
		}
		return m
	}
	if m := call("fs.edit", map[string]any{"path": "conf.txt", "oldText": "b = 2", "newText": "b = 3"}); m["succeeded"] != true || !strings.Contains(m["diff"].(string), "+b = 3") {
		t.Fatalf("edit in box: %v", m)
	}
	if res := r.run(t, "cat", "conf.txt"); res.StdoutTail != "a = 1\nb = 3\n" {
		t.Fatalf("the container reads %q", res.StdoutTail)
	}
	if res := r.run(t, "sh", "-c", "echo c = 4 >> conf.txt"); res.ExitCode != 0 {
		t.Fatalf("box appends: %+v", res)
	}
	if m := call("fs.readRange", map[string]any{"path": "conf.txt", "lastLines": 1, "includeLineNumbers": false}); m["content"] != "c = 4" {
		t.Fatalf("tail in box: %v", m)
	}
	if m := call("fs.stat", map[string]any{"path": "conf.txt"}); m["type"] != "file" || m["sizeBytes"] != 18.0 {
		t.Fatalf("stat in box: %v", m)
	}
	m := call("fs.readMany", map[string]any{"paths": []string{"conf.txt", ".hub/hub.db", "out-link"}})
	files, _ := m["files"].([]any)
	if len(files) != 3 || files[0].(map[string]any)["succeeded"] != true || files[1].(map[string]any)["errorCode"] != "forbidden_path" || files[2].(map[string]any)["errorCode"] != "forbidden_path" {
		t.Fatalf("readMany in box: %v", m)
	}
	for _, c := range []struct {
		verb string
		args map[string]any
	}{
		{"fs.edit", map[string]any{"path": "out-link", "oldText": "outside", "newText": "inside"}},
		{"fs.edit", map[string]any{"path": ".hub/hub.db", "oldText": "x", "newText": "y", "dryRun": true}},
		{"fs.stat", map[string]any{"path": ".hub", "sha256": true}},
		{"fs.readRange", map[string]any{"path": "../outside.txt", "lastLines": 1}},
	} {
		if m := call(c.verb, c.args); m["errorCode"] != "forbidden_path" || strings.Contains(m["errorMessage"].(string), r.root) {
			t.Errorf("%s %v in box: %v", c.verb, c.args, m)
		}
	}
	if b, _ := os.ReadFile(r.outside); string(b) != "outside the workspace" {
		t.Fatalf("the file outside changed: %q", b)
	}
}
