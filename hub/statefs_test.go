package hub_test

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/a6afc2ce/hermes-hub/chat"
	"github.com/a6afc2ce/hermes-hub/hub/hubtest"
	"github.com/a6afc2ce/hermes-hub/internal/testkit"
	"github.com/a6afc2ce/hermes-hub/outbox"
)

// TestStateWritesNeverLeaveTheStateDirectory: a program that can write in
// the state directory plants symbolic links there while the hub runs, each
// leading to a directory outside: proc/<turn> for a turn whose id it can
// guess, pma/, the mirror run's chat/ and chat/. The hub then writes the
// turn's proc.run output, the delivery targets, the mirror (whose files
// rotate) and, when it closes, the channel directory. Nothing outside is
// created or changed: every one of those writes stays inside the state
// directory, or is refused.
func TestStateWritesNeverLeaveTheStateDirectory(t *testing.T) {
	ws := t.TempDir()
	state := filepath.Join(ws, ".hub")
	cfg := testConfig(t, ws, state)
	cfg.Mirror.RotateBytes = 4096
	he, err := hubtest.New(cfg, hubtest.Options{}) // closed below: its refused writes fail the close
	if err != nil {
		t.Fatal(err)
	}
	defer he.Close()
	rt := he.Runtime
	hubtest.NewRecorder().HandleAll(t, rt)
	he.Start(t)
	h, ctx := rt.Hub, context.Background()

	outside := t.TempDir()
	// What a mirror rotation through a link would rename and recreate.
	bait := filepath.Join(outside, "inbound.jsonl")
	if err := os.WriteFile(bait, []byte("planted\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	link := func(name string) {
		t.Helper()
		p := filepath.Join(state, name)
		if err := os.Rename(p, p+".moved"); err != nil && !os.IsNotExist(err) {
			t.Fatal(err)
		}
		if err := os.Symlink(outside, p); err != nil {
			t.Fatal(err)
		}
	}

	link(filepath.Join("proc", "telegram.100.1"))
	h.Handle(ctx, tgMsg(1, 1, "/proc.run /bin/echo hi"))

	link("pma")
	rt.Targets.Add(chat.WebKey)

	link(filepath.Join("flows", rt.RunID, "chat"))
	for i := range 30 {
		h.Handle(ctx, tgMsg(1, 100+i, "/fs.exists "+strings.Repeat("x", 300)))
	}

	link("chat")
	in := tgMsg(1, 200, "/fs.exists README.md")
	in.ChatID, in.TurnID, in.ChatTitle = "-100200", "telegram.-100200.200", "A new group"
	h.Handle(ctx, in)
	if err := he.Close(); err != nil {
		t.Log(err)
	}

	ents, err := os.ReadDir(outside)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	if !slices.Equal(names, []string{"inbound.jsonl"}) {
		t.Errorf("the hub created %v outside the state directory, through the links planted in it", names)
	}
	if b, err := os.ReadFile(bait); err != nil || string(b) != "planted\n" {
		t.Errorf("the hub changed a file outside the state directory (%d bytes now): %v", len(b), err)
	}
}

// TestDeliverLocalToHubFilesDeadLetters: a local target naming one of the
// hub's own files in the state directory (put in delivery_targets.json by
// hand, past the checks of hub targets add) is never written: its chunk
// becomes a dead letter saying why, and the file (here the hub's NATS key,
// which one such append once corrupted) is left as it was.
func TestDeliverLocalToHubFilesDeadLetters(t *testing.T) {
	e := newEnv(t, nil)
	owned := map[string]chat.Key{
		filepath.Join(e.state, "nats", "hub.nk"):            chat.LocalKey("nats/hub.nk"),
		filepath.Join(e.state, "proc", "t.1", "stdout.txt"): chat.LocalKey(filepath.Join(e.state, "proc", "t.1", "stdout.txt")),
	}
	for p, k := range owned {
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte("the hub's own\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		if _, err := e.rt.Targets.Add(k); err != nil {
			t.Fatal(err)
		}
	}
	ids, err := e.rt.Hub.Deliver(context.Background(), "send.own", "an append")
	if err != nil || len(ids) != len(owned) {
		t.Fatalf("deliver: %v %v", ids, err)
	}
	for _, id := range ids {
		var last string
		testkit.WaitFor(t, id+" to become a dead letter", func() bool {
			got, err := e.rt.Outbox.Store().Get(context.Background(), id)
			last = got.LastError
			return err == nil && got.State == outbox.StateDead
		})
		if !strings.Contains(last, "keeps for itself") || !strings.Contains(last, "pma/") {
			t.Errorf("dead letter %s: %q, want the reason (the hub's own file; use pma/)", id, last)
		}
	}
	for p := range owned {
		if b, err := os.ReadFile(p); err != nil || string(b) != "the hub's own\n" {
			t.Errorf("%s was changed: %q %v", p, b, err)
		}
	}
}
