package hub_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/a6afc2ce/hermes-hub/config"
	"github.com/a6afc2ce/hermes-hub/executor"
	"github.com/a6afc2ce/hermes-hub/hub"
	"github.com/a6afc2ce/hermes-hub/hub/hubtest"
	"github.com/a6afc2ce/hermes-hub/store"
	"github.com/a6afc2ce/hermes-hub/verbs"
)

// fakeRemote stands in for the nodes' transport: it runs each call with
// node's executor (in the node's own directory), or fails like an offline
// node.
type fakeRemote struct {
	mu      sync.Mutex
	node    *executor.Executor
	calls   []hub.RemoteCall
	offline bool
}

func (f *fakeRemote) Call(ctx context.Context, node string, c hub.RemoteCall) (hub.RemoteAnswer, error) {
	f.mu.Lock()
	f.calls = append(f.calls, c)
	offline := f.offline
	f.mu.Unlock()
	if node != "db-1" {
		return hub.RemoteAnswer{}, fmt.Errorf("node %q is not configured", node)
	}
	if offline {
		return hub.RemoteAnswer{}, errors.New("node db-1 is offline; the call did not run (or may not have): no answer within 1m0s")
	}
	out := f.node.Run(executor.WithCall(ctx, executor.Call{TurnID: c.TurnID, Identity: c.Identity}), c.Envelope)
	return hub.RemoteAnswer{Outcome: out, Node: "db-1", NodeVersion: "v-test"}, nil
}

func (f *fakeRemote) Nodes(context.Context) ([]hub.NodeStatus, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.offline {
		return []hub.NodeStatus{{Name: "db-1"}}, nil
	}
	return []hub.NodeStatus{{Name: "db-1", Online: true, Version: "v-test", LastSeen: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC), Workspaces: []string{"logs"}, Load: [3]float64{0.5, 0.25, 0.125}}}, nil
}

func (f *fakeRemote) recorded() []hub.RemoteCall {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]hub.RemoteCall(nil), f.calls...)
}

// remoteConfig is wsConfig with a workspace db1-logs on node db-1 that
// only the admin role (which also reads the admin API) may use.
func remoteConfig(t *testing.T, root string) *config.Config {
	t.Helper()
	cfg := wsConfig(t, root)
	cfg.NATS.Embedded = true
	cfg.Nodes = map[string]config.NodeEntry{"db-1": {NKey: "UDXU4RCSJNZOIQHZNWXHXORDPRTGNJAHAHFRGZNEEJCPQTT2M7NLCNF4"}}
	cfg.Workspaces.Named["db1-logs"] = config.WorkspaceConfig{Destination: config.Destination{Kind: config.DestinationRemote, Node: "db-1", Workspace: "logs"}}
	cfg.Access.Roles["admin"] = config.Role{Verbs: []string{"*", config.AdminRead}, Workspaces: []string{"*"}}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	return cfg
}

// openRemote opens the hub with the fake transport; the node's executor
// acts in root/node.
func openRemote(t *testing.T, root string) (*wsEnv, *fakeRemote) {
	t.Helper()
	cfg := remoteConfig(t, root)
	nodeDir := filepath.Join(root, "node")
	if err := os.MkdirAll(nodeDir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(nodeDir, "where.txt"), []byte("on the node"), 0o644); err != nil {
		t.Fatal(err)
	}
	ncfg := hubtest.Config(t, nodeDir, filepath.Join(root, "node-state"))
	reg := executor.NewRegistry()
	ws, err := hubtest.RealVerbs(reg, ncfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ws.Close() })
	fr := &fakeRemote{node: executor.New(reg, executor.Options{})}
	e := hubtest.Open(t, cfg, hubtest.Options{Workspaces: true, Runtime: hub.RuntimeOptions{Remote: fr},
		Runners: func(string, config.Destination) (verbs.Runner, error) { return &wsRunner{}, nil }})
	rec := hubtest.NewRecorder()
	rec.HandleAll(t, e.Runtime)
	e.Start(t)
	return &wsEnv{env: e, rec: rec}, fr
}

func TestRemoteWorkspaceCallsItsNode(t *testing.T) {
	root := t.TempDir()
	w, fr := openRemote(t, root)
	if _, r := w.say(t, "1", "100", "/use db1-logs"); !strings.Contains(r, "This conversation now works in db1-logs: remote (node db-1, logs); node db-1 is online.") {
		t.Fatalf("/use db1-logs: %q", r)
	}
	st, r := w.say(t, "1", "100", "/fs.readFile where.txt")
	if st != hub.StatusExecuted || !strings.Contains(r, "on the node") {
		t.Fatalf("remote read: %s %q", st, r)
	}
	calls := fr.recorded()
	if len(calls) != 1 {
		t.Fatalf("calls %+v", calls)
	}
	c := calls[0]
	if c.Workspace != "logs" || c.Identity != "telegram:1" || c.Index != 0 || !strings.HasPrefix(c.TurnID, "telegram.100.") || c.Envelope.Verb != "fs.readFile" || c.Envelope.Workspace != "" {
		t.Fatalf("call %+v", c)
	}
	// The chunks and the mirror say which node answered.
	sent := w.rec.Sent("chat:telegram:100")
	if last := sent[len(sent)-1]; last.Meta[hub.MetaNode] != "db-1" || last.Meta[hub.MetaNodeVersion] != "v-test" {
		t.Fatalf("reply meta %v", last.Meta)
	}
	w.env.Close()
	var nodeRecs []store.MirrorRecord
	err := store.ReadMirror(flowsRoot(t, filepath.Join(w.env.Config.StateDir, "flows")), store.MirrorFilter{}, func(rec store.MirrorRecord) error {
		if rec.Direction == store.DirectionOutbound && rec.Meta[hub.MetaNode] != "" {
			nodeRecs = append(nodeRecs, rec)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(nodeRecs) != 1 || nodeRecs[0].Meta["turn_id"] != c.TurnID || nodeRecs[0].Meta[hub.MetaNodeVersion] != "v-test" || !strings.Contains(nodeRecs[0].Text, "on the node") {
		t.Fatalf("mirror records with a node: %+v", nodeRecs)
	}
}

func TestRemoteWorkspaceAccessAndOffline(t *testing.T) {
	root := t.TempDir()
	w, fr := openRemote(t, root)
	// Deny by default: dev's role does not name db1-logs.
	st, r := w.say(t, "2", "200", `{"verb":"fs.readFile","arguments":{"path":"where.txt"},"workspace":"db1-logs"}`)
	if st != hub.StatusForbidden || !strings.Contains(r, `Workspace "db1-logs" (chosen for this call) is not open to your roles (dev)`) {
		t.Fatalf("dev into db1-logs: %s %q", st, r)
	}
	if len(fr.recorded()) != 0 {
		t.Fatal("a forbidden call reached the node")
	}
	fr.mu.Lock()
	fr.offline = true
	fr.mu.Unlock()
	if _, r := w.say(t, "1", "100", "/use db1-logs"); !strings.Contains(r, "node db-1 is offline: calls wait for it, then fail") {
		t.Fatalf("/use while offline: %q", r)
	}
	if _, r := w.say(t, "1", "100", "/where"); !strings.Contains(r, "Destination: remote (node db-1, logs); node db-1 is offline") {
		t.Fatalf("/where while offline: %q", r)
	}
	st, r = w.say(t, "1", "100", "/fs.readFile where.txt")
	if st != hub.StatusExecuted || !strings.Contains(r, "Node db-1 is offline; the call did not run (or may not have): no answer within 1m0s") {
		t.Fatalf("offline call: %s %q", st, r)
	}
	// The API answers the same way, and its mirror has no node.
	out, err := w.env.Runtime.Hub.Execute(context.Background(), hub.APIRequest{Identity: "web", Workspace: "db1-logs", Input: []byte(`{"verb":"fs.exists","arguments":{"path":"where.txt"}}`)})
	if err != nil || out.Succeeded() || out.Err.Code != executor.CodeTimeout || out.Verb != "fs.exists" {
		t.Fatalf("api while offline: %+v %v", out, err)
	}
}

func TestExecuteRemoteMirrorsTheNode(t *testing.T) {
	root := t.TempDir()
	w, _ := openRemote(t, root)
	out, err := w.env.Runtime.Hub.Execute(context.Background(), hub.APIRequest{Identity: "web", TurnID: "api.remote", Workspace: "db1-logs", Input: []byte(`{"verb":"fs.exists","arguments":{"path":"where.txt"}}`)})
	if err != nil || !out.Succeeded() || !strings.Contains(string(out.JSON()), `"exists":true`) {
		t.Fatalf("api: %s %v", out.JSON(), err)
	}
	w.env.Close()
	found := false
	err = store.ReadMirror(flowsRoot(t, filepath.Join(w.env.Config.StateDir, "flows")), store.MirrorFilter{}, func(rec store.MirrorRecord) error {
		if rec.Kind == "result" && rec.Meta["turn_id"] == "api.remote" && rec.Meta[hub.MetaNode] == "db-1" && rec.Meta[hub.MetaNodeVersion] == "v-test" {
			found = true
		}
		return nil
	})
	if err != nil || !found {
		t.Fatalf("no api result mirrored with its node (%v)", err)
	}
}

func TestNodesCommand(t *testing.T) {
	root := t.TempDir()
	w, _ := openRemote(t, root)
	_, r := w.say(t, "1", "100", "/nodes")
	if !strings.Contains(r, "Nodes (1):") || !strings.Contains(r, "db-1: online, version v-test, last seen ") || !strings.Contains(r, "workspaces logs, load 0.50 0.25 0.12") {
		t.Fatalf("/nodes as admin: %q", r)
	}
	if _, r := w.say(t, "2", "200", "/nodes"); r != "⚠ You may not run /nodes (forbidden): it needs a role with admin.read. Your roles: dev. To allow it, the operator adds this to the configuration (merged into its access section, if it has one) and runs hub reload:\n```yaml\naccess:\n  roles:\n    admin-read: {verbs: [\"admin.read\"]}\n  grants:\n    \"telegram:2\": [dev, admin-read]\n```" {
		t.Fatalf("/nodes as dev: %q", r)
	}
}
