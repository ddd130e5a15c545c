package store

import (
	"encoding/json"
	"fmt"
	"sort"
	"time"

	bolt "go.etcd.io/bbolt"
)

const (
	grantBucket   = "access_grants"
	grantVersion  = 1
	codeBucket    = "pairing_codes"
	codeVersion   = 1
	issuedBucket  = "pairing_issued"
	issuedVersion = 1
)

// Grant is a role given to an identity by an operator's approval, kept in
// hub.db. It layers over the configuration's access.grants.
type Grant struct {
	Identity   string    `json:"identity"`
	Role       string    `json:"role"`
	ApprovedBy string    `json:"approved_by"`
	At         time.Time `json:"at"`
}

// Access keeps what an operator decides about access at run time: the
// outstanding pairing codes (pairing.go) and the grants approved from them.
// Every change is one bbolt transaction.
type Access struct{ db *bolt.DB }

// OpenAccess creates the buckets of the approved grants and the pairing
// codes.
func OpenAccess(db *bolt.DB) (*Access, error) {
	err := db.Update(func(tx *bolt.Tx) error {
		for _, b := range []struct {
			name    string
			version int
		}{{grantBucket, grantVersion}, {codeBucket, codeVersion}, {issuedBucket, issuedVersion}} {
			if _, _, err := EnsureBucket(tx, b.name, b.version); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("open access state: %w", err)
	}
	return &Access{db: db}, nil
}

// Grants lists every approved grant, by identity then role.
func (a *Access) Grants() ([]Grant, error) {
	var out []Grant
	err := a.db.View(func(tx *bolt.Tx) error {
		return tx.Bucket([]byte(grantBucket)).ForEach(func(k, v []byte) error {
			var gs []Grant
			if err := json.Unmarshal(v, &gs); err != nil {
				return fmt.Errorf("grants of %s: corrupt record: %w", k, err)
			}
			out = append(out, gs...)
			return nil
		})
	})
	if err != nil {
		return nil, fmt.Errorf("read approved grants: %w", err)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Identity != out[j].Identity {
			return out[i].Identity < out[j].Identity
		}
		return out[i].Role < out[j].Role
	})
	return out, nil
}

// Revoke removes every approved grant of identity and returns them.
func (a *Access) Revoke(identity string) ([]Grant, error) {
	var gone []Grant
	err := a.db.Update(func(tx *bolt.Tx) error {
		b := tx.Bucket([]byte(grantBucket))
		v := b.Get([]byte(identity))
		if v == nil {
			return nil
		}
		if err := json.Unmarshal(v, &gone); err != nil {
			return fmt.Errorf("grants of %s: corrupt record: %w", identity, err)
		}
		return b.Delete([]byte(identity))
	})
	if err != nil {
		return nil, fmt.Errorf("revoke %s: %w", identity, err)
	}
	return gone, nil
}

// putGrant adds g to its identity's grants in tx; a grant of the same role
// is replaced.
func putGrant(tx *bolt.Tx, g Grant) error {
	b := tx.Bucket([]byte(grantBucket))
	var gs []Grant
	if v := b.Get([]byte(g.Identity)); v != nil {
		if err := json.Unmarshal(v, &gs); err != nil {
			return fmt.Errorf("grants of %s: corrupt record: %w", g.Identity, err)
		}
	}
	kept := gs[:0]
	for _, old := range gs {
		if old.Role != g.Role {
			kept = append(kept, old)
		}
	}
	v, err := json.Marshal(append(kept, g))
	if err != nil {
		return err
	}
	return b.Put([]byte(g.Identity), v)
}
