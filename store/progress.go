package store

import (
	"encoding/json"
	"fmt"
	"sort"
	"time"

	bolt "go.etcd.io/bbolt"
)

const (
	progressBucket  = "progress"
	progressVersion = 1
)

// ProgressMessage is a platform message that shows a running call's
// progress. It is recorded when the message is created and removed when it
// is finalised, so a message a crash or a restart left ticking is found
// and finalised at the next start.
type ProgressMessage struct {
	TurnID string `json:"turn_id"`
	// Target is the chat the message is in (a chat.Key), MessageID the
	// platform's id of the message; Meta is the turn's reply meta (a
	// Discord interaction's token, say), which the platform needs to edit it.
	Target    string            `json:"target"`
	MessageID string            `json:"message_id"`
	Meta      map[string]string `json:"meta,omitempty"`
	Verb      string            `json:"verb,omitempty"`
	Started   time.Time         `json:"started"`
}

// ProgressMessages records the progress messages of running calls in
// hub.db.
type ProgressMessages struct{ db *bolt.DB }

// OpenProgressMessages creates the bucket when missing.
func OpenProgressMessages(db *bolt.DB) (*ProgressMessages, error) {
	err := db.Update(func(tx *bolt.Tx) error {
		_, _, err := EnsureBucket(tx, progressBucket, progressVersion)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("open progress messages: %w", err)
	}
	return &ProgressMessages{db: db}, nil
}

// PutProgress records (or replaces) the progress message of a turn.
func (p *ProgressMessages) PutProgress(m ProgressMessage) error {
	data, err := json.Marshal(m)
	if err != nil {
		return fmt.Errorf("progress message of %s: %w", m.TurnID, err)
	}
	return p.db.Update(func(tx *bolt.Tx) error {
		b := tx.Bucket([]byte(progressBucket))
		if b == nil {
			return fmt.Errorf("progress message of %s: bucket %s missing", m.TurnID, progressBucket)
		}
		return b.Put([]byte(m.TurnID), data)
	})
}

// DeleteProgress forgets the progress message of a turn; an unknown turn
// is not an error.
func (p *ProgressMessages) DeleteProgress(turnID string) error {
	return p.db.Update(func(tx *bolt.Tx) error {
		if b := tx.Bucket([]byte(progressBucket)); b != nil {
			return b.Delete([]byte(turnID))
		}
		return nil
	})
}

// ProgressMessages lists every recorded progress message, oldest first. A
// record that does not decode is skipped and reported in the error, after
// the others.
func (p *ProgressMessages) ProgressMessages() ([]ProgressMessage, error) {
	var out []ProgressMessage
	var bad []string
	err := p.db.View(func(tx *bolt.Tx) error {
		b := tx.Bucket([]byte(progressBucket))
		if b == nil {
			return nil
		}
		return b.ForEach(func(k, v []byte) error {
			var m ProgressMessage
			if err := json.Unmarshal(v, &m); err != nil || m.TurnID != string(k) {
				bad = append(bad, string(k))
				return nil
			}
			out = append(out, m)
			return nil
		})
	})
	sort.Slice(out, func(i, j int) bool { return out[i].Started.Before(out[j].Started) })
	if err == nil && len(bad) > 0 {
		err = fmt.Errorf("progress messages: unreadable records %v", bad)
	}
	return out, err
}
