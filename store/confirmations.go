package store

import (
	"encoding/json"
	"errors"
	"fmt"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/a6afc2ce/hermes-hub/chat"
)

const (
	confirmationsBucket  = "confirmations"
	confirmationsVersion = 1
)

// The states of a held call (docs/chatops.md#confirmation-before-harm).
const (
	ConfirmPending   = "pending"   // waiting for the caller's Run or Cancel
	ConfirmApproving = "approving" // the caller pressed Run; waiting for an approver
	ConfirmRunning   = "running"   // decided: the call runs (or ran, if the hub died)
	ConfirmDone      = "done"      // the call ran and its answer is enqueued
	ConfirmCancelled = "cancelled" // the caller cancelled it
	ConfirmRejected  = "rejected"  // an approver rejected it
	ConfirmExpired   = "expired"   // no decision before it expired
)

// Confirmation is a call held until its caller (and, when its role names
// approvers, someone else) decides: kept in hub.db, so that a held call
// survives a restart.
type Confirmation struct {
	ID string `json:"id"`
	// In is the message that asked for the call: who, in which chat,
	// what (its text), and where the answer goes.
	In chat.Inbound `json:"in"`
	// Verb is the verb's registered name, Call the call as the caller
	// sees it in the request (the exact envelope).
	Verb string `json:"verb"`
	Call string `json:"call"`
	// Role is the caller's role whose confirm holds the verb; Approvers
	// the roles that must approve (none: the caller's Run suffices).
	Role      string   `json:"role"`
	Approvers []string `json:"approvers,omitempty"`
	// Runs is, for a named command, the call it stands for; Workspace
	// the workspace the prompt named, where the call runs.
	Runs      string    `json:"runs,omitempty"`
	Workspace string    `json:"workspace"`
	State     string    `json:"state"`
	Created   time.Time `json:"created"`
	Expires   time.Time `json:"expires"`
	// Presses are the buttons pressed, in order, with who pressed them and
	// what came of it.
	Presses []Press `json:"presses,omitempty"`
}

// Press is one press of a button on a held call.
type Press struct {
	Identity string    `json:"identity"`
	Action   string    `json:"action"`
	Result   string    `json:"result"`
	At       time.Time `json:"at"`
}

// ErrNoConfirmation is returned for a held call hub.db does not hold.
var ErrNoConfirmation = errors.New("no such held call")

// Confirmations keeps held calls in hub.db, by id. Its writes are durable
// when they return.
type Confirmations struct{ db *DB }

// OpenConfirmations creates the held calls' bucket in db.
func OpenConfirmations(db *DB) (*Confirmations, error) {
	err := db.Update(func(tx *bolt.Tx) error {
		_, _, err := EnsureBucket(tx, confirmationsBucket, confirmationsVersion)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("open held calls: %w", err)
	}
	return &Confirmations{db: db}, nil
}

// Add records a new held call; an id that exists is an error.
func (c *Confirmations) Add(cf Confirmation) error {
	v, err := json.Marshal(cf)
	if err != nil {
		return fmt.Errorf("held call %s: %w", cf.ID, err)
	}
	err = c.db.Update(func(tx *bolt.Tx) error {
		b := tx.Bucket([]byte(confirmationsBucket))
		if b.Get([]byte(cf.ID)) != nil {
			return fmt.Errorf("held call %s exists", cf.ID)
		}
		return b.Put([]byte(cf.ID), v)
	})
	if err != nil {
		return fmt.Errorf("record held call %s: %w", cf.ID, err)
	}
	return nil
}

// Get returns the held call id (ErrNoConfirmation when none).
func (c *Confirmations) Get(id string) (Confirmation, error) {
	var cf Confirmation
	err := c.db.View(func(tx *bolt.Tx) error {
		v := tx.Bucket([]byte(confirmationsBucket)).Get([]byte(id))
		if v == nil {
			return ErrNoConfirmation
		}
		return json.Unmarshal(v, &cf)
	})
	if err != nil {
		return Confirmation{}, fmt.Errorf("held call %s: %w", id, err)
	}
	return cf, nil
}

// Update reads the held call id, lets f change it and writes it back, in
// one transaction: two presses at once see one another. An error of f
// changes nothing and is returned as it is.
func (c *Confirmations) Update(id string, f func(*Confirmation) error) (Confirmation, error) {
	var cf Confirmation
	var ferr error
	err := c.db.Update(func(tx *bolt.Tx) error {
		b := tx.Bucket([]byte(confirmationsBucket))
		v := b.Get([]byte(id))
		if v == nil {
			return ErrNoConfirmation
		}
		if err := json.Unmarshal(v, &cf); err != nil {
			return err
		}
		if ferr = f(&cf); ferr != nil {
			return ferr
		}
		nv, err := json.Marshal(cf)
		if err != nil {
			return err
		}
		return b.Put([]byte(id), nv)
	})
	if ferr != nil {
		return cf, ferr
	}
	if err != nil {
		return cf, fmt.Errorf("held call %s: %w", id, err)
	}
	return cf, nil
}

// List returns every held call kept, in id order.
func (c *Confirmations) List() ([]Confirmation, error) {
	var out []Confirmation
	err := c.db.View(func(tx *bolt.Tx) error {
		return tx.Bucket([]byte(confirmationsBucket)).ForEach(func(k, v []byte) error {
			var cf Confirmation
			if err := json.Unmarshal(v, &cf); err != nil {
				return fmt.Errorf("held call %s: %w", k, err)
			}
			out = append(out, cf)
			return nil
		})
	})
	return out, err
}

// Prune forgets the held calls that expired, or were decided, before
// cutoff; it returns how many.
func (c *Confirmations) Prune(cutoff time.Time) (int, error) {
	all, err := c.List()
	if err != nil {
		return 0, err
	}
	n := 0
	err = c.db.Update(func(tx *bolt.Tx) error {
		b := tx.Bucket([]byte(confirmationsBucket))
		for _, cf := range all {
			last := cf.Expires
			if k := len(cf.Presses); k > 0 && cf.Presses[k-1].At.After(last) {
				last = cf.Presses[k-1].At
			}
			if last.Before(cutoff) && cf.State != ConfirmRunning {
				if err := b.Delete([]byte(cf.ID)); err != nil {
					return err
				}
				n++
			}
		}
		return nil
	})
	return n, err
}
