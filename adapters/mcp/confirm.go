package mcp

import (
	"encoding/json"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/a6afc2ce/hermes-hub/executor"
)

// confirmInput names the elicitation of a held call among a tool call's
// input requests.
const confirmInput = "confirm"

// canElicit reports whether the client of ss declared elicitation (form
// mode, or no mode: form) when it initialised.
func canElicit(ss *mcp.ServerSession) bool {
	return ss != nil && elicits(ss.InitializeParams())
}

// elicits reports whether initialize params p declare elicitation in form
// mode, or in no mode (form).
func elicits(p *mcp.InitializeParams) bool {
	if p == nil || p.Capabilities == nil || p.Capabilities.Elicitation == nil {
		return false
	}
	e := p.Capabilities.Elicitation
	return e.Form != nil || e.URL == nil
}

// confirmSchema is what the client asks its user: one yes or no.
var confirmSchema = map[string]any{
	"type": "object",
	"properties": map[string]any{
		"run": map[string]any{"type": "boolean", "title": "Run it", "description": "Run exactly this call"},
	},
	"required": []string{"run"},
}

// askToConfirm is the answer to a call a role holds for confirmation
// (held, the hub's refusal) from a client that supports elicitation: an
// input request that asks the client's user to confirm the exact call.
// The SDK elicits it (from a client of an older protocol version, then
// calls the tool again) or the client does and calls the tool again, with
// the answer among the call's input responses (confirmed).
func askToConfirm(held *executor.Outcome, info executor.Info, args json.RawMessage) *mcp.CallToolResult {
	if len(args) == 0 || string(args) == "null" {
		args = json.RawMessage("{}")
	}
	msg := fmt.Sprintf("Run %s with these arguments?\n%s\n(%s)", info.Name, args, held.Err.Message)
	return &mcp.CallToolResult{InputRequests: mcp.InputRequestMap{confirmInput: &mcp.ElicitParams{Message: msg, RequestedSchema: confirmSchema}}}
}

// confirmed reads the user's answer to askToConfirm among a call's input
// responses: asked is false when there is none (the first call); yes is
// true only for an accepted "run": true, and why says what else came.
func confirmed(responses mcp.InputResponseMap) (asked, yes bool, why string) {
	r, ok := responses[confirmInput]
	if !ok {
		return false, false, ""
	}
	res, ok := r.(*mcp.ElicitResult)
	switch {
	case !ok:
		return true, false, "not an answer to the question"
	case res.Action == "accept" && res.Content["run"] == true:
		return true, true, ""
	case res.Action == "accept":
		return true, false, "answered no"
	case res.Action == "decline":
		return true, false, "declined"
	}
	return true, false, "cancelled"
}
