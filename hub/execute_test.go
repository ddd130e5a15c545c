package hub_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/a6afc2ce/hermes-hub/executor"
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

// TestDecodedCallIsItsEnvelope: a call its surface decoded (Verb and
// Arguments, as the MCP surface sends it) is decided, answered and mirrored
// exactly as the envelope {"verb","arguments"} sent as Input, whatever the
// arguments hold and whoever asks: the same outcome and the same two
// records, the envelope JSON as the text, but for the turn id.
func TestDecodedCallIsItsEnvelope(t *testing.T) {
	ws := t.TempDir()
	if err := os.WriteFile(filepath.Join(ws, "README.md"), []byte("# hello\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	h := hubtest.Open(t, testConfig(t, ws, filepath.Join(ws, ".hub")), hubtest.Options{}).Runtime.Hub
	info, ok := h.Registry().Lookup("fs.readFile")
	if !ok {
		t.Fatal("no fs.readFile")
	}
	for i, tc := range []struct{ identity, args string }{
		{"web", `{"path":"README.md"}`},
		{"web", " { \"path\" : \"<READ & ME>\u2028.md\" } "},
		{"telegram:2", `{"path":"README.md"}`}, // the built-in reader role
		{"telegram:9", `{"path":"README.md"}`}, // no role: forbidden
		{"web", `{"path":"README.md","nope":1}`},
		{"web", `null`},
		{"web", `{"path":` + strings.Repeat("[", 40) + strings.Repeat("]", 40) + `}`},
		{"web", `{"path":"a","path":"b"}`},
		{"web", `{"path":"` + strings.Repeat("x", 1<<20) + `"}`},
		{"web", "{\"path\":\"\xff\"}"},
	} {
		input, err := json.Marshal(executor.Envelope{Verb: info.Name, Arguments: json.RawMessage(tc.args)})
		if err != nil {
			t.Fatal(err)
		}
		sent, err := h.Execute(context.Background(), hub.APIRequest{Identity: tc.identity, TurnID: fmt.Sprintf("api.sent%d", i), Input: input})
		if err != nil {
			t.Fatal(err)
		}
		decoded, err := h.Execute(context.Background(), hub.APIRequest{Identity: tc.identity, TurnID: fmt.Sprintf("api.decoded%d", i), Verb: info, Arguments: json.RawMessage(tc.args)})
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(sent.JSON(), decoded.JSON()) || sent.Verb != decoded.Verb {
			t.Errorf("%.60s by %s: outcome %s %.200s, the envelope's %s %.200s", tc.args, tc.identity, decoded.Verb, decoded.JSON(), sent.Verb, sent.JSON())
		}
	}
	recs := map[string]store.MirrorRecord{}
	store.ReadMirror(flowsRoot(t, filepath.Join(ws, ".hub", "flows")), store.MirrorFilter{}, func(r store.MirrorRecord) error {
		id := r.Meta["turn_id"]
		delete(r.Meta, "turn_id")
		r.TS = time.Time{}
		recs[r.Direction+" "+id] = r
		return nil
	})
	for i := range 10 {
		for _, dir := range []string{store.DirectionInbound, store.DirectionOutbound} {
			sent, decoded := recs[fmt.Sprintf("%s api.sent%d", dir, i)], recs[fmt.Sprintf("%s api.decoded%d", dir, i)]
			if sent.Kind == "" || !reflect.DeepEqual(sent, decoded) {
				t.Errorf("case %d, %s record of the decoded call:\n%.300v\nthe envelope's:\n%.300v", i, dir, decoded, sent)
			}
		}
	}
	if _, err := h.Execute(context.Background(), hub.APIRequest{Identity: "web", Input: []byte(`{"verb":"fs.exists"}`), Verb: info}); err == nil {
		t.Error("a request with an envelope and a decoded call was accepted")
	}
}
