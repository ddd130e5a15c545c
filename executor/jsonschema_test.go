package executor_test

import (
	"context"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/a6afc2ce/hermes-hub/executor"
)

var updateGolden = flag.Bool("update", false, "rewrite golden files under testdata/")

// Level is an enum for the schema test.
type Level string

func (Level) Values() []string { return []string{"low", "high"} }

type SchemaItem struct {
	Name string  `json:"name" desc:"The item's name"`
	Tags []Level `json:"tags,omitempty"`
}

type SchemaArgs struct {
	Path    string            `json:"path" desc:"Where"`
	Count   int               `json:"count,omitempty" desc:"How many" default:"10"`
	Ratio   float64           `json:"ratio,omitempty" default:"0.5"`
	Deep    bool              `json:"deep,omitempty" desc:"Recurse" default:"true"`
	Level   Level             `json:"level,omitempty" desc:"How hard" default:"low"`
	Mode    Mode              `json:"mode,omitempty" desc:"What to do" default:"create or overwrite"`
	Names   []string          `json:"names" desc:"Names"`
	Weights map[string]int    `json:"weights,omitempty"`
	Raw     json.RawMessage   `json:"raw,omitempty"`
	Item    *SchemaItem       `json:"item,omitempty" desc:"One item"`
	Labels  map[string]string `json:"labels,omitempty"`
}

func (SchemaArgs) Description() string { return "Arguments of every kind" }

type SchemaResult struct {
	executor.Result
	Items []SchemaItem `json:"items" desc:"The items"`
	Best  *SchemaItem  `json:"best"`
	Total int64        `json:"total"`
}

// TestJSONSchemas converts a verb with every field kind to JSON Schema and
// compares with the golden file (go test ./executor -run JSONSchemas -update).
func TestJSONSchemas(t *testing.T) {
	reg := executor.NewRegistry()
	executor.MustRegister(reg, executor.Info{Name: "t.schema"},
		executor.VerbFunc[SchemaArgs, SchemaResult](func(context.Context, SchemaArgs) (SchemaResult, error) { return SchemaResult{}, nil }))
	args, res, ok := reg.JSONSchemas("T_Schema")
	if !ok {
		t.Fatal("JSONSchemas did not find t.schema by its tool-style name")
	}
	got, err := json.MarshalIndent(map[string]any{"arguments": args, "result": res}, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	got = append(got, '\n')
	golden := filepath.Join("testdata", "jsonschema.golden.json")
	if *updateGolden {
		if err := os.WriteFile(golden, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	if string(got) != string(want) {
		t.Errorf("JSON Schema differs from %s (rerun with -update if intended):\n%s", golden, got)
	}
	if _, _, ok := reg.JSONSchemas("t.missing"); ok {
		t.Error("JSONSchemas found a verb that is not registered")
	}
}
