package store

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"io/fs"
	"os"
	"strings"
	"sync"
	"time"
)

// FilesDir is the state directory's files/: the bytes of the files the hub
// sends as files (a document in a chat, a download in the panel), each
// named by its SHA-256, from the turn that made it until the outbox no
// longer needs it (docs/uploads.md).
const FilesDir = "files"

// ErrFileTooLarge is what Files.Put returns for content over its limit.
var ErrFileTooLarge = errors.New("file is over the size limit")

// ErrFileChanged is what a file read from Files.Open returns at its end
// when its bytes no longer have the SHA-256 they were stored under.
var ErrFileChanged = errors.New("stored file does not match its SHA-256")

// Files is the content-addressed store of files/: Put writes a file once
// under its SHA-256, Open reads it back checking that hash, Sweep removes
// the files nothing refers to any more. Every file is reached through the
// open files/ directory, by a name that is 64 hexadecimal digits.
type Files struct {
	root *os.Root
	mu   *sync.Mutex // the state directory's: Put's renewal against Sweep
}

// Files is the state directory's file store.
func (d *StateDir) Files() *Files { return &Files{root: d.files, mu: &d.filesMu} }

// FileInfo describes one stored file.
type FileInfo struct {
	SHA256 string
	Size   int64
}

// ValidSHA256 checks that s is a SHA-256 as the store names files: 64
// lower-case hexadecimal digits.
func ValidSHA256(s string) error {
	if len(s) != 2*sha256.Size {
		return fmt.Errorf("%q is not a SHA-256 (accepted: 64 lower-case hexadecimal digits)", s)
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return fmt.Errorf("%q is not a SHA-256 (accepted: 64 lower-case hexadecimal digits)", s)
		}
	}
	return nil
}

// Put stores what r yields, at most max bytes (0: no limit), and returns
// its SHA-256 and size. The bytes go to a temporary file of files/, which
// is fsynced and renamed to the hash, then the directory is fsynced: a
// crash leaves the whole file or none. Content already stored is kept as
// it is (its time is renewed, so a sweep leaves it for another retention).
// More than max bytes is ErrFileTooLarge; nothing is kept then.
func (f *Files) Put(ctx context.Context, r io.Reader, max int64) (sha string, size int64, err error) {
	tmp, name, err := createTemp(f.root, ".", ".put"+tempInfix)
	if err != nil {
		return "", 0, fmt.Errorf("store file: %w", err)
	}
	defer func() {
		if err != nil {
			tmp.Close()
			f.root.Remove(name)
		}
	}()
	h := sha256.New()
	size, err = copyLimited(ctx, io.MultiWriter(tmp, h), r, max)
	if err != nil {
		return "", 0, err
	}
	if err := tmp.Sync(); err != nil {
		return "", 0, fmt.Errorf("store file: sync: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return "", 0, fmt.Errorf("store file: %w", err)
	}
	sha = hex.EncodeToString(h.Sum(nil))
	f.mu.Lock()
	defer f.mu.Unlock()
	if fi, lerr := f.root.Lstat(sha); lerr == nil && fi.Mode().IsRegular() && fi.Size() == size {
		// The same content is there: keep it, renewed.
		f.root.Remove(name)
		now := time.Now()
		if err := f.root.Chtimes(sha, now, now); err != nil {
			return "", 0, fmt.Errorf("store file %s: %w", sha, err)
		}
		return sha, size, nil
	}
	if err := f.root.Rename(name, sha); err != nil {
		return "", 0, fmt.Errorf("store file %s: %w", sha, err)
	}
	if err := SyncDir(f.root, "."); err != nil {
		return "", 0, fmt.Errorf("store file %s: %w", sha, err)
	}
	return sha, size, nil
}

// copyLimited copies r to w, at most max bytes (0: no limit), checking ctx
// between reads.
func copyLimited(ctx context.Context, w io.Writer, r io.Reader, max int64) (int64, error) {
	buf := make([]byte, 64<<10)
	var n int64
	for {
		if err := ctx.Err(); err != nil {
			return n, fmt.Errorf("store file: %w", err)
		}
		k, rerr := r.Read(buf)
		if k > 0 {
			n += int64(k)
			if max > 0 && n > max {
				return n, fmt.Errorf("store file: %w (%d bytes)", ErrFileTooLarge, max)
			}
			if _, err := w.Write(buf[:k]); err != nil {
				return n, fmt.Errorf("store file: %w", err)
			}
		}
		if rerr == io.EOF {
			return n, nil
		}
		if rerr != nil {
			return n, fmt.Errorf("store file: read: %w", rerr)
		}
	}
}

// Open opens the stored file sha for reading. The reader checks the bytes
// against sha as they are read: at the end, bytes that changed since Put
// (a damaged disk, a hand edit) give ErrFileChanged instead of io.EOF, so
// a document is never delivered with other content than it was stored
// with.
func (f *Files) Open(sha string) (io.ReadCloser, FileInfo, error) {
	if err := ValidSHA256(sha); err != nil {
		return nil, FileInfo{}, fmt.Errorf("open stored file: %w", err)
	}
	file, err := openRegular(f.root, sha, os.O_RDONLY, 0)
	if err != nil {
		return nil, FileInfo{}, fmt.Errorf("open stored file %s: %w", sha, err)
	}
	fi, err := file.Stat()
	if err != nil {
		file.Close()
		return nil, FileInfo{}, fmt.Errorf("open stored file %s: %w", sha, err)
	}
	return &checkedFile{f: file, h: sha256.New(), want: sha}, FileInfo{SHA256: sha, Size: fi.Size()}, nil
}

// Stat describes the stored file sha; fs.ErrNotExist when there is none.
func (f *Files) Stat(sha string) (FileInfo, error) {
	if err := ValidSHA256(sha); err != nil {
		return FileInfo{}, fmt.Errorf("stored file: %w", err)
	}
	fi, err := f.root.Lstat(sha)
	if err != nil {
		return FileInfo{}, fmt.Errorf("stored file %s: %w", sha, err)
	}
	if !fi.Mode().IsRegular() {
		return FileInfo{}, fmt.Errorf("stored file %s is %s, not a regular file", sha, FileKind(fi.Mode()))
	}
	return FileInfo{SHA256: sha, Size: fi.Size()}, nil
}

// checkedFile reads a stored file and checks its SHA-256 at the end.
type checkedFile struct {
	f    *os.File
	h    hash.Hash
	want string
}

func (c *checkedFile) Read(p []byte) (int, error) {
	n, err := c.f.Read(p)
	c.h.Write(p[:n])
	if err == io.EOF {
		if got := hex.EncodeToString(c.h.Sum(nil)); got != c.want {
			return n, fmt.Errorf("%w: %s now hashes to %s", ErrFileChanged, c.want, got)
		}
	}
	return n, err
}

func (c *checkedFile) Close() error { return c.f.Close() }

// Sweep removes the stored files that keep does not name and that were
// last stored before before, and the temporary files of a Put cut short
// that are as old. It returns how many files it removed.
func (f *Files) Sweep(keep map[string]bool, before time.Time) (int, error) {
	dir, err := f.root.Open(".")
	if err != nil {
		return 0, fmt.Errorf("sweep stored files: %w", err)
	}
	entries, err := dir.ReadDir(-1)
	dir.Close()
	if err != nil {
		return 0, fmt.Errorf("sweep stored files: %w", err)
	}
	n := 0
	var errs []error
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, e := range entries {
		name := e.Name()
		stored := ValidSHA256(name) == nil
		if (!stored && !strings.HasPrefix(name, ".put"+tempInfix)) || keep[name] {
			continue
		}
		fi, err := e.Info()
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil || !fi.Mode().IsRegular() || !fi.ModTime().Before(before) {
			continue
		}
		if err := f.root.Remove(name); err != nil && !errors.Is(err, fs.ErrNotExist) {
			errs = append(errs, err)
			continue
		}
		n++
	}
	return n, errors.Join(errs...)
}
