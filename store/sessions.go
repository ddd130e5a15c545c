package store

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/a6afc2ce/hermes-hub/clock"
)

const (
	sessionBucket  = "web_sessions"
	sessionVersion = 1

	sessionRevokedPrefix  = "revoked/"
	sessionFingerprintKey = "token_fingerprint"
	sessionNotBeforeKey   = "not_before"
)

// Sessions keeps the web panel's login sessions revoked across restarts, in
// hub.db: the ids of logged-out cookies until they would have expired, and
// the time the panel's token last changed, before which every cookie is
// invalid. It is safe for concurrent use.
type Sessions struct {
	db  *bolt.DB
	clk clock.Clock
}

// Sessions returns the session revocations of the state root; clk (default
// the real clock) decides which revocations have expired.
func (s *State) Sessions(clk clock.Clock) *Sessions {
	if clk == nil {
		clk = clock.Real{}
	}
	return &Sessions{db: s.DB(), clk: clk}
}

// Revoke makes the session id invalid until until (its cookie's expiry),
// durably, and forgets the revocations that have expired.
func (s *Sessions) Revoke(id string, until time.Time) error {
	if id == "" {
		return errors.New("revoke session: empty id")
	}
	now := s.clk.Now()
	err := s.db.Update(func(tx *bolt.Tx) error {
		b, _, err := EnsureBucket(tx, sessionBucket, sessionVersion)
		if err != nil {
			return err
		}
		var expired [][]byte
		c := b.Cursor()
		prefix := []byte(sessionRevokedPrefix)
		for k, v := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, v = c.Next() {
			if t, ok := unixTime(v); !ok || !now.Before(t) {
				expired = append(expired, bytes.Clone(k))
			}
		}
		for _, k := range expired {
			if err := b.Delete(k); err != nil {
				return err
			}
		}
		return b.Put([]byte(sessionRevokedPrefix+id), unixBytes(until))
	})
	if err != nil {
		return fmt.Errorf("revoke session: %w", err)
	}
	return nil
}

// Revoked reports whether the session id is revoked and its revocation has
// not expired.
func (s *Sessions) Revoked(id string) (bool, error) {
	revoked := false
	err := s.db.View(func(tx *bolt.Tx) error {
		b := tx.Bucket([]byte(sessionBucket))
		if b == nil {
			return nil
		}
		if v := b.Get([]byte(sessionRevokedPrefix + id)); v != nil {
			t, ok := unixTime(v)
			revoked = !ok || s.clk.Now().Before(t)
		}
		return nil
	})
	if err != nil {
		return false, fmt.Errorf("session revocations: %w", err)
	}
	return revoked, nil
}

// Rotate records the fingerprint of the token the sessions are issued
// under. When it differs from the stored one (the token changed), now,
// truncated to the second, becomes the time before which every session is
// invalid, whatever token it was issued under. It returns that time (zero
// when the token never changed).
func (s *Sessions) Rotate(fingerprint string, now time.Time) (time.Time, error) {
	var notBefore time.Time
	err := s.db.Update(func(tx *bolt.Tx) error {
		b, _, err := EnsureBucket(tx, sessionBucket, sessionVersion)
		if err != nil {
			return err
		}
		if old := b.Get([]byte(sessionFingerprintKey)); old != nil && string(old) != fingerprint {
			if err := b.Put([]byte(sessionNotBeforeKey), unixBytes(now.Truncate(time.Second))); err != nil {
				return err
			}
		}
		if err := b.Put([]byte(sessionFingerprintKey), []byte(fingerprint)); err != nil {
			return err
		}
		if v := b.Get([]byte(sessionNotBeforeKey)); v != nil {
			notBefore, _ = unixTime(v)
		}
		return nil
	})
	if err != nil {
		return time.Time{}, fmt.Errorf("session token rotation: %w", err)
	}
	return notBefore, nil
}

func unixBytes(t time.Time) []byte {
	return binary.BigEndian.AppendUint64(nil, uint64(t.Unix()))
}

func unixTime(v []byte) (time.Time, bool) {
	if len(v) != 8 {
		return time.Time{}, false
	}
	return time.Unix(int64(binary.BigEndian.Uint64(v)), 0), true
}
