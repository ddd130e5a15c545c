package hub_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"sync/atomic"
	"syscall"
	"testing"

	"github.com/a6afc2ce/hermes-hub/hub"
	"github.com/a6afc2ce/hermes-hub/outbox"
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

// TestUnmirroredTurnRunsOnRedelivery: when the inbound mirror cannot be
// written, the turn does not run and is not remembered, so the platform's
// redelivery runs it once the disk has room again.
func TestUnmirroredTurnRunsOnRedelivery(t *testing.T) {
	ws := t.TempDir()
	cfg := testConfig(t, ws, filepath.Join(ws, ".hub"))
	st, err := store.Open(cfg.StateDir, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	var full atomic.Bool
	mirror, err := store.OpenMirror(st.Path(store.FlowsDir), store.NewRunID(nowUTC()), store.MirrorOptions{
		OpenFile: func(name string, flag int, perm os.FileMode) (store.MirrorFile, error) {
			f, err := os.OpenFile(name, flag, perm)
			if err != nil {
				return nil, err
			}
			return &flakyFile{f: f, full: &full}, nil
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer mirror.Close()
	ledger, err := store.OpenLedger(st.DB())
	if err != nil {
		t.Fatal(err)
	}
	bs, err := outbox.NewBoltStore(st.DB())
	if err != nil {
		t.Fatal(err)
	}
	x := buildExecutor(t, cfg)
	h, err := hub.New(hub.Options{Executor: x, Access: hub.NewAccess(cfg.Access, x.Registry()), Ledger: ledger,
		Outbox: outbox.New(bs, outbox.NewMux(), outbox.Options{}), Mirror: mirror, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
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
	cfg := testConfig(t, ws, filepath.Join(ws, ".hub"))
	st, err := store.Open(cfg.StateDir, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	var full atomic.Bool
	mirror, err := store.OpenMirror(st.Path(store.FlowsDir), store.NewRunID(nowUTC()), store.MirrorOptions{
		OpenFile: func(name string, flag int, perm os.FileMode) (store.MirrorFile, error) {
			f, err := os.OpenFile(name, flag, perm)
			if err != nil {
				return nil, err
			}
			return &flakyFile{f: f, full: &full}, nil
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer mirror.Close()
	ledger, _ := store.OpenLedger(st.DB())
	bs, _ := outbox.NewBoltStore(st.DB())
	x := buildExecutor(t, cfg)
	h, err := hub.New(hub.Options{Executor: x, Access: hub.NewAccess(cfg.Access, x.Registry()), Ledger: ledger,
		Outbox: outbox.New(bs, outbox.NewMux(), outbox.Options{}), Mirror: mirror, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
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
