package verbs_test

import (
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/a6afc2ce/hermes-hub/executor"
	"github.com/a6afc2ce/hermes-hub/verbs"
)

var update = flag.Bool("update", false, "rewrite golden files under testdata/")

// TestSchemaGolden pins every verb's schema, as derived from the Go types:
// the IDL that `hub schema` prints (testdata/schema/<verb>.idl) and the
// structured form that command menus and forms are built from
// (testdata/schema/<verb>.json). Run with -update after changing an argument
// or result type on purpose. It covers the twenty-three verbs of a Set and the
// five vfs.* verbs of a SessionSource.
func TestSchemaGolden(t *testing.T) {
	e := newSessEnv(t)
	dir := filepath.Join("testdata", "schema")
	schemas := e.x.Registry().Schemas()
	if len(schemas) != 28 {
		t.Fatalf("want 28 verbs, got %d", len(schemas))
	}
	if *update {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, s := range schemas {
		structured, _ := json.MarshalIndent(struct {
			Name      string `json:"name"`
			Summary   string `json:"summary"`
			ReadOnly  bool   `json:"readOnly"`
			Arguments any    `json:"arguments"`
			Result    any    `json:"result"`
		}{s.Name, s.Summary, s.ReadOnly, s.Arguments, s.Result}, "", "  ")
		for ext, got := range map[string]string{".idl": s.IDL, ".json": string(structured) + "\n"} {
			golden := filepath.Join(dir, s.Name+ext)
			if *update {
				if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run go test ./verbs/ -run TestSchemaGolden -args -update to create it)", err)
			}
			if got != string(want) {
				t.Errorf("%s differs from the derived schema (run with -update if the change is intended):\n%s", golden, got)
			}
		}
	}
}

// TestAgentMarkdown pins the instructions `hub schema --markdown` prints, for
// session and host workspaces (testdata/agent_sessions.md, agent_host.md),
// and checks that every registered verb is advertised with its schema, but
// for the verbs only a chat conversation can use.
func TestAgentMarkdown(t *testing.T) {
	e := newSessEnv(t)
	reg := e.x.Registry()
	for name, sessions := range map[string]bool{"agent_sessions.md": true, "agent_host.md": false} {
		got := verbs.AgentMarkdown(reg, sessions)
		for _, s := range reg.Schemas() {
			for _, part := range []string{"### " + s.Name + "\n", "`/" + s.Name, `"verb": "` + s.Name + `"`, s.IDL} {
				if s.ChatOnly {
					if strings.Contains(got, "### "+s.Name+"\n") {
						t.Errorf("%s: %s is advertised to agents, who have no chat files", name, s.Name)
					}
					break
				}
				if !strings.Contains(got, part) {
					t.Errorf("%s: %s is not advertised (missing %q)", name, s.Name, part)
				}
			}
		}
		guidance := []string{"fs.listDir", "fs.readFile", "fs.writeFile", "fs.deleteFile", "48,000", "fs.edit", "lastLines", "fs.readMany"}
		if sessions {
			guidance = append(guidance, "starts empty apart from the host mounts", "configuration only", "base your edits on the version", "vfs.snapshot", "vfs.restore", "Avoid mirroring large repositories")
		} else {
			guidance = append(guidance, "changes real files", "There are no versions or snapshots here")
		}
		for _, g := range guidance {
			if !strings.Contains(got, g) {
				t.Errorf("%s: guidance does not mention %q", name, g)
			}
		}
		golden := filepath.Join("testdata", name)
		if *update {
			if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		want, err := os.ReadFile(golden)
		if err != nil {
			t.Fatalf("%v (run with -update to create it)", err)
		}
		if got != string(want) {
			t.Errorf("%s differs from the generated instructions (run with -update if intended)", golden)
		}
	}
	// Only what is registered is listed.
	host := executor.NewRegistry()
	if err := verbs.Register(host, e.host, verbs.DefaultOptions(e.base)); err != nil {
		t.Fatal(err)
	}
	if md := verbs.AgentMarkdown(host, false); strings.Contains(md, "### vfs.") || strings.Count(md, "\n### ") != 21 || strings.Contains(md, "fs.upload") {
		t.Errorf("host-only registry: %d verbs listed", strings.Count(md, "\n### "))
	}
}
