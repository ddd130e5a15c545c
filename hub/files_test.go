package hub_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/a6afc2ce/hermes-hub/chat"
	"github.com/a6afc2ce/hermes-hub/config"
	"github.com/a6afc2ce/hermes-hub/hub"
	"github.com/a6afc2ce/hermes-hub/store"
)

// files is a platform's FileSource: the files people sent, by reference.
type files struct {
	mu     sync.Mutex
	data   map[string][]byte
	opened []string
}

func (f *files) Open(_ context.Context, u *chat.Upload) (io.ReadCloser, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.opened = append(f.opened, u.Ref)
	b, ok := f.data[u.Ref]
	if !ok {
		return nil, fmt.Errorf("no file %s", u.Ref)
	}
	return io.NopCloser(bytes.NewReader(b)), nil
}

func (f *files) openedCount() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.opened)
}

// withFile is msg carrying the file data, named name, fetched from src.
func withFile(src *files, in *chat.Inbound, name string, data []byte) *chat.Inbound {
	ref := "file-" + in.TurnID
	src.mu.Lock()
	if src.data == nil {
		src.data = map[string][]byte{}
	}
	src.data[ref] = data
	src.mu.Unlock()
	in.Upload = &chat.Upload{Name: name, Size: int64(len(data)), MIME: "application/pdf", Ref: ref}
	return in
}

func hexSHA(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

// TestUploadIsATurn: a file sent with a message is saved in the chat's
// workspace by fs.upload, decided, mirrored and answered like any verb
// call: the reply says where it went and its size; the mirror records its
// name, size, SHA-256 and sender, never its bytes.
func TestUploadIsATurn(t *testing.T) {
	e := newEnv(t, nil)
	src := &files{}
	e.rt.Hub.SetFileSource(chat.Telegram, src)
	data := []byte("%PDF-1.7 the quarterly report \x00\xff SECRET-BYTES")
	res, err := e.rt.Hub.Handle(context.Background(), withFile(src, tgMsg(1, 40, ""), "Q3 report.pdf", data))
	if err != nil || res.Status != hub.StatusExecuted || res.Verb != "fs.upload" {
		t.Fatalf("%+v %v", res, err)
	}
	got, err := os.ReadFile(filepath.Join(e.ws, "uploads", "Q3 report.pdf"))
	if err != nil || !bytes.Equal(got, data) {
		t.Fatalf("saved %q %v", got, err)
	}
	reply := e.rec.Wait(t, "chat:telegram:100", 1)[0]
	if !strings.Contains(reply.Text, "Saved `uploads/Q3 report.pdf` (45 bytes") || !strings.Contains(reply.Text, hexSHA(data)) {
		t.Fatalf("reply %q", reply.Text)
	}
	// The caption is the path; so is /upload PATH.
	for i, caption := range []string{"reports/q3.pdf", "/upload reports/q4.pdf", "/fs.upload path=reports/q5.pdf"} {
		res, err := e.rt.Hub.Handle(context.Background(), withFile(src, tgMsg(1, 41+i, caption), "x.pdf", data))
		if err != nil || res.Status != hub.StatusExecuted {
			t.Fatalf("%s: %+v %v", caption, res, err)
		}
	}
	for _, p := range []string{"reports/q3.pdf", "reports/q4.pdf", "reports/q5.pdf"} {
		if b, err := os.ReadFile(filepath.Join(e.ws, p)); err != nil || !bytes.Equal(b, data) {
			t.Errorf("%s: %v", p, err)
		}
	}
	waitMirror(t, e, func(recs []store.MirrorRecord) bool {
		var msg, saved *store.MirrorRecord
		for i, r := range recs {
			if r.Meta["turn_id"] != "telegram.100.40" || r.Direction != "inbound" {
				continue
			}
			switch r.Kind {
			case store.KindFile:
				saved = &recs[i]
			case store.KindMessage, store.KindCommand:
				msg = &recs[i]
			}
		}
		return msg != nil && saved != nil &&
			msg.Meta[store.MetaUploadName] == "Q3 report.pdf" && msg.Meta[store.MetaUploadSize] == "45" && msg.Meta[hub.MetaWorkspace] == "default" &&
			saved.Actor == "telegram:1" && saved.Meta[hub.MetaFileName] == "Q3 report.pdf" && saved.Meta[hub.MetaFilePath] == "uploads/Q3 report.pdf" &&
			saved.Meta[hub.MetaFileSize] == "45" && saved.Meta[hub.MetaFileSHA256] == hexSHA(data)
	})
	flows, _ := os.ReadDir(filepath.Join(e.state, "flows"))
	for _, f := range flows {
		filepath.Walk(filepath.Join(e.state, "flows", f.Name()), func(p string, fi os.FileInfo, err error) error {
			if b, _ := os.ReadFile(p); err == nil && !fi.IsDir() && bytes.Contains(b, []byte("SECRET-BYTES")) {
				t.Errorf("%s holds the file's bytes", p)
			}
			return nil
		})
	}
}

// TestUploadNeedsWriteFile: saving a file needs a role that grants
// fs.writeFile; without one nothing is fetched and the refusal says so.
func TestUploadNeedsWriteFile(t *testing.T) {
	ws := t.TempDir()
	cfg := testConfig(t, ws, filepath.Join(ws, ".hub"))
	cfg.Access.Roles["writer"] = config.Role{Verbs: []string{"fs.writeFile"}}
	cfg.Access.Grants["telegram:4"] = []string{"writer"}
	e := openEnvConfig(t, cfg, nil)
	src := &files{}
	e.rt.Hub.SetFileSource(chat.Telegram, src)
	res, err := e.rt.Hub.Handle(context.Background(), withFile(src, tgMsg(3, 50, ""), "a.txt", []byte("x")))
	if err != nil || res.Status != hub.StatusForbidden {
		t.Fatalf("readers: %+v %v", res, err)
	}
	reply := e.rec.Wait(t, "chat:telegram:100", 1)[0]
	if !strings.Contains(reply.Text, "You may not run fs.upload (it needs fs.writeFile)") || !strings.Contains(reply.Text, `verbs: ["fs.writeFile"]`) {
		t.Fatalf("refusal %q", reply.Text)
	}
	if src.openedCount() != 0 {
		t.Fatal("a refused upload was fetched")
	}
	if res, err := e.rt.Hub.Handle(context.Background(), withFile(src, tgMsg(4, 51, ""), "a.txt", []byte("x"))); err != nil || res.Status != hub.StatusExecuted {
		t.Fatalf("a role with fs.writeFile: %+v %v", res, err)
	}
	if _, err := os.Stat(filepath.Join(ws, "uploads", "a.txt")); err != nil {
		t.Fatal(err)
	}
}

// TestFileWithAnotherCommand: a file that comes with a command of another
// verb is refused, saying how to send it; /upload without a file says a
// file is missing.
func TestFileWithAnotherCommand(t *testing.T) {
	e := newEnv(t, nil)
	src := &files{}
	e.rt.Hub.SetFileSource(chat.Telegram, src)
	res, _ := e.rt.Hub.Handle(context.Background(), withFile(src, tgMsg(1, 60, "/fs.listDir ."), "a.txt", []byte("x")))
	if res.Status != hub.StatusRejected {
		t.Fatalf("%+v", res)
	}
	if got := e.rec.Wait(t, "chat:telegram:100", 1)[0].Text; !strings.Contains(got, "A file came with /fs.listDir, which takes none") {
		t.Fatalf("reply %q", got)
	}
	e.rt.Hub.Handle(context.Background(), tgMsg(1, 61, "/upload a.txt"))
	if got := e.rec.Wait(t, "chat:telegram:100", 2)[1].Text; !strings.Contains(got, "No file came with this message") {
		t.Fatalf("reply %q", got)
	}
	if src.openedCount() != 0 {
		t.Fatal("a file was fetched")
	}
}

// TestFileReplies: /get sends a workspace file as a file after the
// reply's text, through the outbox (its bytes in the state's files/); a
// file over the platform's limit (discord.max_file_bytes) is refused with
// the commands that fetch it in parts.
func TestFileReplies(t *testing.T) {
	ws := t.TempDir()
	cfg := testConfig(t, ws, filepath.Join(ws, ".hub"))
	cfg.Discord.MaxFileBytes = 100
	e := openEnvConfig(t, cfg, nil)
	data := bytes.Repeat([]byte{0, 1, 2, 3}, 40)
	os.WriteFile(filepath.Join(ws, "app.bin"), data, 0o644)

	res, err := e.rt.Hub.Handle(context.Background(), tgMsg(1, 70, "/get app.bin"))
	if err != nil || res.Status != hub.StatusExecuted || len(res.Outbox) != 2 {
		t.Fatalf("%+v %v", res, err)
	}
	got := e.rec.Wait(t, "chat:telegram:100", 2)
	if !strings.Contains(got[0].Text, "`app.bin` (160 bytes) is sent as a file") {
		t.Fatalf("text %q", got[0].Text)
	}
	f := got[1]
	if a := f.Attachment; a == nil || !a.Stored() || a.Name != "app.bin" || a.Size != 160 || a.SHA256 != hexSHA(data) || f.ID != "reply:telegram.100.70:chat:telegram:100:1" {
		t.Fatalf("file entry %+v", f)
	}
	if b, _ := e.rec.File(f.ID); !bytes.Equal(b, data) {
		t.Fatalf("file sent %q", b)
	}
	if _, err := os.Stat(filepath.Join(ws, ".hub", "files", hexSHA(data))); err != nil {
		t.Fatalf("the file is not kept in the state: %v", err)
	}

	dc := &chat.Inbound{TurnID: "discord.5.1", Platform: chat.Discord, ChatID: "5", MessageID: "1", UserID: "9", RoleIDs: []string{"77"}, ChatType: chat.ChatDM, Text: "/get app.bin"}
	if res, err := e.rt.Hub.Handle(context.Background(), dc); err != nil || len(res.Outbox) != 1 {
		t.Fatalf("discord: %+v %v", res, err)
	}
	text := e.rec.Wait(t, "chat:discord:5", 1)[0].Text
	for _, want := range []string{"app.bin is 160 bytes, over 100, the largest file Discord on this server takes", "/fs.send app.bin offset=0 length=100", "/fs.send app.bin offset=100 length=100"} {
		if !strings.Contains(text, want) {
			t.Errorf("reply %q lacks %q", text, want)
		}
	}
}
