//go:build unix

package main

import (
	"bufio"
	"encoding/json"
	"strings"
	"testing"

	"github.com/a6afc2ce/hermes-hub/store"
)

// TestMirrorSearchCommand: hub mirror search finds the operator's calls
// in the mirrors by verb and outcome, as lines or NDJSON, with no hub
// running; filters it does not accept are usage errors.
func TestMirrorSearchCommand(t *testing.T) {
	dir := workspace(t)
	if _, errOut, code := runHub(t, dir, "", "exec", `{"verb":"fs.writeFile","arguments":{"path":"new.txt","content":"hi"}}`); code != 0 {
		t.Fatal(errOut)
	}
	if _, _, code := runHub(t, dir, "", "exec", `{"verb":"fs.deleteFile","arguments":{"path":"missing.txt"}}`); code != 1 {
		t.Fatalf("deleting a missing file: exit %d", code)
	}
	out, errOut, code := runHub(t, dir, "", "mirror", "search")
	if code != 0 || !strings.Contains(out, "fs.writeFile") || !strings.Contains(out, "succeeded") || !strings.Contains(out, "2 turns") {
		t.Fatalf("every turn: %d\n%s%s", code, out, errOut)
	}
	out, _, code = runHub(t, dir, "", "mirror", "search", "--outcome", "failed", "--verb", "fs.*")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if code != 0 || len(lines) != 2 || !strings.Contains(lines[0], "fs.deleteFile") || !strings.Contains(lines[0], "failed (not_found)") || !strings.Contains(lines[0], "cli:") || lines[1] != "1 turn" {
		t.Fatalf("failed turns: %d\n%s", code, out)
	}
	out, _, code = runHub(t, dir, "", "mirror", "search", "--json", "--since", "1h", "--chat", "cli")
	var turns []store.AuditTurn
	sc := bufio.NewScanner(strings.NewReader(out))
	for sc.Scan() {
		var a store.AuditTurn
		if err := json.Unmarshal(sc.Bytes(), &a); err != nil {
			t.Fatalf("not NDJSON: %q", out)
		}
		turns = append(turns, a)
	}
	// Each CLI call is a run of its own; two started in the same second do
	// not sort by time between themselves.
	verbs := map[string]store.AuditTurn{}
	for _, a := range turns {
		verbs[a.Verb] = a
	}
	if code != 0 || len(turns) != 2 || verbs["fs.writeFile"].Kind != "cli" || verbs["fs.deleteFile"].ErrorCode != "not_found" {
		t.Fatalf("--json: %d %+v", code, turns)
	}
	for _, args := range [][]string{{"--outcome", "ok"}, {"--since", "yesterday"}, {"stray"}} {
		if _, errOut, code := runHub(t, dir, "", append([]string{"mirror", "search"}, args...)...); code != 2 || errOut == "" {
			t.Errorf("%v: exit %d %s", args, code, errOut)
		}
	}
}
