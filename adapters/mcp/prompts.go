package mcp

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/a6afc2ce/hermes-hub/executor"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Prompts (docs/mcp.md): one per named command (cmd.<name>, configured
// under commands:), named after it, its parameters as the prompt's
// arguments. Getting one runs nothing: it is the user's request to call
// the command's tool (cmd_<name>) with the arguments given, and the tool
// call is checked as any other. An enum parameter completes to its values.

// commandPrefix names the verbs that are named commands.
const commandPrefix = "cmd."

// promptArgs are the arguments of one prompt: for each, its enum values
// (none for a parameter that is not an enum).
type promptArgs map[string][]string

// commandSchema is the part of a named command's input schema a prompt
// uses.
type commandSchema struct {
	Properties map[string]struct {
		Description string   `json:"description"`
		Enum        []string `json:"enum"`
	} `json:"properties"`
	Required []string `json:"required"`
}

// promptOf is the prompt of a named command and its arguments' values.
func promptOf(reg *executor.Registry, info executor.Info) (*mcp.Prompt, promptArgs, bool) {
	name, ok := strings.CutPrefix(info.Name, commandPrefix)
	if !ok || info.ChatOnly {
		return nil, nil, false
	}
	in, _, ok := reg.JSONSchemas(info.Name)
	if !ok {
		return nil, nil, false
	}
	var sc commandSchema
	if b, err := json.Marshal(in); err != nil || json.Unmarshal(b, &sc) != nil {
		return nil, nil, false
	}
	p := &mcp.Prompt{Name: name, Title: info.Name, Description: info.Summary + " (runs the tool " + ToolName(info.Name) + ")"}
	args := promptArgs{}
	for _, a := range slices.Sorted(func(yield func(string) bool) {
		for k := range sc.Properties {
			if !yield(k) {
				return
			}
		}
	}) {
		p.Arguments = append(p.Arguments, &mcp.PromptArgument{Name: a, Description: sc.Properties[a].Description, Required: slices.Contains(sc.Required, a)})
		args[a] = sc.Properties[a].Enum
	}
	return p, args, true
}

// syncPrompts makes the server's prompts the registry's named commands;
// the caller holds toolsMu.
func (s *Server) syncPrompts(reg *executor.Registry) {
	now := map[string]promptArgs{}
	for _, info := range reg.Verbs() {
		p, args, ok := promptOf(reg, info)
		if !ok {
			continue
		}
		s.srv.AddPrompt(p, s.getPrompt(info.Name))
		now[p.Name] = args
	}
	var gone []string
	for name := range s.prompts {
		if _, ok := now[name]; !ok {
			gone = append(gone, name)
		}
	}
	if len(gone) > 0 {
		s.srv.RemovePrompts(gone...)
	}
	s.prompts = now
}

// getPrompt answers prompts/get of a named command: one user message
// asking for the command's tool with the arguments given.
func (s *Server) getPrompt(verb string) mcp.PromptHandler {
	return func(_ context.Context, req *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
		args, err := json.Marshal(req.Params.Arguments)
		if err != nil {
			return nil, err
		}
		text := fmt.Sprintf("Run the hub command %s: call the tool %s with the arguments %s.", verb, ToolName(verb), args)
		return &mcp.GetPromptResult{
			Description: "Run " + verb,
			Messages:    []*mcp.PromptMessage{{Role: "user", Content: &mcp.TextContent{Text: text}}},
		}, nil
	}
}

// completePrompt is the values of a prompt's enum argument that start
// with what was typed; an argument that is not an enum completes to
// nothing.
func (s *Server) completePrompt(prompt, arg, typed string) ([]string, error) {
	s.toolsMu.Lock()
	args, ok := s.prompts[prompt]
	s.toolsMu.Unlock()
	if !ok {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("no prompt %q: the hub's prompts are its named commands (commands: in the configuration); it also completes the path of the resource template %s", prompt, PathTemplate)}
	}
	values, ok := args[arg]
	if !ok {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("the prompt %q has no argument %q", prompt, arg)}
	}
	out := []string{}
	for _, v := range values {
		if strings.HasPrefix(v, typed) {
			out = append(out, v)
		}
	}
	return out, nil
}
