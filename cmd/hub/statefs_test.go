package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestLocalTargetsNeverNameHubFiles: hub targets add refuses a local target
// that names one of the hub's own files in the state directory (its NATS
// key, its database, the targets file...), however it is spelled; one put
// in delivery_targets.json by hand is reported by hub doctor, which
// otherwise said nothing while such a target corrupted the hub's key.
func TestLocalTargetsNeverNameHubFiles(t *testing.T) {
	dir := workspace(t)
	state := filepath.Join(dir, ".hub")
	for _, target := range []string{
		"local:nats/hub.nk", "local:./hub.db", "local:pma/delivery_targets.json", "local:chat//channel_directory.json",
		"local:" + filepath.Join(state, "hub.sock"), "local:flows/x.jsonl", "local:proc/x/stdout.txt", "local:sessions/a/b",
		"local:deliveries.jsonl",
	} {
		_, errOut, code := runHub(t, dir, "", "targets", "add", target)
		if code == 0 || !strings.Contains(errOut, "keeps for itself") || !strings.Contains(errOut, "pma/") {
			t.Errorf("add %s: exit %d %q, want a refusal naming pma/", target, code, errOut)
		}
	}
	if out, errOut, code := runHub(t, dir, "", "targets", "list", "--json"); code != 0 || strings.Contains(out, "local:") {
		t.Fatalf("targets after the refusals: %d %s%s", code, out, errOut)
	}
	p := filepath.Join(state, "pma", "delivery_targets.json")
	if err := os.WriteFile(p, []byte(`{"version": 1, "targets": [{"kind": "local", "path": "nats/hub.nk"}]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	out, _, code := runHub(t, dir, "", "doctor")
	if code != 1 || !strings.Contains(out, "FAIL  targets") || !strings.Contains(out, "nats/hub.nk") || !strings.Contains(out, "keeps for itself") {
		t.Fatalf("doctor with a target naming the NATS key: %d %s", code, out)
	}
}

// TestTargetKeysNormalised: local:pma/x.jsonl, local:./pma/x.jsonl,
// local:pma//x.jsonl and the absolute path of the same file are one
// target: adding another spelling adds nothing, a targets file written by
// hand with several spellings holds one target, and a delivery enqueues
// one chunk for it, not one per spelling.
func TestTargetKeysNormalised(t *testing.T) {
	dir := workspace(t)
	state := filepath.Join(dir, ".hub")
	if out, errOut, code := runHub(t, dir, "", "targets", "add", "local:./pma/x.jsonl"); code != 0 || !strings.Contains(out, "Added local:pma/x.jsonl") {
		t.Fatalf("add: %d %s%s", code, out, errOut)
	}
	for _, again := range []string{"local:pma/x.jsonl", "local:pma//x.jsonl", "local:" + filepath.Join(state, "pma", "x.jsonl")} {
		if out, errOut, code := runHub(t, dir, "", "targets", "add", again); code != 0 || !strings.Contains(out, "already a target") {
			t.Errorf("add %s: %d %s%s; want it already a target", again, code, out, errOut)
		}
	}
	p := filepath.Join(state, "pma", "delivery_targets.json")
	byHand := `{"version": 1, "targets": [
  {"kind": "local", "path": "pma/x.jsonl"},
  {"kind": "local", "path": "./pma/x.jsonl"},
  {"kind": "local", "path": "pma//x.jsonl"},
  {"kind": "local", "path": "` + filepath.Join(state, "pma", "x.jsonl") + `"}
], "last_delivery_by_target": {"local:./pma/x.jsonl": "send.1"}}`
	if err := os.WriteFile(p, []byte(byHand), 0o600); err != nil {
		t.Fatal(err)
	}
	out, errOut, code := runHub(t, dir, "", "targets", "list", "--json")
	if code != 0 || strings.Count(out, "local:") != 2 || !strings.Contains(out, `"local:pma/x.jsonl"`) {
		// Once in the list, once as the key of its last delivery.
		t.Fatalf("targets of a file with four spellings: %d %s%s", code, out, errOut)
	}
	if !strings.Contains(out, `"send.1"`) {
		t.Errorf("the last delivery recorded under another spelling was lost: %s", out)
	}
	out, errOut, code = runHub(t, dir, "", "send", "hello")
	if code != 0 || !strings.Contains(out, ": 1 chunk enqueued") {
		t.Fatalf("send to one target spelled four ways: %d %s%s", code, out, errOut)
	}
}

// TestTargetsFileLinkRefused: a delivery targets file replaced by a
// symbolic link to a file outside the state directory (as a program that
// could write there would plant, to choose where the hub delivers) is
// refused, saying so: the hub never takes targets from the linked file,
// and the file outside is left as it was.
func TestTargetsFileLinkRefused(t *testing.T) {
	dir := workspace(t)
	if _, errOut, code := runHub(t, dir, "", "targets", "list"); code != 0 {
		t.Fatal(errOut)
	}
	planted := filepath.Join(t.TempDir(), "planted.json")
	const content = `{"version": 1, "targets": [{"kind": "chat", "platform": "telegram", "chat_id": "666"}]}`
	if err := os.WriteFile(planted, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(planted, filepath.Join(dir, ".hub", "pma", "delivery_targets.json")); err != nil {
		t.Fatal(err)
	}
	_, errOut, code := runHub(t, dir, "", "targets", "add", "web")
	if code == 0 || !strings.Contains(errOut, "symbolic link") {
		t.Errorf("add with a linked targets file: exit %d %q, want a refusal naming the link", code, errOut)
	}
	if out, _, _ := runHub(t, dir, "", "targets", "list"); strings.Contains(out, "666") {
		t.Errorf("the hub took its targets from the linked file: %s", out)
	}
	if b, err := os.ReadFile(planted); err != nil || string(b) != content {
		t.Errorf("the file outside was changed: %q %v", b, err)
	}
}
