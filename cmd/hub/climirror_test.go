package main

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/a6afc2ce/hermes-hub/config"
	"github.com/a6afc2ce/hermes-hub/internal/testkit"
	"github.com/a6afc2ce/hermes-hub/store"
)

// syncCounter counts the lines written to the mirror files and the fsyncs
// that made them durable.
type syncCounter struct {
	mu                  sync.Mutex
	lines, durableLines map[string]int // per file base name
}

type countedFile struct {
	*os.File
	c       *syncCounter
	name    string
	pending int // lines written since the last sync
}

func (f *countedFile) Write(p []byte) (int, error) {
	f.c.mu.Lock()
	f.c.lines[f.name] += strings.Count(string(p), "\n")
	f.pending += strings.Count(string(p), "\n")
	f.c.mu.Unlock()
	return f.File.Write(p)
}

func (f *countedFile) Sync() error {
	f.c.mu.Lock()
	f.c.durableLines[f.name] += f.pending
	f.pending = 0
	f.c.mu.Unlock()
	return f.File.Sync()
}

// TestCLIMirrorDurability: every mirrored CLI call leaves its inbound and
// outbound records; those of a call that may change something, or of an
// unknown verb, are fsynced before runCLI returns, those of a read-only verb
// (mirror.cli: all) are written and not waited for. Read-only calls are not
// mirrored at all by default.
func TestCLIMirrorDurability(t *testing.T) {
	for _, tc := range []struct {
		name         string
		mode         string
		envelope     string
		lines        int // per direction
		durableLines int // per direction, before the mirror closes
	}{
		{"read-only, all", config.MirrorCLIAll, `{"verb":"fs.exists","arguments":{"path":"README.md"}}`, 1, 0},
		{"read-only, changes", config.MirrorCLIChanges, `{"verb":"fs.readFile","arguments":{"path":"README.md"}}`, 0, 0},
		{"write, all", config.MirrorCLIAll, `{"verb":"fs.writeFile","arguments":{"path":"n.txt","content":"x"}}`, 1, 1},
		{"write, changes", config.MirrorCLIChanges, `{"verb":"fs.writeFile","arguments":{"path":"n.txt","content":"x"}}`, 1, 1},
		{"unknown verb, all", config.MirrorCLIAll, `{"verb":"fs.nope","arguments":{}}`, 1, 1},
		{"unknown verb, changes", config.MirrorCLIChanges, `{"verb":"fs.nope","arguments":{}}`, 0, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := config.Default()
			cfg.Workspace, cfg.StateDir = workspace(t), filepath.Join(t.TempDir(), "state")
			cfg.Mirror.CLI = tc.mode
			tc2, err := buildExecutor(cfg, testkit.Discard())
			if err != nil {
				t.Fatal(err)
			}
			defer tc2.Close()
			counts := &syncCounter{lines: map[string]int{}, durableLines: map[string]int{}}
			mir := newCLIMirror(cfg)
			mir.opts.OpenFile = func(root *os.Root, name string, flag int, perm os.FileMode) (store.MirrorFile, error) {
				f, err := root.OpenFile(name, flag, perm)
				if err != nil {
					return nil, err
				}
				return &countedFile{File: f, c: counts, name: filepath.Base(name)}, nil
			}
			o := runCLI(context.Background(), tc2.exec, mir, newTurnIDs("cli"), []byte(tc.envelope), "", io.Discard)
			counts.mu.Lock()
			for _, file := range []string{"inbound.jsonl", "outbound.jsonl"} {
				if got := counts.lines[file]; got != tc.lines {
					t.Errorf("%s: %d lines, want %d (outcome %s)", file, got, tc.lines, o.JSON())
				}
				if got := counts.durableLines[file]; got != tc.durableLines {
					t.Errorf("%s: %d lines fsynced before the call returned, want %d", file, got, tc.durableLines)
				}
			}
			counts.mu.Unlock()
			if err := mir.Close(); err != nil {
				t.Fatal(err)
			}
			for _, file := range []string{"inbound.jsonl", "outbound.jsonl"} {
				if got := counts.durableLines[file]; got != tc.lines {
					t.Errorf("%s: %d lines fsynced once the mirror closed, want %d", file, got, tc.lines)
				}
			}
		})
	}
}
