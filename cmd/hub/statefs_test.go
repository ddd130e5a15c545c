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
