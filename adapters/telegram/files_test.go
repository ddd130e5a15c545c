package telegram

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/a6afc2ce/hermes-hub/adapters/telegram/telegramtest"
	"github.com/a6afc2ce/hermes-hub/config"
	"github.com/a6afc2ce/hermes-hub/internal/testkit"
	"github.com/a6afc2ce/hermes-hub/outbox"
)

// replyTo waits for the message that answers msgID in chat 1 and returns
// its text.
func replyTo(t *testing.T, f *telegramtest.Server, msgID string) string {
	t.Helper()
	var text string
	testkit.WaitFor(t, "the reply to message "+msgID, func() bool {
		for _, m := range f.MessagesTo("1") {
			if m.ReplyTo == msgID {
				text = m.Text
				return true
			}
		}
		return false
	})
	return text
}

// noTempFiles fails unless the workspace holds no temporary file of a
// write cut short.
func noTempFiles(t *testing.T, ws string) {
	t.Helper()
	filepath.Walk(ws, func(p string, fi os.FileInfo, err error) error {
		if err == nil && strings.Contains(fi.Name(), ".tmp-") {
			t.Errorf("temporary file left: %s", p)
		}
		return nil
	})
}

// TestDocumentAndPhotoAreSaved: a document sent to the bot is fetched with
// getFile and the file download URL and saved where its caption says; a
// photo's largest size is saved in the uploads directory; the reply says
// where and how large.
func TestDocumentAndPhotoAreSaved(t *testing.T) {
	f := telegramtest.NewServer()
	defer f.Close()
	h := startHarness(t, f, hopts{})
	pdf := bytes.Repeat([]byte("%PDF\x00\xff"), 1000)
	f.Push(telegramtest.TextUpdate(1, 1, 1, 10, "reports/q3.pdf", telegramtest.WithDocument(f.Document("Q3.pdf", "application/pdf", telegramtest.File{Data: pdf}))))
	if text := replyTo(t, f, "10"); !strings.Contains(text, "Saved <code>reports/q3.pdf</code> (6000 bytes") {
		t.Fatalf("reply %q", text)
	}
	if got, err := os.ReadFile(filepath.Join(h.ws, "reports", "q3.pdf")); err != nil || !bytes.Equal(got, pdf) {
		t.Fatalf("saved %d bytes, %v", len(got), err)
	}
	jpeg := []byte("\xff\xd8\xff\xe0 a photo")
	f.Push(telegramtest.TextUpdate(2, 1, 1, 11, "", f.WithPhoto(telegramtest.File{Data: jpeg})))
	if text := replyTo(t, f, "11"); !strings.Contains(text, "uploads/photo-11.jpg") {
		t.Fatalf("reply %q", text)
	}
	if got, _ := os.ReadFile(filepath.Join(h.ws, "uploads", "photo-11.jpg")); !bytes.Equal(got, jpeg) {
		t.Fatalf("photo saved %q", got)
	}
	if n := len(f.CallsOf("getFile")); n != 2 {
		t.Fatalf("%d getFile calls", n)
	}
}

// TestDownloadFaults: a download that stalls ends at uploads.timeout, one
// bigger than its announced size is cut off, one over the 20 MB bots may
// download is refused before any call: nothing is saved, nothing is left.
func TestDownloadFaults(t *testing.T) {
	f := telegramtest.NewServer()
	defer f.Close()
	h := startHarness(t, f, hopts{configure: func(c *config.Config) { c.Uploads.Timeout = config.Duration(300 * time.Millisecond) }})
	f.Push(telegramtest.TextUpdate(1, 1, 1, 20, "", telegramtest.WithDocument(f.Document("slow.bin", "", telegramtest.File{Data: make([]byte, 4096), Stall: true}))))
	if text := replyTo(t, f, "20"); !strings.Contains(text, "did not arrive within its deadline (uploads.timeout)") {
		t.Fatalf("stalled: %q", text)
	}
	f.Push(telegramtest.TextUpdate(2, 1, 1, 21, "", telegramtest.WithDocument(f.Document("liar.bin", "", telegramtest.File{Data: make([]byte, 100), Declared: 50}))))
	if text := replyTo(t, f, "21"); !strings.Contains(text, "bigger than the 50 bytes its platform announced") {
		t.Fatalf("bigger than declared: %q", text)
	}
	calls := len(f.CallsOf("getFile"))
	f.Push(telegramtest.TextUpdate(3, 1, 1, 22, "", telegramtest.WithDocument(f.Document("huge.iso", "", telegramtest.File{Data: []byte("x"), Declared: 21 << 20}))))
	if text := replyTo(t, f, "22"); !strings.Contains(text, "telegram lets bots download files of up to 20971520 bytes (20 MB)") {
		t.Fatalf("over 20 MB: %q", text)
	}
	if n := len(f.CallsOf("getFile")); n != calls {
		t.Fatal("a file over Telegram's limit was asked for")
	}
	for _, name := range []string{"slow.bin", "liar.bin", "huge.iso"} {
		if _, err := os.Stat(filepath.Join(h.ws, "uploads", name)); err == nil {
			t.Errorf("%s was saved", name)
		}
	}
	noTempFiles(t, h.ws)
}

// TestFileReplyIsADocument: /get sends a workspace file with sendDocument
// (multipart, the bytes read from the state's files/), after the text.
func TestFileReplyIsADocument(t *testing.T) {
	f := telegramtest.NewServer()
	defer f.Close()
	h := startHarness(t, f, hopts{})
	data := bytes.Repeat([]byte{0, 0xff, 7}, 3000)
	os.WriteFile(filepath.Join(h.ws, "app.bin"), data, 0o644)
	f.Push(telegramtest.TextUpdate(1, 1, 1, 30, "/get app.bin"))
	var doc telegramtest.Message
	testkit.WaitFor(t, "the document", func() bool {
		for _, m := range f.MessagesTo("1") {
			if m.Method == "sendDocument" {
				doc = m
				return true
			}
		}
		return false
	})
	if doc.DocName != "app.bin" || !bytes.Equal(doc.Doc, data) || doc.Caption != "app.bin (9000 bytes)" {
		t.Fatalf("document %q %d bytes, caption %q", doc.DocName, len(doc.Doc), doc.Caption)
	}
	if msgs := f.MessagesTo("1"); msgs[0].Method != "sendMessage" || !strings.Contains(msgs[0].Text, "is sent as a file") {
		t.Fatalf("the text does not come first: %+v", msgs[0])
	}
}

// TestDocumentAnswerLost: Telegram accepts a document and its answer is
// lost (the hub dies between the send and the mark, as far as the chat
// can tell): the Bot API has no idempotency key, so the document is sent
// once more, and only once (docs/outbox.md, "Restarts").
func TestDocumentAnswerLost(t *testing.T) {
	f := telegramtest.NewServer()
	defer f.Close()
	h := startHarness(t, f, hopts{})
	os.WriteFile(filepath.Join(h.ws, "app.bin"), []byte("the document"), 0o644)
	f.Inject("sendDocument", telegramtest.Fault{Lost: true})
	f.Push(telegramtest.TextUpdate(1, 1, 1, 40, "/get app.bin"))
	testkit.WaitFor(t, "the document delivered", func() bool {
		es, _ := h.rt.Outbox.Store().List(t.Context(), outbox.Filter{State: outbox.StateDelivered, TurnID: "telegram.1.40"})
		for _, e := range es {
			if e.ID == "reply:telegram.1.40:chat:telegram:1:1" {
				return true
			}
		}
		return false
	})
	docs := 0
	for _, m := range f.MessagesTo("1") {
		if m.Method == "sendDocument" {
			docs++
		}
	}
	if docs != 2 {
		t.Fatalf("%d documents, want the one whose answer was lost and one more", docs)
	}
}
