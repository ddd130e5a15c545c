package mcp_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	mcpsurface "github.com/a6afc2ce/hermes-hub/adapters/mcp"
	"github.com/a6afc2ce/hermes-hub/config"
	"github.com/a6afc2ce/hermes-hub/hub/hubtest"
)

// TestConfirmByElicitation: a tool its role holds for confirmation
// (access.roles.<role>.confirm) asks the client's user by elicitation with
// the exact call; a yes runs it, a no runs nothing; a client that did not
// declare elicitation gets a tool error naming the setting.
func TestConfirmByElicitation(t *testing.T) {
	for _, tc := range []struct {
		name    string
		answer  *mcp.ElicitResult // nil: the client declares no elicitation
		deleted bool
		want    string
	}{
		{"yes", &mcp.ElicitResult{Action: "accept", Content: map[string]any{"run": true}}, true, `"succeeded":true`},
		{"no", &mcp.ElicitResult{Action: "accept", Content: map[string]any{"run": false}}, false, "the confirmation was answered no"},
		{"declined", &mcp.ElicitResult{Action: "decline"}, false, "the confirmation was declined"},
		{"no elicitation", nil, false, `access.roles.deleter.confirm lists it`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := hubtest.Config(t, "", "")
			cfg.Access = config.Access{
				Roles:  map[string]config.Role{"deleter": {Verbs: []string{"fs.*"}, Confirm: []string{"fs.deleteFile"}}},
				Grants: map[string][]string{"agent:local": {"deleter"}},
			}
			env := hubtest.Open(t, cfg, hubtest.Options{})
			env.WriteFile(t, "old.log", "x")
			var asked string
			co := &mcp.ClientOptions{}
			if tc.answer != nil {
				co.ElicitationHandler = func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
					asked = req.Params.Message
					return tc.answer, nil
				}
			}
			cs := serveStdio(t, mcpsurface.Options{Identity: "agent:local", Intake: env.Runtime.Hub}, co)
			r, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "fs_deleteFile", Arguments: map[string]any{"path": "old.log"}})
			if err != nil {
				t.Fatal(err)
			}
			sc, _ := json.Marshal(r.StructuredContent)
			if !strings.Contains(string(sc), tc.want) {
				t.Fatalf("result %s, want %s", sc, tc.want)
			}
			if tc.answer != nil && (!strings.Contains(asked, "Run fs.deleteFile") || !strings.Contains(asked, `{"path":"old.log"}`)) {
				t.Fatalf("the question: %q", asked)
			}
			_, statErr := os.Stat(filepath.Join(env.Config.Workspace, "old.log"))
			if deleted := os.IsNotExist(statErr); deleted != tc.deleted {
				t.Fatalf("deleted %v, want %v", deleted, tc.deleted)
			}
		})
	}
}
