package hub_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/a6afc2ce/hermes-hub/hub"
)

// TestAcceptedTurnRunsAfterRestart: a turn accepted (acknowledged to a
// platform that will not deliver it again) but not run before the hub
// stopped runs at the next start, once.
func TestAcceptedTurnRunsAfterRestart(t *testing.T) {
	ws := t.TempDir()
	state := filepath.Join(ws, ".hub")
	os.WriteFile(filepath.Join(ws, "log.txt"), []byte("start\n"), 0o644)
	e := openEnv(t, ws, state, nil)
	in := tgMsg(1, 77, "/fs.writeRange log.txt 2\naccepted")
	in2 := tgMsg(1, 78, "/fs.writeRange log.txt 2\nrun now")
	if err := e.rt.Hub.Accept(context.Background(), in); err != nil {
		t.Fatal(err)
	}
	// A second turn is accepted and handled normally: it runs once.
	if err := e.rt.Hub.Accept(context.Background(), in2); err != nil {
		t.Fatal(err)
	}
	if res, err := e.rt.Hub.Handle(context.Background(), in2); err != nil || res.Status != hub.StatusExecuted {
		t.Fatalf("accepted then handled: %+v %v", res, err)
	}
	if err := e.rt.Hub.Accept(context.Background(), in2); err != nil {
		t.Fatal(err)
	}
	if res, _ := e.rt.Hub.Handle(context.Background(), in2); res.Status != hub.StatusDuplicate {
		t.Fatalf("handled twice: %+v", res)
	}
	e.rec.Wait(t, "chat:telegram:100", 1)
	if err := e.he.Close(); err != nil {
		t.Fatal(err)
	}
	// The hub stopped before running the first one. The next start runs it.
	e2 := openEnv(t, ws, state, nil)
	got := e2.rec.Wait(t, "chat:telegram:100", 1)
	if got[0].TurnID != in.TurnID || !strings.Contains(got[0].Text, "Updated") || got[0].Meta["reply_to_message_id"] != "77" {
		t.Fatalf("after restart: %+v", got[0])
	}
	b, _ := os.ReadFile(filepath.Join(ws, "log.txt"))
	if string(b) != "start\naccepted\nrun now\n" {
		t.Fatalf("log %q", b)
	}
	// A redelivery is a duplicate; nothing runs twice.
	if res, _ := e2.rt.Hub.Handle(context.Background(), in); res.Status != hub.StatusDuplicate {
		t.Fatalf("redelivery: %+v", res)
	}
}
