package verbs_test

import (
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"testing"
)

var update = flag.Bool("update", false, "rewrite golden files under testdata/")

// TestSchemaGolden pins every verb's schema, as derived from the Go types:
// the IDL that `hub schema` prints (testdata/schema/<verb>.idl) and the
// structured form that command menus and forms are built from
// (testdata/schema/<verb>.json). Run with -update after changing an argument
// or result type on purpose.
func TestSchemaGolden(t *testing.T) {
	e := newEnv(t)
	dir := filepath.Join("testdata", "schema")
	schemas := e.x.Registry().Schemas()
	if len(schemas) != 14 {
		t.Fatalf("want 14 verbs, got %d", len(schemas))
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
