package store

import (
	"errors"
	"path/filepath"
	"testing"
	"time"
)

// TestConfirmations: a held call is added once, read back, updated in one
// transaction (an error of the update changes nothing), kept across a
// reopening of hub.db, and pruned once decided or expired before the
// cutoff, never while running.
func TestConfirmations(t *testing.T) {
	dir := t.TempDir()
	open := func() (*State, *Confirmations) {
		st, err := Open(filepath.Join(dir, "state"), Options{LockTimeout: time.Second})
		if err != nil {
			t.Fatal(err)
		}
		c, err := OpenConfirmations(st.Database())
		if err != nil {
			t.Fatal(err)
		}
		return st, c
	}
	st, c := open()
	t0 := time.Date(2026, 11, 27, 9, 0, 0, 0, time.UTC)
	for i, id := range []string{"a1", "b2", "c3"} {
		if err := c.Add(Confirmation{ID: id, Verb: "fs.deleteFile", State: ConfirmPending, Created: t0, Expires: t0.Add(time.Duration(i+1) * time.Minute)}); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.Add(Confirmation{ID: "a1"}); err == nil {
		t.Fatal("an id added twice")
	}
	boom := errors.New("boom")
	if _, err := c.Update("a1", func(cf *Confirmation) error { cf.State = ConfirmDone; return boom }); !errors.Is(err, boom) {
		t.Fatalf("update error %v", err)
	}
	if cf, _ := c.Get("a1"); cf.State != ConfirmPending {
		t.Fatalf("a failed update changed the state: %s", cf.State)
	}
	if _, err := c.Update("b2", func(cf *Confirmation) error { cf.State = ConfirmRunning; return nil }); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Get("zz"); !errors.Is(err, ErrNoConfirmation) {
		t.Fatalf("unknown id: %v", err)
	}
	st.Close()
	st, c = open()
	defer st.Close()
	if cf, err := c.Get("b2"); err != nil || cf.State != ConfirmRunning {
		t.Fatalf("after reopening: %+v %v", cf, err)
	}
	n, err := c.Prune(t0.Add(10 * time.Minute))
	if err != nil || n != 2 {
		t.Fatalf("pruned %d %v, want 2 (b2 runs)", n, err)
	}
	if all, _ := c.List(); len(all) != 1 || all[0].ID != "b2" {
		t.Fatalf("left %+v", all)
	}
}
