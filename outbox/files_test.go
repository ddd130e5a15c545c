package outbox

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/a6afc2ce/hermes-hub/chat"
	"github.com/a6afc2ce/hermes-hub/clock"
	"github.com/a6afc2ce/hermes-hub/store"
)

// storeFile puts data in st's files/ and returns it as an attachment.
func storeFile(t *testing.T, st *store.State, name string, data []byte) chat.Attachment {
	t.Helper()
	sha, size, err := st.Files().Put(context.Background(), bytes.NewReader(data), 0)
	if err != nil {
		t.Fatal(err)
	}
	return chat.Attachment{Name: name, MIME: "application/octet-stream", SHA256: sha, Size: size}
}

// fileReader is a Sender that reads every attachment it is given.
type fileReader struct {
	mu   sync.Mutex
	got  map[string][]byte // outbox id → bytes read
	errs map[string]error
	sent chan string
}

func newFileReader() *fileReader {
	return &fileReader{got: map[string][]byte{}, errs: map[string]error{}, sent: make(chan string, 100)}
}

func (f *fileReader) Send(_ context.Context, e *Entry) (Receipt, error) {
	var data []byte
	var err error
	if a := e.Attachment; a != nil {
		var r io.ReadCloser
		if r, err = a.Reader(); err == nil {
			data, err = io.ReadAll(r)
			r.Close()
		}
	}
	f.mu.Lock()
	f.got[e.ID], f.errs[e.ID] = data, err
	f.mu.Unlock()
	f.sent <- e.ID
	if err != nil {
		return Receipt{}, err
	}
	return Receipt{MessageID: "m"}, nil
}

func TestNewEntriesWithFiles(t *testing.T) {
	k := tg("100")
	file := chat.Attachment{Name: "app.bin", SHA256: strings.Repeat("a", 64), Size: 7, Data: []byte("dropped"), Open: func() (io.ReadCloser, error) { return nil, nil }}
	es := NewEntries(KindReply, "t.1", k, chat.SplitText("the reply", chat.ChunkOptions{}), map[string]string{"m": "1"}, file)
	if len(es) != 2 {
		t.Fatalf("%d entries", len(es))
	}
	f := es[1]
	if f.ID != "reply:t.1:chat:telegram:100:1" || f.Index != 1 || f.Total != 2 || es[0].Total != 2 || f.Text != "app.bin (7 bytes)" || f.Meta["m"] != "1" {
		t.Fatalf("file entry %+v", f)
	}
	if a := f.Attachment; a == nil || a.Data != nil || a.Open != nil || a.SHA256 != file.SHA256 {
		t.Fatalf("attachment %+v", a)
	}
	if err := f.validate(); err != nil {
		t.Fatal(err)
	}
	bad := f
	bad.Attachment = &chat.Attachment{Name: "x", SHA256: "../hub.db"}
	if err := bad.validate(); err == nil || !strings.Contains(err.Error(), "not a SHA-256") {
		t.Fatalf("a stored file named by a path: %v", err)
	}
}

// TestStoredFileIsSentFromTheStore: an entry carries a stored file by its
// SHA-256 (hub.db holds no bytes of it); its sender reads the bytes from
// the state's files/, on every attempt.
func TestStoredFileIsSentFromTheStore(t *testing.T) {
	st, bs := openBolt(t, t.TempDir())
	defer st.Close()
	data := bytes.Repeat([]byte("\x00document\xff"), 5000)
	att := storeFile(t, st, "app.bin", data)
	fr := newFileReader()
	o := New(bs, muxFor(t, fr), Options{Files: st.Files()})
	es := NewEntries(KindReply, "t.1", tg("100"), chat.Split{}, nil, att)
	mustEnqueue(t, o, es)
	stored, _ := bs.Get(context.Background(), es[0].ID)
	if a := stored.Attachment; a == nil || len(a.Data) != 0 || a.SHA256 != att.SHA256 || a.Size != int64(len(data)) {
		t.Fatalf("stored attachment %+v", a)
	}
	run(t, o)
	recv(t, fr.sent, "the file's send")
	if got := fr.got[es[0].ID]; !bytes.Equal(got, data) || fr.errs[es[0].ID] != nil {
		t.Fatalf("sent %d bytes (%v), want %d", len(got), fr.errs[es[0].ID], len(data))
	}
}

func TestStoredFileGoneOrChangedIsADeadLetter(t *testing.T) {
	st, bs := openBolt(t, t.TempDir())
	defer st.Close()
	gone := storeFile(t, st, "gone.bin", []byte("removed before it is sent"))
	changed := storeFile(t, st, "changed.bin", []byte("the bytes as stored"))
	os.Remove(st.Path(store.FilesDir, gone.SHA256))
	os.WriteFile(st.Path(store.FilesDir, changed.SHA256), []byte("the bytes as altered"), 0o600)
	fr := newFileReader()
	ev := newEvents()
	o := New(bs, muxFor(t, fr), Options{Files: st.Files(), Events: ev, MaxAttempts: 5})
	mustEnqueue(t, o, NewEntries(KindReply, "t.1", tg("1"), chat.Split{}, nil, gone))
	mustEnqueue(t, o, NewEntries(KindReply, "t.2", tg("2"), chat.Split{}, nil, changed))
	run(t, o)
	for range 2 {
		d := recv(t, ev.dead, "a dead letter")
		want := map[string]string{"gone.bin": "is no longer in the state's files/", "changed.bin": "does not match its SHA-256"}[d.Attachment.Name]
		if want == "" || !strings.Contains(d.LastError, want) || d.Attempts != 1 {
			t.Errorf("%s: dead after %d attempts: %s", d.Attachment.Name, d.Attempts, d.LastError)
		}
	}
}

// TestStoredFilesSwept: a file no pending or dead entry carries goes once
// the retention has passed since it was stored; one a pending entry
// carries, or a dead letter, stays.
func TestStoredFilesSwept(t *testing.T) {
	st, bs := openBolt(t, t.TempDir())
	defer st.Close()
	clk := clock.NewFake(t0)
	delivered := storeFile(t, st, "delivered.bin", []byte("delivered"))
	pending := storeFile(t, st, "pending.bin", []byte("pending"))
	dead := storeFile(t, st, "dead.bin", []byte("dead"))
	old := time.Now().Add(-30 * 24 * time.Hour)
	for _, a := range []chat.Attachment{delivered, pending, dead} {
		os.Chtimes(st.Path(store.FilesDir, a.SHA256), old, old)
	}
	// Entries for a target without a sender stay pending; a dead letter is
	// made by hand.
	fr := newFileReader()
	o := New(bs, muxFor(t, fr, "web"), Options{Files: st.Files(), Clock: clk, Retention: time.Hour, PruneEvery: time.Hour})
	mustEnqueue(t, o, NewEntries(KindReply, "t.1", chat.WebKey, chat.Split{}, nil, delivered))
	mustEnqueue(t, o, NewEntries(KindReply, "t.2", tg("2"), chat.Split{}, nil, pending))
	d := NewEntries(KindReply, "t.3", tg("3"), chat.Split{}, nil, dead)
	mustEnqueue(t, o, d)
	if err := bs.Dead(context.Background(), d[0].ID, Retry{Attempts: 1, LastError: "x"}, t0); err != nil {
		t.Fatal(err)
	}
	run(t, o)
	recv(t, fr.sent, "the delivered file")
	deadline := time.Now().Add(10 * time.Second)
	for {
		clk.Advance(2 * time.Hour)
		if _, err := st.Files().Stat(delivered.SHA256); err != nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the delivered file was never swept")
		}
		time.Sleep(10 * time.Millisecond)
	}
	for _, a := range []chat.Attachment{pending, dead} {
		if _, err := st.Files().Stat(a.SHA256); err != nil {
			t.Errorf("%s was swept: %v", a.Name, err)
		}
	}
}

// TestLocalTargetKeepsFilesBesideItsJSONL: a stored file sent to a local
// target is written beside its JSONL file, in <name>.files/, and its line
// points at it with its SHA-256 and size; sent again under its id (a crash
// between the send and the mark), nothing is written twice.
func TestLocalTargetKeepsFilesBesideItsJSONL(t *testing.T) {
	dir := t.TempDir()
	st, err := store.Open(dir, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	data := []byte("report\x00bytes")
	att := storeFile(t, st, "../q3 report.pdf", data)
	ls := NewLocalSender(st.StateDir, nil, nil)
	k := chat.Key{Kind: chat.KindLocal, Path: "pma/deliveries.jsonl"}
	e := NewEntries(KindPMA, "send.1", k, chat.Split{}, nil, att)[0]
	storedCopy, _, err := (&Outbox{opts: Options{Files: st.Files()}}).storedFile(e.Attachment)
	if err != nil {
		t.Fatal(err)
	}
	e.Attachment = storedCopy
	for range 2 {
		if _, err := ls.Send(context.Background(), &e); err != nil {
			t.Fatal(err)
		}
	}
	lines := readLines(t, filepath.Join(dir, "pma", "deliveries.jsonl"))
	if len(lines) != 1 {
		t.Fatalf("%d lines", len(lines))
	}
	l := lines[0]
	sum := sha256.Sum256(data)
	want := "deliveries.files/" + hex.EncodeToString(sum[:])[:16] + "-q3_report.pdf"
	if l["file"] != want || l["sha256"] != hex.EncodeToString(sum[:]) || l["size"] != float64(len(data)) || l["attachment"] != "../q3 report.pdf" {
		t.Fatalf("line %v", l)
	}
	got, err := os.ReadFile(filepath.Join(dir, "pma", filepath.FromSlash(want)))
	if err != nil || !bytes.Equal(got, data) {
		t.Fatalf("file beside the JSONL: %q %v", got, err)
	}
}
