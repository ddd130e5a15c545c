package mcp_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	mcpsurface "github.com/a6afc2ce/hermes-hub/adapters/mcp"
	"github.com/a6afc2ce/hermes-hub/config"
	"github.com/a6afc2ce/hermes-hub/hub/hubtest"
	"github.com/a6afc2ce/hermes-hub/internal/testkit"
)

// countCommand is a named command: fs.lineCount of a path parameter, with
// an enum parameter that picks nothing but shows as choices.
func countCommand(desc string) config.Command {
	return config.Command{
		Description: desc,
		Params: config.CommandParams{Names: []string{"file"}, ByName: map[string]config.CommandParam{
			"file": {Type: config.ParamPath, Description: "The file"},
		}},
		Run: config.CommandRun{Verb: "fs.lineCount", Arguments: config.Arguments{"path": "{file}"}},
	}
}

// TestNamedCommandTools: a named command is a tool (cmd_count) with its
// parameters as its input schema, callable by an agent whose role names
// cmd.count only; a reload that replaces the commands replaces the tools
// (and the client hears that the list changed).
func TestNamedCommandTools(t *testing.T) {
	cfg := hubtest.Config(t, "", "")
	cfg.Commands = config.Commands{"count": countCommand("Count lines")}
	cfg.Access = config.Access{
		Roles:  map[string]config.Role{"counter": {Verbs: []string{"cmd.*"}}},
		Grants: map[string][]string{"agent:local": {"counter"}},
	}
	env := hubtest.Open(t, cfg, hubtest.Options{})
	env.WriteFile(t, "notes.txt", "a\nb\nc\n")
	changed := make(chan struct{}, 4)
	cs := serveStdio(t, mcpsurface.Options{Identity: "agent:local", Intake: env.Runtime.Hub}, &mcp.ClientOptions{
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) { changed <- struct{}{} },
	})
	ctx := context.Background()
	tools := func() map[string]*mcp.Tool {
		res, err := cs.ListTools(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		m := map[string]*mcp.Tool{}
		for _, tl := range res.Tools {
			m[tl.Name] = tl
		}
		return m
	}
	got := tools()
	if len(got) != 1 || got["cmd_count"] == nil {
		t.Fatalf("tools %v", got)
	}
	in, _ := json.Marshal(got["cmd_count"].InputSchema)
	if !strings.Contains(string(in), `"file":{"description":"The file (a relative path inside the workspace`) || !strings.Contains(string(in), `"required":["file"]`) {
		t.Fatalf("input schema %s", in)
	}
	r, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "cmd_count", Arguments: map[string]any{"file": "notes.txt"}})
	if err != nil {
		t.Fatal(err)
	}
	sc, _ := json.Marshal(r.StructuredContent)
	if r.IsError || !strings.Contains(string(sc), `"lineCount":3`) {
		t.Fatalf("cmd_count: %s", sc)
	}
	r, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "cmd_count", Arguments: map[string]any{"file": "../etc/passwd"}})
	if err != nil {
		t.Fatal(err)
	}
	if sc, _ := json.Marshal(r.StructuredContent); !r.IsError || !strings.Contains(string(sc), "leaves the workspace") {
		t.Fatalf("cmd_count ..: %s", sc)
	}

	next := *cfg
	next.Commands = config.Commands{"lines": countCommand("Lines of a file")}
	rl := env.Runtime.EnableReload(func() (*config.Config, error) { c := next; return &c, nil })
	if _, err := rl.Reload(); err != nil {
		t.Fatal(err)
	}
	testkit.WaitFor(t, "the tools after the reload", func() bool {
		got := tools()
		return len(got) == 1 && got["cmd_lines"] != nil
	})
	testkit.WaitFor(t, "the client told the tool list changed", func() bool { return len(changed) > 0 })
}
