package main

import (
	"context"
	"io"
	"path/filepath"
	"testing"

	"github.com/a6afc2ce/hermes-hub/config"
	"github.com/a6afc2ce/hermes-hub/executor"
	"github.com/a6afc2ce/hermes-hub/internal/testkit"
)

// BenchmarkStdioLine measures what `hub exec --stdio` does for one line
// between reading it and writing its answer, in-process: "execute" is the
// executor's own path (DispatchExists's), "cli" the path of every CLI call
// (turn id, call context, mirror decision, id echoed).
func BenchmarkStdioLine(b *testing.B) {
	ws := workspace(b)
	cfg := config.Default()
	cfg.Workspace, cfg.StateDir = ws, filepath.Join(b.TempDir(), "state")
	tc, err := buildExecutor(cfg, testkit.Discard())
	if err != nil {
		b.Fatal(err)
	}
	defer tc.Close()
	mir := newCLIMirror(cfg)
	defer mir.Close()
	line := []byte(`{"id":7,"verb":"fs.exists","arguments":{"path":"README.md"}}`)
	ctx := context.Background()
	b.Run("execute", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if out := tc.exec.Execute(ctx, line); len(out) < 20 {
				b.Fatal(string(out))
			}
		}
	})
	b.Run("cli", func(b *testing.B) {
		ids := newTurnIDs("cli")
		run := func(ctx context.Context, input []byte) *executor.Outcome {
			return runCLI(ctx, tc.exec, mir, ids, input, "", io.Discard)
		}
		var out []byte
		b.ReportAllocs()
		for b.Loop() {
			out = out[:0]
			serveLine(ctx, run, stdioLine{line: line}, executor.DefaultLimits.MaxInputBytes, &out)
		}
	})
}
