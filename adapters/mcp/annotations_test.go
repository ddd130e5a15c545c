package mcp

import (
	"sort"
	"testing"

	"github.com/a6afc2ce/hermes-hub/executor"
	"github.com/a6afc2ce/hermes-hub/hub/hubtest"
)

// TestHintsCoverEveryVerb: every verb the hub registers has a row in
// verbHints, and the table says what docs/mcp.md says.
func TestHintsCoverEveryVerb(t *testing.T) {
	cfg := hubtest.Config(t, "", "")
	reg := executor.NewRegistry()
	ws, err := hubtest.RealVerbs(reg, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer ws.Close()
	names := []string{"vfs.snapshot", "vfs.restore", "vfs.reset", "vfs.info", "vfs.list"}
	for _, info := range reg.Verbs() {
		if !info.ChatOnly { // not a tool (server.go)
			names = append(names, info.Name)
		}
	}
	for _, n := range names {
		if _, ok := verbHints[n]; !ok {
			t.Errorf("verb %s has no row in verbHints", n)
		}
	}
	var destructive, idempotent, open []string
	for n, h := range verbHints {
		if h.destructive {
			destructive = append(destructive, n)
		}
		if h.idempotent {
			idempotent = append(idempotent, n)
		}
		if h.openWorld {
			open = append(open, n)
		}
	}
	sort.Strings(destructive)
	sort.Strings(open)
	want := "[fs.deleteDirectory fs.deleteFile fs.edit fs.moveFile fs.writeFile fs.writeRange proc.run vfs.reset vfs.restore]"
	if got := sprint(destructive); got != want {
		t.Errorf("destructive verbs %s, want %s", got, want)
	}
	if got := sprint(open); got != "[proc.run]" {
		t.Errorf("open-world verbs %s", got)
	}
	if len(idempotent) != 20 {
		t.Errorf("%d idempotent verbs: %v", len(idempotent), idempotent)
	}
	a := annotations(executor.Info{Name: "new.verb"})
	if !*a.DestructiveHint || a.IdempotentHint || !*a.OpenWorldHint {
		t.Errorf("a verb missing from the table is not treated cautiously: %+v", a)
	}
	if a := annotations(executor.Info{Name: "fs.readFile", ReadOnly: true}); !a.ReadOnlyHint || *a.DestructiveHint {
		t.Errorf("fs.readFile: %+v", a)
	}
}

func sprint(s []string) string {
	out := "["
	for i, v := range s {
		if i > 0 {
			out += " "
		}
		out += v
	}
	return out + "]"
}
