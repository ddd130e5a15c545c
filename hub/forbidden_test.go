package hub_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/a6afc2ce/hermes-hub/chat"
	"github.com/a6afc2ce/hermes-hub/config"
	"github.com/a6afc2ce/hermes-hub/executor"
	"github.com/a6afc2ce/hermes-hub/hub"
	"github.com/a6afc2ce/hermes-hub/hub/hubtest"
	"github.com/a6afc2ce/hermes-hub/workspaces/policy"
)

// TestForbiddenRepliesSayWhatAllowsIt: a verb the roles do not grant is
// refused, on every chat platform and through the API, with the
// configuration that would allow it; merged into the configuration, that
// configuration does allow it, and grants nothing else.
func TestForbiddenRepliesSayWhatAllowsIt(t *testing.T) {
	ws := t.TempDir()
	cfg := testConfig(t, ws, filepath.Join(ws, ".hub"))
	cfg.Access.Grants = map[string][]string{"telegram:3": {"readers"}, "discord:55": {"readers"}, "web": {"reader"}}
	he := hubtest.Open(t, cfg, hubtest.Options{})
	rec := hubtest.NewRecorder()
	rec.HandleAll(t, he.Runtime)
	he.Start(t)
	h := he.Runtime.Hub

	now := time.Now()
	chats := []*chat.Inbound{
		tgMsg(3, 10, "/proc.run true"),
		{TurnID: "discord.9.11", Platform: chat.Discord, ChatID: "9", MessageID: "11", UserID: "55", ChatType: chat.ChatDM, Text: "/proc.run true", Time: now},
		{TurnID: "web.t12", Platform: chat.Web, ChatID: "web", ChatType: chat.ChatWeb, MessageID: "t12", UserID: "web", Text: "/proc.run true", Time: now},
	}
	for _, in := range chats {
		res, err := h.Handle(context.Background(), in)
		if err != nil || res.Status != hub.StatusForbidden {
			t.Fatalf("%s: %+v %v", in.Identity(), res, err)
		}
		reply := rec.Wait(t, in.ReplyKey().String(), 1)[0].Text
		if !strings.HasPrefix(reply, "⚠ You may not run proc.run (forbidden). Your roles: ") {
			t.Errorf("%s: %q", in.Identity(), reply)
		}
		checkAllowConfig(t, h.Registry(), cfg.Access, hub.Identities(in), "proc.run", reply)
	}

	out, err := h.Execute(context.Background(), hub.APIRequest{Identity: "web", TurnID: "api.f1", Input: []byte(`{"verb":"proc.run","arguments":{"executable":"true"}}`)})
	if err != nil {
		t.Fatal(err)
	}
	if out.Succeeded() || out.Err.Code != "forbidden" || !strings.HasPrefix(out.Err.Message, "web may not run proc.run (forbidden; roles: reader).") {
		t.Fatalf("api: %s", out.JSON())
	}
	checkAllowConfig(t, h.Registry(), cfg.Access, []string{"web"}, "proc.run", out.Err.Message)
}

// checkAllowConfig merges the YAML block of a refusal into the access
// section running, and checks that the identities may then run verb, and
// no verb they could not run before but verb.
func checkAllowConfig(t *testing.T, reg *executor.Registry, running config.Access, ids []string, verb, reply string) {
	t.Helper()
	merged := mergeBlock(t, running, "", reply)
	before, after := hub.NewAccess(running, reg), hub.NewAccess(merged, reg)
	if before.Allowed(ids, verb) || !after.Allowed(ids, verb) {
		t.Fatalf("%v: %s allowed before %v, after %v:\n%s", ids, verb, before.Allowed(ids, verb), after.Allowed(ids, verb), reply)
	}
	for _, v := range reg.Verbs() {
		if v.Name != verb && after.Allowed(ids, v.Name) != before.Allowed(ids, v.Name) {
			t.Errorf("%v: the block changes %s too", ids, v.Name)
		}
	}
}

// mergeBlock finds the YAML block of a refusal, checks that it loads as a
// configuration of its own (once the roles it grants beside the new one
// are defined, after the YAML of the rest of the configuration it needs),
// and merges it into running as an operator would: its role added under
// access.roles, its grant replacing the identity's line.
func mergeBlock(t *testing.T, running config.Access, rest, reply string) config.Access {
	t.Helper()
	_, block, ok := strings.Cut(reply, "```yaml\n")
	block, _, ok2 := strings.Cut(block, "```")
	if !ok || !ok2 {
		t.Fatalf("no YAML block in %q", reply)
	}
	var extra strings.Builder
	for name := range running.Roles {
		extra.WriteString("    " + name + ": {verbs: [fs.listDir]}\n")
	}
	yml := rest + strings.Replace(block, "  roles:\n", "  roles:\n"+extra.String(), 1)
	p := filepath.Join(t.TempDir(), "hub.yml")
	if err := os.WriteFile(p, []byte(yml), 0o600); err != nil {
		t.Fatal(err)
	}
	pasted, err := config.LoadWith(p, func(string) (string, bool) { return "", false })
	if err != nil {
		t.Fatalf("the block does not load: %v\n%s", err, yml)
	}
	merged := running
	merged.Roles, merged.Grants = map[string]config.Role{}, map[string][]string{}
	for k, v := range running.Roles {
		merged.Roles[k] = v
	}
	for k, v := range running.Grants {
		merged.Grants[k] = v
	}
	for k, v := range pasted.Access.Roles {
		if _, ok := running.Roles[k]; !ok {
			merged.Roles[k] = v
		}
	}
	for k, v := range pasted.Access.Grants {
		merged.Grants[k] = v
	}
	return merged
}

// TestWorkspaceRefusalsSayWhatOpensIt: a workspace the roles may not use
// is refused, by a call (chat, API) and by /use, with the configuration
// that opens it to the identity; merged, it does, and the identity's
// verbs stay what they were. An unknown workspace gets no such block.
func TestWorkspaceRefusalsSayWhatOpensIt(t *testing.T) {
	cfg := wsConfig(t, t.TempDir())
	e := openWS(t, cfg, &wsRunner{})
	h := e.env.Runtime.Hub
	reg := h.Registry()
	opens := func(what, reply string) {
		t.Helper()
		merged := mergeBlock(t, cfg.Access, "workspaces:\n  sandbox: {path: "+cfg.Workspaces.Named["sandbox"].Path+"}\n", reply)
		c := *cfg
		c.Access = merged
		ids := []string{"telegram:2"}
		acc := hub.NewAccess(merged, reg)
		if policy.New(cfg).MayUse(hub.NewAccess(cfg.Access, reg).RolesOf(ids), "sandbox") || !policy.New(&c).MayUse(acc.RolesOf(ids), "sandbox") {
			t.Fatalf("%s: the block does not open sandbox to telegram:2:\n%s", what, reply)
		}
		if len(acc.VerbsFor(ids)) != len(hub.NewAccess(cfg.Access, reg).VerbsFor(ids)) {
			t.Fatalf("%s: the block changes the verbs", what)
		}
	}
	out, err := h.Execute(context.Background(), hub.APIRequest{Identity: "telegram:2", TurnID: "api.w1", Workspace: "sandbox", Input: []byte(`{"verb":"fs.readFile","arguments":{"path":"where.txt"}}`)})
	if err != nil || out.Succeeded() || out.Err.Code != "forbidden" {
		t.Fatalf("api: %v %s", err, out.JSON())
	}
	opens("api", out.Err.Message)

	in := tgMsg(2, 20, "/use sandbox")
	in.ChatID, in.TurnID = "400", "telegram.400.20"
	if _, err := h.Handle(context.Background(), in); err != nil {
		t.Fatal(err)
	}
	reply := e.rec.Wait(t, in.ReplyKey().String(), 1)[0].Text
	if !strings.HasPrefix(reply, `⚠ Workspace "sandbox" (asked with /use) is not open to your roles (dev)`) {
		t.Fatalf("/use: %q", reply)
	}
	opens("/use", reply)

	in = tgMsg(2, 21, `{"verb":"fs.readFile","arguments":{"path":"where.txt"},"workspace":"sandbox"}`)
	in.ChatID, in.TurnID = "401", "telegram.401.21"
	if res, err := h.Handle(context.Background(), in); err != nil || res.Status != hub.StatusForbidden {
		t.Fatalf("chat: %+v %v", res, err)
	}
	opens("chat", e.rec.Wait(t, in.ReplyKey().String(), 1)[0].Text)

	out, err = h.Execute(context.Background(), hub.APIRequest{Identity: "telegram:2", TurnID: "api.w2", Workspace: "nope", Input: []byte(`{"verb":"fs.readFile","arguments":{"path":"where.txt"}}`)})
	if err != nil || out.Succeeded() || strings.Contains(out.Err.Message, "```yaml") {
		t.Fatalf("an unknown workspace: %v %s", err, out.JSON())
	}
}
