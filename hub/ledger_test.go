package hub_test

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/a6afc2ce/hermes-hub/clock"
	"github.com/a6afc2ce/hermes-hub/hub"
	"github.com/a6afc2ce/hermes-hub/store"
)

// TestLedgerPrune: finished turns and denial notices older than the cutoff
// are forgotten; unfinished turns stay whatever their age.
func TestLedgerPrune(t *testing.T) {
	st, err := store.Open(filepath.Join(t.TempDir(), ".hub"), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	l, err := hub.OpenLedger(st.DB())
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	day := 24 * time.Hour
	begin := func(id string) {
		t.Helper()
		if _, began, _, err := l.Begin(hub.TurnRecord{TurnID: id, Started: t0}); err != nil || !began {
			t.Fatalf("begin %s: %v %v", id, began, err)
		}
	}
	begin("old-done")
	begin("old-interrupted")
	begin("new-done")
	begin("old-started") // never finished: the next start must notice it
	if _, err := l.Receive(hub.TurnRecord{TurnID: "old-received", Started: t0}); err != nil {
		t.Fatal(err)
	}
	for id, f := range map[string]struct {
		state string
		at    time.Time
	}{
		"old-done":        {hub.TurnDone, t0},
		"old-interrupted": {hub.TurnInterrupted, t0.Add(day)},
		"new-done":        {hub.TurnDone, t0.Add(9 * day)},
	} {
		if err := l.Finish(id, f.state, "", nil, f.at); err != nil {
			t.Fatal(err)
		}
	}
	for who, at := range map[string]time.Time{"telegram:1": t0, "telegram:2": t0.Add(9 * day)} {
		if ok, err := l.ShouldNotifyDenial(who, at, time.Hour); err != nil || !ok {
			t.Fatalf("denial %s: %v %v", who, ok, err)
		}
	}

	turns, denials, err := l.Prune(t0.Add(8 * day))
	if err != nil || turns != 2 || denials != 1 {
		t.Fatalf("prune: %d turns, %d denials, %v; want 2, 1", turns, denials, err)
	}
	for id, kept := range map[string]bool{"old-done": false, "old-interrupted": false, "new-done": true, "old-started": true, "old-received": true} {
		r, err := l.Get(id)
		if err != nil {
			t.Fatal(err)
		}
		if (r != nil) != kept {
			t.Errorf("%s: kept=%v, want %v", id, r != nil, kept)
		}
	}
	// The forgotten denial may be sent again; the recent one may not.
	if ok, _ := l.ShouldNotifyDenial("telegram:1", t0.Add(9*day), time.Hour); !ok {
		t.Error("a pruned denial still blocks the notice")
	}
	if ok, _ := l.ShouldNotifyDenial("telegram:2", t0.Add(9*day+time.Minute), time.Hour); ok {
		t.Error("a recent denial was forgotten")
	}
	if turns, denials, err := l.Prune(t0.Add(8 * day)); err != nil || turns+denials != 0 {
		t.Errorf("second prune: %d %d %v, want nothing", turns, denials, err)
	}
}

// TestRuntimePrunesTheLedger: a running hub forgets a finished turn once it
// is older than the outbox retention, on its hourly prune.
func TestRuntimePrunesTheLedger(t *testing.T) {
	clk := clock.NewFake(time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC))
	e := newEnv(t, clk)
	msg := tgMsg(1, 41, "/fs.exists README.md")
	if _, err := e.rt.Hub.Handle(context.Background(), msg); err != nil {
		t.Fatal(err)
	}
	if r, _ := e.rt.Ledger.Get(msg.TurnID); r == nil || r.State != hub.TurnDone {
		t.Fatalf("turn not recorded as done: %+v", r)
	}
	retention := e.rt.Config.Outbox.Retention.D()
	clk.Advance(retention - time.Hour)
	if r, _ := e.rt.Ledger.Get(msg.TurnID); r == nil {
		t.Fatal("forgotten before the retention")
	}
	clk.Advance(2 * time.Hour)
	if r, _ := e.rt.Ledger.Get(msg.TurnID); r != nil {
		t.Fatalf("still in the ledger %v after it finished: %+v", retention+time.Hour, r)
	}
}
