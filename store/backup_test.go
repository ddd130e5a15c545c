package store

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/a6afc2ce/hermes-hub/chat"
	bolt "go.etcd.io/bbolt"
)

// backupState opens a state with something in every part a backup holds:
// a cursor in hub.db, a delivery target, the channel directory, the NATS
// key, a closed run with a torn last line, a run still open, proc output
// and a symbolic link in pma/.
func backupState(t *testing.T) (*State, *Mirror) {
	t.Helper()
	st, err := Open(filepath.Join(t.TempDir(), "state"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	if err := st.Cursors("telegram").SetCursor("offset", "42"); err != nil {
		t.Fatal(err)
	}
	tg, err := OpenTargets(st.Root(), DeliveryTargetsFile)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tg.Add(chat.Key{Kind: chat.KindWeb}); err != nil {
		t.Fatal(err)
	}
	for name, content := range map[string]string{
		ChannelDirectory:  `{"version":1,"entries":[]}` + "\n",
		NATSSeedFile:      "SUAseed\n",
		DefaultDeliveries: "{\"text\":\"delivered\"}\n{\"text\":\"half",
		filepath.Join(ProcDir, "t1", "stdout.txt"): "output\n",
	} {
		os.MkdirAll(filepath.Dir(st.Path(name)), 0o700)
		if err := os.WriteFile(st.Path(name), []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink("/etc/passwd", st.Path("pma", "link.jsonl")); err != nil {
		t.Fatal(err)
	}
	flows := st.Path(FlowsDir)
	closed, err := OpenMirror(openRoot(t, flows), run1, MirrorOptions{Kind: RunServe})
	if err != nil {
		t.Fatal(err)
	}
	if err := closed.Append(context.Background(), in("from the closed run"), true); err != nil {
		t.Fatal(err)
	}
	closed.Close()
	f, _ := os.OpenFile(filepath.Join(flows, run1, "chat", "inbound.jsonl"), os.O_WRONLY|os.O_APPEND, 0)
	f.WriteString(`{"torn":`)
	f.Close()
	live, err := OpenMirror(openRoot(t, flows), run2, MirrorOptions{Kind: RunCLI})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { live.Close() })
	if err := live.Append(context.Background(), in("from the open run"), true); err != nil {
		t.Fatal(err)
	}
	return st, live
}

// TestBackupAndRestore: a backup of a state in use restores into an empty
// directory with every part: hub.db as it was, the files, the runs (whole
// lines only); proc output only when asked; a symbolic link is left out
// and named in the manifest.
func TestBackupAndRestore(t *testing.T) {
	st, _ := backupState(t)
	for _, proc := range []bool{false, true} {
		var buf bytes.Buffer
		if err := WriteBackup(context.Background(), &buf, st, BackupOptions{Proc: proc, HubVersion: "v9"}); err != nil {
			t.Fatal(err)
		}
		dir := filepath.Join(t.TempDir(), "restored")
		m, err := RestoreBackup(bytes.NewReader(buf.Bytes()), dir, RestoreOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if m.HubVersion != "v9" || m.Proc != proc || !slices.Equal(m.Runs, []string{run1, run2}) || m.Schemas[cursorBucket] != cursorVersion || m.DBTxID == 0 {
			t.Errorf("manifest %+v", m)
		}
		if !slices.Equal(m.Skipped, []string{"pma/link.jsonl"}) {
			t.Errorf("skipped %v", m.Skipped)
		}
		read := func(name string) string {
			b, err := os.ReadFile(filepath.Join(dir, name))
			if err != nil {
				return "missing"
			}
			return string(b)
		}
		for name, want := range map[string]string{
			ChannelDirectory:  `{"version":1,"entries":[]}` + "\n",
			NATSSeedFile:      "SUAseed\n",
			DefaultDeliveries: "{\"text\":\"delivered\"}\n",
		} {
			if got := read(name); got != want {
				t.Errorf("%s: %q, want %q", name, got, want)
			}
		}
		if got := read(filepath.Join(ProcDir, "t1", "stdout.txt")); (got == "output\n") != proc {
			t.Errorf("proc %v: proc output %q", proc, got)
		}
		if !strings.Contains(read(DeliveryTargetsFile), `"kind": "web"`) {
			t.Errorf("targets: %s", read(DeliveryTargetsFile))
		}
		for run, text := range map[string]string{run1: "from the closed run", run2: "from the open run"} {
			got := read(filepath.Join(FlowsDir, run, "chat", "inbound.jsonl"))
			if !strings.Contains(got, text) || !strings.HasSuffix(got, "}\n") {
				t.Errorf("run %s: %q", run, got)
			}
		}
		if kind, _ := readRunKind(openRoot(t, filepath.Join(dir, FlowsDir)), run2); kind != RunCLI {
			t.Errorf("run kind %q", kind)
		}
		if _, err := os.Lstat(filepath.Join(dir, "pma", "link.jsonl")); !os.IsNotExist(err) {
			t.Errorf("the symbolic link was restored: %v", err)
		}
		fi, _ := os.Stat(dir)
		if fi.Mode().Perm() != 0o700 {
			t.Errorf("restored directory mode %v", fi.Mode())
		}
		restored, err := Open(dir, Options{})
		if err != nil {
			t.Fatal(err)
		}
		if v, err := restored.Cursors("telegram").Cursor("offset"); err != nil || v != "42" {
			t.Errorf("cursor %q %v", v, err)
		}
		restored.Close()
	}
}

// TestBackupIsOneTransaction: the copy of hub.db is the database as the
// backup's read transaction saw it; writers go on while the backup is
// being read, even one that grows the database (which waits for every
// read transaction to end).
func TestBackupIsOneTransaction(t *testing.T) {
	st, _ := backupState(t)
	pr, pw := io.Pipe()
	done := make(chan error, 1)
	go func() {
		err := WriteBackup(context.Background(), pw, st, BackupOptions{})
		pw.CloseWithError(err)
		done <- err
	}()
	// The backup has started once it has written a byte, and blocks on
	// the pipe until it is read.
	head := make([]byte, 1)
	if _, err := io.ReadFull(pr, head); err != nil {
		t.Fatal(err)
	}
	if err := st.Cursors("telegram").SetCursor("offset", "43"); err != nil {
		t.Fatal(err)
	}
	if err := st.Cursors("telegram").SetCursor("big", strings.Repeat("x", 64<<20)); err != nil {
		t.Fatal(err)
	}
	rest, err := io.ReadAll(pr)
	if err != nil || <-done != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "restored")
	if _, err := RestoreBackup(io.MultiReader(bytes.NewReader(head), bytes.NewReader(rest)), dir, RestoreOptions{}); err != nil {
		t.Fatal(err)
	}
	db, err := bolt.Open(filepath.Join(dir, DBFile), 0o600, &bolt.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	db.View(func(tx *bolt.Tx) error {
		if v := tx.Bucket([]byte(cursorBucket)).Get([]byte("telegram.offset")); string(v) != "42" {
			t.Errorf("restored cursor %q, want the value before the backup, 42", v)
		}
		return nil
	})
	if v, _ := st.Cursors("telegram").Cursor("offset"); v != "43" {
		t.Errorf("the write during the backup: %q", v)
	}
}

func sha(s string) string {
	h := sha256.Sum256([]byte(s))
	return hex.EncodeToString(h[:])
}

// member is one member of a hand-made archive.
type member struct {
	name string
	typ  byte
	body string
	size int64 // -1: len(body)
}

// archive builds a tar of ms, with a manifest of every regular member
// listed when manifest is set.
func archive(t *testing.T, ms []member, manifest bool) []byte {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	m := BackupManifest{Format: BackupFormat, Version: BackupVersion, Members: []BackupMember{}}
	for _, x := range ms {
		size := x.size
		if size < 0 {
			size = int64(len(x.body))
		}
		hdr := &tar.Header{Name: x.name, Typeflag: x.typ, Size: size, Mode: 0o600, Linkname: "/etc/passwd", Format: tar.FormatPAX}
		if x.typ != tar.TypeReg {
			hdr.Size = 0
		}
		if err := tw.WriteHeader(hdr); err != nil {
			t.Fatal(err)
		}
		if hdr.Size > 0 {
			tw.Write([]byte(x.body))
		}
		if x.typ == tar.TypeReg {
			m.Members = append(m.Members, BackupMember{Name: x.name, Size: size, SHA256: sha(x.body)})
		}
	}
	if manifest {
		data, _ := marshalFile(m)
		tw.WriteHeader(&tar.Header{Name: BackupManifestName, Typeflag: tar.TypeReg, Size: int64(len(data)), Mode: 0o600})
		tw.Write(data)
	}
	tw.Close()
	return buf.Bytes()
}

// TestRestoreRefusesHostileArchives: names outside the layout, absolute or
// climbing out, links, devices, pipes, oversize members, a missing or
// wrong manifest: each is refused, nothing is left in the directory and
// nothing is written outside it.
func TestRestoreRefusesHostileArchives(t *testing.T) {
	st, _ := backupState(t)
	var good bytes.Buffer
	if err := WriteBackup(context.Background(), &good, st, BackupOptions{}); err != nil {
		t.Fatal(err)
	}
	db, err := os.ReadFile(st.Path(DBFile))
	if err != nil {
		t.Fatal(err)
	}
	reg := func(name, body string) member { return member{name: name, typ: tar.TypeReg, body: body, size: -1} }
	dbm := reg(DBFile, string(db))
	tests := []struct {
		name string
		data []byte
		opts RestoreOptions
		want string
	}{
		{"absolute", archive(t, []member{dbm, reg("/tmp/escape", "x")}, true), RestoreOptions{}, "absolute name"},
		{"dot dot", archive(t, []member{dbm, reg("flows/../../escape", "x")}, true), RestoreOptions{}, "climbs out"},
		{"dot dot in pma", archive(t, []member{dbm, reg("pma/../../escape", "x")}, true), RestoreOptions{}, "climbs out"},
		{"outside the layout", archive(t, []member{dbm, reg("etc/cron.d/x", "x")}, true), RestoreOptions{}, "not part of a hub's state"},
		{"not clean", archive(t, []member{dbm, reg("pma//x", "x")}, true), RestoreOptions{}, "not a clean relative name"},
		{"symlink", archive(t, []member{dbm, {name: "pma/x", typ: tar.TypeSymlink}}, true), RestoreOptions{}, "a symbolic link"},
		{"hard link", archive(t, []member{dbm, {name: "pma/x", typ: tar.TypeLink}}, true), RestoreOptions{}, "a hard link"},
		{"device", archive(t, []member{dbm, {name: "pma/x", typ: tar.TypeChar}}, true), RestoreOptions{}, "a device"},
		{"fifo", archive(t, []member{dbm, {name: "pma/x", typ: tar.TypeFifo}}, true), RestoreOptions{}, "a named pipe"},
		{"oversize", good.Bytes(), RestoreOptions{MaxBytes: 4096}, "more than 4096 bytes"},
		{"too many members", good.Bytes(), RestoreOptions{MaxMembers: 2}, "more than 2 members"},
		{"duplicate", archive(t, []member{dbm, reg("pma/x", "a"), reg("pma/x", "b")}, true), RestoreOptions{}, "appears twice"},
		{"no manifest", archive(t, []member{dbm}, false), RestoreOptions{}, "has no manifest"},
		{"no database", archive(t, []member{reg("pma/x", "a")}, true), RestoreOptions{}, "holds no hub.db"},
		{"not a tar", []byte("hello, this is not an archive at all"), RestoreOptions{}, "damaged or cut short"},
		{"checksum", bytes.Replace(good.Bytes(), []byte("from the closed run"), []byte("FROM the closed run"), 1), RestoreOptions{}, "does not match its checksum"},
		{"member after the manifest", append(good.Bytes()[:len(good.Bytes())-1024:len(good.Bytes())-1024], archive(t, []member{reg("pma/late", "x")}, false)...), RestoreOptions{}, "comes after the manifest"},
	}
	outside := t.TempDir()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := filepath.Join(outside, "state-"+strings.ReplaceAll(tt.name, " ", "-"))
			_, err := RestoreBackup(bytes.NewReader(tt.data), dir, tt.opts)
			if !errors.Is(err, ErrBadBackup) || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("got %v, want an ErrBadBackup saying %q", err, tt.want)
			}
			if ents, _ := os.ReadDir(dir); len(ents) != 0 {
				t.Errorf("left in the directory: %v", ents)
			}
			if _, err := VerifyBackup(bytes.NewReader(tt.data), tt.opts); !errors.Is(err, ErrBadBackup) {
				t.Errorf("VerifyBackup: %v", err)
			}
		})
	}
	if ents, _ := os.ReadDir(outside); len(ents) != len(tests) {
		t.Errorf("written beside the state directories: %v", ents)
	}
	for _, p := range []string{"/tmp/escape", filepath.Join(filepath.Dir(outside), "escape")} {
		if _, err := os.Lstat(p); err == nil {
			t.Errorf("%s was written", p)
		}
	}
}

// TestRestoreRefusesACutArchive: a backup cut anywhere (a hub killed while
// writing it) is refused and leaves nothing.
func TestRestoreRefusesACutArchive(t *testing.T) {
	st, _ := backupState(t)
	var good bytes.Buffer
	if err := WriteBackup(context.Background(), &good, st, BackupOptions{}); err != nil {
		t.Fatal(err)
	}
	data := good.Bytes()
	// The tar ends with two zero blocks; cut before the manifest's end.
	last := bytes.LastIndex(data, []byte(`"members"`))
	for _, n := range []int{0, 100, 512, 1000, len(data) / 2, last} {
		dir := filepath.Join(t.TempDir(), "state")
		if _, err := RestoreBackup(bytes.NewReader(data[:n]), dir, RestoreOptions{}); !errors.Is(err, ErrBadBackup) {
			t.Errorf("cut at %d of %d: %v", n, len(data), err)
		}
		if ents, _ := os.ReadDir(dir); len(ents) != 0 {
			t.Errorf("cut at %d: left %v", n, ents)
		}
	}
}

// TestRestoreRefusesANonEmptyDirectory: restore never mixes a backup with
// another state, and says what to do.
func TestRestoreRefusesANonEmptyDirectory(t *testing.T) {
	st, _ := backupState(t)
	var good bytes.Buffer
	if err := WriteBackup(context.Background(), &good, st, BackupOptions{}); err != nil {
		t.Fatal(err)
	}
	_, err := RestoreBackup(bytes.NewReader(good.Bytes()), st.Dir(), RestoreOptions{})
	if err == nil || !strings.Contains(err.Error(), "is not empty") || !strings.Contains(err.Error(), "move this one away") {
		t.Fatalf("restore into a state in use: %v", err)
	}
	if v, _ := st.Cursors("telegram").Cursor("offset"); v != "42" {
		t.Fatalf("the state changed: %q", v)
	}
}
