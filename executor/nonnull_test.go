package executor_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/a6afc2ce/hermes-hub/executor"
)

type nestedList struct {
	Names []string `json:"names"`
}

type listsResult struct {
	executor.Result
	Entries  []Entry          `json:"entries"`
	Nested   []nestedList     `json:"nested"`
	Index    map[string]Entry `json:"index"`
	Optional []string         `json:"optional,omitempty"`
}

// TestResultListsAreNeverNull: a result's list or map that its JSON always
// carries is written as [] or {} when the verb left it nil, in nested
// values too, as the result schemas (which accept no null) say; an
// optional one stays absent. No schema names a null type.
func TestResultListsAreNeverNull(t *testing.T) {
	reg := executor.NewRegistry()
	executor.MustRegister(reg, executor.Info{Name: "sys.lists", Summary: "Lists", ReadOnly: true},
		executor.VerbFunc[NoArgs, listsResult](func(context.Context, NoArgs) (listsResult, error) {
			return listsResult{Nested: []nestedList{{}}}, nil
		}))
	x := executor.New(reg, executor.Options{})
	out := x.Run(context.Background(), executor.Envelope{Verb: "sys.lists", Arguments: json.RawMessage(`{}`)})
	if got, want := string(out.JSON()), `{"succeeded":true,"entries":[],"nested":[{"names":[]}],"index":{}}`; got != want {
		t.Fatalf("result %s, want %s", got, want)
	}
	for _, name := range []string{"sys.lists"} {
		in, res, _ := reg.JSONSchemas(name)
		for _, s := range []executor.JSONSchema{in, res} {
			b, _ := json.Marshal(s)
			if strings.Contains(string(b), `"null"`) {
				t.Errorf("%s: a schema names null: %s", name, b)
			}
		}
	}
}

// treeNode refers to itself, through a list and a pointer.
type treeNode struct {
	Name     string     `json:"name"`
	Children []treeNode `json:"children"`
	Next     *treeNode  `json:"next,omitempty"`
}

type plainEntry struct {
	Name string `json:"name"`
	Size *int64 `json:"size,omitempty"`
}

type mixedResult struct {
	executor.Result
	Tree  treeNode     `json:"tree"`
	Plain []plainEntry `json:"plain"`
	Any   any          `json:"any"`
}

// TestResultListsAreNeverNullDeep: the nil lists of a type that refers to
// itself are filled at every depth, and so are those behind an interface;
// a long list of plain entries (which hold no list) stays as it is.
func TestResultListsAreNeverNullDeep(t *testing.T) {
	reg := executor.NewRegistry()
	executor.MustRegister(reg, executor.Info{Name: "sys.mixed", Summary: "Mixed", ReadOnly: true},
		executor.VerbFunc[NoArgs, mixedResult](func(context.Context, NoArgs) (mixedResult, error) {
			return mixedResult{
				Tree:  treeNode{Name: "a", Children: []treeNode{{Name: "b", Next: &treeNode{Name: "c"}}}},
				Plain: []plainEntry{{Name: "x"}, {Name: "y"}},
				Any:   &nestedList{},
			}, nil
		}))
	x := executor.New(reg, executor.Options{})
	out := x.Run(context.Background(), executor.Envelope{Verb: "sys.mixed", Arguments: json.RawMessage(`{}`)})
	want := `{"succeeded":true,"tree":{"name":"a","children":[{"name":"b","children":[],"next":{"name":"c","children":[]}}]},"plain":[{"name":"x"},{"name":"y"}],"any":{"names":[]}}`
	if got := string(out.JSON()); got != want {
		t.Fatalf("result %s\nwant   %s", got, want)
	}
}
