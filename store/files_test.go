package store

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func openFiles(t *testing.T) (*State, *Files) {
	t.Helper()
	st, err := Open(filepath.Join(t.TempDir(), "state"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st, st.Files()
}

func hashOf(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

func TestFilesPutAndOpen(t *testing.T) {
	st, fs := openFiles(t)
	data := bytes.Repeat([]byte("binary\x00\xff"), 10000)
	sha, size, err := fs.Put(context.Background(), bytes.NewReader(data), 0)
	if err != nil {
		t.Fatal(err)
	}
	if sha != hashOf(data) || size != int64(len(data)) {
		t.Fatalf("put: %s %d", sha, size)
	}
	fi, err := os.Lstat(st.Path(FilesDir, sha))
	if err != nil || fi.Size() != size || fi.Mode().Perm() != 0o600 {
		t.Fatalf("stored file: %v %v", fi, err)
	}
	r, info, err := fs.Open(sha)
	if err != nil {
		t.Fatal(err)
	}
	got, err := io.ReadAll(r)
	r.Close()
	if err != nil || !bytes.Equal(got, data) || info.Size != size {
		t.Fatalf("read back: %d bytes, %v", len(got), err)
	}
	// The same content again is the same file; no temporary file is left.
	if sha2, _, err := fs.Put(context.Background(), bytes.NewReader(data), 0); err != nil || sha2 != sha {
		t.Fatalf("second put: %s %v", sha2, err)
	}
	ents, _ := os.ReadDir(st.Path(FilesDir))
	if len(ents) != 1 {
		t.Fatalf("files/ holds %d entries, want 1", len(ents))
	}
}

func TestFilesPutOverLimitKeepsNothing(t *testing.T) {
	st, fs := openFiles(t)
	_, _, err := fs.Put(context.Background(), strings.NewReader(strings.Repeat("x", 101)), 100)
	if !errors.Is(err, ErrFileTooLarge) {
		t.Fatalf("want ErrFileTooLarge, got %v", err)
	}
	if ents, _ := os.ReadDir(st.Path(FilesDir)); len(ents) != 0 {
		t.Fatalf("files/ holds %v after a refused put", ents)
	}
	if _, _, err := fs.Put(context.Background(), strings.NewReader(strings.Repeat("x", 100)), 100); err != nil {
		t.Fatalf("exactly the limit: %v", err)
	}
}

func TestFilesOpenDetectsChangedBytes(t *testing.T) {
	st, fs := openFiles(t)
	sha, _, err := fs.Put(context.Background(), strings.NewReader("the stored bytes"), 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(st.Path(FilesDir, sha), []byte("other bytes here"), 0o600); err != nil {
		t.Fatal(err)
	}
	r, _, err := fs.Open(sha)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if _, err := io.ReadAll(r); !errors.Is(err, ErrFileChanged) {
		t.Fatalf("want ErrFileChanged, got %v", err)
	}
}

func TestFilesOpenRefusesNamesAndLinks(t *testing.T) {
	st, fs := openFiles(t)
	for _, name := range []string{"../hub.db", "hub.db", strings.Repeat("A", 64), ""} {
		if _, _, err := fs.Open(name); err == nil || !strings.Contains(err.Error(), "not a SHA-256") {
			t.Errorf("open %q: %v", name, err)
		}
	}
	secret := filepath.Join(t.TempDir(), "secret")
	os.WriteFile(secret, []byte("secret"), 0o600)
	sha := hashOf([]byte("secret"))
	if err := os.Symlink(secret, st.Path(FilesDir, sha)); err != nil {
		t.Fatal(err)
	}
	if _, _, err := fs.Open(sha); err == nil {
		t.Fatal("a symbolic link in files/ was followed")
	}
}

func TestFilesSweep(t *testing.T) {
	st, fs := openFiles(t)
	ctx := context.Background()
	kept, _, _ := fs.Put(ctx, strings.NewReader("referenced"), 0)
	old, _, _ := fs.Put(ctx, strings.NewReader("unreferenced and old"), 0)
	young, _, _ := fs.Put(ctx, strings.NewReader("unreferenced and young"), 0)
	past := time.Now().Add(-48 * time.Hour)
	for _, sha := range []string{kept, old} {
		os.Chtimes(st.Path(FilesDir, sha), past, past)
	}
	// A Put cut short leaves a temporary file; an old one goes too.
	tmp := st.Path(FilesDir, ".put"+tempInfix+"abc")
	os.WriteFile(tmp, []byte("half"), 0o600)
	os.Chtimes(tmp, past, past)
	stranger := st.Path(FilesDir, "README")
	os.WriteFile(stranger, []byte("not ours"), 0o600)
	os.Chtimes(stranger, past, past)

	n, err := fs.Sweep(map[string]bool{kept: true}, time.Now().Add(-24*time.Hour))
	if err != nil || n != 2 {
		t.Fatalf("sweep removed %d, %v; want 2", n, err)
	}
	for sha, want := range map[string]bool{kept: true, old: false, young: true} {
		if _, err := fs.Stat(sha); (err == nil) != want {
			t.Errorf("%s present=%v, want %v", sha, err == nil, want)
		}
	}
	if _, err := os.Stat(stranger); err != nil {
		t.Errorf("a file that is not the store's was removed: %v", err)
	}
	// Storing old content again renews it: a sweep leaves it.
	if _, _, err := fs.Put(ctx, strings.NewReader("referenced"), 0); err != nil {
		t.Fatal(err)
	}
	if n, _ := fs.Sweep(nil, time.Now().Add(-24*time.Hour)); n != 0 {
		t.Fatalf("sweep removed %d renewed files", n)
	}
}

func TestBackupCarriesStoredFiles(t *testing.T) {
	st, _ := backupState(t)
	sha, _, err := st.Files().Put(context.Background(), strings.NewReader("a document\x00"), 0)
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(st.Path(FilesDir, ".put"+tempInfix+"cut"), []byte("cut short"), 0o600)
	var buf bytes.Buffer
	if err := WriteBackup(context.Background(), &buf, st, BackupOptions{}); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "restored")
	if _, err := RestoreBackup(bytes.NewReader(buf.Bytes()), dir, RestoreOptions{}); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(filepath.Join(dir, FilesDir, sha)); err != nil || string(b) != "a document\x00" {
		t.Fatalf("stored file after restore: %q %v", b, err)
	}
	if ents, _ := os.ReadDir(filepath.Join(dir, FilesDir)); len(ents) != 1 {
		t.Fatalf("restored files/: %v", ents)
	}
}
