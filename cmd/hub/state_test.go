package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestExecStateDirThroughSymlink: on a first run (no state directory yet)
// in a workspace reached through a symbolic link, the state directory the
// hub creates is out of every verb's reach.
func TestExecStateDirThroughSymlink(t *testing.T) {
	base := t.TempDir()
	real := filepath.Join(base, "realws")
	if err := os.Mkdir(real, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(real, "README.md"), []byte("# Title\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(base, "lnws")
	if err := os.Symlink("realws", link); err != nil {
		t.Fatal(err)
	}
	for _, env := range []string{
		`{"verb":"fs.listDir","arguments":{"path":".hub"}}`,
		`{"verb":"fs.writeFile","arguments":{"path":".hub/pma/delivery_targets.json","content":"{}"}}`,
		`{"verb":"fs.readFile","arguments":{"path":"./.hub/../.hub/hub.db"}}`,
	} {
		out, _, code := runHub(t, link, "", "exec", env)
		if code != 1 || decode(t, out)["errorCode"] != "forbidden_path" {
			t.Fatalf("%s: state dir reachable: code %d out %s", env, code, out)
		}
		if strings.Contains(out, base) {
			t.Errorf("%s: the result shows a host path: %s", env, out)
		}
	}
	if fi, err := os.Stat(filepath.Join(real, ".hub")); err != nil || !fi.IsDir() {
		t.Fatalf("the state directory was not created before the workspace opened: %v", err)
	}
	if _, err := os.Stat(filepath.Join(real, ".hub", "pma", "delivery_targets.json")); err == nil {
		t.Fatal("a delivery target was planted in the state")
	}
	out, _, code := runHub(t, link, "", "exec", `{"verb":"fs.listDir","arguments":{"path":"."}}`)
	if code != 0 || strings.Contains(out, ".hub") || !strings.Contains(out, "README.md") {
		t.Fatalf("listing the root: code %d out %s", code, out)
	}
	// A state directory holding the workspace is refused before anything runs.
	_, errOut, code := runHub(t, link, "", "exec", "--state", base, `{"verb":"fs.listDir","arguments":{"path":"."}}`)
	if code == 0 || !strings.Contains(errOut, "state_dir") {
		t.Fatalf("state dir above the workspace: code %d stderr %s", code, errOut)
	}
}
