package store

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"
)

// p0 is the fixed "now" of the pairing tests; no test reads the wall clock.
var p0 = time.Date(2026, 3, 4, 10, 0, 0, 0, time.UTC)

var hourLimits = PairingLimits{TTL: time.Hour, Interval: time.Hour, Max: 1000}

// openAccess opens a state root in dir (a real bbolt file) and its access
// state; the state is closed at the end of the test unless closed before.
func openAccess(t *testing.T, dir string) (*State, *Access) {
	t.Helper()
	st, err := Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	a, err := OpenAccess(st.DB())
	if err != nil {
		t.Fatal(err)
	}
	return st, a
}

func issue(t *testing.T, a *Access, identity, code string, now time.Time, lim PairingLimits) {
	t.Helper()
	if err := a.IssueCode(identity, code, now, lim); err != nil {
		t.Fatalf("issue %s to %s: %v", code, identity, err)
	}
}

func TestPairingCodeWorksOnce(t *testing.T) {
	_, a := openAccess(t, t.TempDir())
	issue(t, a, "telegram:42", "K7QM-2XPA", p0, hourLimits)
	codes, err := a.Codes(p0.Add(time.Minute))
	if err != nil || len(codes) != 1 || codes[0].Identity != "telegram:42" || !codes[0].Expires.Equal(p0.Add(time.Hour)) || !codes[0].Used.IsZero() {
		t.Fatalf("outstanding codes = %+v, %v", codes, err)
	}

	// Typed back as a person would: case, spaces and the dash do not matter.
	g, err := a.Approve(" k7qm 2xpa", "reader", "operator", p0.Add(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	want := Grant{Identity: "telegram:42", Role: "reader", ApprovedBy: "operator", At: p0.Add(time.Minute)}
	if g != want {
		t.Fatalf("grant = %+v, want %+v", g, want)
	}
	if gs, err := a.Grants(); err != nil || len(gs) != 1 || gs[0] != want {
		t.Fatalf("grants = %+v, %v", gs, err)
	}
	if codes, err := a.Codes(p0.Add(2 * time.Minute)); err != nil || len(codes) != 0 {
		t.Fatalf("a used code is still outstanding: %+v, %v", codes, err)
	}

	for _, tc := range []struct {
		name, code, role string
		want             error
	}{
		{"reused for the same role", "K7QM-2XPA", "reader", ErrCodeUsed},
		{"reused for another role", "K7QM2XPA", "admin", ErrCodeUsed},
		{"never issued", "ZZZZ-ZZZZ", "reader", ErrCodeUnknown},
		{"empty", "", "reader", ErrCodeUnknown},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g, err := a.Approve(tc.code, tc.role, "operator", p0.Add(3*time.Minute))
			if !errors.Is(err, tc.want) || g != (Grant{}) {
				t.Fatalf("Approve(%q) = %+v, %v; want %v", tc.code, g, err, tc.want)
			}
		})
	}
	if gs, _ := a.Grants(); len(gs) != 1 || gs[0].Role != "reader" {
		t.Fatalf("a refused approval changed the grants: %+v", gs)
	}
}

func TestPairingCodeExpires(t *testing.T) {
	for _, tc := range []struct {
		name  string
		after time.Duration
		want  error
	}{
		{"just before the hour", time.Hour - time.Second, nil},
		{"at the hour", time.Hour, ErrCodeExpired},
		{"a day later", 24 * time.Hour, ErrCodeExpired},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, a := openAccess(t, t.TempDir())
			issue(t, a, "discord:555", "ABCD-EF23", p0, hourLimits)
			_, err := a.Approve("ABCD-EF23", "reader", "operator", p0.Add(tc.after))
			if !errors.Is(err, tc.want) {
				t.Fatalf("approve %v after issue: %v, want %v", tc.after, err, tc.want)
			}
			gs, _ := a.Grants()
			if (tc.want == nil) != (len(gs) == 1) {
				t.Fatalf("grants after approve: %+v", gs)
			}
			codes, _ := a.Codes(p0.Add(tc.after))
			if len(codes) != 0 {
				t.Fatalf("codes outstanding: %+v", codes)
			}
		})
	}

	// An expired code is forgotten when the next code is issued: the state
	// stays bounded, and the stale code is then simply unknown.
	_, a := openAccess(t, t.TempDir())
	issue(t, a, "discord:555", "ABCD-EF23", p0, hourLimits)
	issue(t, a, "discord:556", "HJKL-MN45", p0.Add(2*time.Hour), hourLimits)
	if _, err := a.Approve("ABCD-EF23", "reader", "operator", p0.Add(2*time.Hour)); !errors.Is(err, ErrCodeUnknown) {
		t.Fatalf("pruned code: %v, want ErrCodeUnknown", err)
	}
}

func TestPairingRateLimitPerIdentity(t *testing.T) {
	_, a := openAccess(t, t.TempDir())
	issue(t, a, "telegram:7", "AAAA-AAAA", p0, hourLimits)
	for _, tc := range []struct {
		name, identity, code string
		at                   time.Duration
		want                 error
	}{
		{"same identity, a minute later", "telegram:7", "BBBB-2345", time.Minute, ErrPairingRateLimited},
		{"same identity, just within the hour", "telegram:7", "CCCC-2345", time.Hour - time.Second, ErrPairingRateLimited},
		{"another identity at once", "telegram:8", "DDDD-2345", time.Minute, nil},
		{"same identity, once the hour is over", "telegram:7", "EEEE-2345", time.Hour, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := a.IssueCode(tc.identity, tc.code, p0.Add(tc.at), hourLimits)
			if !errors.Is(err, tc.want) {
				t.Fatalf("IssueCode = %v, want %v", err, tc.want)
			}
		})
	}
	// A refused code was not recorded; the one issued after the hour was.
	if _, err := a.Approve("BBBB-2345", "reader", "operator", p0.Add(time.Hour)); !errors.Is(err, ErrCodeUnknown) {
		t.Fatalf("a rate-limited code: %v, want ErrCodeUnknown", err)
	}
	if _, err := a.Approve("EEEE-2345", "reader", "operator", p0.Add(time.Hour)); err != nil {
		t.Fatalf("the code issued once the hour was over: %v", err)
	}
	codes, _ := a.Codes(p0.Add(time.Hour))
	if len(codes) != 1 || codes[0].Identity != "telegram:8" {
		t.Fatalf("outstanding codes = %+v, want only telegram:8's", codes)
	}
}

func TestPairingCap(t *testing.T) {
	lim := PairingLimits{TTL: time.Hour, Interval: time.Hour, Max: 3}
	_, a := openAccess(t, t.TempDir())
	codes := []string{"AAAA-2222", "BBBB-2222", "CCCC-2222"}
	for i, c := range codes {
		issue(t, a, "telegram:"+string(rune('1'+i)), c, p0.Add(time.Duration(i)*time.Minute), lim)
	}
	if err := a.IssueCode("telegram:9", "DDDD-2222", p0.Add(5*time.Minute), lim); !errors.Is(err, ErrPairingFull) {
		t.Fatalf("past the cap: %v, want ErrPairingFull", err)
	}
	// A used code counts until it expires (so that using it again says it
	// was used), so approving does not free a place.
	if _, err := a.Approve(codes[0], "reader", "operator", p0.Add(6*time.Minute)); err != nil {
		t.Fatal(err)
	}
	if err := a.IssueCode("telegram:9", "DDDD-2222", p0.Add(7*time.Minute), lim); !errors.Is(err, ErrPairingFull) {
		t.Fatalf("past the cap after an approval: %v, want ErrPairingFull", err)
	}
	// Once the first code expires there is room for one more, and only one.
	issue(t, a, "telegram:9", "DDDD-2222", p0.Add(time.Hour), lim)
	if err := a.IssueCode("telegram:10", "EEEE-2222", p0.Add(time.Hour), lim); !errors.Is(err, ErrPairingFull) {
		t.Fatalf("past the cap again: %v, want ErrPairingFull", err)
	}
	var kept int
	if err := a.db.View(func(tx *bolt.Tx) error { kept = countKeys(tx.Bucket([]byte(codeBucket))); return nil }); err != nil {
		t.Fatal(err)
	}
	if kept != lim.Max {
		t.Fatalf("%d code records kept, want the cap, %d", kept, lim.Max)
	}
}

// TestPairingStoresOnlyHashes reads the bytes of hub.db: the code, in any
// form a person types it, never reaches the file; its SHA-256 does.
func TestPairingStoresOnlyHashes(t *testing.T) {
	dir := t.TempDir()
	st, a := openAccess(t, dir)
	const code = "K7QM-2XPA"
	issue(t, a, "telegram:42", code, p0, hourLimits)
	issue(t, a, "telegram:43", "Q9RS-T4UV", p0, hourLimits)
	if _, err := a.Approve("Q9RS-T4UV", "reader", "operator", p0.Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(filepath.Join(dir, DBFile))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []string{code, "K7QM2XPA", "k7qm2xpa", "K7QM", "2XPA", "Q9RS-T4UV", "Q9RST4UV", "Q9RS", "T4UV"} {
		if bytes.Contains(raw, []byte(c)) {
			t.Errorf("hub.db holds %q", c)
		}
	}
	// The file is readable as written: the identities and the hashes are
	// there, so the search above would have found a code stored in clear.
	sum := sha256.Sum256([]byte("K7QM2XPA"))
	for _, s := range []string{"telegram:42", hex.EncodeToString(sum[:])} {
		if !bytes.Contains(raw, []byte(s)) {
			t.Errorf("hub.db does not hold %q: the search proves nothing", s)
		}
	}
}

// TestPairingConcurrentApprove approves one code from many goroutines at
// once: exactly one approval wins, the others are told it was used.
func TestPairingConcurrentApprove(t *testing.T) {
	_, a := openAccess(t, t.TempDir())
	issue(t, a, "discord:555", "RACE-2345", p0, hourLimits)
	const n = 16
	var wg sync.WaitGroup
	errs := make([]error, n)
	roles := []string{"reader", "admin"}
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, errs[i] = a.Approve("RACE-2345", roles[i%2], "operator", p0.Add(time.Minute))
		}()
	}
	wg.Wait()
	won := 0
	for i, err := range errs {
		switch {
		case err == nil:
			won++
		case !errors.Is(err, ErrCodeUsed):
			t.Errorf("approval %d: %v, want ErrCodeUsed", i, err)
		}
	}
	if won != 1 {
		t.Fatalf("%d approvals won, want exactly 1", won)
	}
	if gs, err := a.Grants(); err != nil || len(gs) != 1 || gs[0].Identity != "discord:555" {
		t.Fatalf("grants = %+v, %v; want one", gs, err)
	}
}

// TestPairingSurvivesReopen closes and reopens hub.db between issuing,
// approving and revoking: codes, their use and the grants persist.
func TestPairingSurvivesReopen(t *testing.T) {
	dir := t.TempDir()
	reopen := func(st *State) (*State, *Access) {
		t.Helper()
		if err := st.Close(); err != nil {
			t.Fatal(err)
		}
		return openAccess(t, dir)
	}
	st, a := openAccess(t, dir)
	issue(t, a, "telegram:42", "AAAA-3333", p0, hourLimits)
	issue(t, a, "telegram:43", "BBBB-3333", p0, hourLimits)

	st, a = reopen(st)
	if codes, err := a.Codes(p0.Add(time.Minute)); err != nil || len(codes) != 2 {
		t.Fatalf("codes after reopen: %+v, %v", codes, err)
	}
	// The rate limit persists too.
	if err := a.IssueCode("telegram:42", "CCCC-3333", p0.Add(time.Minute), hourLimits); !errors.Is(err, ErrPairingRateLimited) {
		t.Fatalf("issue again after reopen: %v, want ErrPairingRateLimited", err)
	}
	if _, err := a.Approve("AAAA-3333", "reader", "operator", p0.Add(time.Minute)); err != nil {
		t.Fatal(err)
	}

	st, a = reopen(st)
	if _, err := a.Approve("AAAA-3333", "reader", "operator", p0.Add(2*time.Minute)); !errors.Is(err, ErrCodeUsed) {
		t.Fatalf("reuse after reopen: %v, want ErrCodeUsed", err)
	}
	if gs, err := a.Grants(); err != nil || len(gs) != 1 || gs[0].Identity != "telegram:42" {
		t.Fatalf("grants after reopen: %+v, %v", gs, err)
	}
	if gone, err := a.Revoke("telegram:42"); err != nil || len(gone) != 1 {
		t.Fatalf("revoke: %+v, %v", gone, err)
	}

	_, a = reopen(st)
	if gs, err := a.Grants(); err != nil || len(gs) != 0 {
		t.Fatalf("grants after revoke and reopen: %+v, %v", gs, err)
	}
	if codes, err := a.Codes(p0.Add(3 * time.Minute)); err != nil || len(codes) != 1 || codes[0].Identity != "telegram:43" {
		t.Fatalf("codes after reopen: %+v, %v", codes, err)
	}
}
