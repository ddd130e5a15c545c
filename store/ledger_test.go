package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"
)

// openLedger opens a state directory of its own and its ledger, closed
// when the test ends.
func openLedger(tb testing.TB) (*State, *Ledger) {
	tb.Helper()
	st, err := Open(filepath.Join(tb.TempDir(), ".hub"), Options{})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { st.Close() })
	l, err := OpenLedger(st.DB())
	if err != nil {
		tb.Fatal(err)
	}
	return st, l
}

// TestLedgerPrune: finished turns and denial notices older than the cutoff
// are forgotten; unfinished turns stay whatever their age.
func TestLedgerPrune(t *testing.T) {
	_, l := openLedger(t)
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

	turns, denials, err := l.Prune(t.Context(), t0.Add(8*day))
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
	if turns, denials, err := l.Prune(t.Context(), t0.Add(8*day)); err != nil || turns+denials != 0 {
		t.Errorf("second prune: %d %d %v, want nothing", turns, denials, err)
	}
}

// TestLedgerPruneInBatches: a ledger with more old records than one
// commit deletes is forgotten in commits of at most pruneBatch, each
// record checked again in its commit; the young and the unfinished stay,
// interleaved with the old in key order.
func TestLedgerPruneInBatches(t *testing.T) {
	st, l := openLedger(t)
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	const old = 2*pruneBatch + 17
	// Written in one transaction (the test's set-up, not the ledger's
	// way): every fourth key young, every fourth unfinished.
	err := st.DB().Update(func(tx *bolt.Tx) error {
		b := tx.Bucket([]byte(ledgerBucket))
		put := func(id string, r TurnRecord) error {
			r.TurnID = id
			v, _ := json.Marshal(r)
			return b.Put([]byte(id), v)
		}
		for i := range old {
			if err := put(fmt.Sprintf("c%06d-a-old", i), TurnRecord{State: TurnDone, Started: t0, Finished: t0}); err != nil {
				return err
			}
			if i%4 == 0 {
				if err := put(fmt.Sprintf("c%06d-b-young", i), TurnRecord{State: TurnDone, Started: t0, Finished: t0.Add(10 * 24 * time.Hour)}); err != nil {
					return err
				}
				if err := put(fmt.Sprintf("c%06d-c-started", i), TurnRecord{State: TurnStarted, Started: t0}); err != nil {
					return err
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	before, _ := l.Commits()
	turns, denials, err := l.Prune(t.Context(), t0.Add(7*24*time.Hour))
	if err != nil || turns != old || denials != 0 {
		t.Fatalf("prune: %d turns, %d denials, %v; want %d, 0", turns, denials, err, old)
	}
	if c, _ := l.Commits(); c-before != 3 {
		t.Errorf("%d old records forgotten in %d commits, want 3 (at most %d each)", old, c-before, pruneBatch)
	}
	var kept, young, started int
	err = st.DB().View(func(tx *bolt.Tx) error {
		return tx.Bucket([]byte(ledgerBucket)).ForEach(func(k, _ []byte) error {
			kept++
			switch {
			case strings.HasSuffix(string(k), "-b-young"):
				young++
			case strings.HasSuffix(string(k), "-c-started"):
				started++
			}
			return nil
		})
	})
	if err != nil {
		t.Fatal(err)
	}
	if want := (old + 3) / 4; kept != 2*want || young != want || started != want {
		t.Errorf("kept %d records (%d young, %d started), want %d young and %d started only", kept, young, started, want, want)
	}
}

// TestLedgerPruneChecksAgainInItsCommit: a record found old by the scan
// but changed before its commit (here, found by a scan that believes
// every record old) is deleted only if the commit finds it old too.
func TestLedgerPruneChecksAgainInItsCommit(t *testing.T) {
	_, l := openLedger(t)
	for _, id := range []string{"a", "b", "c"} {
		if _, _, _, err := l.Begin(TurnRecord{TurnID: id}); err != nil {
			t.Fatal(err)
		}
	}
	scans := 0
	n, err := l.pruneBucket(t.Context(), ledgerBucket, func(v []byte) bool {
		scans++
		// The scan sees three records; in the commit only b is old.
		return scans <= 3 || strings.Contains(string(v), `"turn_id":"b"`)
	})
	if err != nil || n != 1 {
		t.Fatalf("pruned %d, %v; want 1", n, err)
	}
	for id, want := range map[string]bool{"a": true, "b": false, "c": true} {
		if r, err := l.Get(id); err != nil || (r != nil) != want {
			t.Errorf("%s kept=%v (%v), want %v", id, r != nil, err, want)
		}
	}
}

// TestLedgerPruneFailsClearly: a prune that cannot read its database says
// which prune failed and why.
func TestLedgerPruneFailsClearly(t *testing.T) {
	st, l := openLedger(t)
	st.Close()
	turns, denials, err := l.Prune(t.Context(), time.Now())
	if err == nil || !strings.Contains(err.Error(), "prune the turn ledger: ") || !strings.Contains(err.Error(), "database not open") || turns+denials != 0 {
		t.Fatalf("prune of a closed database: %d %d %v", turns, denials, err)
	}
}

// TestLedgerPruneStops: a prune whose context ends stops before its next
// commit, and in the middle of a scan; what it forgot stays forgotten, the
// rest waits for the next prune.
func TestLedgerPruneStops(t *testing.T) {
	st, l := openLedger(t)
	const records = 3 * pruneCheck
	err := st.DB().Update(func(tx *bolt.Tx) error {
		b := tx.Bucket([]byte(ledgerBucket))
		for i := range records {
			if err := b.Put(fmt.Appendf(nil, "c%06d", i), []byte(`{}`)); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	left := func() int {
		n := 0
		_ = st.DB().View(func(tx *bolt.Tx) error {
			n = tx.Bucket([]byte(ledgerBucket)).Stats().KeyN
			return nil
		})
		return n
	}

	// Stopped while the first commit's records are checked again: that
	// commit is made, no other.
	ctx, cancel := context.WithCancel(t.Context())
	calls := 0
	n, err := l.pruneBucket(ctx, ledgerBucket, func([]byte) bool {
		if calls++; calls == pruneBatch+pruneBatch/2 {
			cancel()
		}
		return true
	})
	if !errors.Is(err, context.Canceled) || n != pruneBatch || left() != records-pruneBatch {
		t.Fatalf("stopped in the first commit: forgot %d, %d left, %v; want %d, %d, context canceled", n, left(), err, pruneBatch, records-pruneBatch)
	}

	// Stopped in the middle of a scan over records none of which is old:
	// the scan ends within pruneCheck records.
	ctx, cancel = context.WithCancel(t.Context())
	calls = 0
	n, err = l.pruneBucket(ctx, ledgerBucket, func([]byte) bool {
		if calls++; calls == 10 {
			cancel()
		}
		return false
	})
	if !errors.Is(err, context.Canceled) || n != 0 || calls >= pruneCheck {
		t.Fatalf("stopped in a scan: forgot %d after reading %d records, %v; want 0, fewer than %d, context canceled", n, calls, err, pruneCheck)
	}

	// A prune that has stopped forgets the rest the next time.
	turns, _, err := l.Prune(t.Context(), time.Now())
	if err != nil || turns != 0 || left() != records-pruneBatch {
		t.Fatalf("records of no finished turn: forgot %d, %v", turns, err)
	}
	if n, err := l.pruneBucket(t.Context(), ledgerBucket, func([]byte) bool { return true }); err != nil || n != records-pruneBatch || left() != 0 {
		t.Fatalf("the rest: forgot %d, %d left, %v", n, left(), err)
	}
}

// TestLedgerFinishLaterFoldsIntoNextCommit: a finish held by FinishLater
// makes no commit of its own; it is written by the next one (a Begin's),
// or by Flush, and kept when that commit fails.
func TestLedgerFinishLaterFoldsIntoNextCommit(t *testing.T) {
	st, l := openLedger(t)
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

// BenchmarkLedgerPrune forgets 100,000 old calls among 100,000 young
// ones (a busy node's ledger), while another goroutine records a call
// after another as a node does: prune-ms is the whole prune, begin-max-ms
// the longest a record waited for its commit meanwhile, begins the
// records made during the prune.
// go test -run '^$' -bench LedgerPrune -benchtime 3x ./store/
func BenchmarkLedgerPrune(b *testing.B) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	var pruneMS, maxMS, begins float64
	for i := range b.N {
		b.StopTimer()
		st, l := openLedger(b)
		// Put in key order (in one transaction bbolt inserts in order in
		// linear time, out of order in quadratic); old and young alternate.
		ids := make([]string, 200_000)
		for j := range ids {
			ids[j] = fmt.Sprintf("mcp.s%02d.n%06d#0", j%97, j)
		}
		slices.Sort(ids)
		err := st.DB().Update(func(tx *bolt.Tx) error {
			bk := tx.Bucket([]byte(ledgerBucket))
			for j, id := range ids {
				at := t0
				if j%2 == 1 {
					at = t0.Add(10 * 24 * time.Hour)
				}
				v, _ := json.Marshal(TurnRecord{TurnID: id, State: TurnDone, Verb: "fs.exists", Identity: "hub", Platform: "node", Started: at, Finished: at})
				if err := bk.Put([]byte(id), v); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			b.Fatal(err)
		}
		stop := make(chan struct{})
		done := make(chan struct{})
		var longest time.Duration
		n := 0
		go func() {
			defer close(done)
			for k := 0; ; k++ {
				select {
				case <-stop:
					return
				default:
				}
				start := time.Now()
				if _, _, _, err := l.Begin(TurnRecord{TurnID: fmt.Sprintf("new.%d.%d", i, k), Started: t0}); err != nil {
					b.Error(err)
					return
				}
				longest = max(longest, time.Since(start))
				n++
			}
		}()
		b.StartTimer()
		start := time.Now()
		turns, _, err := l.Prune(context.Background(), t0.Add(7*24*time.Hour))
		pruneMS += float64(time.Since(start).Microseconds()) / 1000
		b.StopTimer()
		close(stop)
		<-done
		if err != nil || turns != 100_000 {
			b.Fatalf("pruned %d: %v", turns, err)
		}
		maxMS += float64(longest.Microseconds()) / 1000
		begins += float64(n)
		st.Close()
		b.StartTimer()
	}
	b.ReportMetric(pruneMS/float64(b.N), "prune-ms")
	b.ReportMetric(maxMS/float64(b.N), "begin-max-ms")
	b.ReportMetric(begins/float64(b.N), "begins")
}
