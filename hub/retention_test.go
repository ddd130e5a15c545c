package hub_test

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/a6afc2ce/hermes-hub/config"
	"github.com/a6afc2ce/hermes-hub/store"
)

// TestRetentionReloads: the runtime prunes by mirror.retention when it
// opens, its own run open and kept; a reload applies new retention to the
// next prune.
func TestRetentionReloads(t *testing.T) {
	ws := t.TempDir()
	state := filepath.Join(ws, ".hub")
	flows := filepath.Join(state, store.FlowsDir)
	file := filepath.Join(ws, "hub.yml")
	write := func(cliRuns int) {
		t.Helper()
		yml := fmt.Sprintf("mirror:\n  retention:\n    cli: {keep_runs: %d}\n", cliRuns)
		if err := os.WriteFile(file, []byte(yml), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.MkdirAll(flows, 0o700); err != nil {
		t.Fatal(err)
	}
	root, err := os.OpenRoot(flows)
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	var cli []string
	for i := range 3 {
		id := time.Now().Add(time.Duration(i-10)*time.Minute).UTC().Format("20060102T150405Z") + fmt.Sprintf("-000%d", i+1)
		m, err := store.OpenMirror(root, id, store.MirrorOptions{Kind: store.RunCLI})
		if err != nil {
			t.Fatal(err)
		}
		m.Close()
		cli = append(cli, id)
	}
	write(2)
	load := func() (*config.Config, error) {
		cfg, err := config.Load(file)
		if err != nil {
			return nil, err
		}
		cfg.Workspace, cfg.StateDir = ws, state
		return cfg, nil
	}
	cfg, err := load()
	if err != nil {
		t.Fatal(err)
	}
	e := openEnvConfig(t, cfg, nil)
	if got := store.ListRuns(e.rt.State.Flows()); !slices.Equal(got, append(slices.Clone(cli[1:]), e.rt.RunID)) {
		t.Fatalf("after the start's prune: %v", got)
	}
	e.rt.EnableReload(load)
	write(1)
	rep, err := e.rt.Reload()
	if err != nil || !slices.Contains(rep.Applied, "mirror retention") || !slices.Equal(rep.Changed, []string{"mirror.retention.cli.keep_runs"}) {
		t.Fatalf("reload %+v %v", rep, err)
	}
	plan, err := e.rt.PruneMirrors(true)
	if err != nil {
		t.Fatal(err)
	}
	if len(plan.Remove) != 1 || plan.Remove[0].ID != cli[1] || plan.Remove[0].Reason != store.PruneCount {
		t.Fatalf("plan after the reload: %+v", plan.Remove)
	}
	for _, ri := range plan.Runs {
		if ri.ID == e.rt.RunID && (!ri.Live || ri.Kind != store.RunServe) {
			t.Fatalf("the runtime's own run: %+v", ri)
		}
	}
}
