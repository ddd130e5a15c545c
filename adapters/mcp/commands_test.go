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

// TestNamedCommandPrompts: each named command is a prompt, shown to whom
// may run it, whose message asks for the command's tool with the
// arguments given; its enum argument completes to its values.
func TestNamedCommandPrompts(t *testing.T) {
	cfg := hubtest.Config(t, "", "")
	deploy := countCommand("Count lines of a file in an environment")
	deploy.Params.Names = append(deploy.Params.Names, "env")
	deploy.Params.ByName["env"] = config.CommandParam{Type: config.ParamEnum, Values: []string{"staging", "production", "stable"}, Description: "where"}
	cfg.Commands = config.Commands{"deploy": deploy}
	cfg.Access = config.Access{
		Roles:  map[string]config.Role{"deployer": {Verbs: []string{"cmd.deploy"}}},
		Grants: map[string][]string{"agent:local": {"deployer"}, "agent:reader": {"reader"}},
	}
	env := hubtest.Open(t, cfg, hubtest.Options{})
	cs := serveStdio(t, mcpsurface.Options{Identity: "agent:local", Intake: env.Runtime.Hub}, nil)
	ctx := context.Background()
	list, err := cs.ListPrompts(ctx, nil)
	if err != nil || len(list.Prompts) != 1 || list.Prompts[0].Name != "deploy" || len(list.Prompts[0].Arguments) != 2 {
		t.Fatalf("prompts: %+v %v", list, err)
	}
	got, err := cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: "deploy", Arguments: map[string]string{"file": "a.txt", "env": "staging"}})
	if err != nil || len(got.Messages) != 1 {
		t.Fatalf("get: %+v %v", got, err)
	}
	if text := got.Messages[0].Content.(*mcp.TextContent).Text; !strings.Contains(text, "cmd_deploy") || !strings.Contains(text, `"env":"staging"`) {
		t.Errorf("the prompt's message: %s", text)
	}
	c, err := cs.Complete(ctx, &mcp.CompleteParams{Ref: &mcp.CompleteReference{Type: "ref/prompt", Name: "deploy"}, Argument: mcp.CompleteParamsArgument{Name: "env", Value: "st"}})
	if err != nil || strings.Join(c.Completion.Values, ",") != "staging,stable" {
		t.Errorf("complete env st: %+v %v", c, err)
	}
	if _, err := cs.Complete(ctx, &mcp.CompleteParams{Ref: &mcp.CompleteReference{Type: "ref/prompt", Name: "nope"}, Argument: mcp.CompleteParamsArgument{Name: "env", Value: "s"}}); err == nil || !strings.Contains(err.Error(), "named commands") {
		t.Errorf("complete an unknown prompt: %v", err)
	}
	reader := serveStdio(t, mcpsurface.Options{Identity: "agent:reader", Intake: env.Runtime.Hub}, nil)
	if l, err := reader.ListPrompts(ctx, nil); err != nil || len(l.Prompts) != 0 {
		t.Errorf("a reader sees the prompt of a command it may not run: %+v %v", l, err)
	}
}
