// Package boltmeta keeps the file metadata of session workspaces
// (verbs.FileMeta) in hub.db, the state root's database.
package boltmeta

import (
	"bytes"
	"encoding/json"
	"fmt"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/a6afc2ce/hermes-hub/store"
	"github.com/a6afc2ce/hermes-hub/verbs"
)

// Bucket of the session workspaces' file metadata.
const (
	FileMetaBucket  = "vfs_files"
	fileMetaVersion = 1
)

// FileMetaStore keeps the versions and times of session workspace files in
// hub.db (docs/state.md, "hub.db"), one key per file: "<session>\x00<path>", so one
// session's files are a contiguous, path-ordered key range. Values are JSON.
// It implements verbs.FileMeta.
type FileMetaStore struct{ db *bolt.DB }

var _ verbs.FileMeta = (*FileMetaStore)(nil)

// fileMetaRecord is the stored value of one file.
type fileMetaRecord struct {
	Version   int64     `json:"version"`
	Encoding  string    `json:"encoding,omitempty"`
	CreatedAt time.Time `json:"created_at"`
	UpdatedAt time.Time `json:"updated_at"`
}

// Open creates the bucket (schema version 1) if needed.
func Open(db *bolt.DB) (*FileMetaStore, error) {
	err := db.Update(func(tx *bolt.Tx) error {
		_, _, err := store.EnsureBucket(tx, FileMetaBucket, fileMetaVersion)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("open file metadata: %w", err)
	}
	return &FileMetaStore{db: db}, nil
}

func metaKey(session, path string) []byte {
	k := make([]byte, 0, len(session)+1+len(path))
	k = append(k, session...)
	k = append(k, 0)
	return append(k, path...)
}

func encodeMeta(m verbs.Meta) ([]byte, error) {
	return json.Marshal(fileMetaRecord{Version: m.Version, Encoding: m.Encoding, CreatedAt: m.CreatedAt.UTC(), UpdatedAt: m.UpdatedAt.UTC()})
}

func decodeMeta(session, path string, v []byte) (verbs.Meta, error) {
	var r fileMetaRecord
	if err := json.Unmarshal(v, &r); err != nil {
		return verbs.Meta{}, fmt.Errorf("file metadata of %s in session %s is corrupt: %w", path, session, err)
	}
	return verbs.Meta{Path: path, Version: r.Version, Encoding: r.Encoding, CreatedAt: r.CreatedAt, UpdatedAt: r.UpdatedAt}, nil
}

// bucket returns the bucket in tx, failing clearly if OpenFileMeta was not
// called on this database.
func fileMetaBucket(tx *bolt.Tx) (*bolt.Bucket, error) {
	b := tx.Bucket([]byte(FileMetaBucket))
	if b == nil {
		return nil, fmt.Errorf("file metadata: bucket %q does not exist (OpenFileMeta creates it)", FileMetaBucket)
	}
	return b, nil
}

func checkKey(session, path string) error {
	if path == "" {
		return verbs.ErrBadMetaKey
	}
	return verbs.CheckMetaKey(session, path)
}

// Get implements verbs.FileMeta.
func (s *FileMetaStore) Get(session, path string) (m verbs.Meta, ok bool, err error) {
	if err := checkKey(session, path); err != nil {
		return m, false, err
	}
	err = s.db.View(func(tx *bolt.Tx) error {
		b, err := fileMetaBucket(tx)
		if err != nil {
			return err
		}
		v := b.Get(metaKey(session, path))
		if v == nil {
			return nil
		}
		m, err = decodeMeta(session, path, v)
		ok = err == nil
		return err
	})
	return m, ok, err
}

// Put implements verbs.FileMeta.
func (s *FileMetaStore) Put(session string, m verbs.Meta) error {
	if err := checkKey(session, m.Path); err != nil {
		return err
	}
	v, err := encodeMeta(m)
	if err != nil {
		return err
	}
	return s.db.Update(func(tx *bolt.Tx) error {
		b, err := fileMetaBucket(tx)
		if err != nil {
			return err
		}
		return b.Put(metaKey(session, m.Path), v)
	})
}

// Rename implements verbs.FileMeta in one transaction.
func (s *FileMetaStore) Rename(session, from, to string) error {
	if err := checkKey(session, from); err != nil {
		return err
	}
	if err := checkKey(session, to); err != nil {
		return err
	}
	return s.db.Update(func(tx *bolt.Tx) error {
		b, err := fileMetaBucket(tx)
		if err != nil {
			return err
		}
		v := b.Get(metaKey(session, from))
		if v != nil {
			v = append([]byte(nil), v...)
		}
		if err := b.Delete(metaKey(session, from)); err != nil {
			return err
		}
		if v == nil {
			return b.Delete(metaKey(session, to))
		}
		return b.Put(metaKey(session, to), v)
	})
}

// Delete implements verbs.FileMeta.
func (s *FileMetaStore) Delete(session, path string) error {
	if err := checkKey(session, path); err != nil {
		return err
	}
	return s.db.Update(func(tx *bolt.Tx) error {
		b, err := fileMetaBucket(tx)
		if err != nil {
			return err
		}
		return b.Delete(metaKey(session, path))
	})
}

// dirPrefix is the key prefix of every file under dir in session.
func dirPrefix(session, dir string) []byte {
	if dir == "." || dir == "" {
		return metaKey(session, "")
	}
	return metaKey(session, dir+"/")
}

// DeletePrefix implements verbs.FileMeta.
func (s *FileMetaStore) DeletePrefix(session, dir string) (int, error) {
	if err := verbs.CheckMetaKey(session, dir); err != nil {
		return 0, err
	}
	n := 0
	err := s.db.Update(func(tx *bolt.Tx) error {
		b, err := fileMetaBucket(tx)
		if err != nil {
			return err
		}
		n, err = deletePrefix(b, dirPrefix(session, dir))
		return err
	})
	return n, err
}

func deletePrefix(b *bolt.Bucket, prefix []byte) (int, error) {
	var keys [][]byte
	c := b.Cursor()
	for k, _ := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, _ = c.Next() {
		keys = append(keys, append([]byte(nil), k...))
	}
	for _, k := range keys {
		if err := b.Delete(k); err != nil {
			return 0, err
		}
	}
	return len(keys), nil
}

// List implements verbs.FileMeta.
func (s *FileMetaStore) List(session, dir string) ([]verbs.Meta, error) {
	if err := verbs.CheckMetaKey(session, dir); err != nil {
		return nil, err
	}
	var out []verbs.Meta
	err := s.db.View(func(tx *bolt.Tx) error {
		b, err := fileMetaBucket(tx)
		if err != nil {
			return err
		}
		prefix := dirPrefix(session, dir)
		skip := len(session) + 1
		c := b.Cursor()
		for k, v := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, v = c.Next() {
			m, err := decodeMeta(session, string(k[skip:]), v)
			if err != nil {
				return err
			}
			out = append(out, m)
		}
		return nil
	})
	verbs.SortMeta(out)
	return out, err
}

// Replace implements verbs.FileMeta in one transaction.
func (s *FileMetaStore) Replace(session string, files []verbs.Meta) error {
	if err := verbs.CheckMetaKey(session, ""); err != nil {
		return err
	}
	vals := make([][]byte, len(files))
	for i, m := range files {
		if err := checkKey(session, m.Path); err != nil {
			return fmt.Errorf("replace file metadata of %s: %w", session, err)
		}
		v, err := encodeMeta(m)
		if err != nil {
			return err
		}
		vals[i] = v
	}
	return s.db.Update(func(tx *bolt.Tx) error {
		b, err := fileMetaBucket(tx)
		if err != nil {
			return err
		}
		if _, err := deletePrefix(b, metaKey(session, "")); err != nil {
			return err
		}
		for i, m := range files {
			if err := b.Put(metaKey(session, m.Path), vals[i]); err != nil {
				return err
			}
		}
		return nil
	})
}

// Sessions implements verbs.FileMeta.
func (s *FileMetaStore) Sessions() ([]string, error) {
	var out []string
	err := s.db.View(func(tx *bolt.Tx) error {
		b, err := fileMetaBucket(tx)
		if err != nil {
			return err
		}
		c := b.Cursor()
		for k, _ := c.First(); k != nil; {
			i := bytes.IndexByte(k, 0)
			if i < 0 {
				return fmt.Errorf("file metadata: key %q has no session separator", k)
			}
			sess := string(k[:i])
			out = append(out, sess)
			// Skip the rest of this session: seek past "<session>\x00…".
			k, _ = c.Seek(append([]byte(sess), 1))
		}
		return nil
	})
	return out, err
}
