package hub_test

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/a6afc2ce/hermes-hub/chat"
	"github.com/a6afc2ce/hermes-hub/config"
	"github.com/a6afc2ce/hermes-hub/hub"
	"github.com/a6afc2ce/hermes-hub/hub/hubtest"
	"github.com/a6afc2ce/hermes-hub/store"
	"github.com/a6afc2ce/hermes-hub/verbs"
)

// TestAPIDecisionOrder pins the order in which an API call is decided and
// what its record says: a verb the roles do not grant is forbidden before
// the two workspaces the call names are compared, and those before the
// workspace is checked; a call records its session once the access check
// let it through, and the workspace it was placed in (a refused one too)
// once it named one workspace, else the workspace the request named.
func TestAPIDecisionOrder(t *testing.T) {
	cfg := wsConfig(t, t.TempDir())
	sessionFor := func(in *chat.Inbound, _ []string) string {
		if in.Platform != chat.Web || in.ReplyKey().String() != hub.WebConversation {
			t.Errorf("an API call's session picked for %+v, want the web conversation", in)
		}
		return "s1"
	}
	e := hubtest.Open(t, cfg, hubtest.Options{Workspaces: true,
		Runners: func(string, config.Destination) (verbs.Runner, error) { return &wsRunner{}, nil },
		Runtime: hub.RuntimeOptions{SessionFor: sessionFor}})
	read := `{"verb":"fs.readFile","arguments":{"path":"where.txt"}%s}`
	for i, c := range []struct {
		identity, asked, envelope string
		code, says                string
		workspace, session        string // recorded
	}{
		{"web", "alpha", "sandbox", "invalid_envelope", `names workspace "sandbox" and the request "alpha"`, "alpha", "s1"},
		{"telegram:9", "alpha", "sandbox", "forbidden", "telegram:9 may not run fs.readFile", "alpha", ""},
		{"telegram:9", "", "", "forbidden", "telegram:9 may not run fs.readFile", "", ""},
		{"telegram:2", "sandbox", "", "forbidden", `fs.readFile was not run: workspace "sandbox" (chosen for this call) is not open to your roles (dev)`, "sandbox", "s1"},
		{"telegram:2", "", "sandbox", "forbidden", `fs.readFile was not run: workspace "sandbox"`, "sandbox", "s1"},
		{"web", "nope", "", "forbidden", `workspace "nope" is not configured`, "", "s1"},
	} {
		ws := ""
		if c.envelope != "" {
			ws = fmt.Sprintf(`,"workspace":%q`, c.envelope)
		}
		turnID := fmt.Sprintf("api.order%d", i)
		out, err := e.Runtime.Hub.Execute(context.Background(), hub.APIRequest{Identity: c.identity, TurnID: turnID, Workspace: c.asked, Input: fmt.Appendf(nil, read, ws)})
		if err != nil {
			t.Fatal(err)
		}
		if out.Succeeded() || string(out.Err.Code) != c.code || !strings.Contains(out.Err.Message, c.says) {
			t.Errorf("%+v: outcome %s", c, out.JSON())
		}
		var rec store.MirrorRecord
		store.ReadMirror(flowsRoot(t, filepath.Join(cfg.StateDir, "flows")), store.MirrorFilter{Direction: store.DirectionInbound}, func(r store.MirrorRecord) error {
			if r.Meta["turn_id"] == turnID {
				rec = r
			}
			return nil
		})
		if rec.Meta[hub.MetaWorkspace] != c.workspace || rec.Meta["session"] != c.session {
			t.Errorf("%+v: recorded workspace %q and session %q, want %q and %q", c, rec.Meta[hub.MetaWorkspace], rec.Meta["session"], c.workspace, c.session)
		}
	}
}
