package store

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"io/fs"
	"os"
	"path/filepath"
)

// ErrDamagedDB matches the error Open returns for a hub.db that is cut
// short.
var ErrDamagedDB = errors.New("the database file is damaged")

// bbolt's file format: every page starts with a 16-byte header; pages 0
// and 1 hold the two meta records, the one with the higher transaction id
// being current. A meta record is magic, version, page size, flags, root
// bucket (root page, sequence), freelist page, high-water page id, txid
// and a checksum (FNV-64a of the 56 bytes before it), in native byte
// order.
const (
	boltPageHeader = 16
	boltMetaSize   = 64
	boltMagic      = 0xED0CDAED
	boltVersion    = 2
)

type boltMeta struct {
	pageSize uint32
	pgid     uint64 // high-water mark: pages 0..pgid-1 are in the file
	txid     uint64
}

// checkDBFile refuses an existing database file that bbolt would misread:
// an empty file (bbolt would silently start a new database, losing the
// outbox, the turn ledger and the cursors) or one shorter than its current
// meta record says (bbolt would crash on the missing pages, and may write
// to the file first). A file without a valid meta record is left to bbolt,
// which refuses it itself. So is anything but a regular file (a symbolic
// link, even to a database). Nothing is written.
func checkDBFile(root *os.Root, name string) error {
	path := filepath.Join(root.Name(), name)
	if err := regularOrMissing(root, name); err != nil {
		return fmt.Errorf("open state: %w", err)
	}
	f, err := openRegular(root, name, os.O_RDONLY, 0)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("open state: %w", err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return fmt.Errorf("open state: %w", err)
	}
	size := fi.Size()
	if size == 0 {
		return fmt.Errorf("open state: %s is empty (0 bytes): %w; it was truncated, so the outbox and the turn ledger it held are gone: restore it from a backup, or move it aside to start with an empty state", path, ErrDamagedDB)
	}
	m0, ok0 := readBoltMeta(f, 0)
	pageSize := int64(os.Getpagesize())
	if ok0 {
		pageSize = int64(m0.pageSize)
	}
	m1, ok1 := readBoltMeta(f, pageSize)
	cur, ok := m0, ok0
	if ok1 && (!ok0 || m1.txid > m0.txid) {
		cur, ok = m1, true
	}
	if !ok {
		return nil
	}
	if want := int64(cur.pgid) * int64(cur.pageSize); size < want {
		return fmt.Errorf("open state: %s is %d bytes but its last transaction needs %d: %w (cut short); restore it from a backup, or move it aside to start with an empty state", path, size, want, ErrDamagedDB)
	}
	return nil
}

// readBoltMeta reads and validates the meta record of the page at off.
func readBoltMeta(r io.ReaderAt, off int64) (boltMeta, bool) {
	var b [boltMetaSize]byte
	if _, err := r.ReadAt(b[:], off+boltPageHeader); err != nil {
		return boltMeta{}, false
	}
	ne := binary.NativeEndian
	if ne.Uint32(b[0:]) != boltMagic || ne.Uint32(b[4:]) != boltVersion {
		return boltMeta{}, false
	}
	h := fnv.New64a()
	h.Write(b[:56])
	if h.Sum64() != ne.Uint64(b[56:]) {
		return boltMeta{}, false
	}
	m := boltMeta{pageSize: ne.Uint32(b[8:]), pgid: ne.Uint64(b[40:]), txid: ne.Uint64(b[48:])}
	if m.pageSize < 512 || m.pageSize&(m.pageSize-1) != 0 {
		return boltMeta{}, false
	}
	return m, true
}
