package workspaces

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/a6afc2ce/hermes-hub/config"
	"github.com/a6afc2ce/hermes-hub/executor"
	"github.com/a6afc2ce/hermes-hub/verbs"
)

// A remote workspace opens nothing on this machine, and a call that names
// it here (hub exec) is refused with where it runs.
func TestRemoteWorkspaceIsNotRunHere(t *testing.T) {
	cfg := config.Default()
	root := t.TempDir()
	cfg.Workspace, cfg.StateDir = root, filepath.Join(root, ".hub")
	if err := os.MkdirAll(cfg.StateDir, 0o700); err != nil {
		t.Fatal(err)
	}
	cfg.Workspaces.Named = map[string]config.WorkspaceConfig{"db1-logs": {Destination: config.Destination{Kind: config.DestinationRemote, Node: "db-1", Workspace: "logs"}}}
	set, err := Open(cfg, Options{StateDir: cfg.StateDir, Meta: verbs.NewMemoryMeta()})
	if err != nil {
		t.Fatal(err)
	}
	defer set.Close()
	reg := executor.NewRegistry()
	if _, err := set.Register(reg, verbs.DefaultOptions(cfg.StateDir)); err != nil {
		t.Fatal(err)
	}
	x := executor.New(reg, executor.Options{})
	ctx := executor.WithCall(context.Background(), executor.Call{TurnID: "t1", Workspace: "db1-logs"})
	out := x.Run(ctx, executor.Envelope{Verb: "fs.exists", Arguments: []byte(`{"path":"."}`)})
	if out.Succeeded() || out.Err.Code != executor.CodeForbidden || !strings.Contains(out.Err.Message, "Workspace db1-logs runs on node db-1: only the hub (hub serve) sends calls there") {
		t.Fatalf("outcome %+v", out.Err)
	}
	if _, ok := set.Host("db1-logs"); ok {
		t.Fatal("a remote workspace has a host workspace")
	}
	if err := set.Check(context.Background(), "db1-logs"); err != nil {
		t.Fatal(err)
	}
	if err := set.Reset(context.Background(), "db1-logs", ""); err == nil || !strings.Contains(err.Error(), "runs on node db-1") {
		t.Fatalf("reset: %v", err)
	}
	if d := set.Describe("db1-logs"); d != "remote (node db-1, logs)" {
		t.Fatalf("describe %q", d)
	}
}
