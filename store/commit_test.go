package store

import (
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"testing"

	bolt "go.etcd.io/bbolt"

	"github.com/a6afc2ce/hermes-hub/internal/testkit"
)

func openTestDB(t *testing.T) *DB {
	t.Helper()
	st, err := Open(filepath.Join(t.TempDir(), ".hub"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	err = st.DB().Update(func(tx *bolt.Tx) error {
		_, err := tx.CreateBucketIfNotExists([]byte("test"))
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return st.Database()
}

// hold starts an Update that blocks inside its transaction until release
// is called, so that the Updates started meanwhile queue behind it and go
// in the next commit together.
func hold(t *testing.T, d *DB) (release func()) {
	t.Helper()
	entered, gate, done := make(chan struct{}), make(chan struct{}), make(chan error, 1)
	go func() {
		done <- d.Update(func(tx *bolt.Tx) error {
			close(entered)
			<-gate
			return tx.Bucket([]byte("test")).Put([]byte("holder"), []byte("x"))
		})
	}()
	<-entered
	return func() {
		close(gate)
		if err := <-done; err != nil {
			t.Errorf("holder: %v", err)
		}
	}
}

func queued(d *DB) int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return len(d.queue)
}

// TestDBUpdateIsolatesFailures: in a batch, a function that fails or panics
// gets its own error back and leaves nothing behind; every other function of
// the batch is committed.
func TestDBUpdateIsolatesFailures(t *testing.T) {
	d := openTestDB(t)
	errOdd := errors.New("odd op fails")
	const n = 60
	release := hold(t, d)
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i := range n {
		wg.Go(func() {
			errs[i] = d.Update(func(tx *bolt.Tx) error {
				if err := tx.Bucket([]byte("test")).Put(fmt.Appendf(nil, "k%02d", i), []byte("v")); err != nil {
					return err
				}
				switch {
				case i%7 == 0:
					return fmt.Errorf("op %d: %w", i, errOdd)
				case i%11 == 0:
					panic(fmt.Sprintf("op %d panics", i))
				}
				return nil
			})
		})
	}
	testkit.WaitFor(t, "every op queued behind the held commit", func() bool { return queued(d) == n })
	release()
	wg.Wait()
	err := d.View(func(tx *bolt.Tx) error {
		b := tx.Bucket([]byte("test"))
		for i := range n {
			stored := b.Get(fmt.Appendf(nil, "k%02d", i)) != nil
			var pe *PanicError
			switch {
			case i%7 == 0:
				if stored || !errors.Is(errs[i], errOdd) {
					t.Errorf("op %d: stored %v, err %v; want not stored and its own error", i, stored, errs[i])
				}
			case i%11 == 0:
				if stored || !errors.As(errs[i], &pe) {
					t.Errorf("op %d: stored %v, err %v; want not stored and a PanicError", i, stored, errs[i])
				}
			default:
				if !stored || errs[i] != nil {
					t.Errorf("op %d: stored %v, err %v; want stored, no error", i, stored, errs[i])
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	// The db is still usable: no leader was left behind by the panics.
	if err := d.Update(func(tx *bolt.Tx) error { return nil }); err != nil {
		t.Fatal(err)
	}
}

// TestDBUpdateSharesCommits: writers that queue while a commit runs are
// committed together in the next one, whoever they are (the ledger and
// plain functions here), and each sees its own results.
func TestDBUpdateSharesCommits(t *testing.T) {
	d := openTestDB(t)
	l, err := OpenSharedLedger(d)
	if err != nil {
		t.Fatal(err)
	}
	c0, o0 := d.Commits()
	release := hold(t, d)
	const n = 10
	var wg sync.WaitGroup
	began := make([]bool, n)
	errs := make([]error, 2*n)
	for i := range n {
		wg.Go(func() {
			_, began[i], _, errs[i] = l.Begin(TurnRecord{TurnID: fmt.Sprintf("turn-%d", i)})
		})
		wg.Go(func() {
			errs[n+i] = d.Update(func(tx *bolt.Tx) error {
				return tx.Bucket([]byte("test")).Put(fmt.Appendf(nil, "w%d", i), []byte("v"))
			})
		})
	}
	testkit.WaitFor(t, "every write queued behind the held commit", func() bool { return queued(d) == 2*n })
	release()
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("write %d: %v", i, err)
		}
	}
	for i, b := range began {
		if !b {
			t.Errorf("turn-%d did not begin", i)
		}
	}
	c1, o1 := d.Commits()
	if commits, ops := c1-c0, o1-o0; commits != 2 || ops != 2*n+1 {
		t.Errorf("%d ops in %d commits; want %d in 2 (the held one, then all the others)", ops, commits, 2*n+1)
	}
	for i := range n {
		rec, err := l.Get(fmt.Sprintf("turn-%d", i))
		if err != nil || rec == nil || rec.State != TurnStarted {
			t.Errorf("turn-%d: %+v, %v", i, rec, err)
		}
	}
}

// TestDBUpdateRerunResetsResults: a ledger call in a batch that is rolled
// back (another function failed) runs again and reports the outcome of the
// run that committed.
func TestDBUpdateRerunResetsResults(t *testing.T) {
	d := openTestDB(t)
	l, err := OpenSharedLedger(d)
	if err != nil {
		t.Fatal(err)
	}
	if _, began, _, err := l.Begin(TurnRecord{TurnID: "seen"}); err != nil || !began {
		t.Fatalf("begin: %v %v", began, err)
	}
	release := hold(t, d)
	type beginResult struct {
		prev         *TurnRecord
		began, accep bool
		err          error
	}
	results := make(chan beginResult, 2)
	failed := make(chan error, 1)
	go func() {
		var r beginResult
		r.prev, r.began, r.accep, r.err = l.Begin(TurnRecord{TurnID: "fresh"})
		results <- r
	}()
	testkit.WaitFor(t, "fresh queued", func() bool { return queued(d) == 1 })
	go func() {
		var r beginResult
		r.prev, r.began, r.accep, r.err = l.Begin(TurnRecord{TurnID: "seen"})
		results <- r
	}()
	testkit.WaitFor(t, "seen queued", func() bool { return queued(d) == 2 })
	go func() { failed <- d.Update(func(*bolt.Tx) error { return errors.New("fails") }) }()
	testkit.WaitFor(t, "the failing op queued", func() bool { return queued(d) == 3 })
	release()
	if err := <-failed; err == nil {
		t.Fatal("the failing op succeeded")
	}
	for range 2 {
		r := <-results
		if r.err != nil {
			t.Fatal(r.err)
		}
		if r.began == (r.prev != nil) || r.accep {
			t.Errorf("Begin reported prev %+v, began %v, accepted %v: one of prev and began, never accepted", r.prev, r.began, r.accep)
		}
	}
	for id, want := range map[string]string{"fresh": TurnStarted, "seen": TurnStarted} {
		if rec, err := l.Get(id); err != nil || rec == nil || rec.State != want {
			t.Errorf("%s: %+v, %v", id, rec, err)
		}
	}
}
