package store

import (
	"path/filepath"
	"testing"
	"time"
)

// TestLedgerPrune: finished turns and denial notices older than the cutoff
// are forgotten; unfinished turns stay whatever their age.
func TestLedgerPrune(t *testing.T) {
	st, err := Open(filepath.Join(t.TempDir(), ".hub"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	l, err := OpenLedger(st.DB())
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	day := 24 * time.Hour
	begin := func(id string) {
		t.Helper()
		if _, began, _, err := l.Begin(TurnRecord{TurnID: id, Started: t0}); err != nil || !began {
			t.Fatalf("begin %s: %v %v", id, began, err)
		}
	}
	begin("old-done")
	begin("old-interrupted")
	begin("new-done")
	begin("old-started") // never finished: the next start must notice it
	if _, err := l.Receive(TurnRecord{TurnID: "old-received", Started: t0}); err != nil {
		t.Fatal(err)
	}
	for id, f := range map[string]struct {
		state string
		at    time.Time
	}{
		"old-done":        {TurnDone, t0},
		"old-interrupted": {TurnInterrupted, t0.Add(day)},
		"new-done":        {TurnDone, t0.Add(9 * day)},
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
