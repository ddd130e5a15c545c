package store

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	bolt "go.etcd.io/bbolt"
)

// Why a pairing code is not issued or not accepted.
var (
	// ErrPairingRateLimited: the identity was given a code less than the
	// interval ago.
	ErrPairingRateLimited = errors.New("a pairing code was issued to this identity recently")
	// ErrPairingFull: as many codes as allowed are outstanding.
	ErrPairingFull = errors.New("too many pairing codes are outstanding")
	// ErrCodeUnknown: no such code was issued (or it expired long ago).
	ErrCodeUnknown = errors.New("no such pairing code: check it, or ask for a new one (a stranger gets one by writing to the bot)")
	// ErrCodeUsed: the code was approved already; codes work once.
	ErrCodeUsed = errors.New("this pairing code was used already: a code works once; the stranger gets a new one by writing to the bot")
	// ErrCodeExpired: the code is past its expiry.
	ErrCodeExpired = errors.New("this pairing code has expired: the stranger gets a new one by writing to the bot")
)

// PairingCode is what the state keeps of a code: never the code itself,
// only its SHA-256, with the identity it was issued to.
type PairingCode struct {
	Identity string    `json:"identity"`
	Created  time.Time `json:"created"`
	Expires  time.Time `json:"expires"`
	// Used is when the code was approved (zero while outstanding); a used
	// code is kept until it expires so that using it again says so.
	Used time.Time `json:"used,omitzero"`
}

// PairingLimits bound the codes: one per identity per Interval, each valid
// for TTL, at most Max outstanding at once.
type PairingLimits struct {
	TTL      time.Duration
	Interval time.Duration
	Max      int
}

// NormalizeCode is the canonical form of a code as a person types it:
// upper case, without spaces or dashes.
func NormalizeCode(code string) string {
	var b strings.Builder
	for _, r := range strings.ToUpper(code) {
		if r == '-' || r == ' ' || r == '\t' {
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}

func codeKey(code string) []byte {
	sum := sha256.Sum256([]byte(NormalizeCode(code)))
	return []byte(hex.EncodeToString(sum[:]))
}

// IssueCode records code for identity, unless the identity had one less
// than lim.Interval ago (ErrPairingRateLimited) or lim.Max codes are
// outstanding (ErrPairingFull). Expired codes are forgotten first, so the
// state stays bounded by lim.Max.
func (a *Access) IssueCode(identity, code string, now time.Time, lim PairingLimits) error {
	err := a.db.Update(func(tx *bolt.Tx) error {
		codes, issued := tx.Bucket([]byte(codeBucket)), tx.Bucket([]byte(issuedBucket))
		if err := pruneCodes(codes, issued, now, lim.Interval); err != nil {
			return err
		}
		if v := issued.Get([]byte(identity)); v != nil {
			var last time.Time
			if last.UnmarshalText(v) == nil && now.Sub(last) < lim.Interval {
				return ErrPairingRateLimited
			}
		}
		if countKeys(codes) >= lim.Max {
			return ErrPairingFull
		}
		key := codeKey(code)
		if codes.Get(key) != nil {
			return fmt.Errorf("pairing code collision: issue another")
		}
		v, err := json.Marshal(PairingCode{Identity: identity, Created: now.UTC(), Expires: now.Add(lim.TTL).UTC()})
		if err != nil {
			return err
		}
		if err := codes.Put(key, v); err != nil {
			return err
		}
		t, _ := now.UTC().MarshalText()
		return issued.Put([]byte(identity), t)
	})
	if err != nil && !errors.Is(err, ErrPairingRateLimited) && !errors.Is(err, ErrPairingFull) {
		return fmt.Errorf("issue a pairing code: %w", err)
	}
	return err
}

func countKeys(b *bolt.Bucket) int {
	n := 0
	_ = b.ForEach(func(_, _ []byte) error { n++; return nil })
	return n
}

// pruneCodes forgets expired codes and issue times older than interval.
func pruneCodes(codes, issued *bolt.Bucket, now time.Time, interval time.Duration) error {
	var old [][]byte
	err := codes.ForEach(func(k, v []byte) error {
		var c PairingCode
		if json.Unmarshal(v, &c) != nil || !now.Before(c.Expires) {
			old = append(old, bytes.Clone(k))
		}
		return nil
	})
	if err != nil {
		return err
	}
	for _, k := range old {
		if err := codes.Delete(k); err != nil {
			return err
		}
	}
	old = old[:0]
	err = issued.ForEach(func(k, v []byte) error {
		var last time.Time
		if last.UnmarshalText(v) != nil || now.Sub(last) >= interval {
			old = append(old, bytes.Clone(k))
		}
		return nil
	})
	if err != nil {
		return err
	}
	for _, k := range old {
		if err := issued.Delete(k); err != nil {
			return err
		}
	}
	return nil
}

// Approve redeems code and grants role to the identity it was issued to,
// in one transaction: a code works once (ErrCodeUsed after), only before it
// expires (ErrCodeExpired), and only if it was issued (ErrCodeUnknown).
func (a *Access) Approve(code, role, by string, now time.Time) (Grant, error) {
	var g Grant
	err := a.db.Update(func(tx *bolt.Tx) error {
		codes := tx.Bucket([]byte(codeBucket))
		key := codeKey(code)
		v := codes.Get(key)
		if v == nil {
			return ErrCodeUnknown
		}
		var c PairingCode
		if err := json.Unmarshal(v, &c); err != nil {
			return fmt.Errorf("corrupt pairing code record: %w", err)
		}
		switch {
		case !c.Used.IsZero():
			return ErrCodeUsed
		case !now.Before(c.Expires):
			return ErrCodeExpired
		}
		c.Used = now.UTC()
		nv, err := json.Marshal(c)
		if err != nil {
			return err
		}
		if err := codes.Put(key, nv); err != nil {
			return err
		}
		g = Grant{Identity: c.Identity, Role: role, ApprovedBy: by, At: now.UTC()}
		return putGrant(tx, g)
	})
	if err != nil {
		return Grant{}, fmt.Errorf("approve: %w", err)
	}
	return g, nil
}

// Codes lists the codes outstanding at now (issued, not used, not expired),
// oldest first. The codes themselves are not kept, only whom they are for.
func (a *Access) Codes(now time.Time) ([]PairingCode, error) {
	var out []PairingCode
	err := a.db.View(func(tx *bolt.Tx) error {
		return tx.Bucket([]byte(codeBucket)).ForEach(func(_, v []byte) error {
			var c PairingCode
			if json.Unmarshal(v, &c) == nil && c.Used.IsZero() && now.Before(c.Expires) {
				out = append(out, c)
			}
			return nil
		})
	})
	if err != nil {
		return nil, fmt.Errorf("read pairing codes: %w", err)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Created.Before(out[j].Created) })
	return out, nil
}
