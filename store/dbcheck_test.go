package store

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	bolt "go.etcd.io/bbolt"
)

// filledState creates a state root whose hub.db spans many pages and
// returns the database file's path and bytes.
func filledState(t *testing.T) (string, string, []byte) {
	t.Helper()
	dir := t.TempDir()
	s, err := Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	err = s.DB().Update(func(tx *bolt.Tx) error {
		b, err := tx.CreateBucketIfNotExists([]byte("filler"))
		if err != nil {
			return err
		}
		for i := range 300 {
			if err := b.Put([]byte{byte(i >> 8), byte(i)}, bytes.Repeat([]byte{byte(i)}, 1000)); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, DBFile)
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return dir, path, data
}

// TestOpenRefusesTruncatedDatabase: a hub.db cut short is refused with an
// error naming it, and left as it was, instead of crashing the process or
// silently starting over with an empty outbox and ledger.
func TestOpenRefusesTruncatedDatabase(t *testing.T) {
	_, _, full := filledState(t)
	page := int64(os.Getpagesize())
	m0, ok0 := readBoltMeta(bytes.NewReader(full), 0)
	m1, ok1 := readBoltMeta(bytes.NewReader(full), page)
	if !ok0 || !ok1 {
		t.Fatal("no valid meta pages in a fresh database")
	}
	used := int64(max(m0.pgid, m1.pgid)) * page
	if used < 16*page {
		t.Fatalf("the test database uses only %d bytes", used)
	}
	for _, tc := range []struct {
		name string
		size int64
	}{
		{"empty", 0},
		{"two pages", 2 * page},
		{"four pages", 4 * page},
		{"half", used / 2 / page * page},
		{"one page short", used - page},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, DBFile)
			if err := os.WriteFile(path, full[:tc.size], 0o600); err != nil {
				t.Fatal(err)
			}
			s, err := Open(dir, Options{})
			if err == nil {
				s.Close()
				t.Fatalf("a hub.db of %d of the %d bytes it uses opened", tc.size, used)
			}
			if !errors.Is(err, ErrDamagedDB) || !strings.Contains(err.Error(), path) {
				t.Fatalf("error %q does not name %s as damaged", err, path)
			}
			after, _ := os.ReadFile(path)
			if !bytes.Equal(after, full[:tc.size]) {
				t.Fatalf("the refused file changed (%d bytes, was %d)", len(after), tc.size)
			}
		})
	}
}

func TestOpenAcceptsIntactAndGrownDatabase(t *testing.T) {
	dir, path, full := filledState(t)
	s, err := Open(dir, Options{})
	if err != nil {
		t.Fatalf("intact: %v", err)
	}
	s.Close()
	// Extra zero pages past the high-water mark (bbolt grows files ahead).
	if err := os.WriteFile(path, append(full, make([]byte, 4*os.Getpagesize())...), 0o600); err != nil {
		t.Fatal(err)
	}
	s, err = Open(dir, Options{})
	if err != nil {
		t.Fatalf("grown: %v", err)
	}
	s.Close()
}

func TestOpenLeavesForeignFilesToBolt(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, DBFile), []byte(strings.Repeat("not a database\n", 1000)), 0o600); err != nil {
		t.Fatal(err)
	}
	if s, err := Open(dir, Options{}); err == nil {
		s.Close()
		t.Fatal("garbage opened as a database")
	} else if errors.Is(err, ErrDamagedDB) {
		t.Fatalf("garbage is not a cut-short database: %v", err)
	}
}
