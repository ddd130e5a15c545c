package store

import (
	"bytes"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/a6afc2ce/hermes-hub/clock"
)

func TestSessionsRevokeAndPrune(t *testing.T) {
	st, err := Open(t.TempDir(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	clk := clock.NewFake(time.Date(2026, 2, 26, 10, 0, 0, 0, time.UTC))
	s := st.Sessions(clk)
	if err := s.Revoke("a", clk.Now().Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	if err := s.Revoke("b", clk.Now().Add(3*time.Hour)); err != nil {
		t.Fatal(err)
	}
	for id, want := range map[string]bool{"a": true, "b": true, "c": false} {
		if got, err := s.Revoked(id); err != nil || got != want {
			t.Errorf("Revoked(%s) = %v %v, want %v", id, got, err, want)
		}
	}
	clk.Advance(2 * time.Hour)
	if got, _ := s.Revoked("a"); got {
		t.Error("an expired revocation still counts")
	}
	if err := s.Revoke("c", clk.Now().Add(time.Hour)); err != nil { // prunes a
		t.Fatal(err)
	}
	var ids []string
	st.DB().View(func(tx *bolt.Tx) error {
		c := tx.Bucket([]byte(sessionBucket)).Cursor()
		for k, _ := c.Seek([]byte(sessionRevokedPrefix)); k != nil && bytes.HasPrefix(k, []byte(sessionRevokedPrefix)); k, _ = c.Next() {
			ids = append(ids, string(k[len(sessionRevokedPrefix):]))
		}
		return nil
	})
	if len(ids) != 2 || ids[0] != "b" || ids[1] != "c" {
		t.Errorf("revocations kept %v, want [b c]", ids)
	}
}

func TestSessionsRotate(t *testing.T) {
	st, err := Open(t.TempDir(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	s := st.Sessions(nil)
	t0 := time.Date(2026, 2, 26, 10, 0, 0, 500, time.UTC)
	for i, step := range []struct {
		fp   string
		now  time.Time
		want time.Time
	}{
		{"A", t0, time.Time{}},                // first start: nothing to invalidate
		{"A", t0.Add(time.Hour), time.Time{}}, // same token
		{"B", t0.Add(2 * time.Hour), t0.Add(2 * time.Hour).Truncate(time.Second)}, // changed
		{"B", t0.Add(3 * time.Hour), t0.Add(2 * time.Hour).Truncate(time.Second)}, // kept
		{"A", t0.Add(4 * time.Hour), t0.Add(4 * time.Hour).Truncate(time.Second)}, // back to the old one
	} {
		got, err := s.Rotate(step.fp, step.now)
		if err != nil || !got.Equal(step.want) {
			t.Errorf("step %d: Rotate(%s) = %v %v, want %v", i, step.fp, got, err, step.want)
		}
	}
}
