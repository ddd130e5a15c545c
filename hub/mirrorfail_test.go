package hub_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/a6afc2ce/hermes-hub/chat"
	"github.com/a6afc2ce/hermes-hub/config"

	"github.com/a6afc2ce/hermes-hub/hub"
	"github.com/a6afc2ce/hermes-hub/hub/hubtest"
	"github.com/a6afc2ce/hermes-hub/store"
)

// flakyFile fails every write while full is set, like a full disk.
type flakyFile struct {
	f    *os.File
	full *atomic.Bool
}

func (f *flakyFile) Write(p []byte) (int, error) {
	if f.full.Load() {
		return 0, &os.PathError{Op: "write", Path: f.f.Name(), Err: syscall.ENOSPC}
	}
	return f.f.Write(p)
}
func (f *flakyFile) Sync() error  { return f.f.Sync() }
func (f *flakyFile) Close() error { return f.f.Close() }

// flakyHub is a hub over ws whose mirror files fail every write, like a
// full disk, while the returned flag is set. Its runtime is not started:
// replies stay in the outbox.
func flakyHub(t *testing.T, ws string) (*hub.Hub, *atomic.Bool) {
	t.Helper()
	full := new(atomic.Bool)
	he := hubtest.Open(t, testConfig(t, ws, filepath.Join(ws, ".hub")), hubtest.Options{Runtime: hub.RuntimeOptions{
		MirrorOpenFile: func(root *os.Root, name string, flag int, perm os.FileMode) (store.MirrorFile, error) {
			f, err := root.OpenFile(name, flag, perm)
			if err != nil {
				return nil, err
			}
			return &flakyFile{f: f, full: full}, nil
		},
	}})
	return he.Runtime.Hub, full
}

// TestUnmirroredTurnRunsOnRedelivery: when the inbound mirror cannot be
// written, the turn does not run and is not remembered, so the platform's
// redelivery runs it once the disk has room again.
func TestUnmirroredTurnRunsOnRedelivery(t *testing.T) {
	ws := t.TempDir()
	h, full := flakyHub(t, ws)
	os.WriteFile(filepath.Join(ws, "log.txt"), []byte("start\n"), 0o644)
	msg := tgMsg(1, 5, "/fs.writeRange log.txt 2\nran")
	full.Store(true)
	if _, err := h.Handle(context.Background(), msg); err == nil || !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("want the mirror's ENOSPC, got %v", err)
	}
	if b, _ := os.ReadFile(filepath.Join(ws, "log.txt")); string(b) != "start\n" {
		t.Fatalf("the verb ran without a mirror record: %q", b)
	}
	full.Store(false)
	res, err := h.Handle(context.Background(), msg) // the platform delivers it again
	if err != nil || res.Status != hub.StatusExecuted {
		t.Fatalf("redelivery: %+v %v", res, err)
	}
	if b, _ := os.ReadFile(filepath.Join(ws, "log.txt")); string(b) != "start\nran\n" {
		t.Fatalf("file %q", b)
	}
	if res, _ := h.Handle(context.Background(), msg); res.Status != hub.StatusDuplicate {
		t.Fatalf("third delivery: %+v", res)
	}
}

// TestUnmirroredAcceptedTurnRunsLater: an accepted turn (never delivered
// again by its platform) that cannot be mirrored goes back to received, so
// the next start runs it instead of losing it.
func TestUnmirroredAcceptedTurnRunsLater(t *testing.T) {
	ws := t.TempDir()
	h, full := flakyHub(t, ws)
	msg := tgMsg(1, 6, "/fs.writeFile out.txt hello")
	if err := h.Accept(context.Background(), msg); err != nil {
		t.Fatal(err)
	}
	full.Store(true)
	if _, err := h.Handle(context.Background(), msg); err == nil {
		t.Fatal("want the mirror's error")
	}
	full.Store(false)
	_, pending, err := h.Recover(context.Background())
	if err != nil || len(pending) != 1 || pending[0].TurnID != msg.TurnID || pending[0].Text != msg.Text {
		t.Fatalf("the accepted turn is not pending: %v %v", pending, err)
	}
	if res, err := h.Handle(context.Background(), pending[0]); err != nil || res.Status != hub.StatusExecuted {
		t.Fatalf("run later: %+v %v", res, err)
	}
	if b, _ := os.ReadFile(filepath.Join(ws, "out.txt")); string(b) != "hello" {
		t.Fatalf("out.txt %q", b)
	}
}

// TestUnmirroredAPICallRefused: an API call whose inbound record cannot be
// written is refused with ErrNotMirrored and its verb does not run; once
// the disk has room, the same call runs and both its records are written.
func TestUnmirroredAPICallRefused(t *testing.T) {
	ws := t.TempDir()
	h, full := flakyHub(t, ws)
	req := hub.APIRequest{Identity: "web", Input: []byte(`{"verb":"fs.writeFile","arguments":{"path":"api.txt","content":"ran"}}`)}
	full.Store(true)
	out, err := h.Execute(context.Background(), req)
	if !errors.Is(err, hub.ErrNotMirrored) || !errors.Is(err, syscall.ENOSPC) || out != nil {
		t.Fatalf("want ErrNotMirrored with the mirror's ENOSPC, got %v %v", out, err)
	}
	if _, err := os.Stat(filepath.Join(ws, "api.txt")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the verb ran without a mirror record: %v", err)
	}
	full.Store(false)
	out, err = h.Execute(context.Background(), req)
	if err != nil || !out.Succeeded() {
		t.Fatalf("with room again: %v %v", out, err)
	}
	if b, _ := os.ReadFile(filepath.Join(ws, "api.txt")); string(b) != "ran" {
		t.Fatalf("api.txt %q", b)
	}
	var kinds []string
	store.ReadMirror(flowsRoot(t, filepath.Join(ws, ".hub", "flows")), store.MirrorFilter{}, func(r store.MirrorRecord) error {
		if r.Platform == "api" {
			kinds = append(kinds, r.Direction+"/"+r.Kind)
		}
		return nil
	})
	if len(kinds) != 2 || !slices.Contains(kinds, "inbound/execute") || !slices.Contains(kinds, "outbound/result") {
		t.Fatalf("api records %v", kinds)
	}
}

// TestUnmirroredWebTurnRefused: the chat path (here the panel's) still
// refuses a turn it cannot mirror, and runs nothing.
func TestUnmirroredWebTurnRefused(t *testing.T) {
	ws := t.TempDir()
	h, full := flakyHub(t, ws)
	full.Store(true)
	in := &chat.Inbound{TurnID: "web.t1", Platform: chat.Web, ChatID: "web", ChatType: chat.ChatWeb, MessageID: "t1",
		UserID: "web", UserName: "web", Text: "/fs.writeFile web.txt ran", Time: time.Now()}
	if _, err := h.Handle(context.Background(), in); !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("want the mirror's ENOSPC, got %v", err)
	}
	if _, err := os.Stat(filepath.Join(ws, "web.txt")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the turn ran without a mirror record: %v", err)
	}
}

// TestLargeEnvelopeMirrorBounded: a 1 MiB envelope is mirrored with its
// size, preview and hash, and its text cut to mirror.max_text_bytes.
func TestLargeEnvelopeMirrorBounded(t *testing.T) {
	ws := t.TempDir()
	h, _ := flakyHub(t, ws)
	content := strings.Repeat("é", 512<<10) // 1 MiB of two-byte runes
	input := []byte(`{"verb":"fs.writeFile","arguments":{"path":"big.txt","content":"` + content + `"}}`)
	if _, err := h.Execute(context.Background(), hub.APIRequest{Identity: "web", Input: input}); err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(input)
	var got *store.MirrorRecord
	store.ReadMirror(flowsRoot(t, filepath.Join(ws, ".hub", "flows")), store.MirrorFilter{}, func(r store.MirrorRecord) error {
		if r.Platform == "api" && r.Kind == "execute" {
			got = &r
		}
		return nil
	})
	limit := int(config.Default().Mirror.MaxTextBytes)
	switch {
	case got == nil:
		t.Fatal("no inbound api record")
	case got.TextBytes != len(input):
		t.Errorf("text_bytes %d, want %d", got.TextBytes, len(input))
	case len(got.Text) > limit || len(got.Text) < limit-4 || !utf8.ValidString(got.Text) || !strings.HasPrefix(string(input), got.Text):
		t.Errorf("text of %d bytes, want a valid prefix of at most %d", len(got.Text), limit)
	case got.Meta[store.MetaTextTruncated] != "true" || got.Meta[store.MetaTextSHA256] != hex.EncodeToString(sum[:]):
		t.Errorf("meta %v", got.Meta)
	case !strings.HasPrefix(got.TextPreview, `{"verb":"fs.writeFile"`):
		t.Errorf("preview %q", got.TextPreview)
	}
}
