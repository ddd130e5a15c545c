package store

import (
	bolt "go.etcd.io/bbolt"
)

const (
	cursorBucket  = "cursors"
	cursorVersion = 1
)

// Cursors is a durable store of named positions for one adapter (the
// Telegram getUpdates offset, say), kept in hub.db. Names are scoped by the
// adapter's prefix, so adapters cannot read or move each other's positions.
type Cursors struct {
	db     *bolt.DB
	prefix string
}

// Cursors returns the cursor store of one adapter: every name it uses is
// stored as "<scope>.<name>".
func (s *State) Cursors(scope string) *Cursors {
	return &Cursors{db: s.DB(), prefix: scope + "."}
}

// Cursor returns a named cursor, or "" when none is stored.
func (c *Cursors) Cursor(name string) (string, error) {
	var v string
	err := c.db.View(func(tx *bolt.Tx) error {
		if b := tx.Bucket([]byte(cursorBucket)); b != nil {
			v = string(b.Get([]byte(c.prefix + name)))
		}
		return nil
	})
	return v, err
}

// SetCursor stores a named cursor durably.
func (c *Cursors) SetCursor(name, value string) error {
	return c.db.Update(func(tx *bolt.Tx) error {
		b, _, err := EnsureBucket(tx, cursorBucket, cursorVersion)
		if err != nil {
			return err
		}
		return b.Put([]byte(c.prefix+name), []byte(value))
	})
}
