package hub_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"sync/atomic"
	"syscall"
	"testing"

	"github.com/a6afc2ce/hermes-hub/hub"
	"github.com/a6afc2ce/hermes-hub/hub/hubtest"
	"github.com/a6afc2ce/hermes-hub/store"
)

// countingFile counts the fsyncs of a mirror file and fails its writes
// while full is set.
type countingFile struct {
	flakyFile
	syncs *atomic.Int64
}

func (f *countingFile) Sync() error { f.syncs.Add(1); return f.f.Sync() }

// TestExecuteMirrorDurability: Execute mirrors every call twice; it waits
// for the fsync of both records of a call that may change state and of a
// refused call, not for those of a read-only verb that runs. A record that
// cannot be written refuses the call, read-only or not.
func TestExecuteMirrorDurability(t *testing.T) {
	ws := t.TempDir()
	if err := os.WriteFile(filepath.Join(ws, "README.md"), []byte("# hello\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	full, syncs := new(atomic.Bool), new(atomic.Int64)
	he := hubtest.Open(t, testConfig(t, ws, filepath.Join(ws, ".hub")), hubtest.Options{Runtime: hub.RuntimeOptions{
		MirrorOpenFile: func(root *os.Root, name string, flag int, perm os.FileMode) (store.MirrorFile, error) {
			f, err := root.OpenFile(name, flag, perm)
			if err != nil {
				return nil, err
			}
			return &countingFile{flakyFile{f: f, full: full}, syncs}, nil
		},
	}})
	h := he.Runtime.Hub
	for _, tc := range []struct {
		name, identity, input string
		durable               bool
	}{
		{"read-only verb", "web", `{"verb":"fs.readFile","arguments":{"path":"README.md"}}`, false},
		{"read-only listing", "web", `{"verb":"fs.listDir","arguments":{"path":"."}}`, false},
		{"write", "web", `{"verb":"fs.writeFile","arguments":{"path":"w.txt","content":"x"}}`, true},
		{"forbidden read", "telegram:9", `{"verb":"fs.readFile","arguments":{"path":"README.md"}}`, true},
		{"unknown verb", "web", `{"verb":"fs.nope","arguments":{}}`, true},
		{"undecodable", "web", `{"verb":`, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := syncs.Load()
			if _, err := h.Execute(context.Background(), hub.APIRequest{Identity: tc.identity, Input: []byte(tc.input)}); err != nil {
				t.Fatal(err)
			}
			got := syncs.Load() - before
			if tc.durable && got < 2 {
				t.Errorf("%d fsyncs of the mirror, want one per record (2; shared only between concurrent calls)", got)
			}
			if !tc.durable && got != 0 {
				t.Errorf("%d fsyncs of the mirror for a read-only call, want 0", got)
			}
		})
	}
	var reads int
	store.ReadMirror(flowsRoot(t, filepath.Join(ws, ".hub", "flows")), store.MirrorFilter{}, func(r store.MirrorRecord) error {
		if r.Platform == "api" && r.Meta["verb"] == "fs.readFile" && r.Kind == "result" {
			reads++
		}
		return nil
	})
	if reads != 2 {
		t.Errorf("%d outcome records of fs.readFile in the mirror, want 2 (the read and the forbidden one)", reads)
	}
	t.Run("read refused when its record cannot be written", func(t *testing.T) {
		full.Store(true)
		defer full.Store(false)
		out, err := h.Execute(context.Background(), hub.APIRequest{Identity: "web", Input: []byte(`{"verb":"fs.readFile","arguments":{"path":"README.md"}}`)})
		if !errors.Is(err, hub.ErrNotMirrored) || !errors.Is(err, syscall.ENOSPC) || out != nil {
			t.Fatalf("want ErrNotMirrored with the mirror's ENOSPC, got %v %v", out, err)
		}
	})
}
