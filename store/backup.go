package store

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"slices"
	"strings"
	"time"

	bolt "go.etcd.io/bbolt"
)

// A backup is one tar archive of the state a hub needs (docs/state.md,
// "Backups and restore"): hub.db as one read transaction saw it, the
// delivery targets and the other files of pma/, the channel directory, the
// hub's NATS key, every mirror run, and with BackupOptions.Proc the output
// of proc.run. Its last member, BackupManifestName, lists every other
// member with its size and SHA-256.
const (
	BackupManifestName = "hub-backup.json"
	BackupFormat       = "hermes-hub-backup"
	BackupVersion      = 1
)

// NATSSeedFile is where the hub keeps its own NATS key under the state
// root (nodes.HubSeedFile, which store does not import).
const NATSSeedFile = "nats/hub.nk"

// BackupOptions tune WriteBackup.
type BackupOptions struct {
	// Proc includes the output of proc.run calls (proc/).
	Proc bool
	// HubVersion is recorded in the manifest.
	HubVersion string
	// Now dates the manifest; zero: the real time.
	Now time.Time
}

// BackupManifest is the last member of a backup.
type BackupManifest struct {
	Format     string    `json:"format"`
	Version    int       `json:"version"`
	Created    time.Time `json:"created"`
	HubVersion string    `json:"hub_version"`
	// Schemas are the schema versions hub.db's buckets recorded.
	Schemas map[string]int `json:"schemas"`
	// DBTxID is the transaction of hub.db the copy is of.
	DBTxID int `json:"db_txid"`
	// Runs are the mirror runs included.
	Runs []string `json:"runs"`
	// Proc says whether proc.run outputs are included.
	Proc    bool           `json:"proc"`
	Members []BackupMember `json:"members"`
	// Skipped are entries of the state directory left out because they are
	// not regular files (a symbolic link, a socket, …).
	Skipped []string `json:"skipped,omitempty"`
}

// BackupMember is one file of a backup.
type BackupMember struct {
	Name   string `json:"name"`
	Size   int64  `json:"size"`
	SHA256 string `json:"sha256"`
}

// WriteBackup writes a backup of the state st holds open to w. hub.db is
// copied through a read transaction, so the copy is consistent while
// writers go on; every other file is read after it, so whatever was
// written before the backup started is in it. A mirror file is copied up
// to its last whole line. The files are read through the state directory st
// holds open (StateDir) and only regular files are copied. On an error w has a
// partial archive without a manifest, which VerifyBackup and RestoreBackup
// refuse.
func WriteBackup(ctx context.Context, w io.Writer, st *State, opts BackupOptions) error {
	if opts.Now.IsZero() {
		opts.Now = time.Now()
	}
	b := &backupWriter{ctx: ctx, tw: tar.NewWriter(w), root: st.Root(), m: BackupManifest{
		Format: BackupFormat, Version: BackupVersion, Created: opts.Now.UTC(), HubVersion: opts.HubVersion,
		Proc: opts.Proc, Runs: []string{}, Members: []BackupMember{},
	}}
	if err := b.database(st.DB()); err != nil {
		return err
	}
	for _, name := range []string{ChannelDirectory, NATSSeedFile} {
		if err := b.file(name, false); err != nil {
			return err
		}
	}
	if err := b.tree("pma"); err != nil {
		return err
	}
	if err := b.flows(); err != nil {
		return err
	}
	if err := b.storedFiles(); err != nil {
		return err
	}
	if opts.Proc {
		if err := b.tree(ProcDir); err != nil {
			return err
		}
	}
	return b.finish()
}

// backupWriter writes the members of one backup.
type backupWriter struct {
	ctx  context.Context
	tw   *tar.Writer
	root *os.Root
	m    BackupManifest
}

// member writes one member of size bytes, which copy writes, hashing them.
func (b *backupWriter) member(name string, size int64, mod time.Time, copy func(io.Writer) (int64, error)) error {
	if err := b.ctx.Err(); err != nil {
		return fmt.Errorf("backup: %w", err)
	}
	hdr := &tar.Header{Typeflag: tar.TypeReg, Name: name, Size: size, Mode: 0o600, ModTime: mod.UTC().Truncate(time.Second), Format: tar.FormatPAX}
	if err := b.tw.WriteHeader(hdr); err != nil {
		return fmt.Errorf("backup %s: %w", name, err)
	}
	h := sha256.New()
	n, err := copy(io.MultiWriter(b.tw, h))
	if err == nil && n != size {
		err = fmt.Errorf("%d bytes read of %d: the file shrank", n, size)
	}
	if err != nil {
		return fmt.Errorf("backup %s: %w", name, err)
	}
	b.m.Members = append(b.m.Members, BackupMember{Name: name, Size: size, SHA256: hex.EncodeToString(h.Sum(nil))})
	return nil
}

// database copies hub.db as one read transaction sees it. The transaction
// writes into a temporary file of the state directory (unlinked at once
// where the system allows), so it lasts as long as a local copy, not as
// long as the backup's reader takes: a long read transaction holds back a
// writer that has to grow the database.
func (b *backupWriter) database(db *bolt.DB) error {
	var rnd [8]byte
	_, _ = rand.Read(rnd[:])
	name := ".backup-" + hex.EncodeToString(rnd[:]) + ".db"
	tmp, err := b.root.OpenFile(name, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return fmt.Errorf("backup %s: %w", DBFile, err)
	}
	unlinked := b.root.Remove(name) == nil
	defer func() {
		tmp.Close()
		if !unlinked {
			b.root.Remove(name)
		}
	}()
	var size int64
	err = db.View(func(tx *bolt.Tx) error {
		b.m.DBTxID = tx.ID()
		b.m.Schemas = schemaVersions(tx)
		size = tx.Size()
		_, err := tx.WriteTo(tmp)
		return err
	})
	if err != nil {
		return fmt.Errorf("backup %s: %w", DBFile, err)
	}
	return b.member(DBFile, size, time.Now(), func(w io.Writer) (int64, error) {
		return io.Copy(w, io.NewSectionReader(tmp, 0, size))
	})
}

// schemaVersions reads the schema version every bucket recorded.
func schemaVersions(tx *bolt.Tx) map[string]int {
	out := map[string]int{}
	if meta := tx.Bucket(metaBucket); meta != nil {
		_ = meta.ForEach(func(k, v []byte) error {
			if name, ok := strings.CutPrefix(string(k), "schema/"); ok && len(v) == 8 {
				out[name] = int(binary.BigEndian.Uint64(v))
			}
			return nil
		})
	}
	return out
}

// file copies the regular file name of the state, if it exists; with
// lines, only up to its last whole line.
func (b *backupWriter) file(name string, lines bool) error {
	f, err := b.root.Open(name)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("backup %s: %w", name, err)
	}
	defer f.Close()
	return b.open(name, f, lines)
}

// open copies the open file f as name, if it is a regular file.
func (b *backupWriter) open(name string, f *os.File, lines bool) error {
	fi, err := f.Stat()
	if err != nil {
		return fmt.Errorf("backup %s: %w", name, err)
	}
	if !fi.Mode().IsRegular() {
		b.m.Skipped = append(b.m.Skipped, name)
		return nil
	}
	size := fi.Size()
	if lines {
		if size, err = wholeLines(f, size); err != nil {
			return fmt.Errorf("backup %s: %w", name, err)
		}
	}
	return b.member(name, size, fi.ModTime(), func(w io.Writer) (int64, error) {
		return io.Copy(w, io.NewSectionReader(f, 0, size))
	})
}

// wholeLines is the length of f's first size bytes up to their last
// newline: a line being written is left out.
func wholeLines(f io.ReaderAt, size int64) (int64, error) {
	buf := make([]byte, 64<<10)
	for end := size; end > 0; {
		start := max(end-int64(len(buf)), 0)
		n, err := f.ReadAt(buf[:end-start], start)
		if err != nil && !(errors.Is(err, io.EOF) && int64(n) == end-start) {
			return 0, err
		}
		if i := bytes.LastIndexByte(buf[:n], '\n'); i >= 0 {
			return start + int64(i) + 1, nil
		}
		end = start
	}
	return 0, nil
}

// tree copies every regular file under dir, in name order, a .jsonl file
// up to its last whole line; anything else is recorded as skipped.
func (b *backupWriter) tree(dir string) error {
	err := fs.WalkDir(b.root.FS(), dir, func(name string, d fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil // gone meanwhile, or never there
			}
			return err
		}
		if d.IsDir() {
			return nil
		}
		if !d.Type().IsRegular() {
			b.m.Skipped = append(b.m.Skipped, name)
			return nil
		}
		return b.file(name, strings.HasSuffix(name, ".jsonl"))
	})
	if err != nil {
		return fmt.Errorf("backup %s: %w", dir, err)
	}
	return nil
}

// storedFiles copies the files of files/ (the bytes of file replies the
// outbox may still send), each under its SHA-256; a Put's temporary file
// is left out.
func (b *backupWriter) storedFiles() error {
	ents, err := fs.ReadDir(b.root.FS(), FilesDir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("backup %s: %w", FilesDir, err)
	}
	for _, e := range ents {
		if ValidSHA256(e.Name()) != nil {
			continue
		}
		name := path.Join(FilesDir, e.Name())
		if !e.Type().IsRegular() {
			b.m.Skipped = append(b.m.Skipped, name)
			continue
		}
		if err := b.file(name, false); err != nil {
			return err
		}
	}
	return nil
}

// flows copies every run: its marker and its mirror files, each opened
// before the run's chat directory is listed again, so that a rotation
// meanwhile (which renames the active file) is noticed and the run copied
// again: records written before the backup are never missed.
func (b *backupWriter) flows() error {
	ents, err := fs.ReadDir(b.root.FS(), FlowsDir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("backup %s: %w", FlowsDir, err)
	}
	for _, e := range ents {
		if _, err := ParseRunID(e.Name()); err != nil || !e.IsDir() {
			continue // lock files, runs being created, anything else
		}
		run := path.Join(FlowsDir, e.Name())
		if err := b.file(path.Join(run, RunMarkerFile), false); err != nil {
			return err
		}
		if err := b.runChat(path.Join(run, "chat")); err != nil {
			return err
		}
		b.m.Runs = append(b.m.Runs, e.Name())
	}
	return nil
}

// maxRotationRetries bounds how often a run's files are opened again
// because its files were rotated while they were being opened.
const maxRotationRetries = 10

// runChat copies the mirror files of one run's chat directory.
func (b *backupWriter) runChat(dir string) error {
	for range maxRotationRetries {
		names, files, err := b.openAll(dir)
		if err != nil {
			return err
		}
		again, err := fs.ReadDir(b.root.FS(), dir)
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			closeAll(files)
			return fmt.Errorf("backup %s: %w", dir, err)
		}
		stable := true
		for _, e := range again {
			if strings.HasSuffix(e.Name(), ".jsonl") && !slices.Contains(names, e.Name()) {
				stable = false
			}
		}
		if !stable {
			closeAll(files)
			continue
		}
		err = nil
		for i, f := range files {
			if err == nil {
				err = b.open(path.Join(dir, names[i]), f, true)
			}
		}
		closeAll(files)
		return err
	}
	return fmt.Errorf("backup %s: its files kept being rotated while they were read", dir)
}

// openAll opens the .jsonl files of dir, in name order.
func (b *backupWriter) openAll(dir string) ([]string, []*os.File, error) {
	ents, err := fs.ReadDir(b.root.FS(), dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil, nil
	}
	if err != nil {
		return nil, nil, fmt.Errorf("backup %s: %w", dir, err)
	}
	var names []string
	var files []*os.File
	for _, e := range ents {
		if !strings.HasSuffix(e.Name(), ".jsonl") {
			continue
		}
		name := path.Join(dir, e.Name())
		if !e.Type().IsRegular() {
			b.m.Skipped = append(b.m.Skipped, name)
			continue
		}
		f, err := b.root.Open(name)
		if err != nil {
			closeAll(files)
			return nil, nil, fmt.Errorf("backup %s: %w", name, err)
		}
		names = append(names, e.Name())
		files = append(files, f)
	}
	return names, files, nil
}

func closeAll(files []*os.File) {
	for _, f := range files {
		f.Close()
	}
}

// finish writes the manifest and ends the archive.
func (b *backupWriter) finish() error {
	data, err := marshalFile(b.m)
	if err != nil {
		return fmt.Errorf("backup manifest: %w", err)
	}
	hdr := &tar.Header{Typeflag: tar.TypeReg, Name: BackupManifestName, Size: int64(len(data)), Mode: 0o600, ModTime: b.m.Created.Truncate(time.Second), Format: tar.FormatPAX}
	if err := b.tw.WriteHeader(hdr); err != nil {
		return fmt.Errorf("backup manifest: %w", err)
	}
	if _, err := b.tw.Write(data); err != nil {
		return fmt.Errorf("backup manifest: %w", err)
	}
	if err := b.tw.Close(); err != nil {
		return fmt.Errorf("backup: %w", err)
	}
	return nil
}
