package store

import (
	"path/filepath"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"
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

// TestLedgerFinishLaterFoldsIntoNextCommit: a finish held by FinishLater
// makes no commit of its own; it is written by the next one (a Begin's),
// or by Flush, and kept when that commit fails.
func TestLedgerFinishLaterFoldsIntoNextCommit(t *testing.T) {
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
	state := func(id string) string {
		t.Helper()
		r, err := l.Get(id)
		if err != nil || r == nil {
			t.Fatalf("get %s: %v %v", id, r, err)
		}
		return r.State
	}
	commits := func() int64 { c, _ := l.Commits(); return c }
	if _, began, _, err := l.Begin(TurnRecord{TurnID: "a", Started: t0}); err != nil || !began {
		t.Fatal(began, err)
	}
	before := commits()
	l.FinishLater("a", TurnDone, "", t0.Add(time.Second))
	if commits() != before || state("a") != TurnStarted {
		t.Fatalf("FinishLater committed: %d commits (was %d), state %s", commits(), before, state("a"))
	}
	if _, began, _, err := l.Begin(TurnRecord{TurnID: "b", Started: t0}); err != nil || !began {
		t.Fatal(began, err)
	}
	if got := commits(); got != before+1 || state("a") != TurnDone || state("b") != TurnStarted {
		t.Fatalf("after the next Begin: %d commits (want %d), a %s, b %s", got, before+1, state("a"), state("b"))
	}
	if r, _ := l.Get("a"); !r.Finished.Equal(t0.Add(time.Second)) {
		t.Fatalf("a finished at %v", r.Finished)
	}

	// A commit that fails keeps the finishes it carried for the next one.
	l.FinishLater("b", TurnDone, "io", t0)
	if err := st.DB().Update(func(tx *bolt.Tx) error { return tx.Bucket([]byte(ledgerBucket)).Put([]byte("bad"), []byte("{")) }); err != nil {
		t.Fatal(err)
	}
	if _, _, _, err := l.Begin(TurnRecord{TurnID: "bad"}); err == nil {
		t.Fatal("Begin over a corrupt record succeeded")
	}
	if state("b") != TurnStarted {
		t.Fatal("the failed commit wrote b's finish")
	}
	if err := l.Flush(); err != nil {
		t.Fatal(err)
	}
	if r, _ := l.Get("b"); r.State != TurnDone || r.Code != "io" {
		t.Fatalf("after Flush: %+v", r)
	}
	c := commits()
	if err := l.Flush(); err != nil || commits() != c {
		t.Fatalf("Flush with nothing held: %v, %d commits (was %d)", err, commits(), c)
	}
}
