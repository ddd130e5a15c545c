package store

import (
	"errors"
	"strings"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"
)

// approveAs issues a code to identity and approves it with role.
func approveAs(t *testing.T, a *Access, identity, code, role, by string, at time.Time) Grant {
	t.Helper()
	issue(t, a, identity, code, at, PairingLimits{TTL: time.Hour, Interval: 0, Max: 1000})
	g, err := a.Approve(code, role, by, at)
	if err != nil {
		t.Fatalf("approve %s for %s: %v", role, identity, err)
	}
	return g
}

func TestGrantsLayerAndRevoke(t *testing.T) {
	_, a := openAccess(t, t.TempDir())
	approveAs(t, a, "telegram:42", "AAAA-4444", "reader", "operator", p0)
	approveAs(t, a, "telegram:42", "BBBB-4444", "admin", "telegram:1", p0.Add(time.Minute))
	approveAs(t, a, "discord:9", "CCCC-4444", "reader", "operator", p0.Add(2*time.Minute))
	// The same role approved again replaces the earlier grant.
	approveAs(t, a, "telegram:42", "DDDD-4444", "reader", "telegram:1", p0.Add(3*time.Minute))

	gs, err := a.Grants()
	if err != nil {
		t.Fatal(err)
	}
	want := []Grant{
		{Identity: "discord:9", Role: "reader", ApprovedBy: "operator", At: p0.Add(2 * time.Minute)},
		{Identity: "telegram:42", Role: "admin", ApprovedBy: "telegram:1", At: p0.Add(time.Minute)},
		{Identity: "telegram:42", Role: "reader", ApprovedBy: "telegram:1", At: p0.Add(3 * time.Minute)},
	}
	if len(gs) != len(want) {
		t.Fatalf("grants = %+v, want %+v", gs, want)
	}
	for i := range want {
		if gs[i] != want[i] {
			t.Errorf("grant %d = %+v, want %+v", i, gs[i], want[i])
		}
	}

	for _, tc := range []struct {
		identity string
		roles    []string
	}{
		{"telegram:42", []string{"admin", "reader"}},
		{"telegram:42", nil}, // again: nothing left
		{"telegram:404", nil},
	} {
		gone, err := a.Revoke(tc.identity)
		if err != nil {
			t.Fatalf("revoke %s: %v", tc.identity, err)
		}
		var roles []string
		for _, g := range gone {
			if g.Identity != tc.identity {
				t.Errorf("revoke %s removed %+v", tc.identity, g)
			}
			roles = append(roles, g.Role)
		}
		if strings.Join(roles, ",") != strings.Join(tc.roles, ",") {
			t.Errorf("revoke %s removed %v, want %v", tc.identity, roles, tc.roles)
		}
	}
	if gs, err := a.Grants(); err != nil || len(gs) != 1 || gs[0] != want[0] {
		t.Fatalf("grants after revoke = %+v, %v; want only discord:9's", gs, err)
	}
}

func TestGrantsCorruptRecord(t *testing.T) {
	_, a := openAccess(t, t.TempDir())
	approveAs(t, a, "telegram:42", "AAAA-5555", "reader", "operator", p0)
	if err := a.db.Update(func(tx *bolt.Tx) error {
		return tx.Bucket([]byte(grantBucket)).Put([]byte("telegram:43"), []byte("{not json"))
	}); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Grants(); err == nil || !strings.Contains(err.Error(), "telegram:43") {
		t.Fatalf("Grants with a corrupt record: %v, want an error naming it", err)
	}
	if _, err := a.Revoke("telegram:43"); err == nil || !strings.Contains(err.Error(), "corrupt") {
		t.Fatalf("Revoke of a corrupt record: %v", err)
	}
	// An approval for that identity does not overwrite what it cannot read.
	issue(t, a, "telegram:43", "BBBB-5555", p0, hourLimits)
	if _, err := a.Approve("BBBB-5555", "reader", "operator", p0); err == nil || errors.Is(err, ErrCodeUsed) {
		t.Fatalf("approve over a corrupt record: %v", err)
	}
	// The refused approval left the code unused (one transaction).
	if codes, _ := a.Codes(p0); len(codes) != 1 || codes[0].Identity != "telegram:43" {
		t.Fatalf("codes = %+v, want telegram:43's still outstanding", codes)
	}
}
