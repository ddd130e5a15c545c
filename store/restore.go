package store

import (
	"archive/tar"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"time"

	bolt "go.etcd.io/bbolt"
)

// Defaults of RestoreOptions.
const (
	DefaultRestoreMaxBytes   = 64 << 30
	DefaultRestoreMaxMembers = 1 << 20
)

// maxManifestBytes bounds a backup's manifest.
const maxManifestBytes = 64 << 20

// maxMemberName bounds a member's name.
const maxMemberName = 1024

// ErrBadBackup matches every error that says an archive is not a whole,
// valid hub backup.
var ErrBadBackup = errors.New("not a valid hub backup")

// RestoreOptions bound what a backup may hold; zero values mean the
// defaults.
type RestoreOptions struct {
	// MaxBytes bounds the total size of the members. Default 64 GiB.
	MaxBytes int64
	// MaxMembers bounds their number. Default 1048576.
	MaxMembers int
}

func (o RestoreOptions) withDefaults() RestoreOptions {
	if o.MaxBytes <= 0 {
		o.MaxBytes = DefaultRestoreMaxBytes
	}
	if o.MaxMembers <= 0 {
		o.MaxMembers = DefaultRestoreMaxMembers
	}
	return o
}

// badBackup is an ErrBadBackup saying what is wrong.
func badBackup(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrBadBackup, fmt.Sprintf(format, args...))
}

// VerifyBackup reads a whole backup from r and checks it as RestoreBackup
// does (every member's name, type, size and SHA-256 against the manifest),
// writing nothing. It returns the manifest.
func VerifyBackup(r io.Reader, opts RestoreOptions) (BackupManifest, error) {
	return readBackup(r, opts, func(_ string, _ int64, body io.Reader) error {
		_, err := io.Copy(io.Discard, body)
		return err
	})
}

// RestoreBackup extracts the backup read from r into dir, which must be
// empty or missing (it is created owner-only). Every member is checked
// before it is written: only regular files, with relative names inside the
// state's layout (no absolute name, no "..", no link, no device), within
// opts' bounds, and extracted through an os.Root of dir; once the archive is
// read, every checksum must match its manifest and hub.db must pass
// bbolt's consistency check. On any error everything written is removed
// again, leaving dir empty.
func RestoreBackup(r io.Reader, dir string, opts RestoreOptions) (m BackupManifest, err error) {
	if err := emptyStateDir(dir); err != nil {
		return BackupManifest{}, err
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		return BackupManifest{}, fmt.Errorf("restore: %w", err)
	}
	defer root.Close()
	defer func() {
		if err != nil {
			if cerr := emptyRoot(root); cerr != nil {
				err = errors.Join(err, fmt.Errorf("restore: removing what was written: %w", cerr))
			}
		}
	}()
	m, err = readBackup(r, opts, func(name string, size int64, body io.Reader) error {
		return extract(root, name, body)
	})
	if err != nil {
		return BackupManifest{}, err
	}
	if err := syncTree(root); err != nil {
		return BackupManifest{}, fmt.Errorf("restore: %w", err)
	}
	if err := checkRestoredDB(root, DBFile); err != nil {
		return BackupManifest{}, err
	}
	return m, nil
}

// emptyStateDir makes sure dir exists, is owner-only and holds nothing.
func emptyStateDir(dir string) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("restore: %w", err)
	}
	ents, err := os.ReadDir(dir)
	if err != nil {
		return fmt.Errorf("restore: %w", err)
	}
	if len(ents) > 0 {
		names := make([]string, 0, 3)
		for _, e := range ents[:min(len(ents), 3)] {
			names = append(names, e.Name())
		}
		more := ""
		if len(ents) > 3 {
			more = ", …"
		}
		return fmt.Errorf("state directory %s is not empty (it holds %s%s): a backup is restored only into an empty directory; move this one away first (mv %s %s.old) or restore into a new one (--state DIR)",
			dir, strings.Join(names, ", "), more, dir, dir)
	}
	if err := os.Chmod(dir, 0o700); err != nil {
		return fmt.Errorf("restore: %w", err)
	}
	return nil
}

// extract writes one member under root, creating its directories.
func extract(root *os.Root, name string, body io.Reader) error {
	if dir := path.Dir(name); dir != "." {
		if err := root.MkdirAll(dir, 0o700); err != nil {
			return fmt.Errorf("restore %s: %w", name, err)
		}
	}
	f, err := root.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return fmt.Errorf("restore %s: %w", name, err)
	}
	_, err = io.Copy(f, body)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("restore %s: %w", name, err)
	}
	return nil
}

// readBackup reads a backup from r, handing each member but the manifest to
// put with its content (which put must read to its end), and checks what
// was read against the manifest, which must come last.
func readBackup(r io.Reader, opts RestoreOptions, put func(name string, size int64, body io.Reader) error) (BackupManifest, error) {
	opts = opts.withDefaults()
	tr := tar.NewReader(r)
	read := map[string]BackupMember{}
	var total int64
	var manifest *BackupManifest
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return BackupManifest{}, badBackup("the archive is damaged or cut short: %v", err)
		}
		if manifest != nil {
			return BackupManifest{}, badBackup("member %q comes after the manifest", hdr.Name)
		}
		if err := checkMember(hdr); err != nil {
			return BackupManifest{}, err
		}
		if hdr.Name == BackupManifestName {
			if manifest, err = readManifest(tr, hdr.Size); err != nil {
				return BackupManifest{}, err
			}
			continue
		}
		if _, dup := read[hdr.Name]; dup {
			return BackupManifest{}, badBackup("member %q appears twice", hdr.Name)
		}
		if len(read) >= opts.MaxMembers {
			return BackupManifest{}, badBackup("more than %d members", opts.MaxMembers)
		}
		if total += hdr.Size; total > opts.MaxBytes {
			return BackupManifest{}, badBackup("its members hold more than %d bytes (member %q brings them to %d)", opts.MaxBytes, hdr.Name, total)
		}
		h := sha256.New()
		if err := put(hdr.Name, hdr.Size, io.TeeReader(tr, h)); err != nil {
			if errors.Is(err, io.ErrUnexpectedEOF) {
				return BackupManifest{}, badBackup("the archive is cut short in member %q", hdr.Name)
			}
			return BackupManifest{}, err
		}
		read[hdr.Name] = BackupMember{Name: hdr.Name, Size: hdr.Size, SHA256: hex.EncodeToString(h.Sum(nil))}
	}
	if manifest == nil {
		return BackupManifest{}, badBackup("the archive has no manifest (%s): it is incomplete, cut short while it was written, or not a hub backup", BackupManifestName)
	}
	return *manifest, checkManifest(manifest, read)
}

// checkMember refuses anything but a regular file named inside the
// state's layout.
func checkMember(hdr *tar.Header) error {
	if err := checkMemberName(hdr.Name); err != nil {
		return err
	}
	if hdr.Typeflag != tar.TypeReg {
		return badBackup("member %q is %s: a hub backup holds only regular files", hdr.Name, memberType(hdr.Typeflag))
	}
	if hdr.Size < 0 {
		return badBackup("member %q has a negative size", hdr.Name)
	}
	return nil
}

func memberType(t byte) string {
	switch t {
	case tar.TypeSymlink:
		return "a symbolic link"
	case tar.TypeLink:
		return "a hard link"
	case tar.TypeChar, tar.TypeBlock:
		return "a device"
	case tar.TypeFifo:
		return "a named pipe"
	case tar.TypeDir:
		return "a directory"
	}
	return fmt.Sprintf("of type %q", t)
}

// checkMemberName accepts a clean relative name of the state's layout.
func checkMemberName(name string) error {
	switch {
	case name == "" || len(name) > maxMemberName:
		return badBackup("a member's name is empty or longer than %d bytes", maxMemberName)
	case strings.ContainsAny(name, "\\\x00"):
		return badBackup("member %q has a backslash or NUL in its name", name)
	case path.IsAbs(name) || filepath.IsAbs(name) || filepath.VolumeName(name) != "":
		return badBackup("member %q has an absolute name", name)
	case slices.Contains(strings.Split(name, "/"), ".."):
		return badBackup("member %q climbs out with ..", name)
	case path.Clean(name) != name:
		return badBackup("member %q is not a clean relative name", name)
	}
	if name == BackupManifestName || name == DBFile || name == ChannelDirectory || name == NATSSeedFile {
		return nil
	}
	top, rest, _ := strings.Cut(name, "/")
	switch top {
	case "pma", ProcDir:
		if rest != "" {
			return nil
		}
	case FilesDir:
		if ValidSHA256(rest) == nil {
			return nil
		}
	case FlowsDir:
		run, file, _ := strings.Cut(rest, "/")
		if _, err := ParseRunID(run); err == nil && file != "" {
			return nil
		}
	}
	return badBackup("member %q is not part of a hub's state (accepted: %s, %s, %s, pma/…, flows/<run_id>/…, files/<sha256>, proc/…)", name, DBFile, ChannelDirectory, NATSSeedFile)
}

// readManifest decodes the manifest member strictly.
func readManifest(r io.Reader, size int64) (*BackupManifest, error) {
	if size > maxManifestBytes {
		return nil, badBackup("its manifest is over %d bytes", maxManifestBytes)
	}
	data, err := io.ReadAll(io.LimitReader(r, size))
	if err != nil {
		return nil, badBackup("the archive is cut short in its manifest: %v", err)
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var m BackupManifest
	if err := dec.Decode(&m); err != nil {
		return nil, badBackup("its manifest does not parse: %v", err)
	}
	if m.Format != BackupFormat {
		return nil, badBackup("its manifest is of format %q, not %q", m.Format, BackupFormat)
	}
	if m.Version < 1 || m.Version > BackupVersion {
		return nil, badBackup("its manifest has version %d; this hub reads versions 1 to %d (a newer hub wrote it?)", m.Version, BackupVersion)
	}
	return &m, nil
}

// checkManifest compares what was read with what the manifest lists.
func checkManifest(m *BackupManifest, read map[string]BackupMember) error {
	for _, want := range m.Members {
		got, ok := read[want.Name]
		switch {
		case !ok:
			return badBackup("member %q of the manifest is missing", want.Name)
		case got.Size != want.Size:
			return badBackup("member %q has %d bytes, the manifest says %d", want.Name, got.Size, want.Size)
		case got.SHA256 != want.SHA256:
			return badBackup("member %q does not match its checksum (sha256 %s, the manifest says %s)", want.Name, got.SHA256, want.SHA256)
		}
		delete(read, want.Name)
	}
	for name := range read {
		return badBackup("member %q is not in the manifest", name)
	}
	if !slices.ContainsFunc(m.Members, func(b BackupMember) bool { return b.Name == DBFile }) {
		return badBackup("it holds no %s", DBFile)
	}
	return nil
}

// syncTree fsyncs every directory under root, so the restored files'
// entries survive a crash.
func syncTree(root *os.Root) error {
	return fs.WalkDir(root.FS(), ".", func(name string, d fs.DirEntry, err error) error {
		if err != nil || !d.IsDir() {
			return err
		}
		f, err := root.Open(name)
		if err != nil {
			return err
		}
		defer f.Close()
		return f.Sync()
	})
}

// emptyRoot removes everything under root.
func emptyRoot(root *os.Root) error {
	ents, err := fs.ReadDir(root.FS(), ".")
	if err != nil {
		return err
	}
	var errs []error
	for _, e := range ents {
		errs = append(errs, root.RemoveAll(e.Name()))
	}
	return errors.Join(errs...)
}

// checkRestoredDB refuses a hub.db bbolt would misread or finds
// inconsistent.
func checkRestoredDB(root *os.Root, name string) error {
	if err := checkDBFile(root, name); err != nil {
		return fmt.Errorf("restore: %w", err)
	}
	path := name
	db, err := OpenBolt(root, name, 0o600, bolt.Options{ReadOnly: true, Timeout: time.Second})
	if err != nil {
		return fmt.Errorf("restore: open %s: %w", path, err)
	}
	defer db.Close()
	return db.View(func(tx *bolt.Tx) error {
		var first error
		for err := range tx.Check() { // read to the end: the check stops when its channel is drained
			if first == nil {
				first = fmt.Errorf("restore: %s is inconsistent: %w", path, err)
			}
		}
		return first
	})
}
