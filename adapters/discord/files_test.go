package discord

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/a6afc2ce/hermes-hub/adapters/discord/discordtest"
	"github.com/a6afc2ce/hermes-hub/config"
)

// sayWith dispatches a MESSAGE_CREATE in the guild's channel with files
// attached.
func (e *testEnv) sayWith(user, content string, files ...map[string]any) channelMsg {
	m := channelMsg{ID: e.nextID(), Channel: e.fake.ChannelID, Guild: e.fake.GuildID, User: user, Content: content, Attachments: files}
	e.fake.Dispatch("MESSAGE_CREATE", e.fake.MessagePayload(m))
	return m
}

// TestAttachmentIsSaved: a file attached to a message addressed to the
// bot is fetched from the CDN and saved where its caption says (or in the
// uploads directory); the reply says where and how large. Several files
// in one message are refused, none saved.
func TestAttachmentIsSaved(t *testing.T) {
	e := newEnv(t, envOptions{})
	data := bytes.Repeat([]byte("PK\x03\x04\x00\xff"), 500)
	m := e.sayWith(adminUser, "!reports/q3.zip", e.fake.Attachment("Q3.zip", "application/zip", discordtest.File{Data: data}))
	if r := e.waitReply(m); !strings.Contains(r.Content, "Saved `reports/q3.zip` (3000 bytes") {
		t.Fatalf("reply %q", r.Content)
	}
	if got, err := os.ReadFile(filepath.Join(e.ws, "reports", "q3.zip")); err != nil || !bytes.Equal(got, data) {
		t.Fatalf("saved %d bytes, %v", len(got), err)
	}
	m = e.sayWith(adminUser, "<@"+e.fake.BotID+">", e.fake.Attachment("notes.txt", "text/plain", discordtest.File{Data: []byte("hi")}))
	if r := e.waitReply(m); !strings.Contains(r.Content, "uploads/notes.txt") {
		t.Fatalf("reply %q", r.Content)
	}
	m = e.sayWith(adminUser, "!", e.fake.Attachment("a.txt", "", discordtest.File{Data: []byte("a")}), e.fake.Attachment("b.txt", "", discordtest.File{Data: []byte("b")}))
	if r := e.waitReply(m); !strings.Contains(r.Content, "A message brought 2 files; the hub saves one file per message") {
		t.Fatalf("reply %q", r.Content)
	}
	for _, name := range []string{"a.txt", "b.txt"} {
		if _, err := os.Stat(filepath.Join(e.ws, "uploads", name)); err == nil {
			t.Errorf("%s was saved", name)
		}
	}
	if n := e.fake.CDNDownloads(); n != 2 {
		t.Fatalf("%d downloads from the CDN, want 2", n)
	}
}

// TestSlashUploadSaved: /fs upload with its attachment option saves the
// resolved attachment at the path option; its answer edits the deferral.
func TestSlashUploadSaved(t *testing.T) {
	e := newEnv(t, envOptions{})
	at := e.fake.Attachment("report.pdf", "application/pdf", discordtest.File{Data: []byte("%PDF-1.7 the report")})
	i := interaction{ID: e.nextID(), Channel: e.fake.ChannelID, Guild: e.fake.GuildID, User: adminUser, Command: "fs",
		Options: []opt{sub("upload", discordtest.Attach("file", at), str("path", "docs/"))}, Attachments: []map[string]any{at}}
	i.Token = "itok-" + i.ID
	e.fake.Dispatch("INTERACTION_CREATE", e.fake.InteractionPayload(i))
	if r := e.waitOriginal(i); !strings.Contains(r.Content, "Saved `docs/report.pdf` (19 bytes") {
		t.Fatalf("answer %q", r.Content)
	}
	if got, _ := os.ReadFile(filepath.Join(e.ws, "docs", "report.pdf")); string(got) != "%PDF-1.7 the report" {
		t.Fatalf("saved %q", got)
	}
}

// TestAttachmentOffTheCDNIsNotFetched: an attachment whose URL is not on
// discord.cdn_base is refused without a request to it (no SSRF), and so is
// a CDN answer that redirects elsewhere.
func TestAttachmentOffTheCDNIsNotFetched(t *testing.T) {
	var hits atomic.Int32
	inside := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		_, _ = w.Write([]byte("internal secrets"))
	}))
	defer inside.Close()
	e := newEnv(t, envOptions{})
	at := e.fake.Attachment("x.txt", "", discordtest.File{Data: []byte("x")})
	at["url"] = inside.URL + "/latest/meta-data/iam"
	m := e.sayWith(adminUser, "!", at)
	if r := e.waitReply(m); !strings.Contains(r.Content, "is not on Discord's CDN") || strings.Contains(r.Content, "secrets") {
		t.Fatalf("reply %q", r.Content)
	}
	m = e.sayWith(adminUser, "!", e.fake.Attachment("y.txt", "", discordtest.File{Redirect: inside.URL + "/latest/meta-data/iam"}))
	if r := e.waitReply(m); !strings.Contains(r.Content, "HTTP 302 from the CDN") {
		t.Fatalf("redirect: %q", r.Content)
	}
	if hits.Load() != 0 {
		t.Fatal("the hub fetched a URL off the CDN")
	}
	if _, err := os.Stat(filepath.Join(e.ws, "uploads", "x.txt")); err == nil {
		t.Fatal("saved")
	}
}

// TestAttachmentFaults: a download that stalls ends at uploads.timeout,
// one bigger than announced is cut off, a name that tries to escape is
// cleaned into the uploads directory: nothing saved outside it, no
// temporary file left.
func TestAttachmentFaults(t *testing.T) {
	e := newEnv(t, envOptions{configure: func(c *config.Config) { c.Uploads.Timeout = config.Duration(300 * time.Millisecond) }})
	m := e.sayWith(adminUser, "!", e.fake.Attachment("slow.bin", "", discordtest.File{Data: make([]byte, 4096), Stall: true}))
	if r := e.waitReply(m); !strings.Contains(r.Content, "did not arrive within its deadline (uploads.timeout)") {
		t.Fatalf("stalled: %q", r.Content)
	}
	m = e.sayWith(adminUser, "!", e.fake.Attachment("liar.bin", "", discordtest.File{Data: make([]byte, 100), Declared: 50}))
	if r := e.waitReply(m); !strings.Contains(r.Content, "bigger than the 50 bytes its platform announced") {
		t.Fatalf("bigger than declared: %q", r.Content)
	}
	m = e.sayWith(adminUser, "!", e.fake.Attachment("../../escape.txt", "", discordtest.File{Data: []byte("e")}))
	if r := e.waitReply(m); !strings.Contains(r.Content, "uploads/escape.txt") {
		t.Fatalf("escaping name: %q", r.Content)
	}
	if _, err := os.Stat(filepath.Join(filepath.Dir(e.ws), "escape.txt")); err == nil {
		t.Fatal("a file escaped the workspace")
	}
	for _, name := range []string{"slow.bin", "liar.bin"} {
		if _, err := os.Stat(filepath.Join(e.ws, "uploads", name)); err == nil {
			t.Errorf("%s was saved", name)
		}
	}
	filepath.Walk(e.ws, func(p string, fi os.FileInfo, err error) error {
		if err == nil && strings.Contains(fi.Name(), ".tmp-") {
			t.Errorf("temporary file left: %s", p)
		}
		return nil
	})
}

// TestFileReplyIsAttachedOnce: /get sends a workspace file as a channel
// message with files[0] (multipart, payload_json) and a nonce; when
// Discord creates it but its answer is lost, the resend carries the same
// nonce and Discord answers with the message it made: one file in the
// channel.
func TestFileReplyIsAttachedOnce(t *testing.T) {
	e := newEnv(t, envOptions{})
	data := bytes.Repeat([]byte{0, 0xff, 7}, 3000)
	if err := os.WriteFile(filepath.Join(e.ws, "app.bin"), data, 0o644); err != nil {
		t.Fatal(err)
	}
	// The text reply is the first message posted, the file the second.
	e.fake.AddRule(discordtest.Rule{Every: 2, Count: 1, Fault: fault{Method: "POST", PathPrefix: "/channels/", Lost: true}})
	m := e.say(adminUser, "!get app.bin")
	e.fake.WaitFor(t, "the file resent", func() bool {
		n := 0
		for _, r := range e.fake.Receipts() {
			if r.Kind == discordtest.ReceiptChannel && r.Repeat {
				n++
			}
		}
		return n == 1
	})
	var files []fakeMessage
	for _, x := range e.fake.ChannelMessages(m.Channel) {
		if len(x.Files) > 0 {
			files = append(files, x)
		}
	}
	if len(files) != 1 {
		t.Fatalf("%d messages with a file, want 1", len(files))
	}
	f := files[0]
	if !bytes.Equal(f.Files["app.bin"], data) || f.Nonce == "" || f.Content != "app.bin (9000 bytes)" {
		t.Fatalf("file message %q nonce %q files %v", f.Content, f.Nonce, fileNames(f.Files))
	}
	var reqs []string
	for _, r := range e.fake.RequestsTo("POST", "/channels/") {
		if len(r.Files) > 0 {
			reqs = append(reqs, r.Header.Get("Content-Type"))
		}
	}
	if len(reqs) != 2 || !strings.HasPrefix(reqs[0], "multipart/form-data") {
		t.Fatalf("file requests %q", reqs)
	}
}

func fileNames(m map[string][]byte) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}
