package store

import (
	"errors"
	"fmt"

	bolt "go.etcd.io/bbolt"
)

const (
	choicesBucket  = "workspace_choices"
	choicesVersion = 1
)

// Choices keeps each conversation's choice of workspace (/use NAME) in
// hub.db, keyed by the conversation's reply key (web,
// chat:telegram:<chat>[:<thread>], …), so it survives restarts.
type Choices struct {
	db *bolt.DB
}

// Choices returns the store of workspace choices.
func (s *State) Choices() *Choices { return &Choices{db: s.DB()} }

// Workspace returns the workspace chosen for key, "" when none is.
func (c *Choices) Workspace(key string) (string, error) {
	var v string
	err := c.db.View(func(tx *bolt.Tx) error {
		if b := tx.Bucket([]byte(choicesBucket)); b != nil {
			v = string(b.Get([]byte(key)))
		}
		return nil
	})
	if err != nil {
		return "", fmt.Errorf("read the workspace chosen for %s: %w", key, err)
	}
	return v, nil
}

// SetWorkspace records name as key's workspace; "" forgets the choice.
func (c *Choices) SetWorkspace(key, name string) error {
	if key == "" {
		return errors.New("workspace choice: empty conversation key")
	}
	err := c.db.Update(func(tx *bolt.Tx) error {
		b, _, err := EnsureBucket(tx, choicesBucket, choicesVersion)
		if err != nil {
			return err
		}
		if name == "" {
			return b.Delete([]byte(key))
		}
		return b.Put([]byte(key), []byte(name))
	})
	if err != nil {
		return fmt.Errorf("record the workspace chosen for %s: %w", key, err)
	}
	return nil
}

// All returns every recorded choice, by conversation key.
func (c *Choices) All() (map[string]string, error) {
	out := map[string]string{}
	err := c.db.View(func(tx *bolt.Tx) error {
		b := tx.Bucket([]byte(choicesBucket))
		if b == nil {
			return nil
		}
		return b.ForEach(func(k, v []byte) error {
			out[string(k)] = string(v)
			return nil
		})
	})
	return out, err
}
