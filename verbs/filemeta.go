package verbs

import (
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"
)

// Meta is what the hub records about one file of a session workspace: its
// version (1 when created, plus one for every write, appends included), when
// it was created and last written (UTC, millisecond precision) and the
// encoding hint of its last write. The content itself lives only on disk.
type Meta struct {
	// Path is the file's clean workspace-relative path.
	Path    string
	Version int64
	// Encoding is "utf-8", "base64" (binary content) or "" (not known: the
	// content decides when it is read, as for mounted files).
	Encoding  string
	CreatedAt time.Time
	UpdatedAt time.Time
}

// FileMeta stores file metadata per session. Implementations must be safe
// for concurrent use; the session workspace serialises writes to one
// session itself. Session ids are non-empty and never contain NUL; paths are
// clean workspace-relative paths (CleanPath) other than ".".
//
// store.FileMetaStore keeps it in hub.db; MemoryMeta keeps it in memory.
type FileMeta interface {
	// Get returns the metadata of one file; ok is false when none is recorded.
	Get(session, path string) (m Meta, ok bool, err error)
	// Put records m under m.Path, replacing what was there.
	Put(session string, m Meta) error
	// Rename moves the record of from to to (replacing to's), in one step.
	// A missing record for from is not an error: to's record is removed.
	Rename(session, from, to string) error
	// Delete removes one file's record; a missing record is not an error.
	Delete(session, path string) error
	// DeletePrefix removes the records of every file under directory dir
	// (never dir itself, never "dir2/…" for "dir") and returns how many.
	DeletePrefix(session, dir string) (int, error)
	// List returns the records of every file under dir ("." for all),
	// recursively, sorted by path.
	List(session, dir string) ([]Meta, error)
	// Replace makes files the session's complete set of records in one
	// step; nil drops the session.
	Replace(session string, files []Meta) error
	// Sessions lists the sessions that have records, sorted.
	Sessions() ([]string, error)
}

// ErrBadMetaKey is returned by FileMeta implementations for an empty or
// NUL-carrying session id or path.
var ErrBadMetaKey = errors.New("file metadata: session and path must be non-empty and free of NUL bytes")

// CheckMetaKey validates a session id and (unless path is "") a path for a
// FileMeta implementation.
func CheckMetaKey(session, path string) error {
	if session == "" || strings.IndexByte(session, 0) >= 0 || strings.IndexByte(path, 0) >= 0 {
		return ErrBadMetaKey
	}
	return nil
}

// UnderDir reports whether path lies strictly inside directory dir ("."
// holds everything), by whole path segments.
func UnderDir(path, dir string) bool {
	return dir == "." || dir == "" || strings.HasPrefix(path, dir+"/")
}

// SortMeta sorts records by path, segment by segment, so "a/b" comes
// before "a.b" and listings are stable.
func SortMeta(ms []Meta) {
	sort.Slice(ms, func(i, j int) bool { return pathLess(ms[i].Path, ms[j].Path) })
}

// pathLess orders paths segment by segment.
func pathLess(a, b string) bool {
	for {
		as, arest, amore := strings.Cut(a, "/")
		bs, brest, bmore := strings.Cut(b, "/")
		if as != bs {
			return as < bs
		}
		if !amore || !bmore {
			return !amore && bmore
		}
		a, b = arest, brest
	}
}

// MemoryMeta is a FileMeta kept in memory, for tests and for hubs without a
// database (metadata is lost when the process ends).
type MemoryMeta struct {
	mu sync.Mutex
	m  map[string]map[string]Meta // session → path → meta
}

var _ FileMeta = (*MemoryMeta)(nil)

// NewMemoryMeta returns an empty MemoryMeta.
func NewMemoryMeta() *MemoryMeta { return &MemoryMeta{m: map[string]map[string]Meta{}} }

// Get implements FileMeta.
func (mm *MemoryMeta) Get(session, path string) (Meta, bool, error) {
	if err := CheckMetaKey(session, path); err != nil || path == "" {
		return Meta{}, false, ErrBadMetaKey
	}
	mm.mu.Lock()
	defer mm.mu.Unlock()
	m, ok := mm.m[session][path]
	return m, ok, nil
}

// Put implements FileMeta.
func (mm *MemoryMeta) Put(session string, m Meta) error {
	if err := CheckMetaKey(session, m.Path); err != nil || m.Path == "" {
		return ErrBadMetaKey
	}
	mm.mu.Lock()
	defer mm.mu.Unlock()
	if mm.m[session] == nil {
		mm.m[session] = map[string]Meta{}
	}
	mm.m[session][m.Path] = m
	return nil
}

// Rename implements FileMeta.
func (mm *MemoryMeta) Rename(session, from, to string) error {
	if CheckMetaKey(session, from) != nil || CheckMetaKey(session, to) != nil || from == "" || to == "" {
		return ErrBadMetaKey
	}
	mm.mu.Lock()
	defer mm.mu.Unlock()
	files := mm.m[session]
	m, ok := files[from]
	delete(files, from)
	delete(files, to)
	if ok {
		m.Path = to
		files[to] = m
	}
	return nil
}

// Delete implements FileMeta.
func (mm *MemoryMeta) Delete(session, path string) error {
	if err := CheckMetaKey(session, path); err != nil || path == "" {
		return ErrBadMetaKey
	}
	mm.mu.Lock()
	defer mm.mu.Unlock()
	delete(mm.m[session], path)
	return nil
}

// DeletePrefix implements FileMeta.
func (mm *MemoryMeta) DeletePrefix(session, dir string) (int, error) {
	if err := CheckMetaKey(session, dir); err != nil {
		return 0, err
	}
	mm.mu.Lock()
	defer mm.mu.Unlock()
	n := 0
	for p := range mm.m[session] {
		if UnderDir(p, dir) {
			delete(mm.m[session], p)
			n++
		}
	}
	return n, nil
}

// List implements FileMeta.
func (mm *MemoryMeta) List(session, dir string) ([]Meta, error) {
	if err := CheckMetaKey(session, dir); err != nil {
		return nil, err
	}
	mm.mu.Lock()
	var out []Meta
	for p, m := range mm.m[session] {
		if UnderDir(p, dir) {
			out = append(out, m)
		}
	}
	mm.mu.Unlock()
	SortMeta(out)
	return out, nil
}

// Replace implements FileMeta.
func (mm *MemoryMeta) Replace(session string, files []Meta) error {
	if err := CheckMetaKey(session, ""); err != nil {
		return err
	}
	next := make(map[string]Meta, len(files))
	for _, m := range files {
		if CheckMetaKey(session, m.Path) != nil || m.Path == "" {
			return fmt.Errorf("replace %s: %w", session, ErrBadMetaKey)
		}
		next[m.Path] = m
	}
	mm.mu.Lock()
	defer mm.mu.Unlock()
	if len(next) == 0 {
		delete(mm.m, session)
		return nil
	}
	mm.m[session] = next
	return nil
}

// Sessions implements FileMeta.
func (mm *MemoryMeta) Sessions() ([]string, error) {
	mm.mu.Lock()
	out := make([]string, 0, len(mm.m))
	for s, files := range mm.m {
		if len(files) > 0 {
			out = append(out, s)
		}
	}
	mm.mu.Unlock()
	sort.Strings(out)
	return out, nil
}
