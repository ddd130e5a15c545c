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
		MirrorOpenFile: func(name string, flag int, perm os.FileMode) (store.MirrorFile, error) {
			f, err := os.OpenFile(name, flag, perm)
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
