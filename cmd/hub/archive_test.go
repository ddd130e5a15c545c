package main

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/a6afc2ce/hermes-hub/nodes"
	"github.com/a6afc2ce/hermes-hub/store"
)

// TestWriteArchiveIsAtomic: hub backup's FILE appears only once the
// archive is whole and checked, owner-only: a stream that breaks or ends
// early leaves FILE as it was (an older backup stays) and no temporary
// file; a whole one, gzipped or not, replaces it.
func TestWriteArchiveIsAtomic(t *testing.T) {
	st, err := store.Open(filepath.Join(t.TempDir(), "state"), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if err := st.Cursors("x").SetCursor("y", "z"); err != nil {
		t.Fatal(err)
	}
	var whole bytes.Buffer
	if err := store.WriteBackup(context.Background(), &whole, st, store.BackupOptions{}); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	file := filepath.Join(dir, "backup.tar")
	os.WriteFile(file, []byte("the previous backup"), 0o600)
	broken := errors.New("connection reset by peer")
	for name, r := range map[string]io.Reader{
		"broken":   io.MultiReader(bytes.NewReader(whole.Bytes()[:whole.Len()/2]), &failing{broken}),
		"cut":      bytes.NewReader(whole.Bytes()[:whole.Len()-2048]),
		"no bytes": bytes.NewReader(nil),
	} {
		if _, _, err := writeArchive(file, r, false); err == nil {
			t.Errorf("%s stream: written", name)
		}
		if b, _ := os.ReadFile(file); string(b) != "the previous backup" {
			t.Errorf("%s stream: FILE is now %d bytes", name, len(b))
		}
		if ents, _ := os.ReadDir(dir); len(ents) != 1 {
			t.Errorf("%s stream: left %v", name, ents)
		}
	}
	for _, gz := range []bool{false, true} {
		m, size, err := writeArchive(file, bytes.NewReader(whole.Bytes()), gz)
		if err != nil {
			t.Fatal(err)
		}
		fi, err := os.Stat(file)
		if err != nil || fi.Size() != size || fi.Mode().Perm() != 0o600 || len(m.Members) == 0 {
			t.Fatalf("gzip %v: %v %v %+v", gz, fi, err, m)
		}
		f, _ := os.Open(file)
		r, err := archiveReader(f)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := store.VerifyBackup(r, store.RestoreOptions{}); err != nil {
			t.Errorf("gzip %v: the written archive: %v", gz, err)
		}
		f.Close()
	}
}

type failing struct{ err error }

func (f *failing) Read([]byte) (int, error) { return 0, f.err }

// TestBackupNamesTheNATSKeyWhereNodesKeepsIt: a backup holds the hub's
// NATS key by the name the nodes package gives it.
func TestBackupNamesTheNATSKeyWhereNodesKeepsIt(t *testing.T) {
	if got, want := nodes.HubSeedFile("state"), filepath.Join("state", store.NATSSeedFile); got != want {
		t.Fatalf("nodes keeps the key at %s, backups copy %s", got, want)
	}
}
